"""The embedded store's SQL pieces: the guard layers as WHERE conditions, label / property /
edge-scope filters, and the edge MERGE; shared by the store, vector search and bulk import."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from plughost import Guards
from plughost.plugins.graph.common import check_labels, check_name, text_of

BUSY_TIMEOUT_S = 15.0
BACKLINK_COUNT = "(SELECT count(*) FROM edges b WHERE b.target = n.rid)"
"""``backlinkCount``: the incoming typed edges, counted on ``edges_target`` when read (exact, and
free to maintain)."""
NODE_COLS = ("n.rid, n.id, n.account_id, n.labels, n.properties, n.deleted_at, n.created_at, "
             f"n.updated_at, n.dims, {BACKLINK_COUNT}")
LIGHT_COLS = "n.rid, n.id, n.account_id, n.labels, NULL, NULL, NULL, NULL, n.dims, NULL"
"""``NODE_COLS``' places without the properties and what builds them (a search window's rows: the
properties are read for the hits kept, :class:`~.nodes.Deferred`)."""
ROW_EXTRA = 10
"""Where a statement's own column (a rank, a window position) sits after ``NODE_COLS``."""
CHUNK = 500  # bound on SQL variables per statement
EDGE_BATCH_TABLE = ("CREATE TEMP TABLE IF NOT EXISTS edge_batch (source INTEGER, type TEXT, target INTEGER, "
                    "properties TEXT, created_at REAL, dst TEXT, lineno INTEGER, pid INTEGER)")
