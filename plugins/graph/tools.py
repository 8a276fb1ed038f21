"""The graph plugin's MCP tools (docs/graph.md#tools): graph-schema, graph-neighbors, read-cypher, write-cypher.

The Cypher tools are served only on a store that runs Cypher (Neo4j): on the embedded SQLite
store they are withheld, and ``write-cypher`` also under ``PLUGHOST_GRAPH_READ_ONLY=1``.

Guards come from the call's principal (``plughost.ports.principal``); tool parameters may narrow the
scopes or name this process's agent, never widen them. Results never carry embedding vectors
and are capped by a character budget (``PLUGHOST_GRAPH_OUTPUT_CHARS``, default 20000).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plughost import Guards, Tool, UserError
from plughost.api.settings import GRAPH_READ_ONLY
from plughost.api.store import (
    CONFINED_LABELS,
    DERIVED_LABELS,
    HAS_MESSAGE,
    VISITOR_SLICE_LABEL,
    confined_view,
    session_conversation,
)
from plughost.plugins.graph.backend import backend_name
from plughost.plugins.graph.settings import GRAPH_OUTPUT_CHARS

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host


def strip_embeddings(value: Any) -> Any:
    """Drop every ``embedding`` key (and long float lists that look like vectors) from a result."""
    if isinstance(value, Mapping):
        return {k: strip_embeddings(v) for k, v in value.items() if k != "embedding"}
    if isinstance(value, (list, tuple)):
        if len(value) >= 64 and all(isinstance(v, float) for v in value[:64]):
            return f"<vector of {len(value)} floats stripped>"
        return [strip_embeddings(v) for v in value]
    return value


def budgeted(rows: list[Any], budget: int, warnings: list[str] | None = None) -> str:
    """Render rows as JSON within ``budget`` characters, saying how many were left out."""
    head = ""
    if warnings:
        head = "WARNINGS (Neo4j notifications):\n" + "\n".join(f"- {w}" for w in warnings) + "\n\n"
    shown = list(rows)
    while True:
        body = json.dumps(shown, ensure_ascii=False, indent=1, default=str)
        note = "" if len(shown) == len(rows) else f"\n(truncated: {len(shown)} of {len(rows)} rows shown; " \
                                                   f"output budget {budget} characters)"
        if len(head) + len(body) + len(note) <= budget or not shown:
            break
        shown = shown[: max(0, min(len(shown) - 1, len(shown) * budget // max(len(body), 1)))]
    text = head + body + note
    return text if len(text) <= budget else text[: budget - 40] + "\n(truncated at the output budget)"


CONFINED_EDGES = frozenset({HAS_MESSAGE, "MENTIONS", "STATES", "ABOUT"})
"""Edges whose counts would tell a narrowed process about conversations and derived nodes it is not shown."""
HIDDEN = frozenset({"searchContext"})
"""Derived from other nodes (a turn's indexed form holds the turns before it): never shown."""


def node_json(node: Any) -> dict[str, Any]:
    props = {k: v for k, v in node.properties.items() if k not in HIDDEN}
    return {"id": node.id, "labels": list(node.labels), "properties": strip_embeddings(props)}


def graph_tools(host: Host) -> list[Tool]:
    env = host.env
    budget = GRAPH_OUTPUT_CHARS.read(env)
    read_only = GRAPH_READ_ONLY.read(env)

    def guards(scopes: list[str] | None = None, agent: str | None = None) -> Guards:
        return host.principal.guards.narrow(scopes, agent)

    def confinement() -> Any:
        """A narrowed process's view (:func:`plughost.ports.graph.confined_view`): other sessions'
        conversations and the derived Entity / Fact nodes are not shown, as in memory-search (an
        admin narrowing one call with ``scopes`` is still the admin: not confined)."""
        p = host.principal
        if not p.guards.narrowed:
            return None
        own = None
        if p.session is not None:
            found, missing = session_conversation(host.store(), p.own_guards, [p.session])
            own = None if missing else found
        return confined_view(True, own)

    def graph_schema() -> str:
        """Labels, relationship types, property keys and vector indexes of this account's graph."""
        g = guards()
        schema = host.store().schema(guards=g)
        if host.principal.guards.narrowed:  # the confined view: no counts of what it cannot be shown
            schema = dict(schema)
            schema["labels"] = {k: v for k, v in schema.get("labels", {}).items()
                                if k not in CONFINED_LABELS and k not in DERIVED_LABELS and k != VISITOR_SLICE_LABEL}
            schema["relationshipTypes"] = {k: v for k, v in schema.get("relationshipTypes", {}).items()
                                           if k not in CONFINED_EDGES}
        return budgeted([schema], budget)

    def graph_neighbors(node_id: str, limit: int = 20, scopes: list[str] | None = None,
                        agent: str | None = None) -> str:
        """A node and its guarded 1-hop neighbours (both directions, at most 20).

        node_id: the node's id
        limit: neighbours to return, 1-20
        scopes: narrow the allowed scopes (never widens ALLOWED_SCOPES)
        agent: filter by this agent slug (must equal AGENT_SLUG when that is set)
        """
        g = guards(scopes, agent)
        store = host.store()
        node = store.get(node_id, guards=g)
        visible = confinement()
        if node is None or (visible is not None and not visible(node)):
            raise UserError(f"graph-neighbors: parameter 'node_id': no visible node '{node_id}' in this account")
        related = store.expand([node_id], guards=g, limit=limit).get(node_id, [])
        if visible is not None:
            related = [n for n in related if visible(n.node)]
        return budgeted([{
            "node": node_json(node),
            "neighbors": [{"direction": n.direction, "type": n.type, "edge": n.properties, "node": node_json(n.node)}
                          for n in related],
        }], budget)

    def run_cypher(query: str, params: dict[str, Any] | None, write: bool) -> str:
        """Both Cypher tools are the account admin's: refused in a narrowed process, whatever
        the tool list said (the trust boundary is here and in :mod:`plughost.plugins.graph.cypher`)."""
        name = "write-cypher" if write else "read-cypher"
        g = guards()
        if g.allowed_scopes is not None or g.agent_slug is not None:
            raise UserError(f"{name}: refused in a narrowed process (ALLOWED_SCOPES or AGENT_SLUG is set); "
                            "Cypher is for the account's admin — use graph-neighbors or graph-schema")
        if write and read_only:
            raise UserError("write-cypher: this process is read-only (PLUGHOST_GRAPH_READ_ONLY=1)")
        store = host.store()
        if getattr(store, "backend", "") != "neo4j":
            raise UserError(f"{name}: needs the Neo4j backend (set NEO4J_URI); this install uses the embedded "
                            "SQLite store — use graph-neighbors or graph-schema")
        result = store.query(query, params or {}, guards=g, read_only=not write)
        rows = result if isinstance(result, list) else result.get("rows", [])
        warnings = [] if isinstance(result, list) else result.get("warnings", [])
        return budgeted(strip_embeddings(rows), budget, warnings)

    def read_cypher(query: str, params: dict[str, Any] | None = None) -> str:
        """Run one read-only Cypher statement on this account's database (admin only; read transaction).

        Refused in a narrowed process and on a database holding other accounts; procedures are
        allow-listed; deleted nodes are redacted; Neo4j warnings come first.

        query: the Cypher text; use $accountId for the process's account
        params: query parameters
        """
        return run_cypher(query, params, write=False)

    def write_cypher(query: str, params: dict[str, Any] | None = None) -> str:
        """Run one Cypher statement that may write, in one transaction (admin only).

        Refused in a narrowed process and on a database holding other accounts; no schema,
        administration, LOAD CSV or non-allow-listed procedures.

        query: the Cypher text; use $accountId for the process's account
        params: query parameters
        """
        return run_cypher(query, params, write=True)

    # PLUGIN.md declares the four (text, schema, flags); here are their handlers. A handler of None
    # withholds a tool (absent from tools/list and the admin allowlist) where it could only fail.
    cypher = backend_name(env) == "neo4j"
    return [
        Tool("graph-schema", graph_schema),
        Tool("graph-neighbors", graph_neighbors),
        Tool("read-cypher", read_cypher if cypher else None),
        Tool("write-cypher", write_cypher if cypher and not read_only else None),
    ]
