"""Upsert rows in two halves: validate and encode them anywhere, write them in the transaction.

:meth:`SqliteStore.upsert_many` validates, encodes and writes in the caller's thread, under the
store lock. A folder sync has its rows built in forked parse workers, so it asks the store to
stage them there (:func:`stage_rows`: the same :func:`plughost.plugins.graph.common.prepare_row` checks,
the properties JSON, the BM25 text, labels, agents and keywords, all as plain strings that
pickle cheaply) and hands the batches to :func:`write_staged` in the syncing process. That half
keeps every rule of an upsert: a staged row is *fast* (one plain insert) only when its id is
new to the account and to the write, it has no null property and the guards add nothing to
it; any other row goes through the store's ordinary upsert in the same transaction. The write
guards run in the transaction, once per distinct (scope, agents) of the fast rows
(:func:`plughost.ports.graph.check_write` on a new node reads nothing else). A sync's usual batch (every
row new, every edge inside the batch) reads nothing before it writes (:func:`_write_new`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from plughost import Guards, UserError
from plughost.api.store import check_write, write_defaults
from plughost.plugins.graph.common import (
    Prepared,
    check_embedding,
    keywords_of,
    labels_json,
    prepare_row,
    text_of,
    to_json,
)
from plughost.plugins.graph.sqlite_store import writes
from plughost.plugins.graph.sqlite_store.sql import chunks, marks

if TYPE_CHECKING:  # pragma: no cover
    from plughost.plugins.graph.sqlite_store.store import SqliteStore


class FastRow(NamedTuple):
    """A staged row a plain insert can write: everything its node row and side rows need, encoded."""

    pos: int  # the row's position in its part
    id: str
    labels: tuple[str, ...]
    props_json: str
    scope: Any  # None when absent
    agents_json: Any  # None when absent
    text: str  # what BM25 indexes
    agents: list[str]
    keywords: list[str]
    vector: bytes | None  # float32 embedding bytes

    @property
    def tags(self) -> tuple[Any, Any]:
        """``(scope, agents JSON)``: rows with the same tags pass or fail the write guards alike."""
        return self.scope, self.agents_json

    def prepared(self) -> Prepared:
        """The row back as an ordinary upsert item."""
        embedding = np.frombuffer(self.vector, dtype=np.float32).tolist() if self.vector is not None else None
        return Prepared(self.id, self.labels, json.loads(self.props_json), embedding, self.props_json)


class SlowRow(NamedTuple):
    """A staged row for the store's ordinary upsert (no id, a null property, a repeated id)."""

    pos: int
    item: Prepared


class StagedEdge(NamedTuple):
    row: int  # the position of the row that names it
    in_row: int  # its position in the row's ``edges``
    type: str
    to: str
    props: Any


Tags = tuple[Any, Any]
"""``(scope, agents JSON)`` of fast rows."""
Head = tuple[str, list[str]]
"""The first fast row of some tags: its id and agents (what the write guards check)."""


@dataclass
class StagedRows:
    """Validated rows for :meth:`SqliteStore.write_staged` (picklable: it crosses processes)."""

    account_id: str
    size: int = 0
    ids: list[str | None] = field(default_factory=list)  # each row's id as given, in order
    fast: list[FastRow] = field(default_factory=list)
    slow: list[SlowRow] = field(default_factory=list)
    edges: list[StagedEdge] = field(default_factory=list)
    groups: dict[Tags, Head] = field(default_factory=dict)
    """The fast rows' distinct tags, each with its first row's id and agents."""
    vectors: bool = False  # a fast row carries an embedding

    def __getstate__(self) -> dict[str, Any]:
        """Rows cross as plain tuples: a named tuple's pickle costs a Python call per row each way."""
        return {**self.__dict__, "fast": list(map(tuple, self.fast)), "slow": list(map(tuple, self.slow)),
                "edges": list(map(tuple, self.edges))}

    def __setstate__(self, state: dict[str, Any]) -> None:
        new = tuple.__new__
        state["fast"] = [new(FastRow, row) for row in state["fast"]]
        state["slow"] = [new(SlowRow, row) for row in state["slow"]]
        state["edges"] = [new(StagedEdge, edge) for edge in state["edges"]]
        self.__dict__.update(state)