"""One edge write batch, staged before its MERGE (``dst`` and ``lineno`` name an unresolved target's
edge for its report; ``pid`` numbers an edge a bulk import staged by id)."""
PAGE_SIZE = 16384
"""Database page size of a new file (an existing file keeps its own): about a third fewer page
writes than SQLite's 4096 for the text-heavy rows of notes, sections and chunks."""
MMAP_BYTES = 256 << 20
"""``PRAGMA mmap_size`` of a store connection: reads map (the first 256 MiB of) the file instead of
copying its pages through the 2 MiB page cache. A search reads its hits' rows, a few hundred
scattered over the file: at 100k nodes the vector window's statement went from 2.1 to 0.7 ms of
CPU and the BM25 one from 4.4 to 3.4 ms. Address space only: the pages are the OS page cache's."""
TEXT_INDEXES = ("node_text", "node_text_stem")
"""The two contentless full-text indexes (``schema.sql``): plain and stemmed, the same rows and text."""
def first_window(k: int) -> int:
    """The first window of a guarded top-k (best BM25 matches, best vector scores): k and a quarter
    more, at least 64. Most guards pass most rows, so it holds k guarded rows; it widens fourfold
    until it does (a selective guard), and the window's rows are most of the statement's cost."""
    return max(k + k // 4, 64)


def node_text_of(properties: str | None) -> str | None:
    """The text a node's row was indexed under (``text_of`` of its stored properties), or None when
    it was not indexed: what a contentless index needs again to remove the node's terms."""
    if not properties:
        return None
    return text_of(json.loads(properties)) or None


def varint(blob: bytes) -> int:
    """The first of FTS5's varints in a ``docsize`` blob: a one-column document's length in tokens."""
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


def register_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions the schema's trigger calls (``node_text_of``): on every store connection."""
    conn.create_function("node_text_of", 1, node_text_of, deterministic=True)


def unindex_text(conn: sqlite3.Connection, rids: Sequence[int]) -> None:
    """Remove the terms of the nodes ``rids`` from both full-text indexes, by their stored rows: call it
    before a row's properties change (a contentless index is told the text it is to forget)."""
    for part in chunks(rids):
        old = [(rid, t) for rid, props in conn.execute(
            f"SELECT rid, properties FROM nodes WHERE rid IN ({marks(len(part))})", list(part))
            if (t := node_text_of(props)) is not None]
        for table in TEXT_INDEXES:
            conn.executemany(f"INSERT INTO {table} ({table}, rowid, text) VALUES ('delete', ?, ?)", old)


def chunks(seq: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


def marks(n: int) -> str:
    return ",".join("?" * n)


def guard_sql(g: Guards, alias: str = "n", *, related: bool = False) -> tuple[str, list[Any]]:
    """The guard layers as one SQL condition on ``alias``.

    Primary reads get layers 1, 2, 3 and 5; ``related=True`` gives layer 4 (expansion), where
    untagged nodes pass the agent filter.
    """
    a = alias
    parts = [f"{a}.account_id = ?", f"{a}.deleted_at IS NULL"]  # layers 5 and 1
    params: list[Any] = [g.account_id]
    if g.allowed_scopes is not None:  # layer 2
        if g.allowed_scopes:
            parts.append(f"({a}.scope IS NULL OR {a}.scope IN ({marks(len(g.allowed_scopes))}))")
            params.extend(g.allowed_scopes)
        else:
            parts.append(f"{a}.scope IS NULL")
    if g.agent_slug is not None:  # layer 3 (primary) / layer 4 (related)
        tagged = f"EXISTS (SELECT 1 FROM node_agents ag WHERE ag.agent = ? AND ag.node = {a}.rid)"
        parts.append(f"({a}.agents IS NULL OR {tagged})" if related else tagged)
        params.append(g.agent_slug)
    return " AND ".join(parts), params


def label_sql(labels: Sequence[str] | None, alias: str = "n", *, driving: bool = False) -> tuple[str, list[Any]]:
    """Nodes holding one of ``labels``. ``driving``: the label's rows lead the scan instead of being
    checked per row the account holds, which read every row's properties first when a property
    filter stood beside it (``find``: 30 ms for no Fact among 1,000 documents)."""
    if not labels:
        return "", []
    labs = check_labels(labels)
    if driving:
        return (f" AND {alias}.rid IN (SELECT nl.node FROM node_labels nl WHERE nl.label IN ({marks(len(labs))}))",
                list(labs))
    return (f" AND EXISTS (SELECT 1 FROM node_labels nl WHERE nl.node = {alias}.rid "
            f"AND nl.label IN ({marks(len(labs))}))", list(labs))


def where_sql(where: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """Property equality filters (``None`` means absent) as SQL on ``n``; names are validated."""
    sql, params = "", []
    for key, value in (where or {}).items():
        column = prop_expr(key)
        if value is None:
            sql += f" AND {column} IS NULL"
        else:
            sql += f" AND {column} = ?"
            params.append(int(value) if isinstance(value, bool) else value)
    return sql, params


def within_sql(within: tuple[str, str] | None, account_id: str, column: str) -> tuple[str, list[Any]]:
    """``(node id, edge type)``: only the targets of that node's outgoing edges of that type
    (e.g. a Conversation's ``HAS_MESSAGE`` Messages), through the edge primary key."""
    if not within:
        return "", []
    node_id, edge_type = within
    return (f" AND {column} IN (SELECT e.target FROM edges e WHERE e.source = "
            f"(SELECT s.rid FROM nodes s WHERE s.id = ? AND s.account_id = ?) AND e.type = ?)",
            [str(node_id), account_id, check_name(str(edge_type), "edge type")])


def prop_expr(key: str) -> str:
    if key == "id":
        return "n.id"
    if key in ("createdAt", "updatedAt", "deletedAt"):
        return {"createdAt": "n.created_at", "updatedAt": "n.updated_at", "deletedAt": "n.deleted_at"}[key]
    if key == "backlinkCount":
        return BACKLINK_COUNT
    check_name(key, "property")
    return f"json_extract(n.properties, '$.\"{key}\"')"


def merge_edges(conn: sqlite3.Connection, select: str, params: Sequence[Any] = ()) -> None:
    """MERGE the edges ``select`` yields (source, type, target, properties, created_at), in its
    order: a new edge is inserted; an existing one keeps its properties unless the row gives new
    ones. ``backlinkCount`` is read from ``edges_target``, so there is nothing else to maintain.
    (``select`` ends in WHERE or ORDER BY, which keeps SQLite from reading ON CONFLICT as a join.)"""
    conn.execute(f"INSERT INTO edges (source, type, target, properties, created_at) {select} "
                 "ON CONFLICT (source, type, target) DO UPDATE SET properties = excluded.properties "
                 "WHERE excluded.properties IS NOT NULL", params)


def merge_edge_batch(conn: sqlite3.Connection) -> int:
    """MERGE the resolved rows of ``temp.edge_batch`` (:data:`EDGE_BATCH_TABLE`) into ``edges`` in
    order and empty it; returns how many rows there were (see :func:`merge_edges`)."""
    rows = conn.execute("SELECT count(target) FROM temp.edge_batch").fetchone()[0]
    if rows:
        merge_edges(conn, "SELECT source, type, target, properties, created_at FROM temp.edge_batch "
                          "WHERE target IS NOT NULL ORDER BY rowid")
    conn.execute("DELETE FROM temp.edge_batch")
    return rows
