"""The embedded graph store (SPEC 8.2): one SQLite file, WAL, FTS5 BM25, exact numpy vectors.

Every read builds its guard layers (SPEC 8.1) into the SQL WHERE clause, so the top-k cut
happens after them. Vector search is exact cosine against an in-process matrix of the
account's vectors, kept current by loading only what was written since (``node_vectors.seq``);
the guards run in SQL, on a score-ordered window or on the full guarded candidate set (see
:meth:`SqliteStore.vector_search`). Candidate sets are cached until anything is written (by
this connection, or by another process: ``PRAGMA data_version`` tells).

One connection per store object, serialised by a lock (MCP handlers run in threads); several
processes share the file through WAL and the busy timeout.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from host.errors import UserError
from host.graph import (
    VECTOR_LABELS,
    Guards,
    Hit,
    Neighbor,
    Node,
    WriteDenied,
    can_change,
    check_write,
    write_defaults,
)
from plugins.graph import migrations
from plugins.graph.common import (
    EXPAND_LIMIT,
    GRACE_DAYS,
    Prepared,
    check_account,
    check_edge,
    check_embedding,
    check_labels,
    check_name,
    env_account,
    env_dimensions,
    fts_terms,
    guards_ok,
    iso,
    keywords_of,
    labels_json,
    new_id,
    prepare,
    prepare_rows,
    text_of,
    to_json,
)
from plugins.graph.staging import FINAL_BATCH, KEY_BITS

BUSY_TIMEOUT_S = 15.0
BACKLINK_COUNT = "(SELECT count(*) FROM edges b WHERE b.target = n.rid)"
"""``backlinkCount``: the incoming typed edges, counted on ``edges_target`` when read (exact, and
free to maintain)."""
NODE_COLS = ("n.rid, n.id, n.account_id, n.labels, n.properties, n.deleted_at, n.created_at, "
             f"n.updated_at, n.dims, {BACKLINK_COUNT}")
CHUNK = 500  # bound on SQL variables per statement
VECTOR_SPLIT_ROWS = 16384
"""Matrices at least this tall are scored in slices on parallel threads (numpy releases the GIL in
BLAS). Scoring reads the whole matrix once per query, and one core cannot draw all of the
machine's memory bandwidth: on 2 cores, 100k × 384 scores in about 13.5 ms against 24 ms."""
VECTOR_WINDOW_MAX = 4096  # past this window, vector search selects (and caches) every guarded candidate
IMPORT_CACHE_KIB = 262144  # page cache ceiling during a bulk import: index inserts land all over the file
EDGE_BATCH_TABLE = ("CREATE TEMP TABLE IF NOT EXISTS edge_batch (source INTEGER, type TEXT, target INTEGER, "
                    "properties TEXT, created_at REAL, dst TEXT, lineno INTEGER, pid INTEGER)")
"""One edge write batch, staged before its MERGE (``dst`` and ``lineno`` name an unresolved target's
edge for its report; ``pid`` numbers an edge a bulk import staged by id)."""
FTS_WINDOW = 8  # first BM25 window = k * FTS_WINDOW best matches, widened until k rows pass the guards


