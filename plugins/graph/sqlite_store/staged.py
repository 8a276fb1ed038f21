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
(:func:`host.graph.check_write` on a new node reads nothing else).
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
        out.fast.append((i, item.id, item.labels, item.props_json, props.get("scope"),
                         to_json(agents) if agents is not None else None, text_of(props),
                         list(dict.fromkeys(agents or ())),
                         keywords_of(props) if props.get("keywords") is not None else [], vector))
    out.size = len(out.ids)
    if repeated:  # a repeated id merges, in row order: the ordinary upsert does that
        keep = [f for f in out.fast if f[1] not in repeated]
        out.slow.extend((f[0], _prepared(f)) for f in out.fast if f[1] in repeated)
        out.slow.sort(key=lambda s: s[0])
        out.fast = keep
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
        slow_ids, rids = store._upsert(conn, [s[2] for s in slow], account_id, guards)
        ids.update(((k, i), nid) for (k, i, _), nid in zip(slow, slow_ids, strict=True))
    if fast:
        _insert_fast(conn, [f for _, f in fast], account_id, vectors, fresh)
        rids.update(fresh)
        ids.update(((k, f[0]), f[1]) for k, f in fast)
    wanted = [(ids[(k, i)], t, to, p) for k, part in enumerate(parts) for i, _, t, to, p in part.edges]
    rest = _insert_fresh_edges(conn, wanted, fresh, rids)
    missing = [rest[m] for m in store._edges(conn, [wanted[i] for i in rest], account_id, rids, guards)]
    if missing:
        where = [(k, i, j, to) for k, part in enumerate(parts) for i, j, _, to, _ in part.edges][missing[0]]
        prefix = f"parts[{where[0]}]." if len(parts) > 1 else ""
        raise UserError(f"{prefix}rows[{where[1]}].edges[{where[2]}].to: node '{where[3]}' not found in account "
                        f"'{account_id}'")
    return sum(part.size for part in parts)


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
