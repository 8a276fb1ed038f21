"""The embedded graph store (docs/graph.md#stores): one SQLite file, WAL, FTS5 BM25, exact numpy vectors.

Every read builds its guard layers (docs/guards.md#guard-layers) into the SQL WHERE clause (:mod:`.sql`), so the
top-k cut happens after them; vector search is :mod:`.vectors`, node writes :mod:`.writes`,
staged bulk import :mod:`.bulk`. One connection per store object, serialised by a lock (MCP
handlers run in threads); several processes share the file through WAL and the busy timeout.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from plughost import Guards, Hit, Neighbor, Node, StoreUnavailable, UserError, WriteDenied, log
from plughost.api.store import (
    VECTOR_LABELS,
    can_change,
    check_confined,
    confined_ok,
    edge_denied,
    edge_guards,
    write_guards,
)
from plughost.plugins.graph import bm25
from plughost.plugins.graph.analysis import PLAIN_TOKENIZE, TOKENIZE, query_terms, search_keys
from plughost.plugins.graph.bm25 import TextStats
from plughost.plugins.graph.common import (
    EXPAND_LIMIT,
    GRACE_DAYS,
    LINKED_LIMIT,
    Prepared,
    StoreEnv,
    check_account,
    check_edge,
    check_embedding,
    check_labels,
    check_name,
    fts_terms,
    guards_ok,
    new_id,
    prepare,
    prepare_rows,
)
from plughost.plugins.graph.settings import VECTOR_THREADS
from plughost.plugins.graph.sqlite_store import staged, writes
from plughost.plugins.graph.sqlite_store.bulk import IMPORT_CACHE_KIB, BulkImport, StagedWriter
from plughost.plugins.graph.sqlite_store.leases import SqliteLeases
from plughost.plugins.graph.sqlite_store.nodes import Deferred, LazyNode, stored_node
from plughost.plugins.graph.sqlite_store.schema import INDEXED_PROPERTIES, ensure_schema
from plughost.plugins.graph.sqlite_store.sql import (
    BUSY_TIMEOUT_S,
    EDGE_BATCH_TABLE,
    LIGHT_COLS,
    MMAP_BYTES,
    NODE_COLS,
    PAGE_SIZE,
    ROW_EXTRA,
    TEXT_INDEXES,
    chunks,
    first_window,
    guard_sql,
    label_sql,
    marks,
    merge_edge_batch,
    prop_expr,
    register_functions,
    varint,
    where_sql,
    within_sql,
)
from plughost.plugins.graph.sqlite_store.staged import StagedRows
from plughost.plugins.graph.sqlite_store.vectors import (
    VECTOR_SPLIT_ROWS,
    VECTOR_WINDOW_MAX,
    VectorSearch,
    blas_one_thread,
    vector_threads,
)

_TOKENIZERS = {"node_text": PLAIN_TOKENIZE, "node_text_stem": TOKENIZE}
"""How each full-text index folds a query's tokens."""
ACCOUNT_BM25_POSTINGS = 100_000
"""The most occurrences of a query's terms in the whole file that per-account ranking reads
(``SqliteStore._over_budget``), about a tenth of a second on a 2-core machine; past it, the whole index's statistics."""