def _chunks(seq: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


def _marks(n: int) -> str:
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
            parts.append(f"({a}.scope IS NULL OR {a}.scope IN ({_marks(len(g.allowed_scopes))}))")
            params.extend(g.allowed_scopes)
        else:
            parts.append(f"{a}.scope IS NULL")
    if g.agent_slug is not None:  # layer 3 (primary) / layer 4 (related)
        tagged = f"EXISTS (SELECT 1 FROM node_agents ag WHERE ag.agent = ? AND ag.node = {a}.rid)"
        parts.append(f"({a}.agents IS NULL OR {tagged})" if related else tagged)
        params.append(g.agent_slug)
    return " AND ".join(parts), params


def label_sql(labels: Sequence[str] | None, alias: str = "n") -> tuple[str, list[Any]]:
    if not labels:
        return "", []
    labs = check_labels(labels)
    return (f" AND EXISTS (SELECT 1 FROM node_labels nl WHERE nl.node = {alias}.rid "
            f"AND nl.label IN ({_marks(len(labs))}))", list(labs))


def where_sql(where: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """Property equality filters (``None`` means absent) as SQL on ``n``; names are validated."""
    sql, params = "", []
    for key, value in (where or {}).items():
        column = _prop_expr(key)
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


def _candidate_key(g: Guards, labels: Sequence[str] | None, dims: int, where: Mapping[str, Any] | None,
                   within: tuple[str, str] | None) -> tuple[Any, ...]:
    """The candidate-cache key: the guards, labels and dims, plus the optional filters when given."""
    key: tuple[Any, ...] = (g, tuple(labels) if labels else None, dims)
    if where or within:
        key += (tuple(sorted((where or {}).items())), tuple(within) if within else None)
    return key


class SqliteStore:
    """:class:`host.graph.GraphStore` on one SQLite file."""

    backend = "sqlite"

    def __init__(self, path: str | Path, *, env: Mapping[str, str] | None = None) -> None:
        self.path = Path(path)
        self.env = dict(os.environ if env is None else env)
        self.vector_threads = vector_threads(self.env)  # checked before the file is opened
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._import_lock = threading.Lock()  # one bulk import at a time per connection (its temp tables)
        self.conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                    check_same_thread=False)
        self.conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        self._set_wal()
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("PRAGMA foreign_keys = OFF")
        self.conn.execute("PRAGMA temp_store = MEMORY")  # the per-batch edge staging table
        migrations.migrate(self.conn, self.path)
        self._writes = 0  # bumped by every local commit
        self.vector_window_max = VECTOR_WINDOW_MAX  # 0: always select the full guarded candidate set
        self.vector_split_rows = VECTOR_SPLIT_ROWS
        self._pool: Any = None  # the scoring threads (a ThreadPoolExecutor), started at first need
        # (account, dims) -> (seq, rid buffer, matrix buffer, rows in use)
        self._matrices: dict[tuple[str, int], tuple[int, np.ndarray, np.ndarray, int]] = {}
        self._candidates: OrderedDict[Any, np.ndarray] = OrderedDict()
        self._cache_stamp: tuple[int, int] | None = None

    def _set_wal(self) -> None:
        for _ in range(50):
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError:
                time.sleep(0.1)
        self.conn.execute("PRAGMA journal_mode = WAL")

    @property
    def account_id(self) -> str | None:
        return env_account(self.env)

    @property
    def dimensions(self) -> int:
        return env_dimensions(self.env)

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the database write lock from its start."""
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            finally:
                self._writes += 1
                self._candidates.clear()

    def _fresh_caches(self) -> None:
        """Drop the caches when anything was committed since they were built."""
        stamp = (self.conn.execute("PRAGMA data_version").fetchone()[0], self._writes)
        if stamp != self._cache_stamp:
            self._candidates.clear()
            self._cache_stamp = stamp

    def _node(self, row: Sequence[Any], embedding: bool | None = None) -> Node:
        rid, nid, account, labels, props, deleted, created, updated, dims, backlinks = row[:10]
        properties = json.loads(props)
        properties["accountId"] = account
        properties["createdAt"] = iso(created)
        properties["updatedAt"] = iso(updated)
        if deleted is not None:
            properties["deletedAt"] = iso(deleted)
        properties["backlinkCount"] = backlinks or 0
        return Node(nid, tuple(json.loads(labels)), properties, account, dims is not None)

    def _rows_by_rid(self, rids: Sequence[int]) -> dict[int, Node]:
        out: dict[int, Node] = {}
        for part in _chunks(list(rids)):
            for row in self.conn.execute(f"SELECT {NODE_COLS} FROM nodes n WHERE n.rid IN ({_marks(len(part))})",
                                         list(part)):
                out[row[0]] = self._node(row)
        return out

    # ------------------------------------------------------------------ writes
    def upsert_node(self, labels: Sequence[str], properties: Mapping[str, Any], *, account_id: str,
                    node_id: str | None = None, embedding: Sequence[float] | None = None,
                    guards: Guards | None = None) -> str:
        """Create or merge a node (properties merge, ``None`` removes a key, labels union).

        Ids are per account: another account's node with the same id is another node. With
        ``guards`` (every write tool passes the process's), the write runs under them
        (:func:`host.graph.check_write`): a stored node outside them, or a result outside them,
        raises ``WriteDenied`` and nothing is written.

        Upserting a soft-deleted node revives it. A ``KnowledgeDocument`` written without
        ``node_id`` whose ``attachmentId`` matches an existing document of the account is a
        re-ingest: that document is reused (revived) and its Section/Chunk hierarchy is removed,
        to be replaced by what the caller writes next.
        """
        check_account(self.account_id, account_id, node=node_id)
        _same_account(guards, account_id)
        item = prepare(labels, properties, account_id=account_id, node_id=node_id, embedding=embedding)
        with self._write() as conn:
            return self._upsert(conn, [item], account_id, guards)[0][0]

    def upsert_many(self, rows: Iterable[Mapping[str, Any]], *, account_id: str, guards: Guards | None = None) -> int:
        """Bulk upsert of ``{id?, labels, properties, embedding?, edges?}`` rows in one transaction.

        ``edges`` are ``{type, to, properties?}``; ``to`` names a node of the account (in the
        batch or the store; with ``guards``, one they can read). Any invalid row, unknown edge
        target or (with ``guards``) guarded node rejects the whole batch.
        """
        check_account(self.account_id, account_id)
        _same_account(guards, account_id)
        items, edges = prepare_rows(rows, account_id)
        if not items:
            return 0
        with self._write() as conn:
            ids, rids = self._upsert(conn, items, account_id, guards)
            missing = self._edges(conn, [(ids[i], t, to, p) for i, _, t, to, p in edges], account_id, rids,
                                  guards)
            if missing:
                i, j, _, to, _ = edges[missing[0]]
                raise UserError(f"rows[{i}].edges[{j}].to: node '{to}' not found in account '{account_id}'")
        return len(items)

    def import_batch(self, items: list[Prepared], edges: list[tuple[int, int, str, str, Any]], *,
                     account_id: str) -> tuple[list[str], list[int]]:
        """One committed import batch: nodes, then the edges whose targets exist.

        ``edges`` are ``(item index, edge index, type, to, properties)``; returns the node ids and
        the positions in ``edges`` whose target was not found (the importer retries them later).
        """
        check_account(self.account_id, account_id)
        with self._write() as conn:
            ids, rids = self._upsert(conn, items, account_id)
            missing = self._edges(conn, [(ids[i], t, to, p) for i, _, t, to, p in edges], account_id, rids)
        return ids, missing

    def _upsert(self, conn: sqlite3.Connection, items: list[Prepared], account_id: str,
                guards: Guards | None = None) -> tuple[list[str], dict[str, int]]:
        """Write prepared nodes inside the caller's transaction; returns their ids and rids.

        With ``guards``, every node is checked (:func:`host.graph.check_write`) against its
        stored state read here, in the write transaction, before anything is written.
        """
        now = time.time()
        for item in items:
            if item.id is None and "KnowledgeDocument" in item.labels and item.properties.get("attachmentId"):
                item.id = self._reingest(conn, account_id, item.properties["attachmentId"], guards)
        ids = [item.id or new_id() for item in items]
        existing: dict[str, tuple[int, str, str, str]] = {}
        explicit = list(dict.fromkeys(item.id for item in items if item.id is not None))
        for part in _chunks(explicit):
            for row in conn.execute(
                f"SELECT id, rid, account_id, labels, properties FROM nodes WHERE id IN ({_marks(len(part))}) "
                "AND account_id = ?", [*part, account_id],
            ):
                existing[row[0]] = row[1:]
        next_rid = conn.execute("SELECT coalesce(max(rid), 0) FROM nodes").fetchone()[0] + 1
        # id -> [rid, labels, props, props_json or None, is_new, embedding]
        state: dict[str, list[Any]] = {}
        for nid, item in zip(ids, items, strict=True):
            cur = state.get(nid)
            if cur is None and nid not in existing:
                props = item.properties if item.props_json is not None else \
                    {k: v for k, v in item.properties.items() if v is not None}
                state[nid] = [next_rid, list(item.labels), props, item.props_json, True, item.embedding]
                next_rid += 1
                continue
            if cur is None:
                rid, _, labels_text, props_json = existing[nid]
                cur = state[nid] = [rid, json.loads(labels_text), json.loads(props_json), None, False, None]
            labels, props = cur[1], cur[2]
            labels.extend(lab for lab in item.labels if lab not in labels)
            for key, value in item.properties.items():
                if value is None:
                    props.pop(key, None)
                else:
                    props[key] = value
            cur[3] = None
            if item.embedding is not None:
                cur[5] = item.embedding
        if guards is not None:
            self._check_guards(guards, state, existing)
        inserts, updates, vectors, side = [], [], [], []
        labels_rows: list[Any] = []
        agent_rows: list[Any] = []
        keyword_rows: list[Any] = []
        text_rows: list[Any] = []
        for nid, (rid, labels, props, props_json, is_new, emb) in state.items():
            agents = props.get("agents")
            row_json = props_json or json.dumps(props)
            agents_text = to_json(agents) if agents is not None else None
            if is_new:
                inserts.append((rid, nid, account_id, labels_json(labels), row_json, props.get("scope"), agents_text,
                                now, now, len(emb) if emb is not None else None))
                if emb is not None:
                    vectors.append((np.asarray(emb, dtype=np.float32).tobytes(), len(emb), rid))
            else:
                updates.append((labels_json(labels), row_json, props.get("scope"), agents_text, now, rid))
                side.append(rid)
                if emb is not None:
                    vectors.append((np.asarray(emb, dtype=np.float32).tobytes(), len(emb), rid))
            labels_rows.extend((lab, rid) for lab in labels)
            if agents:
                agent_rows.extend((ag, rid) for ag in dict.fromkeys(agents))
            if props.get("keywords") is not None:
                keyword_rows.extend((kw, rid) for kw in keywords_of(props))
            text = text_of(props)
            if text:
                text_rows.append((rid, text))
        if inserts:
            conn.executemany("INSERT INTO nodes (rid, id, account_id, labels, properties, scope, agents, "
                             "created_at, updated_at, dims) VALUES (?,?,?,?,?,?,?,?,?,?)", inserts)
        if updates:
            conn.executemany("UPDATE nodes SET labels = ?, properties = ?, scope = ?, agents = ?, "
                             "deleted_at = NULL, updated_at = ? WHERE rid = ?", updates)
            for part in _chunks(side):
                marks = _marks(len(part))
                for table in ("node_labels", "node_agents", "node_keywords"):
                    conn.execute(f"DELETE FROM {table} WHERE node IN ({marks})", list(part))
                conn.execute(f"DELETE FROM node_text WHERE rowid IN ({marks})", list(part))
                conn.execute(f"DELETE FROM node_text_stem WHERE rowid IN ({marks})", list(part))
        if vectors:
            self._write_vectors(conn, vectors)
        conn.executemany("INSERT OR IGNORE INTO node_labels (label, node) VALUES (?, ?)", labels_rows)
        if agent_rows:
            conn.executemany("INSERT OR IGNORE INTO node_agents (agent, node) VALUES (?, ?)", agent_rows)
        if keyword_rows:
            conn.executemany("INSERT OR IGNORE INTO node_keywords (keyword, node) VALUES (?, ?)", keyword_rows)
        if text_rows:
            conn.executemany("INSERT INTO node_text (rowid, text) VALUES (?, ?)", text_rows)
            conn.executemany("INSERT INTO node_text_stem (rowid, text) VALUES (?, ?)", text_rows)
        return ids, {nid: cur[0] for nid, cur in state.items()}

    @staticmethod
    def _check_guards(guards: Guards, state: dict[str, list[Any]], existing: Mapping[str, Sequence[Any]]) -> None:
        """Every node of one write, from its stored state to the merged one, under the guards;
        a narrowed process's new node gets its own scope / agent when it names none."""
        for nid, cur in state.items():
            before = json.loads(existing[nid][3]) if nid in existing else None
            if before is None:
                extra = write_defaults(guards, cur[2])
                if extra:
                    cur[2] = {**cur[2], **extra}
                    cur[3] = None
            check_write(guards, nid, before, cur[2])

    @staticmethod
    def _write_vectors(conn: sqlite3.Connection, vectors: list[tuple[bytes, int, int]]) -> None:
        """``(float32 bytes, dims, rid)`` rows: the vector table and the node's ``dims``."""
        seq = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM node_vectors").fetchone()[0]
        conn.executemany("INSERT INTO node_vectors (node, seq, embedding) VALUES (?, ?, ?) "
                         "ON CONFLICT (node) DO UPDATE SET embedding = excluded.embedding, seq = excluded.seq",
                         [(rid, seq, blob) for blob, _, rid in vectors])
        conn.executemany("UPDATE nodes SET dims = ? WHERE rid = ? AND dims IS NOT ?",
                         [(dims, rid, dims) for _, dims, rid in vectors])

    def _reingest(self, conn: sqlite3.Connection, account_id: str, attachment_id: Any,
                  guards: Guards | None = None) -> str | None:
        """Find the document an attachment was ingested as; drop its hierarchy for replacement.

        With ``guards``, the document and every node of its hierarchy must be within them
        (``WriteDenied`` otherwise): a re-ingest replaces them all.
        """
        row = conn.execute(
            "SELECT n.rid, n.id FROM nodes n JOIN node_labels l ON l.node = n.rid AND l.label = 'KnowledgeDocument' "
            "WHERE n.account_id = ? AND json_extract(n.properties, '$.attachmentId') = ? "
            "ORDER BY n.deleted_at IS NOT NULL, n.updated_at DESC LIMIT 1",
            (account_id, attachment_id),
        ).fetchone()
        if row is None:
            return None
        tree = self._hierarchy(conn, row[0], account_id)
        if guards is not None and len(self._within(conn, tree, guards)) != len(tree):
            raise WriteDenied(f"attachmentId: document '{row[1]}' (or part of it) is outside what this process "
                              "can read (ALLOWED_SCOPES / AGENT_SLUG); nothing was written")
        children = [r for r in tree if r != row[0]]
        for part in _chunks(children):
            conn.execute(f"DELETE FROM nodes WHERE rid IN ({_marks(len(part))})", list(part))
        return row[1]

    @staticmethod
    def _within(conn: sqlite3.Connection, rids: Sequence[int], guards: Guards) -> list[int]:
        """The rids among ``rids`` whose node is within the guards, soft delete aside (a cascade's reach)."""
        if guards.allowed_scopes is None and guards.agent_slug is None:
            return list(rids)
        keep: set[int] = set()
        for part in _chunks(list(rids)):
            keep.update(rid for rid, props in conn.execute(
                f"SELECT rid, properties FROM nodes WHERE rid IN ({_marks(len(part))})", list(part))
                if can_change(guards, json.loads(props)))
        return [r for r in rids if r in keep]

    def _hierarchy(self, conn: sqlite3.Connection, rid: int, account_id: str) -> list[int]:
        """The node and, for a KnowledgeDocument or Section, its Section → Chunk descendants.

        Levels follow outgoing edges: a document's Section children, then their Chunk children
        (a Section node starts at the second level). Other nodes have no hierarchy.
        """
        labels = {r[0] for r in conn.execute("SELECT label FROM node_labels WHERE node = ?", (rid,))}
        start = 0 if "KnowledgeDocument" in labels else 1 if "Section" in labels else None
        if start is None:
            return [rid]
        rows = conn.execute(
            """WITH RECURSIVE tree(rid, level) AS (
                  SELECT ?, ?
                  UNION
                  SELECT e.target, t.level + 1 FROM tree t JOIN edges e ON e.source = t.rid
                  JOIN nodes c ON c.rid = e.target AND c.account_id = ?
                  JOIN node_labels l ON l.node = e.target
                   AND l.label = CASE t.level WHEN 0 THEN 'Section' ELSE 'Chunk' END
                  WHERE t.level < 2)
                SELECT DISTINCT rid FROM tree""",
            (rid, start, account_id),
        ).fetchall()
        return [r[0] for r in rows]

    def create_edge(self, source_id: str, target_id: str, edge_type: str,
                    properties: Mapping[str, Any] | None = None, *, account_id: str) -> None:
        """MERGE a typed edge between two nodes of the account; ``backlinkCount`` follows."""
        check_account(self.account_id, account_id)
        etype, to, props = check_edge({"type": edge_type, "to": target_id, "properties": properties}, "edge")
        with self._write() as conn:
            src = conn.execute("SELECT rid FROM nodes WHERE id = ? AND +account_id = ?",
                               (source_id, account_id)).fetchone()
            if src is None:
                raise UserError(f"edge.source: node '{source_id}' not found in account '{account_id}'")
            if self._edges(conn, [(source_id, etype, to, props)], account_id):
                raise UserError(f"edge.target: node '{to}' not found in account '{account_id}'")

    def create_edges(self, edges: Iterable[tuple[str, str, str, Mapping[str, Any] | None]], *,
                     account_id: str, validated: bool = False) -> list[int]:
        """Bulk MERGE of ``(source, type, target, properties)``; returns positions with an unknown end.

        ``validated=True`` skips re-checking edges that already went through ``check_edge``.
        """
        check_account(self.account_id, account_id)
        wanted = []
        for i, (src, etype, dst, props) in enumerate(edges):
            if not validated:
                etype, dst, props = check_edge({"type": etype, "to": dst, "properties": props}, f"edges[{i}]")
            wanted.append((src, etype, dst, props))
        with self._write() as conn:
            return self._edges(conn, wanted, account_id)

    def _edges(self, conn: sqlite3.Connection, wanted: list[tuple[str, str, str, Any]], account_id: str,
               known: Mapping[str, int] | None = None, guards: Guards | None = None) -> list[int]:
        """MERGE edges given by node ids; returns the positions in ``wanted`` with an unknown end.

        With ``guards``, an end outside ``known`` counts only if the guards can read it (live):
        an edge to a node the process cannot see is an edge to an unknown node.
        """
        if not wanted:
            return []
        rids: dict[str, int] = dict(known or {})
        names = sorted(({w[0] for w in wanted} | {w[2] for w in wanted}) - rids.keys())
        cond, params = guard_sql(guards) if guards is not None else ("n.account_id = ?", [account_id])
        for part in _chunks(names):
            rids.update(conn.execute(
                f"SELECT n.id, n.rid FROM nodes n WHERE n.id IN ({_marks(len(part))}) AND {cond}",
                [*part, *params]))
        now = time.time()
        rows: list[Any] = []
        missing: list[Any] = []
        get, dumps, add = rids.get, json.dumps, rows.append
        for pos, (src, etype, dst, props) in enumerate(wanted):
            s, d = get(src), get(dst)
            if s is None or d is None:
                missing.append(pos)
                continue
            add((s, etype, d, dumps(props) if props else None, now))
        if not rows:
            return missing
        conn.execute(EDGE_BATCH_TABLE)
        conn.execute("DELETE FROM temp.edge_batch")
        conn.executemany("INSERT INTO temp.edge_batch (source, type, target, properties, created_at) "
                         "VALUES (?,?,?,?,?)", rows)
        self._merge_edge_batch(conn)
        return missing

    @staticmethod
    def _merge_edge_batch(conn: sqlite3.Connection) -> int:
        """MERGE the resolved rows of ``temp.edge_batch`` into ``edges`` in order; returns how many
        there were (see :func:`_merge_edges`)."""
        rows = conn.execute("SELECT count(target) FROM temp.edge_batch").fetchone()[0]
        if rows:
            _merge_edges(conn, "SELECT source, type, target, properties, created_at FROM temp.edge_batch "
                               "WHERE target IS NOT NULL ORDER BY rowid")
        conn.execute("DELETE FROM temp.edge_batch")
        return rows

    # ------------------------------------------------------------------ bulk import
    @contextmanager
    def bulk_import(self, account_id: str) -> Iterator[BulkImport]:
        """A staged bulk import (:mod:`plugins.graph.staging`): ``add`` writes each frame in order."""
        check_account(self.account_id, account_id)
        with self._import_lock, self._bulk_session():
            yield BulkImport(self, account_id)

    @contextmanager
    def _bulk_session(self) -> Iterator[None]:
        """The attached ``stage`` schema and a bigger page cache, for the length of one import."""
        with self._lock:
            cache = self.conn.execute("PRAGMA cache_size").fetchone()[0]
            self.conn.execute(f"PRAGMA cache_size = {-IMPORT_CACHE_KIB}")
            self.conn.execute("ATTACH ':memory:' AS stage")
        try:
            yield
        finally:
            with self._lock:
                self.conn.execute("DROP TABLE IF EXISTS temp.import_base")
                self.conn.execute("DROP TABLE IF EXISTS temp.import_moved")
                self.conn.execute("DROP TABLE IF EXISTS temp.import_hit")
                self.conn.execute("DETACH stage")
                self.conn.execute(f"PRAGMA cache_size = {int(cache)}")

    def delete_edge(self, source_id: str, target_id: str, edge_type: str, *, account_id: str) -> int:
        check_account(self.account_id, account_id)
        with self._write() as conn:
            cur = conn.execute(
                "DELETE FROM edges WHERE type = ? AND source = (SELECT rid FROM nodes WHERE id = ? AND +account_id = ?) "
                "AND target = (SELECT rid FROM nodes WHERE id = ? AND +account_id = ?)",
                (edge_type, source_id, account_id, target_id, account_id))
            return cur.rowcount

    def set_embedding(self, node_id: str, vector: Sequence[float], *, account_id: str) -> None:
        if self.set_embeddings([(node_id, vector)], account_id=account_id) == 0:
            raise UserError(f"node: '{node_id}' not found in account '{account_id}'")

    def set_embeddings(self, items: Iterable[tuple[str, Sequence[float]]], *, account_id: str) -> int:
        """Bulk embedding write; returns how many nodes of the account were updated."""
        check_account(self.account_id, account_id)
        rows = []
        for i, (nid, vector) in enumerate(items):
            vec = check_embedding(vector, f"embeddings[{i}]")
            arr = np.asarray(vec, dtype=np.float32)
            rows.append((nid, arr.tobytes(), len(arr)))
        with self._write() as conn:
            rids: dict[str, int] = {}
            ids = list(dict.fromkeys(r[0] for r in rows))
            for part in _chunks(ids):
                rids.update(conn.execute(f"SELECT id, rid FROM nodes WHERE +account_id = ? AND id IN "
                                         f"({_marks(len(part))})", [account_id, *part]))
            vectors = [(blob, dims, rids[nid]) for nid, blob, dims in rows if nid in rids]
            self._write_vectors(conn, vectors)
            return len(vectors)

    def soft_delete(self, node_id: str, *, guards: Guards) -> int:
        """Set ``deletedAt`` on the node and, for a document or section, its Section/Chunk hierarchy."""
        return self._set_deleted(node_id, guards, time.time())

    def restore(self, node_id: str, *, guards: Guards) -> int:
        """Clear ``deletedAt`` on the node and its hierarchy."""
        return self._set_deleted(node_id, guards, None)

    def _set_deleted(self, node_id: str, guards: Guards, when: float | None) -> int:
        g = guards_ok(guards)
        check_account(self.account_id, g.account_id, node=node_id)
        cond, params = guard_sql(g)
        cond = cond.replace("n.deleted_at IS NULL", "1")  # the node itself may be deleted (restore)
        with self._write() as conn:
            row = conn.execute(f"SELECT n.rid FROM nodes n WHERE n.id = ? AND {cond}", [node_id, *params]).fetchone()
            if row is None:
                return 0
            rids = self._within(conn, self._hierarchy(conn, row[0], g.account_id), g)  # the cascade stays inside
            touched = 0
            for part in _chunks(rids):
                flip = "deleted_at IS NULL" if when is not None else "deleted_at IS NOT NULL"
                cur = conn.execute(f"UPDATE nodes SET deleted_at = ?, updated_at = ? WHERE rid IN "
                                   f"({_marks(len(part))}) AND {flip}", [when, time.time(), *part])
                touched += cur.rowcount
            return touched

    def purge(self, *, older_than_days: float = GRACE_DAYS, account_id: str | None = None) -> int:
        """Hard-delete nodes soft-deleted longer ago than the grace period (edges go with them)."""
        cutoff = time.time() - older_than_days * 86400.0
        sql = "DELETE FROM nodes WHERE deleted_at IS NOT NULL AND deleted_at <= ?"
        params: list[Any] = [cutoff]
        if account_id is not None:
            sql += " AND account_id = ?"
            params.append(account_id)
        with self._write() as conn:
            return conn.execute(sql, params).rowcount

    # ------------------------------------------------------------------ reads
    def get(self, node_id: str, *, guards: Guards, include_deleted: bool = False) -> Node | None:
        cond, params = guard_sql(guards_ok(guards))
        if include_deleted:
            cond = cond.replace("n.deleted_at IS NULL", "1")
        with self._lock:
            row = self.conn.execute(f"SELECT {NODE_COLS} FROM nodes n WHERE n.id = ? AND {cond}",
                                    [node_id, *params]).fetchone()
        return self._node(row) if row else None

    def get_embedding(self, node_id: str, *, guards: Guards) -> list[float] | None:
        cond, params = guard_sql(guards_ok(guards))
        with self._lock:
            row = self.conn.execute(f"SELECT v.embedding FROM nodes n JOIN node_vectors v ON v.node = n.rid "
                                    f"WHERE n.id = ? AND {cond}",
                                    [node_id, *params]).fetchone()
        if not row or row[0] is None:
            return None
        return np.frombuffer(row[0], dtype=np.float32).tolist()

    def find(self, *, guards: Guards, labels: Sequence[str] | None = None, where: Mapping[str, Any] | None = None,
             order_by: str | None = None, descending: bool = True, limit: int = 100, offset: int = 0) -> list[Node]:
        """Exact-property lookup (``where`` is equality on properties), guarded and paginated."""
        cond, params = guard_sql(guards_ok(guards))
        lab, lparams = label_sql(labels)
        sql = f"SELECT {NODE_COLS} FROM nodes n WHERE {cond}{lab}"
        params += lparams
        wh, wparams = where_sql(where)
        sql += wh
        params += wparams
        order = _prop_expr(order_by) if order_by else "n.updated_at"
        sql += f" ORDER BY {order} {'DESC' if descending else 'ASC'}, n.rid LIMIT ? OFFSET ?"
        params += [max(0, int(limit)), max(0, int(offset))]
        with self._lock:
            return [self._node(r) for r in self.conn.execute(sql, params)]

    def count(self, *, guards: Guards, labels: Sequence[str] | None = None) -> int:
        cond, params = guard_sql(guards_ok(guards))
        lab, lparams = label_sql(labels)
        with self._lock:
            return self.conn.execute(f"SELECT count(*) FROM nodes n WHERE {cond}{lab}", params + lparams).fetchone()[0]

    def fulltext_search(self, query: str, k: int, *, guards: Guards, labels: Sequence[str] | None = None,
                        where: Mapping[str, Any] | None = None,
                        within: tuple[str, str] | None = None, stemmed: bool = False) -> list[Hit]:
        """BM25 over the text-property union; user text never reaches FTS5 syntax, so never raises.

        ``where`` (property equality) and ``within`` (targets of one node's edges of one type,
        applied inside the FTS scan) filter inside the guarded query, before the top-k cut.
        ``stemmed`` ranks on the porter-stemmed shadow index (same rows, same text) instead.
        """
        table = "node_text_stem" if stemmed else "node_text"
        terms = fts_terms(query)
        if not terms or k <= 0:
            return []
        match = " OR ".join('"' + " ".join(t) + '"' for t in terms)
        g = guards_ok(guards)
        cond, params = guard_sql(g)
        lab, lparams = label_sql(labels)
        wh, wparams = where_sql(where)
        lab, lparams = lab + wh, lparams + wparams
        inside, iparams = within_sql(within, g.account_id, "rowid")
        # The guards run in SQL on a window of the best-ranked matches (FTS5 keeps a top-N heap for
        # ORDER BY rank LIMIT N, far cheaper than sorting every match); when fewer than k rows
        # survive and the window was full, it doubles. The guarded rows come out in rank order, so
        # any k of them taken from a window prefix are exactly the guarded top-k.
        sql = (f"SELECT n.rid, w.rank FROM (SELECT rowid, rank FROM {table} WHERE {table} MATCH ?{inside} "
               f"ORDER BY rank LIMIT ?) w CROSS JOIN nodes n ON n.rid = w.rowid "
               f"WHERE {cond}{lab} ORDER BY w.rank LIMIT ?")
        window = max(int(k) * FTS_WINDOW, 64)
        with self._lock:
            while True:
                ranked = self.conn.execute(sql, [match, *iparams, window, *params, *lparams, int(k)]).fetchall()
                if len(ranked) >= k:
                    break
                total = self.conn.execute(f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} "
                                          f"MATCH ?{inside} LIMIT ?)", (match, *iparams, window + 1)).fetchone()[0]
                if total <= window:
                    break
                window *= 4
            nodes = self._rows_by_rid([r[0] for r in ranked])
        return [Hit(nodes[rid], -float(rank)) for rid, rank in ranked if rid in nodes]

    def keyword_search(self, keyword: str, k: int, *, guards: Guards,
                       labels: Sequence[str] | None = None) -> list[Hit]:
        tag = str(keyword).strip().lower()
        if not tag or k <= 0:
            return []
        cond, params = guard_sql(guards_ok(guards))
        lab, lparams = label_sql(labels)
        sql = (f"SELECT n.rid FROM node_keywords kw CROSS JOIN nodes n ON n.rid = kw.node "
               f"WHERE kw.keyword = ? AND {cond}{lab} ORDER BY n.updated_at DESC, n.rid LIMIT ?")
        with self._lock:
            rids = [r[0] for r in self.conn.execute(sql, [tag, *params, *lparams, int(k)])]
            nodes = self._rows_by_rid(rids)
        return [Hit(nodes[rid], 1.0) for rid in rids if rid in nodes]

    def vector_search(self, vector: Sequence[float], k: int, *, guards: Guards, labels: Sequence[str] | None = None,
                      where: Mapping[str, Any] | None = None, within: tuple[str, str] | None = None) -> list[Hit]:
        """Exact cosine top-k over the guarded nodes that have a vector of this length.

        The guards are SQL, applied before the cut, on one of two paths: when the guarded
        candidate set of these guards is cached (no write since), numpy scores exactly those
        rows; otherwise numpy scores the account's matrix and SQL keeps the guarded rows of a
        score-ordered window that widens until k pass (those are exactly the guarded top-k);
        guards so selective that the window would pass ``VECTOR_WINDOW_MAX`` rows select and
        cache the full candidate set instead. ``where`` / ``within`` (as in
        :meth:`fulltext_search`) always take the candidate path: they are selective by intent.
        """
        g = guards_ok(guards)
        q64 = np.asarray(check_embedding(vector, "vector"), dtype=np.float64)
        if k <= 0:
            return []
        norm = float(np.linalg.norm(q64))
        if norm == 0.0:
            return []
        q = (q64 / norm).astype(np.float32)
        dims = len(q)
        with self._lock:
            self._fresh_caches()
            rids, matrix = self._matrix(g.account_id, dims)
            if len(rids) == 0:
                return []
            cands = self._candidates.get(_candidate_key(g, labels, dims, where, within))
            if cands is None:
                ranked = None
                if self.vector_window_max > 0 and not (where or within):
                    ranked = self._window_top_k(rids, self._scores(matrix, q), int(k), g, labels, dims)
                if ranked is None:
                    cands = self._candidate_rids(g, labels, dims, where, within)
            if cands is not None:
                ranked = self._candidate_top_k(rids, matrix, q, cands, int(k))
            assert ranked is not None  # the window answered, or the candidates did
            nodes = self._rows_by_rid([rid for rid, _ in ranked])
        return [Hit(nodes[rid], score) for rid, score in ranked if rid in nodes]

    def _window_top_k(self, rids: np.ndarray, scores: np.ndarray, k: int, g: Guards,
                      labels: Sequence[str] | None, dims: int) -> list[tuple[int, float]] | None:
        """Guarded top-k from a widening window of the best scores; None when it grows too wide."""
        cond, params = guard_sql(g)
        lab, lparams = label_sql(labels)
        sql = (f"SELECT n.rid FROM json_each(?) w CROSS JOIN nodes n ON n.rid = w.value WHERE n.dims = ? "
               f"AND {cond}{lab}")  # CROSS JOIN: walk the window, never the account's index
        n = len(scores)
        window = min(n, max(k * 8, 64))
        while True:
            if window >= n:
                top = np.argsort(-scores, kind="stable")
            else:
                part = np.argpartition(-scores, window - 1)[:window]
                top = part[np.argsort(-scores[part], kind="stable")]
            ids = rids[top].tolist()
            passed = {r[0] for r in self.conn.execute(sql, [json.dumps(ids), dims, *params, *lparams])}
            chosen = [(rid, float(scores[i])) for rid, i in zip(ids, top.tolist(), strict=True) if rid in passed][:k]
            if len(chosen) >= k or window >= n:
                return chosen
            if window * 4 > self.vector_window_max:
                return None
            window = min(n, window * 4)

    def _scores(self, matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``matrix @ q``, in ``vector_threads`` slices at once when the matrix is tall enough."""
        n, threads = len(matrix), self.vector_threads
        if threads < 2 or n < self.vector_split_rows:
            return matrix @ q
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # 17 ms of imports: off the boot path

            self._pool = ThreadPoolExecutor(threads - 1, thread_name_prefix="plughost-vector")
        out = np.empty(n, dtype=np.result_type(matrix, q))
        step = -(-n // threads)
        slices = [self._pool.submit(np.matmul, matrix[i:i + step], q, out=out[i:i + step])
                  for i in range(step, n, step)]
        np.matmul(matrix[:step], q, out=out[:step])
        for part in slices:
            part.result()
        return out

    def _candidate_top_k(self, rids: np.ndarray, matrix: np.ndarray, q: np.ndarray, cands: np.ndarray,
                         k: int) -> list[tuple[int, float]]:
        """Exact top-k over a guarded candidate set (rids selected by SQL)."""
        if len(cands) == 0:
            return []
        pos = np.minimum(np.searchsorted(rids, cands), len(rids) - 1)
        pos = pos[rids[pos] == cands]
        if len(pos) == 0:
            return []
        scores = self._scores(matrix, q)[pos] if len(pos) * 10 > len(rids) else matrix[pos] @ q
        take = min(k, len(pos))
        top = np.argpartition(-scores, take - 1)[:take] if take < len(pos) else np.arange(len(pos))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(rids[pos[i]]), float(scores[i])) for i in top]

    def _matrix(self, account_id: str, dims: int) -> tuple[np.ndarray, np.ndarray]:
        """The account's unit-normalised vectors of one length, sorted by rid (cached).

        The cache survives writes: vectors written since it was built (``seq`` above the cached
        one, by any process) are patched in place, and new nodes (whose rids come after every
        cached one) are appended into spare capacity, so a write costs what it wrote, not a
        reload. Rows of nodes deleted or re-dimensioned since stay behind but are never
        candidates, since candidates come from SQL.
        """
        key = (account_id, dims)
        top = self.conn.execute("SELECT coalesce(max(seq), 0) FROM node_vectors").fetchone()[0]
        cached = self._matrices.get(key)
        if cached is not None and cached[0] == top:
            return cached[1][: cached[3]], cached[2][: cached[3]]
        since = cached[0] if cached is not None else -1
        rows = self.conn.execute(
            "SELECT n.rid, v.embedding FROM node_vectors v CROSS JOIN nodes n ON n.rid = v.node "
            "WHERE v.seq > ? AND v.seq <= ? AND n.account_id = ? AND n.dims = ? ORDER BY n.rid",
            (since, top, account_id, dims)).fetchall()
        new_rids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        new = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dims).copy()
        norms = np.linalg.norm(new, axis=1)
        norms[norms == 0] = 1.0
        new /= norms[:, None]
        if cached is None:
            entry = (top, new_rids, new, len(new_rids))
        else:
            _, rid_buf, mat_buf, n = cached
            rids = rid_buf[:n]
            pos = np.minimum(np.searchsorted(rids, new_rids), max(n - 1, 0))
            known = (rids[pos] == new_rids) if n else np.zeros(len(new_rids), dtype=bool)
            mat_buf[pos[known]] = new[known]
            fresh_rids, fresh = new_rids[~known], new[~known]
            if len(fresh_rids) and n and fresh_rids[0] <= rids[-1]:  # a reused rid: rebuild once
                del self._matrices[key]
                return self._matrix(account_id, dims)
            if n + len(fresh_rids) > len(rid_buf):
                capacity = max(n + len(fresh_rids), int(len(rid_buf) * 1.25) + 1024)
                rid_buf = np.concatenate([rid_buf[:n], np.zeros(capacity - n, dtype=np.int64)])
                grown = np.empty((capacity, dims), dtype=np.float32)
                grown[:n] = mat_buf[:n]
                mat_buf = grown
            rid_buf[n:n + len(fresh_rids)] = fresh_rids
            mat_buf[n:n + len(fresh_rids)] = fresh
            entry = (top, rid_buf, mat_buf, n + len(fresh_rids))
        self._matrices[key] = entry
        return entry[1][: entry[3]], entry[2][: entry[3]]

    def _candidate_rids(self, g: Guards, labels: Sequence[str] | None, dims: int,
                        where: Mapping[str, Any] | None = None,
                        within: tuple[str, str] | None = None) -> np.ndarray:
        """Guarded candidate rows for vector search, selected by SQL (cached until the next write)."""
        key = _candidate_key(g, labels, dims, where, within)
        hit = self._candidates.get(key)
        if hit is not None:
            self._candidates.move_to_end(key)
            return hit
        cond, params = guard_sql(g)
        lab, lparams = label_sql(labels)
        if where or within:  # selective filters: let SQLite start from them, not the guard index
            wh, wparams = where_sql(where)
            inside, iparams = within_sql(within, g.account_id, "n.rid")
            rows = self.conn.execute(f"SELECT n.rid FROM nodes n WHERE n.dims = ?{inside} AND {cond}{lab}{wh}",
                                     [dims, *iparams, *params, *lparams, *wparams]).fetchall()
        else:
            rows = self.conn.execute(f"SELECT n.rid FROM nodes n INDEXED BY nodes_vector_guard WHERE n.dims = ? "
                                     f"AND {cond}{lab}", [dims, *params, *lparams]).fetchall()
        cands = np.sort(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
        self._candidates[key] = cands
        while len(self._candidates) > 32:
            self._candidates.popitem(last=False)
        return cands

    def expand(self, node_ids: Sequence[str], *, guards: Guards, limit: int = EXPAND_LIMIT) -> dict[str, list[Neighbor]]:
        """1-hop neighbours per origin, both directions, at most ``limit`` each, guard layer 4."""
        g = guards_ok(guards)
        limit = max(0, min(int(limit), EXPAND_LIMIT))
        cond, params = guard_sql(g, "m", related=True)
        cols = NODE_COLS.replace("n.", "m.")
        sql = (f"SELECT * FROM (SELECT e.type, 'out', e.properties, {cols} FROM edges e JOIN nodes m ON m.rid = e.target "
               f"WHERE e.source = ? AND {cond} UNION ALL "
               f"SELECT e.type, 'in', e.properties, {cols} FROM edges e JOIN nodes m ON m.rid = e.source "
               f"WHERE e.target = ? AND {cond}) LIMIT ?")
        out: dict[str, list[Neighbor]] = {}
        with self._lock:
            for nid in dict.fromkeys(node_ids):
                origin = self.conn.execute("SELECT rid FROM nodes WHERE id = ? AND +account_id = ? AND deleted_at IS NULL",
                                           (nid, g.account_id)).fetchone()
                if origin is None:
                    out[nid] = []
                    continue
                rows = self.conn.execute(sql, [origin[0], *params, origin[0], *params, limit]).fetchall()
                out[nid] = [Neighbor(self._node(r[3:]), r[0], r[1], json.loads(r[2]) if r[2] else {}) for r in rows]
        return out

    def missing_embeddings(self, *, account_id: str, labels: Sequence[str] | None = None,
                           exclude: Iterable[str] = (), limit: int = 100) -> list[Node]:
        """Live nodes of vector-indexed labels (or ``labels``) without an embedding."""
        labs = check_labels(labels) if labels else VECTOR_LABELS
        skip = list(dict.fromkeys(exclude))
        sql = (f"SELECT {NODE_COLS} FROM nodes n WHERE n.account_id = ? AND n.deleted_at IS NULL AND n.dims IS NULL "
               f"AND EXISTS (SELECT 1 FROM node_labels nl WHERE nl.node = n.rid AND nl.label IN ({_marks(len(labs))}))")
        params: list[Any] = [account_id, *labs]
        if skip:
            sql += " AND n.id NOT IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(skip))
        sql += " ORDER BY n.rid LIMIT ?"
        params.append(max(0, int(limit)))
        with self._lock:
            return [self._node(r) for r in self.conn.execute(sql, params)]

    def vector_indexes(self) -> dict[str, int]:
        """Index discovery: every vector-indexed label of the schema, at the configured dimensions."""
        with self._lock:
            labels = [r[0] for r in self.conn.execute("SELECT label FROM vector_labels ORDER BY label")]
        return {label: self.dimensions for label in labels}

    def clear_index_cache(self) -> None:
        """Nothing is cached for discovery on the embedded store (the schema is a table)."""

    def query(self, text: str, params: Mapping[str, Any] | None = None, *, guards: Guards,
              read_only: bool = True) -> list[dict[str, Any]]:
        raise UserError("query: Cypher needs the Neo4j backend (set NEO4J_URI); this install uses the embedded "
                        "SQLite store — use graph-neighbors or graph-schema instead")

    def schema(self, *, guards: Guards) -> dict[str, Any]:
        """Labels, edge types and property keys in use in the account, with counts."""
        g = guards_ok(guards)
        cond, params = guard_sql(g)
        with self._lock:
            labels = self.conn.execute(
                f"SELECT nl.label, count(*) FROM node_labels nl JOIN nodes n ON n.rid = nl.node WHERE {cond} "
                "GROUP BY nl.label ORDER BY nl.label", params).fetchall()
            rels = self.conn.execute(
                f"SELECT e.type, count(*) FROM edges e JOIN nodes n ON n.rid = e.source WHERE {cond} "
                "GROUP BY e.type ORDER BY e.type", params).fetchall()
            keys = self.conn.execute(
                f"SELECT DISTINCT j.key FROM (SELECT n.properties FROM nodes n WHERE {cond} LIMIT 2000) s, "
                "json_each(s.properties) j ORDER BY j.key", params).fetchall()
        return {
            "backend": self.backend,
            "labels": {name: count for name, count in labels},
            "relationshipTypes": {name: count for name, count in rels},
            "propertyKeys": [k[0] for k in keys],
            "vectorIndexes": self.vector_indexes(),
        }

    def integrity_check(self) -> str:
        with self._lock:
            return self.conn.execute("PRAGMA integrity_check").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            try:
                self.conn.close()
            except sqlite3.Error:
                pass
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None


def _same_account(guards: Guards | None, account_id: str) -> None:
    if guards is not None and guards.account_id != account_id:
        raise WriteDenied(f"accountId: '{account_id}' is not the guards' account; writes must target ACCOUNT_ID")


def vector_threads(env: Mapping[str, str]) -> int:
    """``PLUGHOST_VECTOR_THREADS``: threads that score one vector query (default: the cores, at most 4)."""
    raw = (env.get("PLUGHOST_VECTOR_THREADS") or "").strip()
    if not raw:
        return max(1, min(os.cpu_count() or 1, 4))
    if not raw.isdigit() or int(raw) < 1:
        raise UserError(f"PLUGHOST_VECTOR_THREADS: expected a whole number of threads (1 or more), got {raw!r}")
    return int(raw)


def _prop_expr(key: str) -> str:
    if key == "id":
        return "n.id"
    if key in ("createdAt", "updatedAt", "deletedAt"):
        return {"createdAt": "n.created_at", "updatedAt": "n.updated_at", "deletedAt": "n.deleted_at"}[key]
    if key == "backlinkCount":
        return BACKLINK_COUNT
    check_name(key, "property")
    return f"json_extract(n.properties, '$.\"{key}\"')"


def _merge_edges(conn: sqlite3.Connection, select: str, params: Sequence[Any] = ()) -> None:
    """MERGE the edges ``select`` yields (source, type, target, properties, created_at), in its
    order: a new edge is inserted; an existing one keeps its properties unless the row gives new
    ones. ``backlinkCount`` is read from ``edges_target``, so there is nothing else to maintain.
    (``select`` ends in WHERE or ORDER BY, which keeps SQLite from reading ON CONFLICT as a join.)"""
    conn.execute(f"INSERT INTO edges (source, type, target, properties, created_at) {select} "
                 "ON CONFLICT (source, type, target) DO UPDATE SET properties = excluded.properties "
                 "WHERE excluded.properties IS NOT NULL", params)


@dataclass
class StagedBatch:
    """What one staged frame did: nodes and edges written, lines rejected, how far the file was read."""

    nodes: int
    edges: int
    skips: list[tuple[int, str]]
    lines: int
    bytes: int


TYPES_INLINE = 32
"""Up to this many edge types, a staged edge's type name is a ``CASE`` on its code (a few compares);
beyond, a lookup in ``stage.types`` (several times the cost per edge)."""


def _type_names(conn: sqlite3.Connection) -> Callable[[str], str]:
    """For the attached frame: ``alias`` → SQL for the type name of staged edge ``alias`` (staged
    edges carry a type's code, see ``stage.types``)."""
    types = conn.execute(f"SELECT code, name FROM stage.types ORDER BY code LIMIT {TYPES_INLINE + 1}").fetchall()
    if not types:  # a frame without edges
        return lambda alias: "NULL"
    if len(types) > TYPES_INLINE:
        return lambda alias: f"(SELECT t.name FROM stage.types t WHERE t.code = {alias}.type)"
    # Names are checked identifiers (check_name); quoted all the same.
    whens = " ".join(f"WHEN {int(code)} THEN '{name.replace(chr(39), chr(39) * 2)}'" for code, name in types)
    return lambda alias: f"CASE {alias}.type {whens} END"


def _key_rid(key: str, moved: bool = True) -> str:
    """SQL for the rid of the staged row with key ``key`` (``batch << 32 | seq``): moved rows
    (upserts, slow rows) are recorded; every other row was written at its batch's base + seq.
    ``moved=False`` (no row of the import has moved) skips the first probe."""
    at_base = (f"(SELECT b.base FROM temp.import_base b WHERE b.batch = ({key}) >> {KEY_BITS}) "
               f"+ (({key}) & {(1 << KEY_BITS) - 1})")
    return f"coalesce((SELECT m.rid FROM temp.import_moved m WHERE m.key = {key}), {at_base})" if moved else at_base


class BulkImport:
    """One staged import into a :class:`SqliteStore` (from :meth:`SqliteStore.bulk_import`).

    Each :meth:`add` of a batch frame is one committed transaction. The store remembers where
    each batch's rows went (``temp.import_base`` / ``temp.import_moved``), so edges staged by row
    key need no id lookup; ``temp.import_hit`` lists the edges a store lookup already wrote.
    """

    def __init__(self, store: SqliteStore, account_id: str) -> None:
        self.store, self.account_id = store, account_id
        self.moved = False  # whether any row of this import moved (see _key_rid)
        self.hits = False  # whether any edge staged by id was written through a store lookup
        self.created = 0  # what the final frame's lookups did (finish)
        self.unresolved: list[Any] = []
        self.type_name: Callable[[str], str] = str  # the attached frame's (set by add)
        with store._lock:
            for ddl in ("CREATE TEMP TABLE IF NOT EXISTS import_base (batch INTEGER PRIMARY KEY, base INTEGER)",
                        "CREATE TEMP TABLE IF NOT EXISTS import_moved (key INTEGER PRIMARY KEY, rid INTEGER)",
                        "CREATE TEMP TABLE IF NOT EXISTS import_hit (pid INTEGER PRIMARY KEY)",
                        EDGE_BATCH_TABLE):
                store.conn.execute(ddl)
            # An account with no node when the import began: an edge to an id the file has not had
            # yet cannot hit a store lookup, so the stager stages none (Stager ``lookup``).
            self.empty = not store.conn.execute("SELECT EXISTS (SELECT 1 FROM nodes WHERE account_id = ?)",
                                                (account_id,)).fetchone()[0]

    def add(self, data: bytes) -> StagedBatch:
        """Write one serialised frame (:class:`plugins.graph.staging.Stager`)."""
        store = self.store
        with store._lock:
            conn = store.conn
            conn.deserialize(data, name="stage")
            batch, lines, size = conn.execute("SELECT batch, lines, bytes FROM stage.meta").fetchone()
            self.type_name = _type_names(conn)
            skips = conn.execute("SELECT lineno, message FROM stage.skips ORDER BY rowid").fetchall()
            if batch == FINAL_BATCH:
                if conn.execute("SELECT EXISTS (SELECT 1 FROM stage.unresolved)").fetchone()[0]:
                    with store._write() as conn:
                        self._write_unresolved(conn)
                return StagedBatch(0, 0, skips, lines, size)
            if not conn.execute("SELECT EXISTS (SELECT 1 FROM stage.nodes)").fetchone()[0]:
                return StagedBatch(0, 0, skips, lines, size)
            with store._write() as conn:
                nodes, edges = self._write_batch(conn, batch)
            return StagedBatch(nodes, edges, skips, lines, size)

    def _write_batch(self, conn: sqlite3.Connection, batch: int) -> tuple[int, int]:
        store, account_id, now = self.store, self.account_id, time.time()
        # A fast row whose id is already stored is an upsert: it joins the slow rows.
        if conn.execute("INSERT INTO stage.slow (seq, embedding) SELECT s.seq, 0 FROM stage.nodes s "
                        "WHERE s.seq NOT IN (SELECT w.seq FROM stage.slow w) "
                        "AND EXISTS (SELECT 1 FROM main.nodes n WHERE n.id = s.id AND +n.account_id = ?)",
                        (account_id,)).rowcount:
            conn.execute("DELETE FROM stage.keywords WHERE seq IN (SELECT seq FROM stage.slow)")
        has_slow = conn.execute("SELECT EXISTS (SELECT 1 FROM stage.slow)").fetchone()[0]
        fast = "n.seq NOT IN (SELECT w.seq FROM stage.slow w)" if has_slow else "1"
        # Rows sit at base + seq, seq counting from 1.
        base = conn.execute("SELECT coalesce(max(rid), 0) FROM main.nodes").fetchone()[0]
        conn.execute("INSERT OR REPLACE INTO temp.import_base (batch, base) VALUES (?, ?)", (batch, base))
        nodes = conn.execute(
            "INSERT INTO main.nodes (rid, id, account_id, labels, properties, scope, agents, created_at, updated_at, "
            "dims) SELECT ? + n.seq, n.id, ?, n.labels, n.properties, nullif(n.scope, 0), nullif(n.agents, 0), ?, ?, "
            f"NULL FROM stage.nodes n WHERE {fast} ORDER BY n.seq", (base, account_id, now, now)).rowcount
        conn.execute("INSERT OR IGNORE INTO main.node_labels (label, node) SELECT j.value, ? + n.seq "
                     f"FROM stage.nodes n, json_each(n.labels) j WHERE {fast}", (base,))
        conn.execute("INSERT OR IGNORE INTO main.node_agents (agent, node) SELECT j.value, ? + n.seq "
                     f"FROM stage.nodes n, json_each(n.agents) j WHERE n.agents <> 0 AND {fast}", (base,))
        conn.execute("INSERT OR IGNORE INTO main.node_keywords (keyword, node) SELECT keyword, ? + seq "
                     "FROM stage.keywords", (base,))
        conn.execute("INSERT INTO main.node_text (rowid, text) SELECT ? + n.seq, n.text FROM stage.nodes n "
                     f"WHERE n.text <> 0 AND {fast} ORDER BY n.seq", (base,))
        conn.execute("INSERT INTO main.node_text_stem (rowid, text) SELECT ? + n.seq, n.text FROM stage.nodes n "
                     f"WHERE n.text <> 0 AND {fast} ORDER BY n.seq", (base,))
        slow = conn.execute("SELECT n.seq, n.id, n.labels, n.properties, w.embedding FROM stage.slow w "
                            "JOIN stage.nodes n ON n.seq = w.seq ORDER BY n.seq").fetchall() if has_slow else []
        if slow:
            items = []
            for _, nid, labels, properties, embedding in slow:
                props = json.loads(properties)
                items.append(Prepared(nid or None, tuple(json.loads(labels)), props,
                                      json.loads(embedding) if embedding else None,
                                      None if None in props.values() else properties))
            ids, rids = store._upsert(conn, items, account_id)
            conn.executemany("INSERT OR REPLACE INTO temp.import_moved (key, rid) VALUES (?, ?)",
                             [(batch << KEY_BITS | row[0], rids[nid]) for nid, row in zip(ids, slow, strict=True)])
            self.moved = True
            nodes += len(slow)
        return nodes, self._write_edges(conn, batch, base, now, bool(slow))

    def _write_edges(self, conn: sqlite3.Connection, batch: int, base: int, now: float, slow: bool) -> int:
        """This batch's edges (by key, then those a store lookup resolves), then the edges of
        earlier batches that waited for one of its rows; returns how many were written."""
        # Rows of this batch sit at base + seq unless they moved; most batches have no moved row.
        source = _key_rid(f"({batch << KEY_BITS} | e.seq)") if slow else f"{int(base)} + e.seq"
        keyed = (f"SELECT {source}, {self.type_name('e')}, {_key_rid('e.dst', self.moved)}, nullif(e.properties, 0), ? "
                 "FROM stage.edges e ORDER BY e.rowid")
        # Late rows come grouped by target, each group in file order. Copies of one edge share their
        # target, so that is file order wherever order matters (the last properties win), with no sort.
        late = (f"SELECT {_key_rid('l.src', self.moved)}, {self.type_name('l')}, {_key_rid('l.dst', self.moved)}, "
                f"nullif(l.properties, 0), ? FROM stage.late l {self._not_hit('l.pid')} ORDER BY l.rowid")
        has_late = conn.execute("SELECT EXISTS (SELECT 1 FROM stage.late)").fetchone()[0]
        if self.moved:  # a re-ingest may have removed rows of this import: resolve through edge_batch
            conn.execute(f"INSERT INTO temp.edge_batch (source, type, target, properties, created_at) {keyed}",
                         (now,))
            self._stage_by_id(conn, source, now)
            if has_late:
                conn.execute(f"INSERT INTO temp.edge_batch (source, type, target, properties, created_at) {late}",
                             (now,))
            conn.execute("DELETE FROM temp.edge_batch WHERE source NOT IN (SELECT rid FROM main.nodes) "
                         "OR target NOT IN (SELECT rid FROM main.nodes)")
            return self.store._merge_edge_batch(conn)
        # The usual case: every key names a row this import wrote where it said, so both ends exist.
        _merge_edges(conn, keyed, (now,))
        written = conn.execute("SELECT count(*) FROM stage.edges").fetchone()[0]
        self._stage_by_id(conn, source, now)
        written += self.store._merge_edge_batch(conn)
        if has_late:
            _merge_edges(conn, late, (now,))
            written += conn.execute(f"SELECT count(*) FROM stage.late l {self._not_hit('l.pid')}").fetchone()[0]
        return written

    def _stage_by_id(self, conn: sqlite3.Connection, source: str, now: float) -> None:
        """Stage into ``temp.edge_batch`` the edges by id whose target the store has (remembered in
        ``temp.import_hit``, so their late copies are skipped)."""
        if not conn.execute("SELECT EXISTS (SELECT 1 FROM stage.edges_by_id)").fetchone()[0]:
            return
        hits = conn.execute(
            "INSERT INTO temp.edge_batch (source, type, target, properties, created_at, pid) "
            f"SELECT {source}, {self.type_name('e')}, t.rid, nullif(e.properties, 0), ?, e.pid FROM stage.edges_by_id e "
            "JOIN main.nodes t ON t.id = e.dst AND +t.account_id = ? ORDER BY e.pid",
            (now, self.account_id)).rowcount
        if hits:
            conn.execute("INSERT OR IGNORE INTO temp.import_hit (pid) SELECT pid FROM temp.edge_batch "
                         "WHERE pid IS NOT NULL")
            self.hits = True

    def _not_hit(self, pid: str) -> str:
        """A WHERE clause leaving out the edges a store lookup already wrote."""
        return f"WHERE {pid} NOT IN (SELECT h.pid FROM temp.import_hit h)" if self.hits else ""

    def _write_unresolved(self, conn: sqlite3.Connection) -> None:
        """The final frame: edges whose target id the file never had get one more store lookup."""
        source = _key_rid("u.src", self.moved)
        conn.execute(
            "INSERT INTO temp.edge_batch (source, type, target, properties, created_at, dst, lineno) "
            f"SELECT {source}, {self.type_name('u')}, CASE WHEN EXISTS (SELECT 1 FROM main.nodes n WHERE n.rid = {source}) "
            "THEN (SELECT t.rid FROM main.nodes t WHERE t.id = u.dst AND +t.account_id = ?) END, "
            f"nullif(u.properties, 0), ?, u.dst, u.lineno FROM stage.unresolved u {self._not_hit('u.pid')} "
            "ORDER BY u.pid",
            (self.account_id, time.time()))
        self.unresolved = conn.execute("SELECT lineno, type, dst FROM temp.edge_batch WHERE target IS NULL "
                                       "ORDER BY rowid").fetchall()
        self.created = self.store._merge_edge_batch(conn)

    def finish(self) -> tuple[int, list[tuple[int, str, str]]]:
        """After the final frame: how many edges its lookups wrote, and ``(line, type, target id)``
        of the edges no lookup found."""
        return self.created, self.unresolved