def stage_rows(rows: Sequence[Mapping[str, Any]], account_id: str, *, owned: bool = False) -> StagedRows:
    """Validate and encode ``{id?, labels, properties, embedding?, edges?}`` rows; touches no database.

    ``owned``: the rows' property dicts are the caller's to give away (used as they are, keys
    checked once per key set rather than copied key by key).
    """
    out = StagedRows(account_id)
    seen: set[str] = set()
    repeated: set[str] = set()
    for i, row in enumerate(rows):
        item, row_edges = prepare_row(row, account_id, f"rows[{i}]", parsed=owned)
        out.ids.append(item.id)
        out.edges.extend(StagedEdge(i, j, t, to, p) for j, (t, to, p) in enumerate(row_edges))
        if item.id is not None:
            if item.id in seen:
                repeated.add(item.id)
            seen.add(item.id)
        if item.id is None or item.props_json is None:
            out.slow.append(SlowRow(i, item))
        else:
            out.fast.append(_fast_row(i, item.id, item))
    out.size = len(out.ids)
    if repeated:  # a repeated id merges, in row order: the ordinary upsert does that
        out.slow.extend(SlowRow(f.pos, f.prepared()) for f in out.fast if f.id in repeated)
        out.slow.sort(key=lambda s: s.pos)
        out.fast = [f for f in out.fast if f.id not in repeated]
    for f in out.fast:
        out.groups.setdefault(f.tags, (f.id, f.agents))
        out.vectors = out.vectors or f.vector is not None
    return out


def _fast_row(pos: int, nid: str, item: Prepared) -> FastRow:
    assert item.props_json is not None
    props = item.properties
    agents = props.get("agents")
    vector = None if item.embedding is None else np.asarray(item.embedding, dtype=np.float32).tobytes()
    return FastRow(pos, nid, item.labels, item.props_json, props.get("scope"),
                   to_json(agents) if agents is not None else None, text_of(props), list(dict.fromkeys(agents or ())),
                   keywords_of(props) if props.get("keywords") is not None else [], vector)


class _Fast(NamedTuple):
    part: int
    row: FastRow

    @property
    def key(self) -> tuple[int, int]:
        return self.part, self.row.pos


class _Slow(NamedTuple):
    part: int
    pos: int
    item: Prepared


def write_staged(store: SqliteStore, conn: sqlite3.Connection, parts: Sequence[StagedRows], account_id: str,
                 guards: Guards | None, embeddings: Mapping[str, Sequence[float]] | None) -> int:
    """Write staged parts inside the caller's transaction; returns how many rows were written.

    A batch of new rows whose edges stay inside it is written without a read (:func:`_write_new`);
    otherwise the fast rows that cannot stay fast join the slow ones (:func:`_sorted_rows`), the
    rows are written (:func:`_write_rows`), then the edges (:func:`_write_edges`)."""
    for k, part in enumerate(parts):
        if not isinstance(part, StagedRows) or part.account_id != account_id:
            raise UserError(f"parts[{k}]: expected rows staged by stage_rows for account '{account_id}'")
    vectors = {nid: check_embedding(vec, f"embeddings.{nid}") for nid, vec in (embeddings or {}).items()}
    if vectors or not _write_new(conn, parts, account_id, guards):
        fast, slow = _sorted_rows(conn, parts, account_id, guards)
        ids, rids, fresh = _write_rows(store, conn, fast, slow, account_id, guards, vectors)
        _write_edges(store, conn, parts, ids, rids, fresh, account_id, guards)
    return sum(part.size for part in parts)


