"""Upsert rows in two halves: validate and encode them anywhere, write them in the transaction.

:meth:`SqliteStore.upsert_many` validates, encodes and writes in the caller's thread, under the
store lock. A folder sync has its rows built in forked parse workers, so it asks the store to
stage them there (:func:`stage_rows`: the same :func:`plugins.graph.common.prepare_row` checks,
the properties JSON, the BM25 text, labels, agents and keywords, all as plain strings that
pickle cheaply) and hands the batches to :func:`write_staged` in the syncing process. That half
keeps every rule of an upsert: a staged row is *fast* (one plain insert) only when its id is
new to the account and to the write, it has no null property and the guards add nothing to
it; any other row goes through the store's ordinary upsert in the same transaction. The write
guards run in the transaction, once per distinct (scope, agents) of the fast rows
(:func:`host.graph.check_write` on a new node reads nothing else). A sync's usual batch (every
row new, every edge inside the batch) reads nothing before it writes (:func:`_write_new`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from host.errors import UserError
from host.graph import Guards, check_write, write_defaults
from plugins.graph.common import (
    Prepared,
    check_embedding,
    keywords_of,
    labels_json,
    prepare_row,
    text_of,
    to_json,
)
from plugins.graph.sqlite_store import writes
from plugins.graph.sqlite_store.sql import chunks, marks

if TYPE_CHECKING:  # pragma: no cover
    from plugins.graph.sqlite_store.store import SqliteStore

FastRow = tuple[int, str, tuple[str, ...], str, Any, Any, str, list[str], list[str], bytes | None]
"""``(position, id, labels, properties JSON, scope, agents JSON, BM25 text, agents,
keywords, float32 embedding bytes)``; scope and agents are None when absent."""


@dataclass
class StagedRows:
    """Validated rows for :meth:`SqliteStore.write_staged` (picklable: it crosses processes)."""

    account_id: str
    size: int = 0
    ids: list[str | None] = field(default_factory=list)  # each row's id as given, in order
    fast: list[FastRow] = field(default_factory=list)
    slow: list[tuple[int, Prepared]] = field(default_factory=list)
    edges: list[tuple[int, int, str, str, Any]] = field(default_factory=list)  # (row, edge, type, to, props)
    groups: dict[tuple[Any, Any], tuple[str, list[str]]] = field(default_factory=dict)
    """The fast rows' distinct ``(scope, agents JSON)``, each with its first row's id and agents."""
    vectors: bool = False  # a fast row carries an embedding


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
        out.edges.extend((i, j, t, to, p) for j, (t, to, p) in enumerate(row_edges))
        if item.id is not None:
            if item.id in seen:
                repeated.add(item.id)
            seen.add(item.id)
        if item.id is None or item.props_json is None:
            out.slow.append((i, item))
            continue
        props = item.properties
        agents = props.get("agents")
        vector = None if item.embedding is None else np.asarray(item.embedding, dtype=np.float32).tobytes()
        agents_json = to_json(agents) if agents is not None else None
        tagged = list(dict.fromkeys(agents or ()))
        out.fast.append((i, item.id, item.labels, item.props_json, props.get("scope"), agents_json, text_of(props),
                         tagged, keywords_of(props) if props.get("keywords") is not None else [], vector))
    out.size = len(out.ids)
    if repeated:  # a repeated id merges, in row order: the ordinary upsert does that
        keep = [f for f in out.fast if f[1] not in repeated]
        out.slow.extend((f[0], _prepared(f)) for f in out.fast if f[1] in repeated)
        out.slow.sort(key=lambda s: s[0])
        out.fast = keep
    for f in out.fast:
        out.groups.setdefault((f[4], f[5]), (f[1], f[7]))
        out.vectors = out.vectors or f[9] is not None
    return out


def _prepared(row: FastRow) -> Prepared:
    """A fast row back as an ordinary upsert item."""
    _, nid, labels, props_json, *_, vector = row
    embedding = np.frombuffer(vector, dtype=np.float32).tolist() if vector is not None else None
    return Prepared(nid, labels, json.loads(props_json), embedding, props_json)


def write_staged(store: SqliteStore, conn: sqlite3.Connection, parts: Sequence[StagedRows], account_id: str,
                 guards: Guards | None, embeddings: Mapping[str, Sequence[float]] | None) -> int:
    """Write staged parts inside the caller's transaction; returns how many rows were written."""
    for k, part in enumerate(parts):
        if not isinstance(part, StagedRows) or part.account_id != account_id:
            raise UserError(f"parts[{k}]: expected rows staged by stage_rows for account '{account_id}'")
    vectors = {nid: check_embedding(vec, f"embeddings.{nid}") for nid, vec in (embeddings or {}).items()}
    if not vectors and _write_new(conn, parts, account_id, guards):
        return sum(part.size for part in parts)
    fast: list[tuple[int, FastRow]] = [(k, f) for k, part in enumerate(parts) for f in part.fast]
    slow: list[tuple[int, int, Prepared]] = [(k, i, item) for k, part in enumerate(parts) for i, item in part.slow]
    demote: set[tuple[int, int]] = set()
    if len(parts) > 1:  # an id in two parts merges in order
        counts: dict[str, int] = {}
        for part in parts:
            for nid in part.ids:
                if nid is not None:
                    counts[nid] = counts.get(nid, 0) + 1
        demote.update((k, f[0]) for k, f in fast if counts[f[1]] > 1)
    for part_ids in chunks([f[1] for _, f in fast]):
        stored = {r[0] for r in conn.execute(f"SELECT id FROM nodes WHERE id IN ({marks(len(part_ids))}) "
                                             "AND account_id = ?", [*part_ids, account_id])}
        if stored:
            demote.update((k, f[0]) for k, f in fast if f[1] in stored)
    groups: dict[tuple[Any, Any], tuple[str, list[str]]] = {}
    for k, f in fast:
        if (k, f[0]) not in demote:
            groups.setdefault((f[4], f[5]), (f[1], f[7]))
    if guards is not None:
        for (scope, agents_json), (first, agents) in groups.items():
            after = {"scope": scope, "agents": agents if agents_json is not None else None}
            if write_defaults(guards, after):  # the store adds the process's own tags: an ordinary upsert
                demote.update((k, f[0]) for k, f in fast if (f[4], f[5]) == (scope, agents_json))
            else:
                check_write(guards, first, None, after)
    if demote:
        slow.extend((k, f[0], _prepared(f)) for k, f in fast if (k, f[0]) in demote)
        slow.sort(key=lambda s: (s[0], s[1]))
        fast = [(k, f) for k, f in fast if (k, f[0]) not in demote]
    ids: dict[tuple[int, int], str] = {}
    rids: dict[str, int] = {}
    fresh: dict[str, int] = {}
    if slow:
        for _, _, item in slow:
            if item.id in vectors:
                item.embedding = vectors[item.id]
        slow_ids, rids = store.write_nodes(conn, [s[2] for s in slow], account_id, guards)
        ids.update(((k, i), nid) for (k, i, _), nid in zip(slow, slow_ids, strict=True))
    if fast:
        _insert_fast(conn, [f for _, f in fast], account_id, vectors, fresh)
        rids.update(fresh)
        ids.update(((k, f[0]), f[1]) for k, f in fast)
    wanted = [(ids[(k, i)], t, to, p) for k, part in enumerate(parts) for i, _, t, to, p in part.edges]
    rest = _insert_fresh_edges(conn, wanted, fresh, rids)
    missing = [rest[m] for m in store.write_edges(conn, [wanted[i] for i in rest], account_id, rids, guards)]
    if missing:
        where = [(k, i, j, to) for k, part in enumerate(parts) for i, j, _, to, _ in part.edges][missing[0]]
        prefix = f"parts[{where[0]}]." if len(parts) > 1 else ""
        raise UserError(f"{prefix}rows[{where[1]}].edges[{where[2]}].to: node '{where[3]}' not found in account "
                        f"'{account_id}'")
    return sum(part.size for part in parts)