class SqliteStore(StoreEnv, VectorSearch, SqliteLeases):
    """:class:`plughost.ports.graph.GraphStore` on one SQLite file."""

    backend = "sqlite"
    account_bm25_postings = ACCOUNT_BM25_POSTINGS
    """Per instance: a test narrows it to reach the whole-index path."""

    def __init__(self, path: str | Path, *, env: Mapping[str, str] | None = None) -> None:
        self.path = Path(path)
        self.env = dict(os.environ if env is None else env)
        self.vector_threads = vector_threads(self.env)  # checked before the file is opened
        self.vector_threads_set = VECTOR_THREADS.is_set(self.env)
        self.vector_split = self.vector_threads_set or blas_one_thread()  # else the BLAS threads the matmul
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():  # every account's memory: the owner's alone (-wal and -shm follow it)
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
            self.lock = threading.RLock()
            self._import_lock = threading.Lock()  # one bulk import at a time per connection (its temp tables)
            self.conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                        check_same_thread=False)
            self.conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self.conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a new file only (WAL fixes it at the first write)
            register_functions(self.conn)
            self._set_wal()
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = OFF")
            self.conn.execute("PRAGMA temp_store = MEMORY")  # the per-batch edge staging table
            self.conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            ensure_schema(self.conn, self.path)
            for table in TEXT_INDEXES:  # each index's term offsets, read by per-account ranking
                self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_instances "
                                  f"USING fts5vocab (main, {table}, 'instance')")
                self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_terms "
                                  f"USING fts5vocab (main, {table}, 'row')")
        except (sqlite3.DatabaseError, OSError) as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise  # another writer: the busy timeout's, not a bad file
            raise UserError(f"{self.path}: cannot open the graph store ({exc}); expected a plughost store "
                            "file (PLUGHOST_GRAPH_DB, or graph.sqlite under PLUGHOST_HOME)") from None
        self._writes = 0  # bumped by every local commit
        self._budget_said = False
        self._staged_sessions = 0  # open staged_session()s, and the cache size they restore
        self._staged_cache = 0
        self._staged_checkpoints: _Checkpointer | None = None
        self.vector_window_max = VECTOR_WINDOW_MAX  # 0: always select the full guarded candidate set
        self.vector_split_rows = VECTOR_SPLIT_ROWS
        self._pool: Any = None  # the scoring threads (a ThreadPoolExecutor), started at first need
        # (account, dims) -> (seq, rid buffer, matrix buffer, rows in use)
        self._matrices: dict[tuple[str, int], tuple[int, np.ndarray, np.ndarray, int]] = {}
        self._candidates: OrderedDict[Any, np.ndarray] = OrderedDict()
        self._cache_stamp: tuple[int, int] | None = None
        # "one": the file's lowest and highest account; (table, account): its documents' lengths
        self._text_stats: dict[Any, Any] = {}

    def _set_wal(self) -> None:
        for _ in range(50):
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError:
                time.sleep(0.1)
        self.conn.execute("PRAGMA journal_mode = WAL")

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def write_transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the database write lock from its start."""
        with self.lock:
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

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction (under the lock): every statement inside sees one state of the file,
        so the rows a guarded statement selected are read as they were when the guards passed them;
        another process's write in between (a node narrowed to ``admin``) cannot leak its new state."""
        with self.lock:
            if self.conn.in_transaction:
                yield
                return
            self.conn.execute("BEGIN")
            try:
                yield
            finally:
                self.conn.execute("COMMIT")

    def _fresh_caches(self) -> None:
        """Drop the caches when anything was committed since they were built."""
        stamp = (self.conn.execute("PRAGMA data_version").fetchone()[0], self._writes)
        if stamp != self._cache_stamp:
            self._candidates.clear()
            self._text_stats.clear()
            self._cache_stamp = stamp

    @staticmethod
    def _node(row: Sequence[Any]) -> Node:
        return stored_node(row)

    def _deferred(self, guard: tuple[str, list[Any]]) -> Deferred:
        """Reads a search window's rows in full later (:class:`~.nodes.Deferred`), under ``guard``:
        the window statement's guard SQL on ``n``, so a node deleted or narrowed since is not read."""
        cond, params = guard
        sql = f"SELECT {NODE_COLS} FROM json_each(?) w CROSS JOIN nodes n ON n.rid = w.value WHERE {cond}"

        def fetch(rids: list[int]) -> dict[int, Sequence[Any]]:
            try:
                with self._snapshot():
                    return {row[0]: row for row in self.conn.execute(sql, [json.dumps(rids), *params])}
            except sqlite3.ProgrammingError as exc:  # closed
                raise StoreUnavailable(f"{self.path}: the store was closed before these search hits' properties "
                                       "were read: read them first (Node.read_all(nodes))") from exc

        return Deferred(fetch)

    def _rows_by_rid(self, rids: Sequence[int]) -> dict[int, Node]:
        """The search hits' nodes, one batched SELECT; ``properties`` built on first read (:mod:`.nodes`)."""
        out: dict[int, Node] = {}
        for part in chunks(list(rids)):
            for row in self.conn.execute(f"SELECT {NODE_COLS} FROM nodes n WHERE n.rid IN ({marks(len(part))})",
                                         list(part)):
                out[row[0]] = LazyNode(row)
        return out

    # ------------------------------------------------------------------ writes
    def upsert_node(self, labels: Sequence[str], properties: Mapping[str, Any], *, guards: Guards,
                    node_id: str | None = None, embedding: Sequence[float] | None = None) -> str:
        """Create or merge a node (properties merge, ``None`` removes a key, labels union).

        Ids are per account: another account's node with the same id is another node. With
        ``guards`` (every write tool passes the process's), the write runs under them
        (:func:`plughost.ports.graph.check_write`): a stored node outside them, or a result outside them,
        raises ``WriteDenied`` and nothing is written.

        Upserting a soft-deleted node revives it. A ``KnowledgeDocument`` written without
        ``node_id`` whose ``attachmentId`` matches an existing document of the account is a
        re-ingest: that document is reused (revived) and its Section/Chunk hierarchy is removed,
        to be replaced by what the caller writes next.
        """
        account_id, checked = guards.account_id, write_guards(guards)
        check_account(self.account_id, account_id, node=node_id)
        item = prepare(labels, properties, account_id=account_id, node_id=node_id, embedding=embedding)
        with self.write_transaction() as conn:
            return self.write_nodes(conn, [item], account_id, checked)[0][0]

    def upsert_many(self, rows: Iterable[Mapping[str, Any]], *, guards: Guards) -> int:
        """Bulk upsert of ``{id?, labels, properties, embedding?, edges?}`` rows in one transaction.

        ``edges`` are ``{type, to, properties?}``; ``to`` names a node of the account (in the
        batch or the store; with ``guards``, one they can read). Any invalid row, unknown edge
        target or (with ``guards``) guarded node rejects the whole batch.
        """
        account_id, checked = guards.account_id, write_guards(guards)
        check_account(self.account_id, account_id)
        items, edges = prepare_rows(rows, account_id)
        if not items:
            return 0
        with self.write_transaction() as conn:
            ids, rids = self.write_nodes(conn, items, account_id, checked)
            missing = self.write_edges(conn, [(ids[i], t, to, p) for i, _, t, to, p in edges], account_id, rids,
                                       checked)
            if missing:
                i, j, _, to, _ = edges[missing[0]]
                raise UserError(f"rows[{i}].edges[{j}].to: node '{to}' not found in account '{account_id}'")
        return len(items)

    def stage_rows(self, rows: Sequence[Mapping[str, Any]], *, account_id: str, owned: bool = False) -> StagedRows:
        """Validate and encode rows for :meth:`write_staged` (errors as in :meth:`upsert_many`).

        Touches no database and no lock, so forked workers can stage rows the syncing process
        writes (:mod:`.staged`). ``owned``: the property dicts are the caller's to give away.
        """
        check_account(self.account_id, account_id)
        return staged.stage_rows(rows, account_id, owned=owned)

    def write_staged(self, parts: Sequence[StagedRows], *, guards: Guards,
                     embeddings: Mapping[str, Sequence[float]] | None = None) -> int:
        """:meth:`upsert_many` of staged rows, in one transaction: the same merge, guard and edge rules.

        ``embeddings`` (node id → vector) adds vectors to staged rows. Rows new to the account
        are plain inserts; the write guards are checked once per distinct (scope, agents).
        """
        account_id = guards.account_id
        check_account(self.account_id, account_id)
        with self.write_transaction() as conn:
            return staged.write_staged(self, conn, parts, account_id, write_guards(guards), embeddings)

    @contextmanager
    def staged_session(self) -> Iterator[None]:
        """Settings for a folder sync writing its staged batches, until the last session open on
        this connection ends: a bulk import's page cache (its index inserts land all over the file,
        and each batch would re-read what the last one evicted), and the WAL checkpointed by a
        thread of its own instead of inside the commits (the writer neither copies the pages
        again nor waits for the fsyncs; SQLite's own passive checkpoint, safe at any kill)."""
        with self.lock:
            if not self._staged_sessions:
                self._staged_cache = int(self.conn.execute("PRAGMA cache_size").fetchone()[0])
                self.conn.execute(f"PRAGMA cache_size = {-IMPORT_CACHE_KIB}")
                self._staged_checkpoints = _Checkpointer(self.path, self.conn)
            self._staged_sessions += 1
        try:
            yield
        finally:
            with self.lock:
                self._staged_sessions -= 1
                if not self._staged_sessions:
                    self.conn.execute(f"PRAGMA cache_size = {self._staged_cache}")
                    if self._staged_checkpoints is not None:
                        self._staged_checkpoints.stop()
                        self._staged_checkpoints = None

    def write_nodes(self, conn: sqlite3.Connection, items: list[Prepared], account_id: str,
                    guards: Guards | None = None) -> tuple[list[str], dict[str, int]]:
        """Write prepared nodes inside the caller's transaction; returns their ids and rids.

        With ``guards``, every node is checked (:func:`plughost.ports.graph.check_write`) against its
        stored state read here, in the write transaction, before anything is written.
        """
        now = time.time()
        for item in items:  # a re-ingested document keeps its id; its old hierarchy goes
            if item.id is None and "KnowledgeDocument" in item.labels and item.properties.get("attachmentId"):
                item.id = self._reingest(conn, account_id, item.properties["attachmentId"], guards)
        ids = [item.id or new_id() for item in items]
        existing = writes.stored_nodes(conn, items, account_id)
        next_rid = conn.execute("SELECT coalesce(max(rid), 0) FROM nodes").fetchone()[0] + 1
        state = writes.merge_items(ids, items, existing, next_rid)
        if guards is not None:
            writes.check_guards(guards, state, existing, conn)
        writes.write_rows(conn, writes.node_rows(state, account_id, now))
        return ids, {nid: cur.rid for nid, cur in state.items()}

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
        for part in chunks(children):
            conn.execute(f"DELETE FROM nodes WHERE rid IN ({marks(len(part))})", list(part))
        return row[1]

    @staticmethod
    def _within(conn: sqlite3.Connection, rids: Sequence[int], guards: Guards) -> list[int]:
        """The rids among ``rids`` whose node is within the guards, soft delete aside (a cascade's reach)."""
        if guards.allowed_scopes is None and guards.agent_slug is None:
            return list(rids)
        keep: set[int] = set()
        for part in chunks(list(rids)):
            keep.update(rid for rid, props in conn.execute(
                f"SELECT rid, properties FROM nodes WHERE rid IN ({marks(len(part))})", list(part))
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
                    properties: Mapping[str, Any] | None = None, *, guards: Guards) -> None:
        """MERGE a typed edge between two nodes of the account; ``backlinkCount`` follows.

        Narrowed ``guards``: both ends must be nodes they can read, else ``WriteDenied``.
        """
        account_id = guards.account_id
        check_account(self.account_id, account_id)
        g = edge_guards(guards)
        etype, to, props = check_edge({"type": edge_type, "to": target_id, "properties": properties}, "edge")
        with self.write_transaction() as conn:
            if g is not None:
                if self.write_edges(conn, [(source_id, etype, to, props)], account_id, guards=g):
                    raise edge_denied(source_id, etype, to)
                return
            src = conn.execute("SELECT rid FROM nodes WHERE id = ? AND +account_id = ?",
                               (source_id, account_id)).fetchone()
            if src is None:
                raise UserError(f"edge.source: node '{source_id}' not found in account '{account_id}'")
            if self.write_edges(conn, [(source_id, etype, to, props)], account_id):
                raise UserError(f"edge.target: node '{to}' not found in account '{account_id}'")

    def create_edges(self, edges: Iterable[tuple[str, str, str, Mapping[str, Any] | None]], *,
                     guards: Guards, validated: bool = False) -> list[int]:
        """Bulk MERGE of ``(source, type, target, properties)``; returns positions with an unknown end.

        ``validated=True`` skips re-checking edges that already went through ``check_edge``.
        Narrowed ``guards``: an end they cannot read refuses the whole batch (``WriteDenied``).
        """
        account_id = guards.account_id
        check_account(self.account_id, account_id)
        g = edge_guards(guards)
        wanted = []
        for i, (src, etype, dst, props) in enumerate(edges):
            if not validated:
                etype, dst, props = check_edge({"type": etype, "to": dst, "properties": props}, f"edges[{i}]")
            wanted.append((src, etype, dst, props))
        with self.write_transaction() as conn:
            missing = self.write_edges(conn, wanted, account_id, guards=g)
            if g is not None and missing:
                src, etype, dst, _ = wanted[missing[0]]
                raise edge_denied(src, etype, dst)  # rolls the batch back
            return missing

    def write_edges(self, conn: sqlite3.Connection, wanted: list[tuple[str, str, str, Any]], account_id: str,
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
        confined = guards is not None and guards.confined
        own: list[str | None] = []
        for part in chunks(names):
            if not confined:
                rids.update(conn.execute(
                    f"SELECT n.id, n.rid FROM nodes n WHERE n.id IN ({marks(len(part))}) AND {cond}",
                    [*part, *params]))
                continue
            for nid, rid, labels, props in conn.execute(  # an end outside its own conversation is hidden
                    f"SELECT n.id, n.rid, n.labels, n.properties FROM nodes n WHERE n.id IN ({marks(len(part))}) "
                    f"AND {cond}", [*part, *params]).fetchall():
                if not own:
                    own.append(writes.own_of(conn, guards) if guards is not None else None)
                if confined_ok(guards, own[0], nid, json.loads(labels), json.loads(props)):
                    rids[nid] = rid
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
        merge_edge_batch(conn)
        return missing

    # ------------------------------------------------------------------ bulk import
    @contextmanager
    def bulk_import(self, account_id: str) -> Iterator[BulkImport]:
        """A staged bulk import (:mod:`plughost.plugins.graph.staging`): ``add`` writes each frame in order."""
        check_account(self.account_id, account_id)
        with self._import_lock, self._bulk_session():
            yield BulkImport(self, account_id)

    @contextmanager
    def import_writer(self, account_id: str) -> Iterator[StagedWriter]:
        """The batch write of an import session (:class:`plughost.api.store.ImportSession`): staged batches."""
        with self.bulk_import(account_id) as bulk:
            yield StagedWriter(bulk, self.dimensions)

    @contextmanager
    def _bulk_session(self) -> Iterator[None]:
        """The attached ``stage`` schema and a bigger page cache, for the length of one import."""
        with self.lock:
            cache = self.conn.execute("PRAGMA cache_size").fetchone()[0]
            self.conn.execute(f"PRAGMA cache_size = {-IMPORT_CACHE_KIB}")
            self.conn.execute("ATTACH ':memory:' AS stage")
        try:
            yield
        finally:
            with self.lock:
                self.conn.execute("DROP TABLE IF EXISTS temp.import_base")
                self.conn.execute("DROP TABLE IF EXISTS temp.import_moved")
                self.conn.execute("DROP TABLE IF EXISTS temp.import_hit")
                self.conn.execute("DETACH stage")
                self.conn.execute(f"PRAGMA cache_size = {int(cache)}")

    def delete_edge(self, source_id: str, target_id: str, edge_type: str, *, guards: Guards) -> int:
        """Remove a typed edge; narrowed ``guards``: both ends must be nodes they can read."""
        account_id = guards.account_id
        check_account(self.account_id, account_id)
        g = edge_guards(guards)
        with self.write_transaction() as conn:
            if g is not None:
                cond, params = guard_sql(g)
                ends = [conn.execute(f"SELECT n.rid, n.id, n.labels, n.properties FROM nodes n WHERE n.id = ? "
                                     f"AND {cond}", [nid, *params]).fetchone() for nid in (source_id, target_id)]
                own = writes.own_of(conn, g)
                if None in ends or not all(confined_ok(g, own, e[1], json.loads(e[2]), json.loads(e[3]))
                                           for e in ends if e is not None):
                    raise edge_denied(source_id, edge_type, target_id)
                return conn.execute("DELETE FROM edges WHERE type = ? AND source = ? AND target = ?",
                                    (edge_type, ends[0][0], ends[1][0])).rowcount
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
        with self.write_transaction() as conn:
            rids: dict[str, int] = {}
            ids = list(dict.fromkeys(r[0] for r in rows))
            for part in chunks(ids):
                rids.update(conn.execute(f"SELECT id, rid FROM nodes WHERE +account_id = ? AND id IN "
                                         f"({marks(len(part))})", [account_id, *part]))
            vectors = [(blob, dims, rids[nid]) for nid, blob, dims in rows if nid in rids]
            writes.write_vectors(conn, vectors)
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
        with self.write_transaction() as conn:
            row = conn.execute(f"SELECT n.rid, n.labels, n.properties FROM nodes n WHERE n.id = ? AND {cond}",
                               [node_id, *params]).fetchone()
            if row is None:
                return 0
            if g.confined:  # another conversation's node: refused, as a write into it is
                check_confined(g, writes.own_of(conn, g), node_id, json.loads(row[1]), json.loads(row[2]))
            rids = self._within(conn, self._hierarchy(conn, row[0], g.account_id), g)  # the cascade stays inside
            touched = 0
            for part in chunks(rids):
                flip = "deleted_at IS NULL" if when is not None else "deleted_at IS NOT NULL"
                cur = conn.execute(f"UPDATE nodes SET deleted_at = ?, updated_at = ? WHERE rid IN "
                                   f"({marks(len(part))}) AND {flip}", [when, time.time(), *part])
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
        with self.write_transaction() as conn:
            return conn.execute(sql, params).rowcount

    def delete_nodes(self, node_ids: Sequence[str], *, guards: Guards) -> int:
        """Hard-delete the nodes within the guards, soft delete aside (edges go with them: the purge trigger)."""
        g = guards_ok(guards)
        check_account(self.account_id, g.account_id)
        cond, params = guard_sql(g)
        cond = cond.replace("n.deleted_at IS NULL", "1")
        ids = list(dict.fromkeys(node_ids))
        gone = 0
        with self.write_transaction() as conn:
            if g.confined:  # only nodes it could read under its confined view
                own = writes.own_of(conn, g)
                ids = [nid for part in chunks(ids) for nid, labels, props in conn.execute(
                    f"SELECT n.id, n.labels, n.properties FROM nodes n WHERE n.id IN ({marks(len(part))}) "
                    f"AND {cond}", [*part, *params]).fetchall()
                    if confined_ok(g, own, nid, json.loads(labels), json.loads(props))]
            for part in chunks(ids):
                gone += conn.execute(f"DELETE FROM nodes AS n WHERE n.id IN ({marks(len(part))}) AND {cond}",
                                     [*part, *params]).rowcount
        return gone

    def erase_nodes(self, node_ids: Sequence[str], *, account_id: str) -> dict[str, int]:
        """Hard-delete these nodes of the account now (an erase request), whatever their state.

        The purge trigger takes their edges, labels, keywords, vectors and full-text terms; with
        ``secure_delete`` on the freed content is zeroed, both full-text indexes are merged into one
        segment each (``optimize``: a contentless index otherwise keeps the old terms in its older
        segments until a merge), and the WAL is checkpointed and truncated, so no byte of the
        deleted text stays in the file or its WAL.
        """
        check_account(self.account_id, account_id)
        counts = {"nodes": 0, "edges": 0, "embeddings": 0, "fulltext": 0}
        ids = list(dict.fromkeys(str(i) for i in node_ids))  # none: only the merge and the truncation (a scrub)
        with self.lock:
            secure = int(self.conn.execute("PRAGMA secure_delete").fetchone()[0])
            self.conn.execute("PRAGMA secure_delete = ON")
            try:
                with self.write_transaction() as conn:
                    conn.execute("CREATE TEMP TABLE IF NOT EXISTS erase_rids (rid INTEGER PRIMARY KEY)")
                    conn.execute("DELETE FROM temp.erase_rids")
                    for part in chunks(ids):
                        conn.execute(f"INSERT OR IGNORE INTO temp.erase_rids SELECT rid FROM nodes WHERE "
                                     f"+account_id = ? AND id IN ({marks(len(part))})", [account_id, *part])
                    doomed = "SELECT rid FROM temp.erase_rids"
                    counts["edges"] = conn.execute(f"SELECT count(*) FROM edges WHERE source IN ({doomed}) "
                                                   f"OR target IN ({doomed})").fetchone()[0]
                    counts["embeddings"] = conn.execute(
                        f"SELECT count(*) FROM node_vectors WHERE node IN ({doomed})").fetchone()[0]
                    counts["fulltext"] = conn.execute(
                        f"SELECT count(*) FROM nodes WHERE rid IN ({doomed}) AND node_text_of(properties) IS NOT NULL"
                    ).fetchone()[0]
                    counts["nodes"] = conn.execute(f"DELETE FROM nodes WHERE rid IN ({doomed})").rowcount
                    conn.execute("DELETE FROM temp.erase_rids")
                    for table in TEXT_INDEXES:
                        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
                busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if busy and busy[0]:  # a reader held the WAL past the busy timeout: its old frames may stay
                    from plughost import log

                    log("graph-store", "warn", reason="wal-checkpoint-busy", op="delete-nodes",
                        detail="another connection kept reading: the WAL may hold the deleted text until the next "
                        "checkpoint (stop plughost serve, then PRAGMA wal_checkpoint(TRUNCATE) on the file)")
            finally:
                self.conn.execute(f"PRAGMA secure_delete = {secure}")
        return counts

    def scan_nodes(self, *, account_id: str, contains: str | None = None, after: str = "",
                   limit: int = 1000) -> list[Node]:
        """One page of every node of the account (soft-deleted too) by id; ``contains``: a prefilter on
        the stored row (properties and id, ASCII case folded)."""
        sql = f"SELECT {NODE_COLS} FROM nodes n WHERE n.account_id = ? AND n.id > ?"
        params: list[Any] = [account_id, after]
        if contains:
            sql += " AND (instr(lower(n.properties), ?) > 0 OR instr(lower(n.id), ?) > 0)"
            params += [contains, contains]
        sql += " ORDER BY n.id LIMIT ?"
        params.append(max(0, int(limit)))
        with self.lock:
            return [self._node(r) for r in self.conn.execute(sql, params)]

    def node_edges(self, node_ids: Sequence[str], *, account_id: str) -> list[tuple[str, str, str, dict[str, Any]]]:
        """Every edge touching these nodes of the account, whatever their state."""
        out: dict[tuple[str, str, str], dict[str, Any]] = {}
        with self.lock:
            for part in chunks(list(dict.fromkeys(node_ids))):
                rids = f"SELECT rid FROM nodes WHERE +account_id = ? AND id IN ({marks(len(part))})"
                for src, etype, dst, props in self.conn.execute(
                        f"SELECT s.id, e.type, t.id, e.properties FROM edges e JOIN nodes s ON s.rid = e.source "
                        f"JOIN nodes t ON t.rid = e.target WHERE e.source IN ({rids}) OR e.target IN ({rids})",
                        [account_id, *part, account_id, *part]):
                    out[(src, etype, dst)] = json.loads(props) if props else {}
        return [(s, t, d, p) for (s, t, d), p in sorted(out.items())]

    def export_embeddings(self, node_ids: Sequence[str], *, account_id: str) -> dict[str, Any]:
        """The stored vectors of these nodes of the account, whatever their state (export and migrate),
        as float32 arrays: orjson writes each value in the fewest digits that read back the same."""
        out: dict[str, Any] = {}
        with self.lock:
            for part in chunks(list(dict.fromkeys(node_ids))):
                for nid, blob in self.conn.execute(
                        f"SELECT n.id, v.embedding FROM nodes n JOIN node_vectors v ON v.node = n.rid "
                        f"WHERE n.account_id = ? AND n.id IN ({marks(len(part))})", [account_id, *part]):
                    if blob is not None:
                        out[nid] = np.frombuffer(blob, dtype=np.float32)
        return out

    def restore_stamps(self, rows: Sequence[tuple[str, float, float, float | None]], *, account_id: str) -> int:
        """Set ``(id, createdAt, updatedAt, deletedAt)`` (epoch seconds) on nodes of the account, as an
        export recorded them (an import or a migrate of exported lines); returns the nodes updated."""
        check_account(self.account_id, account_id)
        with self.write_transaction() as conn:
            before = conn.total_changes
            conn.executemany("UPDATE nodes SET created_at = ?, updated_at = ?, deleted_at = ? "
                             "WHERE account_id = ? AND id = ?",
                             [(c, u, d, account_id, nid) for nid, c, u, d in rows])
            return conn.total_changes - before

    def accounts(self) -> list[str]:
        """Every account holding a node in this file (``graph migrate`` moves them all)."""
        with self.lock:
            return [r[0] for r in self.conn.execute("SELECT DISTINCT account_id FROM nodes ORDER BY 1")]

    def scan_count(self, *, account_id: str) -> int:
        """Nodes of the account, soft-deleted too (what a full :meth:`scan_nodes` returns)."""
        with self.lock:
            return int(self.conn.execute("SELECT count(*) FROM nodes WHERE account_id = ?",
                                         (account_id,)).fetchone()[0])

    def label_counts(self, *, account_id: str) -> dict[str, int]:
        """Nodes of the account per label, soft-deleted too (``graph migrate`` verifies them)."""
        with self.lock:
            return dict(self.conn.execute(
                "SELECT l.label, count(*) FROM node_labels l JOIN nodes n ON n.rid = l.node "
                "WHERE n.account_id = ? GROUP BY l.label ORDER BY 1", (account_id,)).fetchall())

    def edge_count(self, *, account_id: str) -> int:
        """Edges from nodes of the account."""
        with self.lock:
            return int(self.conn.execute("SELECT count(*) FROM edges e JOIN nodes n ON n.rid = e.source "
                                         "WHERE n.account_id = ?", (account_id,)).fetchone()[0])

    def unscoped(self, *, account_id: str, sample: int = 5) -> dict[str, tuple[int, list[str]]]:
        """The account's nodes without a scope (soft-deleted too): first label → (count, up to
        ``sample`` ids). Legacy nodes every scope can read; ``plughost memory audit`` lists them."""
        check_account(self.account_id, account_id)
        with self.lock:
            rows = self.conn.execute(
                "SELECT label, id, total FROM (SELECT json_extract(labels, '$[0]') AS label, id, "
                "row_number() OVER (PARTITION BY json_extract(labels, '$[0]') ORDER BY rid) AS k, "
                "count(*) OVER (PARTITION BY json_extract(labels, '$[0]')) AS total "
                "FROM nodes WHERE account_id = ? AND scope IS NULL) WHERE k <= ? ORDER BY label, k",
                (account_id, sample)).fetchall()
        out: dict[str, tuple[int, list[str]]] = {}
        for label, nid, total in rows:
            out.setdefault(label, (total, []))[1].append(nid)
        return out

    def stamp_scope(self, scope: str, *, account_id: str) -> int:
        """Give every unscoped node of the account ``scope`` (``memory audit --fix-scope``); returns
        how many. ``updatedAt`` stays: the content did not change."""
        check_account(self.account_id, account_id)
        with self.write_transaction() as conn:
            return conn.execute("UPDATE nodes SET scope = ?, properties = json_set(properties, '$.scope', ?) "
                                "WHERE account_id = ? AND scope IS NULL", (scope, scope, account_id)).rowcount

    # ------------------------------------------------------------------ reads
    def get(self, node_id: str, *, guards: Guards, include_deleted: bool = False) -> Node | None:
        cond, params = guard_sql(guards_ok(guards))
        if include_deleted:
            cond = cond.replace("n.deleted_at IS NULL", "1")
        with self.lock:
            row = self.conn.execute(f"SELECT {NODE_COLS} FROM nodes n WHERE n.id = ? AND {cond}",
                                    [node_id, *params]).fetchone()
        return self._node(row) if row else None

    def get_embedding(self, node_id: str, *, guards: Guards) -> list[float] | None:
        cond, params = guard_sql(guards_ok(guards))
        with self.lock:
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
        # a property filter beside a label: the label's rows lead (else every row of the account
        # has its properties read before its labels), unless an indexed property does (a conversation's Messages)
        lab, lparams = label_sql(labels, driving=bool(where) and not INDEXED_PROPERTIES.intersection(where or ()))
        sql = f"SELECT {NODE_COLS} FROM nodes n WHERE {cond}{lab}"
        params += lparams
        wh, wparams = where_sql(where)
        sql += wh
        params += wparams
        order = prop_expr(order_by) if order_by else "n.updated_at"
        sql += f" ORDER BY {order} {'DESC' if descending else 'ASC'}, n.rid LIMIT ? OFFSET ?"
        params += [max(0, int(limit)), max(0, int(offset))]
        with self.lock:
            return [self._node(r) for r in self.conn.execute(sql, params)]

    def count(self, *, guards: Guards, labels: Sequence[str] | None = None) -> int:
        cond, params = guard_sql(guards_ok(guards))
        lab, lparams = label_sql(labels)
        with self.lock:
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
        g = guards_ok(guards)
        cond, params = guard_sql(g)
        lab, lparams = label_sql(labels)
        wh, wparams = where_sql(where)
        lab, lparams = lab + wh, lparams + wparams
        with self._snapshot():
            if self._one_account(g.account_id):
                return self._fts_window(table, terms, int(k), g, (cond, params), (lab, lparams), within)
            phrases = query_terms(query, _TOKENIZERS[table])  # analysed once: the budget and the ranking
            if self._over_budget(table, phrases):
                return self._fts_window(table, terms, int(k), g, (cond, params), (lab, lparams), within)
            return self._account_ranked(table, phrases, int(k), g, (cond + lab, params + lparams), within)

    def _over_budget(self, table: str, phrases: list[list[str]]) -> bool:
        """Whether the query's terms occur more than ``account_bm25_postings`` times in the whole
        file (``fts5vocab`` 'row': one lookup). Per-account ranking reads every occurrence, so its
        cost is the file's, not the account's: past the budget (a small account beside a large one,
        a question of its most common words) the search ranks with the whole index's statistics,
        as before per-account ranking, and says so once per store."""
        tokens = list(dict.fromkeys(t for phrase in phrases for t in phrase))
        if not tokens:
            return False
        postings = int(self.conn.execute(f"SELECT coalesce(sum(cnt), 0) FROM temp.{table}_terms WHERE term IN "
                                         f"({','.join('?' * len(tokens))})", tokens).fetchone()[0])
        if postings <= self.account_bm25_postings:
            return False
        if not self._budget_said:
            self._budget_said = True
            log("graph-search", "op=whole-index-statistics", reason="postings", postings=postings,
                limit=self.account_bm25_postings)
        return True

    def _one_account(self, account_id: str) -> bool:
        """Whether every node of the file is ``account_id``'s: then FTS5's statistics are the account's."""
        self._fresh_caches()
        one = self._text_stats.get("one")
        if one is None:
            low, high = self.conn.execute("SELECT (SELECT min(account_id) FROM nodes), "
                                          "(SELECT max(account_id) FROM nodes)").fetchone()
            one = self._text_stats["one"] = (low, high)
        return one[0] is None or one[0] == one[1] == account_id

    def _fts_window(self, table: str, terms: list[list[str]], k: int, g: Guards, guard: tuple[str, list[Any]],
                    label: tuple[str, list[Any]], within: tuple[str, str] | None) -> list[Hit]:
        """FTS5's own ranking (``bm25()``), for a file holding one account (its statistics are the index's)."""
        match = " OR ".join('"' + " ".join(t) + '"' for t in terms)
        (cond, params), (lab, lparams) = guard, label
        inside, iparams = within_sql(within, g.account_id, "rowid")
        # The guards run in SQL on a window of the best-ranked matches (a top-N sort of
        # ``bm25()``, far cheaper than sorting every match; ``bm25()`` is the table's ``rank``
        # without FTS5's rank sorter, which seeks every row it returns once more); when fewer than
        # k rows survive and the window was full, it widens fourfold. Ties keep the scan's rowid
        # order, so the guarded rows come out in one order whatever the window, and any k of them
        # taken from a window prefix are exactly the guarded top-k. The hits' rows come out of the
        # statement whose guards passed them (no second read of the rows).
        sql = (f"SELECT {LIGHT_COLS}, w.r FROM (SELECT rowid, bm25({table}) AS r FROM {table} WHERE {table} "
               f"MATCH ?{inside} ORDER BY r LIMIT ?) w CROSS JOIN nodes n ON n.rid = w.rowid "
               f"WHERE {cond}{lab} ORDER BY w.r LIMIT ?")
        window = first_window(k)
        while True:
            ranked = self.conn.execute(sql, [match, *iparams, window, *params, *lparams, k]).fetchall()
            if len(ranked) >= k:
                break
            total = self.conn.execute(f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} "
                                      f"MATCH ?{inside} LIMIT ?)", (match, *iparams, window + 1)).fetchone()[0]
            if total <= window:
                break
            window *= 4
        deferred = self._deferred((cond + lab, params + lparams))
        return [Hit(deferred.node(row), -float(row[ROW_EXTRA])) for row in ranked]

    def fulltext_search_many(self, queries: Sequence[str], k: int, *, guards: Guards,
                             labels: Sequence[str] | None = None, stemmed: bool = False) -> list[list[Hit]]:
        """:meth:`fulltext_search` for several texts (a question and its paraphrases), a list per
        text: texts the index reads as one query (:func:`~plughost.plugins.graph.analysis.search_keys`:
        the same words in any order; ``stemmed``, the same stems, so a paraphrase that flips a
        word's number is the question again) are searched once and share one list, the same object."""
        keys = search_keys(queries, stemmed=stemmed) if len(queries) > 1 else [()] * len(queries)
        found: dict[tuple[tuple[str, ...], ...], list[Hit]] = {}
        out = []
        for text, key in zip(queries, keys, strict=True):
            if key not in found:
                found[key] = self.fulltext_search(text, k, guards=guards, labels=labels, stemmed=stemmed)
            out.append(found[key])
        return out

    def _account_lengths(self, table: str, account_id: str) -> tuple[np.ndarray, np.ndarray]:
        """The account's indexed documents in ``table`` (row ids, ascending) and their lengths
        (FTS5's ``docsize``), kept until the next write."""
        key = (table, account_id)
        kept = self._text_stats.get(key)
        if kept is None:
            rows = self.conn.execute(f"SELECT d.id, d.sz FROM nodes n CROSS JOIN {table}_docsize d ON d.id = n.rid "
                                     "WHERE n.account_id = ? ORDER BY d.id", (account_id,)).fetchall()
            kept = self._text_stats[key] = (np.fromiter((r[0] for r in rows), np.int64, len(rows)),
                                            np.fromiter((varint(r[1]) for r in rows), np.int64, len(rows)))
        return kept

    def _phrase_counts(self, table: str, phrase: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The documents of the whole index holding ``phrase`` (row ids, ascending) and how often
        each holds it, read from the index's term offsets (``fts5vocab`` 'instance')."""
        vocab = f"temp.{table}_instances"
        if len(phrase) == 1:
            rows = self.conn.execute(f"SELECT doc, count(*) FROM {vocab} WHERE term = ? GROUP BY doc ORDER BY doc",
                                     (phrase[0],)).fetchall()
        else:
            places: dict[int, dict[str, list[int]]] = {}
            for token in dict.fromkeys(phrase):
                for doc, offset in self.conn.execute(f"SELECT doc, offset FROM {vocab} WHERE term = ?", (token,)):
                    places.setdefault(doc, {}).setdefault(token, []).append(offset)
            rows = sorted((doc, n) for doc, at in places.items() if (n := bm25.phrase_counts(at, phrase)))
        return (np.fromiter((r[0] for r in rows), np.int64, len(rows)),
                np.fromiter((r[1] for r in rows), np.int64, len(rows)))

    def _account_ranked(self, table: str, phrases: list[list[str]], k: int, g: Guards, guard: tuple[str, list[Any]],
                        within: tuple[str, str] | None) -> list[Hit]:
        """BM25 with the account's own statistics (:mod:`plughost.plugins.graph.bm25`): every
        document of the account holding a query phrase (counted from the index's term offsets)
        scored, then guarded in rank order, window by window, until k pass (``phrases``: the query
        as this index analyses it)."""
        if not phrases:
            return []
        rids, lengths = self._account_lengths(table, g.account_id)
        counts: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}
        for phrase in phrases:  # only the account's documents: a document's row id is in rids
            if tuple(phrase) not in counts:
                docs, n = self._phrase_counts(table, phrase)
                at = np.minimum(np.searchsorted(rids, docs), max(len(rids) - 1, 0))
                mine = (rids[at] == docs) if len(rids) else np.zeros(len(docs), bool)
                counts[tuple(phrase)] = (at[mine], n[mine])
        held = np.unique(np.concatenate([at for at, _ in counts.values()])) if counts else np.empty(0, np.int64)
        if not len(held):
            return []
        freqs = []
        for phrase in phrases:
            at, n = counts[tuple(phrase)]
            column = np.zeros(len(rids), np.int64)
            column[at] = n
            freqs.append(column[held])
        stats = TextStats(len(rids), int(lengths.sum()))
        scored = bm25.scores(freqs, lengths[held], bm25.phrase_idfs(freqs, stats), stats.avgdl)
        order = np.lexsort((rids[held], -scored))
        ranked, score_of = rids[held][order].tolist(), dict(zip(rids[held].tolist(), scored.tolist(), strict=True))
        cond, params = guard
        inside, iparams = within_sql(within, g.account_id, "n.rid")
        sql = (f"SELECT {LIGHT_COLS} FROM json_each(?) j CROSS JOIN nodes n ON n.rid = j.value "
               f"WHERE {cond}{inside} ORDER BY j.key LIMIT ?")
        rows: list[Any] = []
        start, window = 0, first_window(k)
        while start < len(ranked) and len(rows) < k:
            part = ranked[start:start + window]
            rows += self.conn.execute(sql, [json.dumps(part), *params, *iparams, k - len(rows)]).fetchall()
            start, window = start + window, window * 4
        deferred = self._deferred((cond, params))
        return [Hit(deferred.node(row), score_of[row[0]]) for row in rows]

    def keyword_search(self, keyword: str, k: int, *, guards: Guards,
                       labels: Sequence[str] | None = None) -> list[Hit]:
        tag = str(keyword).strip().lower()
        if not tag or k <= 0:
            return []
        cond, params = guard_sql(guards_ok(guards))
        lab, lparams = label_sql(labels)
        sql = (f"SELECT n.rid FROM node_keywords kw CROSS JOIN nodes n ON n.rid = kw.node "
               f"WHERE kw.keyword = ? AND {cond}{lab} ORDER BY n.updated_at DESC, n.rid LIMIT ?")
        with self._snapshot():
            rids = [r[0] for r in self.conn.execute(sql, [tag, *params, *lparams, int(k)])]
            nodes = self._rows_by_rid(rids)
        return [Hit(nodes[rid], 1.0) for rid in rids if rid in nodes]

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
        ids = list(dict.fromkeys(node_ids))
        with self.lock:
            origins: dict[str, int] = {}  # every origin's rid in one statement (per 500)
            for part in chunks(ids):
                origins.update(self.conn.execute(f"SELECT id, rid FROM nodes WHERE id IN ({marks(len(part))}) "
                                                 "AND +account_id = ? AND deleted_at IS NULL", [*part, g.account_id]))
            for nid in ids:
                rid = origins.get(nid)
                if rid is None:
                    out[nid] = []
                    continue
                rows = self.conn.execute(sql, [rid, *params, rid, *params, limit]).fetchall()
                out[nid] = [Neighbor(self._node(r[3:]), r[0], r[1], json.loads(r[2]) if r[2] else {}) for r in rows]
        return out

    def linked(self, node_ids: Sequence[str], edge_type: str, *, guards: Guards,
               limit: int = LINKED_LIMIT) -> dict[str, list[Node]]:
        """The guarded nodes with an ``edge_type`` edge into each guarded origin (``edges_target``)."""
        g = guards_ok(guards)
        check_name(edge_type, "edge type")
        limit = max(0, min(int(limit), LINKED_LIMIT))
        ocond, oparams = guard_sql(g, "o")
        cond, params = guard_sql(g)
        sql = (f"SELECT {NODE_COLS} FROM edges e JOIN nodes n ON n.rid = e.source "
               f"WHERE e.target = ? AND e.type = ? AND {cond} ORDER BY n.id LIMIT ?")
        ids = list(dict.fromkeys(node_ids))
        out: dict[str, list[Node]] = {nid: [] for nid in ids}
        with self.lock:
            origins: dict[str, int] = {}
            for part in chunks(ids):
                origins.update(self.conn.execute(f"SELECT o.id, o.rid FROM nodes o WHERE o.id IN ({marks(len(part))}) "
                                                 f"AND {ocond}", [*part, *oparams]))
            for nid, rid in origins.items():
                out[nid] = [self._node(r) for r in self.conn.execute(sql, [rid, edge_type, *params, limit])]
        return out

    def missing_embeddings(self, *, account_id: str, labels: Sequence[str] | None = None,
                           exclude: Iterable[str] = (), limit: int = 100) -> list[Node]:
        """Live nodes of vector-indexed labels (or ``labels``) without an embedding."""
        labs = check_labels(labels) if labels else VECTOR_LABELS
        skip = list(dict.fromkeys(exclude))
        sql = (f"SELECT {NODE_COLS} FROM nodes n WHERE n.account_id = ? AND n.deleted_at IS NULL AND n.dims IS NULL "
               f"AND EXISTS (SELECT 1 FROM node_labels nl WHERE nl.node = n.rid AND nl.label IN ({marks(len(labs))}))")
        params: list[Any] = [account_id, *labs]
        if skip:
            sql += " AND n.id NOT IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(skip))
        sql += " ORDER BY n.rid LIMIT ?"
        params.append(max(0, int(limit)))
        with self.lock:
            return [self._node(r) for r in self.conn.execute(sql, params)]

    def vector_indexes(self) -> dict[str, int]:
        """Index discovery: every vector-indexed label of the schema, at the configured dimensions."""
        with self.lock:
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
        with self.lock:
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
        with self.lock:
            return self.conn.execute("PRAGMA integrity_check").fetchone()[0]

    def close(self) -> None:
        with self.lock:
            try:
                self.conn.close()
            except sqlite3.Error:
                pass
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None


class _Checkpointer:
    """Passive WAL checkpoints every ``EVERY_S`` from a connection and thread of their own, while
    ``conn`` (whose automatic checkpoints are off meanwhile) writes; ``stop`` restores them."""

    EVERY_S = 0.25

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.auto = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        self.done = threading.Event()
        self.own = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        self.thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(self.EVERY_S):
            try:
                self.own.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error:  # busy or closing: the next round (or the writer's own) catches up
                pass

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        self.own.close()
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {self.auto}")

