"""Node writes of the embedded store, in the steps of one upsert: read what is stored, merge the
prepared items into it, check the write guards, turn the result into rows, write the rows.

Every step runs inside the caller's write transaction (:meth:`SqliteStore.write_nodes`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plughost import Guards
from plughost.api.store import check_confined, check_write, needs_own, own_conversation, write_defaults
from plughost.plugins.graph.common import Prepared, keywords_of, labels_json, text_of, to_json
from plughost.plugins.graph.sqlite_store.sql import chunks, marks, unindex_text

Stored = tuple[int, str, str, str]
"""A stored node as the merge reads it: ``(rid, account_id, labels JSON, properties JSON)``."""


@dataclass
class PendingNode:
    """One node of a write as it will be stored: where (``rid``), what (labels, properties) and
    whether it is new. ``props_json`` is the caller's own serialisation of ``props`` while it is
    still exact (a fresh node nobody merged into), else None."""

    rid: int
    labels: list[str]
    props: dict[str, Any]
    props_json: str | None
    is_new: bool
    embedding: Sequence[float] | None


@dataclass
class NodeRows:
    """What one write puts in each table."""

    inserts: list[tuple[Any, ...]] = field(default_factory=list)
    updates: list[tuple[Any, ...]] = field(default_factory=list)
    replaced: list[int] = field(default_factory=list)  # updated rids whose side rows are rewritten
    vectors: list[tuple[bytes, int, int]] = field(default_factory=list)
    labels: list[tuple[str, int]] = field(default_factory=list)
    agents: list[tuple[Any, int]] = field(default_factory=list)
    keywords: list[tuple[Any, int]] = field(default_factory=list)
    texts: list[tuple[int, str]] = field(default_factory=list)


def stored_nodes(conn: sqlite3.Connection, items: Sequence[Prepared], account_id: str) -> dict[str, Stored]:
    """The account's stored nodes among the items' explicit ids."""
    existing: dict[str, Stored] = {}
    explicit = list(dict.fromkeys(item.id for item in items if item.id is not None))
    for part in chunks(explicit):
        for row in conn.execute(
            f"SELECT id, rid, account_id, labels, properties FROM nodes WHERE id IN ({marks(len(part))}) "
            "AND account_id = ?", [*part, account_id],
        ):
            existing[row[0]] = row[1:]
    return existing


def merge_items(ids: Sequence[str], items: Sequence[Prepared], existing: Mapping[str, Stored],
                next_rid: int) -> dict[str, PendingNode]:
    """Each id's node after the items, in order: a new id takes the next rid; a stored or repeated
    id merges (labels union, properties merge, ``None`` removes a key, a new embedding wins)."""
    state: dict[str, PendingNode] = {}
    for nid, item in zip(ids, items, strict=True):
        cur = state.get(nid)
        if cur is None and nid not in existing:
            props = item.properties if item.props_json is not None else \
                {k: v for k, v in item.properties.items() if v is not None}
            state[nid] = PendingNode(next_rid, list(item.labels), props, item.props_json, True, item.embedding)
            next_rid += 1
            continue
        if cur is None:
            rid, _, labels_text, props_json = existing[nid]
            cur = state[nid] = PendingNode(rid, json.loads(labels_text), json.loads(props_json), None, False, None)
        cur.labels.extend(lab for lab in item.labels if lab not in cur.labels)
        for key, value in item.properties.items():
            if value is None:
                cur.props.pop(key, None)
            else:
                cur.props[key] = value
        cur.props_json = None
        if item.embedding is not None:
            cur.embedding = item.embedding
    return state


def own_of(conn: sqlite3.Connection, guards: Guards) -> str | None:
    """The conversation a confined writer's session owns (:func:`plughost.ports.graph.own_conversation`),
    read in the write transaction."""
    if guards.session is None:
        return None
    rows = conn.execute(
        "SELECT n.id, json_extract(n.properties, '$.sessionId'), n.deleted_at IS NOT NULL FROM nodes n "
        "JOIN node_labels l ON l.node = n.rid AND l.label = 'Conversation' WHERE n.account_id = ? "
        "AND (n.id = ? OR json_extract(n.properties, '$.sessionId') = ?)",
        (guards.account_id, guards.session, guards.session)).fetchall()
    return own_conversation(guards.session, [(r[0], r[1], bool(r[2])) for r in rows])


def check_guards(guards: Guards, state: Mapping[str, PendingNode], existing: Mapping[str, Stored],
                 conn: sqlite3.Connection | None = None) -> None:
    """Every node of one write, from its stored state to the merged one, under the guards;
    a new node gets its default scope (:func:`plughost.ports.graph.default_scope`) / agent when it names none.
    A Conversation or Message, before and after, must be the confined writer's own (``check_confined``)."""
    own: list[str | None] = []
    for nid, cur in state.items():
        before = json.loads(existing[nid][3]) if nid in existing else None
        if before is None:
            extra = write_defaults(guards, cur.props)
            if extra:
                cur.props = {**cur.props, **extra}
                cur.props_json = None
        check_write(guards, nid, before, cur.props)
        labels_before = json.loads(existing[nid][2]) if nid in existing else []
        if needs_own(guards, [*labels_before, *cur.labels]):
            if not own:
                own.append(own_of(conn, guards) if conn is not None else None)
            if before is not None:
                check_confined(guards, own[0], nid, labels_before, before)
            check_confined(guards, own[0], nid, cur.labels, cur.props, after=True)


