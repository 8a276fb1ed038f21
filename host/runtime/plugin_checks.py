"""The per-plugin checks `plughost manifests check` and `plughost bundle` share: a plugin whose
``requires-plughost`` excludes this host, and a plugin whose Python does not load or whose tools do
not join the host's tool table (a declared tool without handler, an ``inputSchema`` the handler
cannot take, a ``plughost_tools`` that raises). Each defect names the plugin, its PLUGIN.md and the field."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plughost.runtime import hostrange
from plughost.runtime.host import Host
from plughost.runtime.manifest import load_manifest
from plughost.util import settings


@dataclass(frozen=True)
class Defect:
    plugin: str
    file: Path
    field: str
    detail: str

    def line(self) -> str:
        return f"{self.file}: {self.field}: {self.detail}"


def host_range_defects(manifests: list[Path]) -> list[Defect]:
    """A PLUGIN.md whose ``requires-plughost`` excludes this host: the plugin would never load here."""
    out = []
    for md in manifests:
        manifest = load_manifest(md)
        problem = hostrange.problem(manifest.requires_plughost)
        if problem:
            out.append(Defect(manifest.name, md, "requires-plughost", problem))
    return out


def tool_defects(manifests: list[Path], env: Any = None) -> list[Defect]:
    """Load the plugins with a ``python:`` module and join their tools (the host's tool table):
    a handler PLUGIN.md does not declare, a declaration without handler or an ``inputSchema``
    the handler cannot take is a defect of that PLUGIN.md."""
    by_parent: dict[Path, dict[str, Path]] = {}
    for md in manifests:
        manifest = load_manifest(md)
        if manifest.python:
            by_parent.setdefault(md.parent.parent, {})[manifest.name] = md
    out: list[Defect] = []
    for parent, named in sorted(by_parent.items()):
        full = dict(os.environ if env is None else env)
        full[settings.LOAD_PLUGINS.name] = ",".join(sorted(named))
        full.pop(settings.DISABLE_PLUGINS.name, None)
        host = Host(plugins_dir=parent, premium_dir=None, env=full)
        host.discovery.ignore_brand()  # the plugins given are checked whatever this install's brand excludes
        host.load()
        table = host.tools()
        for name, md in sorted(named.items()):
            record = host.records.get(name)
            if record is None or not record.loaded:
                out.append(Defect(name, md, "python", (record.reason if record else None) or "not loaded"))
                continue
            problems = [Defect(name, md, "tools", f"'{p.tool}' {p.detail}") for p in table.problems_of(name)]
            out.extend(problems)
            if not any("plughost_tools failed" in d.detail for d in problems):  # not already named above
                out.extend(Defect(name, md, "tools", f"plughost_tools failed: {e.reason}") for e in table.hook_errors
                           if e.plugin == name)
    return out


_PUBLIC = ("plughost", "plughost.api")  # the one door: `plughost` and `plughost.api.*` (docs/plugin-api.md)
_SKIP = frozenset({"__pycache__", ".venv", "node_modules", ".git"})


@dataclass(frozen=True)
class ImportWarning:
    """A plugin's Python importing past the public door: another plugin or a host internal."""

    file: Path
    line: int
    module: str
    detail: str


def import_warnings(manifests: list[Path]) -> list[ImportWarning]:
    """A cheap AST scan of each plugin folder's ``.py`` files (a nested plugin folder is its own):
    an import of ``plughost.plugins.<other>`` or of a ``plughost.`` module other than ``plughost``
    and ``plughost.api.*``. Imports only a type checker sees (``if TYPE_CHECKING:``) are left out."""
    out: list[ImportWarning] = []
    for md in manifests:
        folder = md.parent
        python = load_manifest(md).python or ""
        own = python.split(".")[2] if python.startswith("plughost.plugins.") and python.count(".") >= 2 else None
        for py in sorted(_python_files(folder)):
            out.extend(_imports_past_the_door(py, own or folder.name))
    return out


def _python_files(folder: Path) -> list[Path]:
    found = []
    for entry in folder.iterdir():
        if entry.is_dir() and entry.name not in _SKIP and not (entry / "PLUGIN.md").is_file():
            found.extend(_python_files(entry))
        elif entry.is_file() and entry.suffix == ".py":
            found.append(entry)
    return found


def _imports_past_the_door(py: Path, own: str) -> list[ImportWarning]:
    import ast

    try:
        tree = ast.parse(py.read_bytes(), filename=str(py))
    except (SyntaxError, ValueError, OSError):
        return []  # an import failure is the `python` defect of tool_defects
    hidden = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _type_checking(node.test)
              for stmt in node.body for n in ast.walk(stmt)}
    out = []
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = ([f"{node.module}.{a.name}" for a in node.names] if node.module == "plughost.plugins"
                       else [node.module])
        else:
            continue
        for module in modules:
            detail = _past_the_door(module, own)
            if detail:
                out.append(ImportWarning(py, node.lineno, module, detail))
    return out


def _type_checking(test: Any) -> bool:
    import ast

    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _past_the_door(module: str, own: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "plughost" or module in _PUBLIC or module.startswith("plughost.api."):
        return None
    if parts[:2] == ["plughost", "plugins"]:
        if len(parts) < 3 or parts[2] == own:
            return None
        return f"imports the plugin '{parts[2]}': plugins never import each other (use a hook or a capability)"
    return "imports a host internal: a plugin imports only plughost and plughost.api.*"