def _sorted_rows(conn: sqlite3.Connection, parts: Sequence[StagedRows], account_id: str,
                 guards: Guards | None) -> tuple[list[_Fast], list[_Slow]]:
    """The parts' rows as written: fast ones stay plain inserts unless :func:`_demoted` says
    otherwise; slow ones (with the demoted) go through the ordinary upsert, in part and row order."""
    fast = [_Fast(k, f) for k, part in enumerate(parts) for f in part.fast]
    slow = [_Slow(k, s.pos, s.item) for k, part in enumerate(parts) for s in part.slow]
    demote = _demoted(conn, parts, fast, account_id, guards)
    if not demote:
        return fast, slow
    slow.extend(_Slow(k, f.pos, f.prepared()) for k, f in fast if (k, f.pos) in demote)
    slow.sort(key=lambda s: (s.part, s.pos))
    return [f for f in fast if f.key not in demote], slow


def _demoted(conn: sqlite3.Connection, parts: Sequence[StagedRows], fast: list[_Fast], account_id: str,
             guards: Guards | None) -> set[tuple[int, int]]:
    """The fast rows (``(part, position)``) the ordinary upsert writes instead: an id in two parts
    (they merge in order), an id the account has, and tags the guards add to (the store adds the
    process's own tags). The others' tags are checked against the guards here (``WriteDenied``)."""
    demote: set[tuple[int, int]] = set()
    if len(parts) > 1:
        counts = Counter(nid for part in parts for nid in part.ids if nid is not None)
        demote.update(f.key for f in fast if counts[f.row.id] > 1)
    for part_ids in chunks([f.row.id for f in fast]):
        stored = {r[0] for r in conn.execute(f"SELECT id FROM nodes WHERE id IN ({marks(len(part_ids))}) "
                                             "AND account_id = ?", [*part_ids, account_id])}
        if stored:
            demote.update(f.key for f in fast if f.row.id in stored)
    if guards is not None and guards.confined:  # every row through the checked upsert (check_confined)
        demote.update(f.key for f in fast)
    if guards is not None:
        demote.update(_checked_tags(guards, [f for f in fast if f.key not in demote]))
    return demote


def _checked_tags(guards: Guards, fast: list[_Fast]) -> set[tuple[int, int]]:
    """Check each distinct tags of ``fast`` under the guards once (its first row); returns the rows
    whose tags the guards would add to (those take the ordinary upsert)."""
    groups: dict[Tags, Head] = {}
    for f in fast:
        groups.setdefault(f.row.tags, (f.row.id, f.row.agents))
    added: set[tuple[int, int]] = set()
    for tags, head in groups.items():
        after = _after(tags, head)
        if write_defaults(guards, after):
            added.update(f.key for f in fast if f.row.tags == tags)
        else:
            check_write(guards, head[0], None, after)
    return added


def _after(tags: Tags, head: Head) -> dict[str, Any]:
    """The guarded properties of a new node with these tags, as :func:`plughost.ports.graph.check_write` reads them."""
    scope, agents_json = tags
    return {"scope": scope, "agents": head[1] if agents_json is not None else None}


def _write_rows(store: SqliteStore, conn: sqlite3.Connection, fast: list[_Fast], slow: list[_Slow],
                account_id: str, guards: Guards | None, vectors: Mapping[str, list[float] | None]
                ) -> tuple[dict[tuple[int, int], str], dict[str, int], dict[str, int]]:
    """The slow rows through the store's upsert, the fast ones as plain inserts; returns each row's
    id by ``(part, position)``, every written id's rid, and the rids of the nodes inserted here."""
    ids: dict[tuple[int, int], str] = {}
    rids: dict[str, int] = {}
    fresh: dict[str, int] = {}
    if slow:
        for s in slow:
            if s.item.id is not None and s.item.id in vectors:
                s.item.embedding = vectors[s.item.id]
        slow_ids, rids = store.write_nodes(conn, [s.item for s in slow], account_id, guards)
        ids.update(((s.part, s.pos), nid) for s, nid in zip(slow, slow_ids, strict=True))
    if fast:
        _insert_fast(conn, [f.row for f in fast], account_id, vectors, fresh)
        rids.update(fresh)
        ids.update((f.key, f.row.id) for f in fast)
    return ids, rids, fresh


