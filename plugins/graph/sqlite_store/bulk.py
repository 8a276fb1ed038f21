"""Staged bulk import into the embedded store (:mod:`plughost.plugins.graph.staging` frames, one committed
transaction each)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plughost import Principal
from plughost.api.store import OWNER_SCOPE, ImportRow
from plughost.plugins.graph.common import Prepared
from plughost.plugins.graph.sqlite_store.sql import EDGE_BATCH_TABLE, merge_edge_batch, merge_edges
from plughost.plugins.graph.staging import FINAL_BATCH, KEY_BITS, Stager

if TYPE_CHECKING:  # pragma: no cover
    from plughost.plugins.graph.sqlite_store.store import SqliteStore

IMPORT_CACHE_KIB = 262144  # page cache ceiling during a bulk import: index inserts land all over the file


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
        with store.lock:
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
        """Write one serialised frame (:class:`plughost.plugins.graph.staging.Stager`)."""
        store = self.store
        with store.lock:
            conn = store.conn
            conn.deserialize(data, name="stage")
            batch, lines, size = conn.execute("SELECT batch, lines, bytes FROM stage.meta").fetchone()
            self.type_name = _type_names(conn)
            skips = conn.execute("SELECT lineno, message FROM stage.skips ORDER BY rowid").fetchall()
            if batch == FINAL_BATCH:
                if conn.execute("SELECT EXISTS (SELECT 1 FROM stage.unresolved)").fetchone()[0]:
                    with store.write_transaction() as conn:
                        self._write_unresolved(conn)
                return StagedBatch(0, 0, skips, lines, size)
            if not conn.execute("SELECT EXISTS (SELECT 1 FROM stage.nodes)").fetchone()[0]:
                return StagedBatch(0, 0, skips, lines, size)
            with store.write_transaction() as conn:
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
            "dims) SELECT ? + n.seq, n.id, ?, n.labels, CASE WHEN n.scope = 0 THEN json_set(n.properties, '$.scope', "
            "?) ELSE n.properties END, coalesce(nullif(n.scope, 0), ?), nullif(n.agents, 0), ?, ?, "
            f"NULL FROM stage.nodes n WHERE {fast} ORDER BY n.seq",
            (base, account_id, OWNER_SCOPE, OWNER_SCOPE, now, now)).rowcount
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
            ids, rids = store.write_nodes(conn, items, account_id, Principal.owner(account_id).guards)  # new ids: OWNER_SCOPE
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
            return merge_edge_batch(conn)
        # The usual case: every key names a row this import wrote where it said, so both ends exist.
        merge_edges(conn, keyed, (now,))
        written = conn.execute("SELECT count(*) FROM stage.edges").fetchone()[0]
        self._stage_by_id(conn, source, now)
        written += merge_edge_batch(conn)
        if has_late:
            merge_edges(conn, late, (now,))
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
        self.created = merge_edge_batch(conn)

    def finish(self) -> tuple[int, list[tuple[int, str, str]]]:
        """After the final frame: how many edges its lookups wrote, and ``(line, type, target id)``
        of the edges no lookup found."""
        return self.created, self.unresolved


class StagedWriter:
    """The embedded store's batch write for an import session (:class:`plughost.ports.importing.BatchWriter`):
    each batch of checked lines is staged in this process (:meth:`Stager.stage_rows`) and written
    as one frame (:meth:`BulkImport.add`)."""

    def __init__(self, bulk: BulkImport, dims: int | None) -> None:
        self.bulk = bulk
        self.stager = Stager(bulk.account_id, lookup=not bulk.empty, dims=dims)
        self.batch = 0

    def write(self, rows: list[ImportRow], skip: Callable[[int, str], None]) -> tuple[int, int]:
        frame = self.stager.stage_rows(self.batch, rows, read_lines=0, read_bytes=0)
        self.batch += 1
        done = self.bulk.add(frame)
        for lineno, message in done.skips:
            skip(lineno, message)
        return done.nodes, done.edges

    def finish(self) -> tuple[int, list[tuple[int, str, str]]]:
        self.bulk.add(self.stager.final(read_lines=0, read_bytes=0))
        return self.bulk.finish()
