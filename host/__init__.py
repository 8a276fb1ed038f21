"""plughost: a pluggy-based plugin host for AI-agent platforms.

This module is the public API, the one thing a plugin imports (docs/plugin-api.md)::

    from plughost import Tool, hookimpl

Every other module under ``plughost.`` (``plughost.runtime``, ``plughost.ports``, ...) is the
host's own and may change in any release. Importing this package is cheap on purpose: the names
below load on first use, and nothing here loads plugins, MCP or Neo4j. What serves one kind of
plugin only (a store provider, HTTP routes, ...) is in the submodules of ``plughost.api``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"
"""The host's version, and the version of this API (semantic versioning: CHANGELOG.md)."""

# name -> "module" (the same name there) or "module:attr" (loaded on first access, PEP 562)
_EXPORTS: dict[str, str] = {
    "hookimpl": "plughost.runtime.hookspecs",
    "Host": "plughost.runtime.plugin_host:PluginHost",
    "load_host": "plughost.runtime.plugin_host",
    "Tool": "plughost.runtime.types",
    "Gate": "plughost.runtime.types",
    "GateContext": "plughost.runtime.types",
    "GateResult": "plughost.runtime.types",
    "Route": "plughost.runtime.types",
    "CliCommand": "plughost.runtime.types",
    "ChannelAdapter": "plughost.runtime.types",
    "AgentRunner": "plughost.runtime.types",
    "AgentTurn": "plughost.runtime.types",
    "CollectionSource": "plughost.runtime.types",
    "RetrievalBoost": "plughost.runtime.types",
    "MemoryHit": "plughost.runtime.types",
    "StateKey": "plughost.runtime.state",
    "Principal": "plughost.ports.principal",
    "Role": "plughost.ports.principal",
    "Guards": "plughost.ports.principal",
    "GraphStore": "plughost.ports.graph",
    "Node": "plughost.ports.graph",
    "Hit": "plughost.ports.graph",
    "Neighbor": "plughost.ports.graph",
    "WriteDenied": "plughost.ports.graph",
    "Embedder": "plughost.ports.embedding",
    "Setting": "plughost.util.settings",
    "log": "plughost.util.log",
    "PlughostError": "plughost.util.errors",
    "UserError": "plughost.util.errors",
    "FatalError": "plughost.util.errors",
    "StoreUnavailable": "plughost.util.errors",
    "AccountMismatch": "plughost.util.errors",
    "AccountUnset": "plughost.util.errors",
    "run_plugin_server": "plughost.mcp.server",
}

__all__ = [
    "__version__",
    "hookimpl",
    "Host",
    "load_host",
    "Tool",
    "Gate",
    "GateContext",
    "GateResult",
    "Route",
    "CliCommand",
    "ChannelAdapter",
    "AgentRunner",
    "AgentTurn",
    "CollectionSource",
    "RetrievalBoost",
    "MemoryHit",
    "StateKey",
    "Principal",
    "Role",
    "Guards",
    "GraphStore",
    "Node",
    "Hit",
    "Neighbor",
    "WriteDenied",
    "Embedder",
    "Setting",
    "log",
    "PlughostError",
    "UserError",
    "FatalError",
    "StoreUnavailable",
    "AccountMismatch",
    "AccountUnset",
    "run_plugin_server",
]

if TYPE_CHECKING:
    from plughost.mcp.server import run_plugin_server
    from plughost.ports.embedding import Embedder
    from plughost.ports.graph import GraphStore, Hit, Neighbor, Node, WriteDenied
    from plughost.ports.principal import Guards, Principal, Role
    from plughost.runtime.hookspecs import hookimpl
    from plughost.runtime.plugin_host import PluginHost as Host
    from plughost.runtime.plugin_host import load_host
    from plughost.runtime.state import StateKey
    from plughost.runtime.types import (
        AgentRunner,
        AgentTurn,
        ChannelAdapter,
        CliCommand,
        CollectionSource,
        Gate,
        GateContext,
        GateResult,
        MemoryHit,
        RetrievalBoost,
        Route,
        Tool,
    )
    from plughost.util.errors import (
        AccountMismatch,
        AccountUnset,
        FatalError,
        PlughostError,
        StoreUnavailable,
        UserError,
    )
    from plughost.util.log import log
    from plughost.util.settings import Setting


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'plughost' has no attribute {name!r}")
    module, _, attr = module.partition(":")
    value = getattr(import_module(module), attr or name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