def _write_edges(store: SqliteStore, conn: sqlite3.Connection, parts: Sequence[StagedRows],
                 ids: Mapping[tuple[int, int], str], rids: dict[str, int], fresh: Mapping[str, int],
                 account_id: str, guards: Guards | None) -> None:
    """The parts' edges: plain inserts from a node inserted here, the store's edge MERGE for the
    rest; an edge to an unknown node refuses the write, naming it."""
    wanted = [(ids[(k, e.row)], e.type, e.to, e.props) for k, part in enumerate(parts) for e in part.edges]
    rest = _insert_fresh_edges(conn, wanted, fresh, rids)
    missing = [rest[m] for m in store.write_edges(conn, [wanted[i] for i in rest], account_id, rids, guards)]
    if missing:
        k, e = [(k, e) for k, part in enumerate(parts) for e in part.edges][missing[0]]
        prefix = f"parts[{k}]." if len(parts) > 1 else ""
        raise UserError(f"{prefix}rows[{e.row}].edges[{e.in_row}].to: node '{e.to}' not found in account "
                        f"'{account_id}'")


def _write_new(conn: sqlite3.Connection, parts: Sequence[StagedRows], account_id: str, guards: Guards | None) -> bool:
    """The common write of a folder sync, when it applies: every row is fast (new to the account
    and to the write, no embedding, no tags the guards add) and every edge joins two of them.
    Then nothing is read: the nodes go in as plain inserts, and an id the account already has (or
    that two parts share) fails the unique index, which undoes the inserts; returns False, and
    :func:`write_staged` takes the general path. The result is the general path's, row for row."""
    if any(part.slow or part.vectors for part in parts) or guards is not None and guards.confined:
        return False  # a confined writer's rows take the checked path (check_confined)
    checks = _tag_checks(parts)
    if guards is not None and any(write_defaults(guards, after) for _, after in checks):
        return False
    fast = [f for part in parts for f in part.fast]
    base = conn.execute("SELECT coalesce(max(rid), 0) FROM nodes").fetchone()[0] + 1
    rids = dict(zip([f.id for f in fast], range(base, base + len(fast)), strict=True))
    if len(rids) < len(fast):
        return False  # an id in two parts merges in order: the general path
    edges = _new_edges(parts, rids, base)
    now = time.time()
    if edges is None or not _insert_new_nodes(conn, fast, base, account_id, now):
        return False
    if guards is not None:
        for head_id, after in checks:
            check_write(guards, head_id, None, after)  # a new node's check reads nothing else
    _insert_new_side_rows(conn, fast, base)
    if edges:
        conn.executemany("INSERT INTO edges (source, type, target, properties, created_at) VALUES (?,?,?,?,?)",
                         [(s, etype, d, json.dumps(p) if p else None, now) for (s, etype, d), p in edges.items()])
    return True


def _tag_checks(parts: Sequence[StagedRows]) -> list[tuple[str, dict[str, Any]]]:
    """What the write guards check of the parts' fast rows: per distinct tags, its first row's id
    and the guarded properties."""
    groups: dict[Tags, Head] = {}
    for part in parts:
        for tags, head in part.groups.items():
            groups.setdefault(tags, head)
    return [(head[0], _after(tags, head)) for tags, head in groups.items()]


def _new_edges(parts: Sequence[StagedRows], rids: Mapping[str, int], base: int
               ) -> dict[tuple[int, str, int], Any] | None:
    """The parts' edges by ``(source rid, type, target rid)`` when every target is a row of the
    write (the last properties given win, as in the edge MERGE); None when one is not."""
    edges: dict[tuple[int, str, int], Any] = {}
    start = base
    for part in parts:
        for e in part.edges:
            dst = rids.get(e.to)
            if dst is None:
                return None
            key = (start + e.row, e.type, dst)  # without slow rows, a row's position is its fast index
            if e.props or key not in edges:
                edges[key] = e.props
        start += len(part.fast)
    return edges


def _insert_new_nodes(conn: sqlite3.Connection, fast: list[FastRow], base: int, account_id: str, now: float) -> bool:
    """The node rows at ``base`` on; False, with nothing inserted, when an id is stored already."""
    conn.execute("SAVEPOINT staged_new")
    try:
        conn.executemany("INSERT INTO nodes (rid, id, account_id, labels, properties, scope, agents, created_at, "
                         "updated_at, dims) VALUES (?,?,?,?,?,?,?,?,?,NULL)",
                         [(rid, f.id, account_id, labels_json(f.labels), f.props_json, f.scope, f.agents_json, now, now)
                          for rid, f in enumerate(fast, base)])
    except sqlite3.IntegrityError:  # a stored id: merged by the general path
        conn.execute("ROLLBACK TO staged_new")
        conn.execute("RELEASE staged_new")
        return False
    conn.execute("RELEASE staged_new")
    return True


