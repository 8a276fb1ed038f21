"""Hook implementations of the graph plugin.

Cheap to import: numpy, neo4j and mcp are imported inside the functions that use them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plughost import hookimpl
from plughost.plugins.graph.backend import backend_name, sqlite_path

if TYPE_CHECKING:  # pragma: no cover
    from plughost import CliCommand, Gate, GraphStore, Host, Setting, Tool


@hookimpl
def plughost_store(host: Host) -> GraphStore:
    """Both backends are returned as the port, so mypy checks each one satisfies ``GraphStore``."""
    if backend_name(host.env) == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        return Neo4jStore.from_env(host.env)
    from plughost.plugins.graph.sqlite_store import SqliteStore

    return SqliteStore(sqlite_path(host), env=host.env)


@hookimpl
def plughost_tools(host: Host) -> list[Tool]:
    from plughost.plugins.graph.tools import graph_tools

    return graph_tools(host)


@hookimpl
def plughost_cli_commands(host: Host) -> list[CliCommand]:
    from plughost.plugins.graph.cli import commands

    return commands()


@hookimpl
def plughost_boot_gates(host: Host) -> list[Gate]:
    from plughost.plugins.graph.gates import gates

    return gates()


@hookimpl
def plughost_account_created(host: Host, account_id: str, users: list[dict[str, Any]]) -> None:
    from plughost.plugins.graph.bootstrap import seed_account

    seed_account(host.store(), account_id, users)


@hookimpl
def plughost_settings() -> list[Setting]:
    from plughost.plugins.graph.settings import ALL

    return list(ALL)
