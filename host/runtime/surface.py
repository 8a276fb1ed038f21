"""The tool surface (docs/architecture.md#tool-surface): computed once from the loaded manifests; the single source of
truth for the gates, the manifest generator and the MCP servers.

A declared tool the tool table withholds in this configuration (its hook gave no handler, e.g.
the graph plugin's Cypher tools on the embedded store) stays in ``all`` (a specialist naming it
is not a typo) but is marked ``withheld`` and left off the admin allowlist and the eager list:
those advertise only what the servers serve.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plughost.runtime import plugin_model
from plughost.runtime.manifest import ToolDecl
from plughost.runtime.plugin_model import PluginModel

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def safe_name(name: str) -> str:
    """A name as it stands in an MCP tool name: characters outside [A-Za-z0-9_-] become `_`."""
    return _UNSAFE.sub("_", name)


def canonical_name(plugin: str, server: str, tool: str) -> str:
    """`mcp__plugin_<plugin>_<server>__<tool>`, each part made :func:`safe_name`."""
    return f"mcp__plugin_{safe_name(plugin)}_{safe_name(server)}__{safe_name(tool)}"


@dataclass(frozen=True)
class SurfaceTool:
    plugin: str
    server: str
    name: str
    canonical: str
    admin: bool
    eager: bool
    description: str = ""
    input_schema: dict[str, Any] | None = None
    withheld: bool = False


@dataclass
class ToolSurface:
    """`all` by canonical name, the admin allowlist, the plugins that need MCP servers, eager tools."""

    all: dict[str, SurfaceTool] = field(default_factory=dict)
    admin: list[str] = field(default_factory=list)
    mcp_servers: list[str] = field(default_factory=list)
    eager: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    namespaces: dict[str, str] = field(default_factory=dict)  # sanitized "<plugin>_<server>" -> plugin
    models: dict[str, PluginModel] = field(default_factory=dict)  # the one reading of each loaded plugin

    def tools_of(self, plugin: str) -> list[SurfaceTool]:
        return [t for t in self.all.values() if t.plugin == plugin]

    def to_json(self) -> dict[str, Any]:
        return {
            "all": sorted(self.all),
            "admin": self.admin,
            "mcpServers": self.mcp_servers,
            "eager": self.eager,
            "withheld": self.withheld,
        }


def declared_tools(host: Host, name: str) -> list[ToolDecl]:
    """Tools a plugin declares: its PLUGIN.md, or (entry point without one) its hook's tools."""
    record = host.records[name]
    manifest = record.manifest
    if manifest is not None and manifest.path is not None:
        return list(manifest.tools)
    if record.module is None:
        return []
    return host.tools().declared.get(name, [])


def compute_surface(host: Host) -> ToolSurface:
    surface = ToolSurface()
    table = host.tools()
    withheld = table.withheld
    for record in sorted(host.loaded(), key=lambda r: r.name):
        server = record.name
        tools = declared_tools(host, record.name)
        surface.namespaces[f"{safe_name(record.name)}_{safe_name(server)}"] = record.name
        for decl in tools:
            canonical = canonical_name(record.name, server, decl.name)
            off = decl.name in withheld.get(record.name, ()) or decl.name in table.broken.get(record.name, ())
            surface.all[canonical] = SurfaceTool(
                record.name, server, decl.name, canonical, decl.admin_allowlist, decl.eager,
                decl.description, decl.input_schema, off,
            )
            if off:
                surface.withheld.append(canonical)
                continue
            if decl.admin_allowlist:
                surface.admin.append(canonical)
            if decl.eager:
                surface.eager.append(canonical)
        model = plugin_model.of_record(host, record, tools)
        surface.models[record.name] = model
        if tools and model.has_server:  # has a server: the model's rule, the generator's too
            surface.mcp_servers.append(record.name)
    return surface
