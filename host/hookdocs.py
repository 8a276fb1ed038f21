"""Render `docs/hooks.md` from the hookspecs' docstrings (one section per hook)."""

from __future__ import annotations

import inspect

from host import hookspecs

TEMPLATE_PARTS = ("**Parameters:**", "**Combines:**", "**Fires:**", "**Example:**")


def hook_functions() -> dict[str, object]:
    return {
        name: fn for name, fn in vars(hookspecs).items()
        if name.startswith("plughost_") and callable(fn) and hasattr(fn, "plughost_spec")
    }


def signature(fn: object) -> str:
    return f"{fn.__name__}{inspect.signature(fn)}".replace("'", "")  # type: ignore[attr-defined]


def render() -> str:
    out = ["# Hooks", "", "Generated from `host/hookspecs.py` by `python -m host.hookdocs`; do not edit.", ""]
    for name, fn in hook_functions().items():
        spec = getattr(fn, "plughost_spec", {})
        flags = [k for k in ("firstresult", "historic") if spec.get(k)]
        out += [f"## {name}", "", f"`{signature(fn)}`" + (f" ({', '.join(flags)})" if flags else ""), ""]
        out += [inspect.getdoc(fn) or "", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    from pathlib import Path

    from host.config import REPO_ROOT

    Path(REPO_ROOT / "docs" / "hooks.md").write_text(render(), encoding="utf-8")
