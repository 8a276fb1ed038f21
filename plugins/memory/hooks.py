"""Hook implementations of the memory plugin.

Kept cheap to import: everything heavy (numpy, onnxruntime, httpx, mcp) is imported inside
the functions that need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from host.hookspecs import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from host.manager import Host
    from host.types import CliCommand, Tool


@hookimpl
def plughost_embedder(host: Host) -> Any:
    """local (default) | ollama | none, from PLUGHOST_EMBEDDER."""
    from plugins.memory.embedder import select_embedder

    return select_embedder(host.env)


@hookimpl
def plughost_tools(host: Host) -> list[Tool]:
    from plugins.memory.retrieval.tool import search_tool
    from plugins.memory.tools import write_tools

    return [*write_tools(host), search_tool(host)]


@hookimpl
def plughost_query_expansions(host: Host, query: str, retrieval_class: str | None) -> list[str] | None:
    """The built-in, offline, rule-based expander (an LLM provider registered later wins)."""
    from plugins.memory.retrieval.expand import rule_based

    return rule_based(query, retrieval_class)


@hookimpl
def plughost_cli_commands(host: Host) -> list[CliCommand]:
    from plugins.memory.cli import commands

    return commands()


@hookimpl
def plughost_startup(host: Host) -> None:
    """A store/embedder dimension mismatch is a startup error, not a crash mid-write."""
    from plugins.memory.embedder import check_dimensions

    check_dimensions(host.store(), host.embedder())


__all__ = ["plughost_embedder", "plughost_tools", "plughost_query_expansions", "plughost_cli_commands",
           "plughost_startup"]