def _write_new(conn: sqlite3.Connection, parts: Sequence[StagedRows], account_id: str, guards: Guards | None) -> bool:
    """The common write of a folder sync, when it applies: every row is fast (new to the account
    and to the write, no embedding, no tags the guards add) and every edge joins two of them.
    Then nothing is read: the nodes go in as plain inserts, and an id the account already has (or
    that two parts share) fails the unique index, which undoes the inserts; returns False, and
    :func:`write_staged` takes the general path. The result is the general path's, row for row."""
    if any(part.slow or part.vectors for part in parts):
        return False
    groups: dict[tuple[Any, Any], tuple[str, list[str]]] = {}
    for part in parts:
        for tags, head in part.groups.items():
            groups.setdefault(tags, head)
    checks = [(head_id, {"scope": scope, "agents": agents if agents_json is not None else None})
              for (scope, agents_json), (head_id, agents) in groups.items()]
    if guards is not None and any(write_defaults(guards, after) for _, after in checks):
        return False
    fast = [f for part in parts for f in part.fast]
    base = conn.execute("SELECT coalesce(max(rid), 0) FROM nodes").fetchone()[0] + 1
    rids = dict(zip([f[1] for f in fast], range(base, base + len(fast)), strict=True))
    if len(rids) < len(fast):
        return False  # an id in two parts merges in order: the general path
    edges: dict[tuple[int, str, int], Any] = {}
    start = base
    for part in parts:
        for i, _, etype, to, props in part.edges:
            dst = rids.get(to)
            if dst is None:
                return False
            key = (start + i, etype, dst)  # without slow rows, a row's position is its fast index
            if props or key not in edges:
                edges[key] = props  # as the edge MERGE: the last properties given win
        start += len(part.fast)
    now = time.time()
    conn.execute("SAVEPOINT staged_new")
    try:
        conn.executemany("INSERT INTO nodes (rid, id, account_id, labels, properties, scope, agents, created_at, "
                         "updated_at, dims) VALUES (?,?,?,?,?,?,?,?,?,NULL)",
                         [(rid, f[1], account_id, labels_json(f[2]), f[3], f[4], f[5], now, now)
                          for rid, f in enumerate(fast, base)])
    except sqlite3.IntegrityError:  # a stored id: merged by the general path
        conn.execute("ROLLBACK TO staged_new")
        conn.execute("RELEASE staged_new")
        return False
    conn.execute("RELEASE staged_new")
    if guards is not None:
        for head_id, after in checks:
            check_write(guards, head_id, None, after)  # a new node's check reads nothing else
    conn.executemany("INSERT OR IGNORE INTO node_labels (label, node) VALUES (?, ?)",
                     [(lab, rid) for rid, f in enumerate(fast, base) for lab in f[2]])
    agents = [(ag, rid) for rid, f in enumerate(fast, base) if f[7] for ag in f[7]]
    if agents:
        conn.executemany("INSERT OR IGNORE INTO node_agents (agent, node) VALUES (?, ?)", agents)
    keywords = [(kw, rid) for rid, f in enumerate(fast, base) if f[8] for kw in f[8]]
    if keywords:
        conn.executemany("INSERT OR IGNORE INTO node_keywords (keyword, node) VALUES (?, ?)", keywords)
    texts = [(rid, f[6]) for rid, f in enumerate(fast, base) if f[6]]
    if texts:
        conn.executemany("INSERT INTO node_text (rowid, text) VALUES (?, ?)", texts)
        conn.executemany("INSERT INTO node_text_stem (rowid, text) VALUES (?, ?)", texts)
    if edges:
        conn.executemany("INSERT INTO edges (source, type, target, properties, created_at) VALUES (?,?,?,?,?)",
                         [(s, etype, d, json.dumps(p) if p else None, now) for (s, etype, d), p in edges.items()])
    return True


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
    for _, nid, labels, props_json, scope, agents_json, text, agents, keywords, blob in fast:
        rid += 1
        rids[nid] = rid
        vec = vectors.get(nid)
        if vec is not None:
            blob = np.asarray(vec, dtype=np.float32).tobytes()
        dims = len(blob) // 4 if blob is not None else None
        rows.inserts.append((rid, nid, account_id, labels_json(labels), props_json, scope, agents_json, now, now,
                             dims))
        rows.labels.extend((lab, rid) for lab in labels)
        if agents:
            rows.agents.extend((ag, rid) for ag in agents)
        if keywords:
            rows.keywords.extend((kw, rid) for kw in keywords)
        if text:
            rows.texts.append((rid, text))
        if blob is not None:
            rows.vectors.append((blob, dims, rid))  # type: ignore[arg-type]
    writes.write_rows(conn, rows)
