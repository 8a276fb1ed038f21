"""Render `docs/hooks.md` from the hookspecs' docstrings (one section per hook)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from plughost.runtime import hookspecs, hooktable

TEMPLATE_PARTS = ("**Parameters:**", "**Combines:**", "**Fires:**", "**Example:**")


def hook_functions() -> dict[str, Callable[..., Any]]:
    return {
        name: fn for name, fn in vars(hookspecs).items()
        if name.startswith("plughost_") and callable(fn) and hasattr(fn, "plughost_spec")
    }


def signature(fn: Callable[..., Any]) -> str:
    return f"{fn.__name__}{inspect.signature(fn)}".replace("'", "")


def kind(name: str) -> str:
    """How a plugin names a hook (its handle in :mod:`plughost.api.hooks`, the same objects as the
    host's :mod:`plughost.runtime.hooktable`) and its kind, e.g. ``TOOLS: ListHook[Tool]``."""
    hook = hooktable.TABLE.get(name)
    if hook is None:
        return "not in plughost.api.hooks"
    const = next(k for k, v in vars(hooktable).items() if v is hook and k.isupper() and k != "TABLE")
    if isinstance(hook, hooktable.ListHook):
        return f"plughost.api.hooks.{const}: ListHook[{hook.kind.__name__}]"
    return f"plughost.api.hooks.{const}: {type(hook).__name__}"


def render() -> str:
    out = ["# Hooks", "", "Generated from `host/runtime/hookspecs.py` by `python -m plughost.runtime.hookdocs`; do not edit.", ""]
    for name, fn in hook_functions().items():
        spec = getattr(fn, "plughost_spec", {})
        flags = [k for k in ("firstresult", "historic") if spec.get(k)]
        out += [f"## {name}", "", f"`{signature(fn)}`" + (f" ({', '.join(flags)})" if flags else ""), "",
                f"Called as `{kind(name)}`.", ""]
        out += [inspect.getdoc(fn) or "", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    from pathlib import Path

    from plughost.util.config import checkout_root

    Path(checkout_root() / "docs" / "hooks.md").write_text(render(), encoding="utf-8")