def _insert_new_side_rows(conn: sqlite3.Connection, fast: list[FastRow], base: int) -> None:
    """Labels, agents, keywords and BM25 text of the nodes :func:`_insert_new_nodes` wrote."""
    numbered = list(enumerate(fast, base))
    _insert_many(conn, "INSERT OR IGNORE INTO node_labels (label, node) VALUES (?, ?)",
                 ((lab, rid) for rid, f in numbered for lab in f.labels), always=True)
    _insert_many(conn, "INSERT OR IGNORE INTO node_agents (agent, node) VALUES (?, ?)",
                 ((ag, rid) for rid, f in numbered for ag in f.agents))
    _insert_many(conn, "INSERT OR IGNORE INTO node_keywords (keyword, node) VALUES (?, ?)",
                 ((kw, rid) for rid, f in numbered for kw in f.keywords))
    texts = [(rid, f.text) for rid, f in numbered if f.text]
    if texts:
        conn.executemany("INSERT INTO node_text (rowid, text) VALUES (?, ?)", texts)
        conn.executemany("INSERT INTO node_text_stem (rowid, text) VALUES (?, ?)", texts)


def _insert_many(conn: sqlite3.Connection, sql: str, rows: Iterable[tuple[Any, ...]], *, always: bool = False) -> None:
    batch = list(rows)
    if batch or always:
        conn.executemany(sql, batch)


def _insert_fresh_edges(conn: sqlite3.Connection, wanted: list[tuple[str, str, str, Any]], fresh: Mapping[str, int],
                        rids: Mapping[str, int]) -> list[int]:
    """Insert the edges from a node this write created to a node it wrote; returns the positions of
    the others (for the store's edge MERGE). A new node has no stored edge, so only copies within
    the write meet: the last properties given win, as in the MERGE."""
    plain: dict[tuple[int, str, int], Any] = {}
    rest: list[int] = []
    for pos, (src, etype, dst, props) in enumerate(wanted):
        s, d = fresh.get(src), rids.get(dst)
        if s is None or d is None:
            rest.append(pos)
        elif props or (s, etype, d) not in plain:
            plain[(s, etype, d)] = props
    if plain:
        now = time.time()
        conn.executemany("INSERT INTO edges (source, type, target, properties, created_at) VALUES (?,?,?,?,?)",
                         [(s, etype, d, json.dumps(p) if p else None, now) for (s, etype, d), p in plain.items()])
    return rest


def _insert_fast(conn: sqlite3.Connection, fast: list[FastRow], account_id: str,
                 vectors: Mapping[str, list[float] | None], rids: dict[str, int]) -> None:
    """Plain inserts of new nodes and their side rows; adds their rids to ``rids``."""
    rid = conn.execute("SELECT coalesce(max(rid), 0) FROM nodes").fetchone()[0]
    now = time.time()
    rows = writes.NodeRows()
    for f in fast:
        rid += 1
        rids[f.id] = rid
        vec = vectors.get(f.id)
        blob = np.asarray(vec, dtype=np.float32).tobytes() if vec is not None else f.vector
        dims = len(blob) // 4 if blob is not None else None
        rows.inserts.append((rid, f.id, account_id, labels_json(f.labels), f.props_json, f.scope, f.agents_json, now,
                             now, dims))
        rows.labels.extend((lab, rid) for lab in f.labels)
        rows.agents.extend((ag, rid) for ag in f.agents)
        rows.keywords.extend((kw, rid) for kw in f.keywords)
        if f.text:
            rows.texts.append((rid, f.text))
        if blob is not None:
            rows.vectors.append((blob, len(blob) // 4, rid))
    writes.write_rows(conn, rows)
