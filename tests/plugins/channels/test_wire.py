"""The channels plugin is typed (plugins/channels/wire.py): ``Any`` only through the named JSON
aliases, so mypy sees the call sites of the Gateway, the scheduler and the adapters."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CHANNELS = ROOT / "plugins" / "channels"
WIRE = CHANNELS / "wire.py"


def any_uses(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [f"{path.relative_to(root)}:{node.lineno}" for node in ast.walk(tree)
            if (isinstance(node, ast.Name) and node.id == "Any")
            or (isinstance(node, ast.Attribute) and node.attr == "Any")
            or (isinstance(node, ast.alias) and node.name == "Any")]


def test_any_only_through_the_json_aliases() -> None:
    files = sorted(p for p in CHANNELS.rglob("*.py") if p != WIRE)
    assert len(files) > 20
    found = [line for path in files for line in any_uses(path)]
    assert not found, ("Any in the channels plugin; use a real type, or JSON / JSONObject / JSONMapping "
                       "(plughost.plugins.channels.wire) for an untyped JSON payload:\n" + "\n".join(found))


def test_the_scan_sees_any(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import typing\nfrom typing import Any\n\ndef f(x: Any) -> typing.Any: ...\n")
    assert any_uses(bad, tmp_path) == ["bad.py:2", "bad.py:4", "bad.py:4"]