def node_rows(state: Mapping[str, PendingNode], account_id: str, now: float) -> NodeRows:
    """The table rows of the merged nodes (the node row, labels, agents, keywords, text, vector)."""
    rows = NodeRows()
    for nid, cur in state.items():
        rid, props, emb = cur.rid, cur.props, cur.embedding
        agents = props.get("agents")
        row_json = cur.props_json or json.dumps(props)
        agents_text = to_json(agents) if agents is not None else None
        if cur.is_new:
            rows.inserts.append((rid, nid, account_id, labels_json(cur.labels), row_json, props.get("scope"),
                                 agents_text, now, now, len(emb) if emb is not None else None))
        else:
            rows.updates.append((labels_json(cur.labels), row_json, props.get("scope"), agents_text, now, rid))
            rows.replaced.append(rid)
        if emb is not None:
            rows.vectors.append((np.asarray(emb, dtype=np.float32).tobytes(), len(emb), rid))
        rows.labels.extend((lab, rid) for lab in cur.labels)
        if agents:
            rows.agents.extend((ag, rid) for ag in dict.fromkeys(agents))
        if props.get("keywords") is not None:
            rows.keywords.extend((kw, rid) for kw in keywords_of(props))
        text = text_of(props)
        if text:
            rows.texts.append((rid, text))
    return rows


def write_rows(conn: sqlite3.Connection, rows: NodeRows) -> None:
    """Insert the new nodes, update the merged ones (reviving them) and rewrite their side rows."""
    if rows.inserts:
        conn.executemany("INSERT INTO nodes (rid, id, account_id, labels, properties, scope, agents, "
                         "created_at, updated_at, dims) VALUES (?,?,?,?,?,?,?,?,?,?)", rows.inserts)
    if rows.updates:
        unindex_text(conn, rows.replaced)  # by the rows as they were: before the update below
        conn.executemany("UPDATE nodes SET labels = ?, properties = ?, scope = ?, agents = ?, "
                         "deleted_at = NULL, updated_at = ? WHERE rid = ?", rows.updates)
        for part in chunks(rows.replaced):
            in_part = marks(len(part))
            for table in ("node_labels", "node_agents", "node_keywords"):
                conn.execute(f"DELETE FROM {table} WHERE node IN ({in_part})", list(part))
    if rows.vectors:
        write_vectors(conn, rows.vectors)
    conn.executemany("INSERT OR IGNORE INTO node_labels (label, node) VALUES (?, ?)", rows.labels)
    if rows.agents:
        conn.executemany("INSERT OR IGNORE INTO node_agents (agent, node) VALUES (?, ?)", rows.agents)
    if rows.keywords:
        conn.executemany("INSERT OR IGNORE INTO node_keywords (keyword, node) VALUES (?, ?)", rows.keywords)
    if rows.texts:
        conn.executemany("INSERT INTO node_text (rowid, text) VALUES (?, ?)", rows.texts)
        conn.executemany("INSERT INTO node_text_stem (rowid, text) VALUES (?, ?)", rows.texts)


def write_vectors(conn: sqlite3.Connection, vectors: list[tuple[bytes, int, int]]) -> None:
    """``(float32 bytes, dims, rid)`` rows: the vector table and the node's ``dims``."""
    seq = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM node_vectors").fetchone()[0]
    conn.executemany("INSERT INTO node_vectors (node, seq, embedding) VALUES (?, ?, ?) "
                     "ON CONFLICT (node) DO UPDATE SET embedding = excluded.embedding, seq = excluded.seq",
                     [(rid, seq, blob) for blob, _, rid in vectors])
    conn.executemany("UPDATE nodes SET dims = ? WHERE rid = ? AND dims IS NOT ?",
                     [(dims, rid, dims) for _, dims, rid in vectors])
