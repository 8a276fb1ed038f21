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
