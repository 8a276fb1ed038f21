"""Exact vector search for the embedded store: cosine top-k over an in-process matrix of the
account's vectors, the guards applied in SQL before the cut.

The matrix is kept current by loading only what was written since (``node_vectors.seq``); the
guards run on a score-ordered window or on the full guarded candidate set (see
:meth:`VectorSearch.vector_search`). Candidate sets are cached until anything is written.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np

from plughost import Guards, Hit, Node
from plughost.plugins.graph.common import check_embedding, guards_ok, vector_threads  # noqa: F401 (re-exported)
from plughost.plugins.graph.sqlite_store.nodes import Deferred
from plughost.plugins.graph.sqlite_store.sql import (
    LIGHT_COLS,
    ROW_EXTRA,
    first_window,
    guard_sql,
    label_sql,
    where_sql,
    within_sql,
)

VECTOR_SPLIT_ROWS = 16384
"""Matrices at least this tall are scored in slices on parallel threads (numpy releases the GIL in
BLAS) when numpy's BLAS runs one thread (:func:`blas_one_thread`) or ``PLUGHOST_VECTOR_THREADS``
is set. Scoring reads the whole matrix once per query, and one core cannot draw all of the
machine's memory bandwidth: on 2 cores, 100k × 384 scores in about 13.5 ms against 24 ms. A
threaded BLAS (OpenBLAS's default: a thread per core) already splits the one matmul: slices on
top of it ran 4 threads on 2 cores, and at 100k rows one matmul took 21.4 ms p50 against 24.0 ms
for two slices in turn and 28.1 ms for two on threads (load 3.5)."""
COLUMN_BLOCK_ROWS = 512
"""Several query vectors (a question and its paraphrases) score the matrix a block of this many rows
at a time: each block comes from memory once and is scored against every query from cache, one
``block @ q`` each (the matrix-times-vector kernel one query uses). One ``matrix @ Q`` instead runs
the matrix-times-matrix kernel, which copies (packs) the matrix first: at 100k × 384 and four
queries it took 2.2x one query's CPU, the blocks 1.45x (1 BLAS thread, load 18; 512 and 256 rows
alike, 4096 as slow as ``matrix @ Q``)."""
VECTOR_WINDOW_MAX = 4096  # past this window, vector search selects (and caches) every guarded candidate


def candidate_key(g: Guards, labels: Sequence[str] | None, dims: int, where: Mapping[str, Any] | None,
                   within: tuple[str, str] | None) -> tuple[Any, ...]:
    """The candidate-cache key: the guards, labels and dims, plus the optional filters when given."""
    key: tuple[Any, ...] = (g, tuple(labels) if labels else None, dims)
    if where or within:
        key += (tuple(sorted((where or {}).items())), tuple(within) if within else None)
    return key


def blas_one_thread(env: Mapping[str, str] | None = None) -> bool:
    """Whether numpy's BLAS was told to run one thread (``OPENBLAS_NUM_THREADS``,
    ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` = 1 in the process environment it loaded with)."""
    env = os.environ if env is None else env
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if env.get(name, "").strip():
            return env[name].strip() == "1"
    return False


def cores_busy() -> bool:
    """Whether the load average is at or above the core count: every core already has a runnable
    task, so the slices of one query wait for each other's turn (on 2 cores at load 10, 100k rows
    scored on 2 threads took 117 ms against 94 ms on one). The default thread count then scores
    the same slices in turn on the calling thread: the same arithmetic, so the same scores."""
    try:
        return os.getloadavg()[0] >= (os.cpu_count() or 1)
    except (AttributeError, OSError):  # no load average on this platform
        return False


def _unit(vector: Sequence[float]) -> np.ndarray | None:
    """The query vector scaled to length 1 (float32), or None for a zero vector."""
    q64 = np.asarray(check_embedding(vector, "vector"), dtype=np.float64)
    norm = float(np.linalg.norm(q64))
    return (q64 / norm).astype(np.float32) if norm else None


def _blocks(matrix: np.ndarray, queries: np.ndarray, out: np.ndarray, start: int, stop: int) -> None:
    """``out[:, start:stop] = queries @ matrix[start:stop].T``, a block of rows against every query in turn."""
    for i in range(start, stop, COLUMN_BLOCK_ROWS):
        block = matrix[i:min(stop, i + COLUMN_BLOCK_ROWS)]
        for j, q in enumerate(queries):
            np.dot(block, q, out=out[j, i:i + len(block)])


def _window(scores: np.ndarray, size: int) -> np.ndarray:
    """The positions of the ``size`` best scores, best first."""
    if size >= len(scores):
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, size - 1)[:size]
    return part[np.argsort(-scores[part], kind="stable")]


def _members(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Which of ``ids`` are in ``values`` (sorted), as a mask."""
    if len(values) == 0:
        return np.zeros(len(ids), dtype=bool)
    return values[np.minimum(np.searchsorted(values, ids), len(values) - 1)] == ids


def _id_list(rids: np.ndarray) -> str:
    """Row ids as the JSON array a statement walks with ``json_each``."""
    return "[" + ",".join(map(str, rids.tolist())) + "]"


def _near_scores(rows: np.ndarray, queries: np.ndarray) -> list[np.ndarray]:
    """``rows @ q`` for each query, on the calling thread: numpy's own multiply-add loop
    (``einsum``), never the BLAS. For the paraphrases on the question's neighbourhood (3 x 4,096
    rows) the BLAS's threads cost more than the arithmetic: at load 8 on 2 cores ``queries @
    rows.T`` took 15 ms p50 against 1 ms here (and 1.6 against 0.9 on one BLAS thread)."""
    return [np.einsum("ij,j->i", rows, q) for q in queries]


class VectorSearch:
    """The store's ``vector_search`` and the matrix and candidate caches behind it."""

    if TYPE_CHECKING:  # provided by SqliteStore
        conn: sqlite3.Connection
        lock: threading.RLock
        _pool: Any
        _matrices: dict[tuple[str, int], tuple[int, np.ndarray, np.ndarray, int]]
        _candidates: OrderedDict[Any, np.ndarray]
        vector_threads: int
        vector_threads_set: bool
        vector_split: bool
        vector_window_max: int
        vector_split_rows: int

        def _fresh_caches(self) -> None: ...

        def _snapshot(self) -> AbstractContextManager[None]: ...

        def _rows_by_rid(self, rids: Sequence[int]) -> dict[int, Node]: ...

        def _deferred(self, guard: tuple[str, list[Any]]) -> Deferred: ...

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
        with self._snapshot():  # the guard window and the hits' rows: one state of the file
            self._fresh_caches()
            rids, matrix = self._matrix(g.account_id, dims)
            if len(rids) == 0:
                return []
            cands = self._candidates.get(candidate_key(g, labels, dims, where, within))
            if cands is None and self.vector_window_max > 0 and not (where or within):
                hits = self._window_top_k(rids, self._scores(matrix, q), int(k), g, labels, dims)
                if hits is not None:
                    return hits
            if cands is None:
                cands = self._candidate_rids(g, labels, dims, where, within)
            ranked = self._candidate_top_k(rids, matrix, q, cands, int(k))
            nodes = self._rows_by_rid([rid for rid, _ in ranked])
        return [Hit(nodes[rid], score) for rid, score in ranked if rid in nodes]

    def vector_search_many(self, vectors: Sequence[Sequence[float]], k: int, *, guards: Guards,
                           labels: Sequence[str] | None = None, near_first: int = 0) -> list[list[Hit]]:
        """:meth:`vector_search` for several query vectors (a question and its paraphrases) in one
        pass over the matrix, a block of rows at a time (:data:`COLUMN_BLOCK_ROWS`); each query then
        takes the same guarded top-k.

        ``near_first`` > 0 scores the vectors after the first only on the first's ``near_first``
        best-scoring rows (the question's neighbourhood; the first is scored on every row): each
        of those lists is the exact guarded top-k within that neighbourhood, and may hold fewer
        than k hits when the guards pass fewer of its rows. The matrix is read once for the first
        vector, not once more per paraphrase (docs/retrieval.md, step 1)."""
        if len(vectors) < 2 or k <= 0:
            return [self.vector_search(v, k, guards=guards, labels=labels) for v in vectors]
        g = guards_ok(guards)
        unit = [_unit(vector) for vector in vectors]
        sizes = {len(q) for q in unit if q is not None}
        if len(sizes) != 1:  # no vector, or vectors of different lengths: one at a time
            return [self.vector_search(v, k, guards=guards, labels=labels) for v in vectors]
        queries = {j: q for j, q in enumerate(unit) if q is not None}
        out: list[list[Hit]] = [[] for _ in vectors]
        with self._snapshot():
            self._fresh_caches()
            for j, hits in self._columns_top_k(g, labels, sizes.pop(), queries, int(k), near_first).items():
                out[j] = hits
        return out

    def _columns_top_k(self, g: Guards, labels: Sequence[str] | None, dims: int, queries: dict[int, np.ndarray],
                       k: int, near_first: int = 0) -> dict[int, list[Hit]]:
        """Each query's guarded top-k (by its position), the matrix read once (inside a snapshot);
        with ``near_first``, the queries after the first scored on the first's best rows only."""
        out: dict[int, list[Hit]] = {}
        rids, matrix = self._matrix(g.account_id, dims)
        if len(rids) == 0:
            return out
        live = list(queries)
        block = np.stack([queries[j] for j in live])
        # per query: the rows it ranks (all, or the first's neighbourhood: sorted, as rids are) and their scores
        columns: list[tuple[np.ndarray, np.ndarray]]
        if 0 < near_first < len(rids) and len(live) > 1:
            first = self._scores(matrix, block[0])
            near = np.sort(np.argpartition(-first, near_first - 1)[:near_first])
            near_rids = rids[near]
            columns = [(rids, first)] + [(near_rids, row) for row in _near_scores(matrix[near], block[1:])]
        else:
            columns = [(rids, row) for row in self._column_scores(matrix, block)]  # m x n: the matrix read once
        cands = self._candidates.get(candidate_key(g, labels, dims, None, None))
        windowed = cands is None and self.vector_window_max > 0
        first_windows = self._windows_top_k(columns, k, g, labels, dims) if windowed else [None] * len(columns)
        pending: list[tuple[int, list[tuple[int, float]]]] = []
        for (ranked_rids, scores), j, hits in zip(columns, live, first_windows, strict=True):
            if hits is not None:
                out[j] = hits
                continue
            if cands is None and self.vector_window_max > 0:  # its first window held too few: widen it alone
                hits = self._window_top_k(ranked_rids, scores, k, g, labels, dims)
                if hits is not None:
                    out[j] = hits
                    continue
            if cands is None:
                cands = self._candidate_rids(g, labels, dims, None, None)
            pending.append((j, self._candidate_top_k(ranked_rids, matrix, queries[j], cands, k, scores=scores)))
        if pending:
            nodes = self._rows_by_rid(list({rid for _, ranked in pending for rid, _ in ranked}))
            for j, ranked in pending:
                out[j] = [Hit(nodes[rid], score) for rid, score in ranked if rid in nodes]
        return out

    def _windows_top_k(self, columns: Sequence[tuple[np.ndarray, np.ndarray]], k: int, g: Guards,
                       labels: Sequence[str] | None, dims: int) -> list[list[Hit] | None]:
        """:meth:`_window_top_k`'s first window for several queries at once (a question and its
        paraphrases): the guards run once, on the union of the windows' rows, in the statement that
        reads the rows the hits' nodes are built from; each query keeps the
        first k guarded rows of its window, in its window's order (as alone). A query whose window
        holds fewer than k guarded rows, and is not every row, gets None: widen it alone."""
        tops = [_window(scores, min(len(scores), first_window(k))) for _, scores in columns]
        ranked = [rids[top] for (rids, _), top in zip(columns, tops, strict=True)]
        cond, params = guard_sql(g)
        lab, lparams = label_sql(labels)
        # the rows the guards pass, read once with what a hit's node needs (each row is read once)
        rows = {row[0]: row for row in self.conn.execute(
            f"SELECT {LIGHT_COLS} FROM json_each(?) w CROSS JOIN nodes n ON n.rid = w.value "
            f"WHERE n.dims = ? AND {cond}{lab}",
            [_id_list(np.unique(np.concatenate(ranked))), dims, *params, *lparams])}
        passing = np.sort(np.fromiter(rows, dtype=np.int64, count=len(rows)))
        kept: list[np.ndarray | None] = []
        for (_, scores), top, ids in zip(columns, tops, ranked, strict=True):
            keep = np.flatnonzero(_members(passing, ids))[:k]
            kept.append(keep if len(keep) >= k or len(top) >= len(scores) else None)
        wanted = [ids[keep] for ids, keep in zip(ranked, kept, strict=True) if keep is not None]
        nodes: dict[int, Node] = {}
        if wanted:
            deferred = self._deferred((f"{cond}{lab}", [*params, *lparams]))
            nodes = {rid: deferred.node(rows[rid]) for rid in np.unique(np.concatenate(wanted)).tolist()}
        out: list[list[Hit] | None] = []
        for (_, scores), top, ids, chosen in zip(columns, tops, ranked, kept, strict=True):
            out.append(None if chosen is None else [
                Hit(nodes[rid], score) for rid, score in zip(ids[chosen].tolist(), scores[top[chosen]].tolist(),
                                                             strict=True) if rid in nodes])
        return out

    def _window_top_k(self, rids: np.ndarray, scores: np.ndarray, k: int, g: Guards,
                      labels: Sequence[str] | None, dims: int) -> list[Hit] | None:
        """Guarded top-k from a widening window of the best scores; None when it grows too wide.

        The window's guarded rows come out of the statement that applies the guards, in window
        (score) order, at most k of them."""
        cond, params = guard_sql(g)
        lab, lparams = label_sql(labels)
        # the first k guarded rids of the window (CROSS JOIN: walk the window, never the account's
        # index), then their rows: the columns of the rows past the k-th are never read
        sql = (f"SELECT {LIGHT_COLS}, g.key FROM (SELECT w.key AS key, n.rid AS rid FROM json_each(?) w "
               f"CROSS JOIN nodes n ON n.rid = w.value WHERE n.dims = ? AND {cond}{lab} ORDER BY w.key LIMIT ?) g "
               f"CROSS JOIN nodes n ON n.rid = g.rid")
        n = len(scores)
        window = min(n, first_window(k))
        while True:
            top = _window(scores, window)
            ids = _id_list(rids[top])
            rows = sorted(self.conn.execute(sql, [ids, dims, *params, *lparams, k]), key=lambda row: row[ROW_EXTRA])
            if len(rows) >= k or window >= n:
                best = scores[top[[row[ROW_EXTRA] for row in rows]]].tolist()
                deferred = self._deferred((f"{cond}{lab}", [*params, *lparams]))
                return [Hit(deferred.node(row), score) for row, score in zip(rows, best, strict=True)]
            if window >= self.vector_window_max:
                return None
            window = min(n, window * 4, self.vector_window_max)  # the last try at the bound itself

    def _scores(self, matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``matrix @ q``, in ``vector_threads`` slices at once when the matrix is tall enough and
        the store splits it (``vector_split``: see :data:`VECTOR_SPLIT_ROWS`)."""
        n, threads = len(matrix), self.vector_threads
        if threads < 2 or n < self.vector_split_rows or not self.vector_split:
            return matrix @ q
        out = np.empty((n, *q.shape[1:]), dtype=np.result_type(matrix, q))  # q: one vector, or dims x m
        step = -(-n // threads)
        if not self.vector_threads_set and cores_busy():
            for i in range(0, n, step):
                np.matmul(matrix[i:i + step], q, out=out[i:i + step])
            return out
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # 17 ms of imports: off the boot path

            self._pool = ThreadPoolExecutor(threads - 1, thread_name_prefix="plughost-vector")
        slices = [self._pool.submit(np.matmul, matrix[i:i + step], q, out=out[i:i + step])
                  for i in range(step, n, step)]
        np.matmul(matrix[:step], q, out=out[:step])
        for part in slices:
            part.result()
        return out

    def _column_scores(self, matrix: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """``queries @ matrix.T`` (m x n, a row per query) by :data:`COLUMN_BLOCK_ROWS` blocks, in
        ``vector_threads`` slices at once when the store splits the matrix (as :meth:`_scores`)."""
        n, threads = len(matrix), self.vector_threads
        out = np.empty((len(queries), n), dtype=np.result_type(matrix, queries))
        if threads < 2 or n < self.vector_split_rows or not self.vector_split or (
                not self.vector_threads_set and cores_busy()):
            _blocks(matrix, queries, out, 0, n)
            return out
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # 17 ms of imports: off the boot path

            self._pool = ThreadPoolExecutor(threads - 1, thread_name_prefix="plughost-vector")
        step = -(-n // threads)
        slices = [self._pool.submit(_blocks, matrix, queries, out, i, min(n, i + step)) for i in range(step, n, step)]
        _blocks(matrix, queries, out, 0, step)
        for part in slices:
            part.result()
        return out

    def _candidate_top_k(self, rids: np.ndarray, matrix: np.ndarray, q: np.ndarray, cands: np.ndarray,
                         k: int, scores: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Exact top-k over a guarded candidate set (rids selected by SQL); ``scores``: the whole
        matrix's, already computed."""
        if len(cands) == 0:
            return []
        pos = np.minimum(np.searchsorted(rids, cands), len(rids) - 1)
        pos = pos[rids[pos] == cands]
        if len(pos) == 0:
            return []
        if scores is not None:
            scores = scores[pos]
        else:
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
        key = candidate_key(g, labels, dims, where, within)
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
