"""Which graph backend this install runs: the one place ``PLUGHOST_STORE`` and ``NEO4J_URI`` are decided."""

from __future__ import annotations

from typing import Any

from plughost import UserError
from plughost.api.settings import STORE
from plughost.plugins.graph.settings import GRAPH_DB


def backend_name(env: Any) -> str:
    """``PLUGHOST_STORE`` (sqlite|neo4j) wins; otherwise Neo4j when ``NEO4J_URI`` is set.

    ``PLUGHOST_STORE=graph`` (this plugin's name: the host's choice among store plugins) keeps
    the default.
    """
    chosen = (STORE.read(env) or "").lower()
    if chosen and chosen != "graph":
        if chosen not in ("sqlite", "neo4j"):
            raise UserError(f"PLUGHOST_STORE: expected 'sqlite' or 'neo4j', got '{chosen}'")
        return chosen
    return "neo4j" if (env.get("NEO4J_URI") or "").strip() else "sqlite"


def sqlite_path(host: Any) -> Any:
    """The embedded store's file: ``PLUGHOST_GRAPH_DB``, else ``<PLUGHOST_HOME>/graph.sqlite``."""
    return GRAPH_DB.read(host.env) or host.home / "graph.sqlite"
