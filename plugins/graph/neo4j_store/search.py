"""Search on the Neo4j store: vector, full-text and keyword top-k, exact over the guards, and the
vector indexes behind them (discovery and compaction).

Vector search is exact over the guards: ``db.index.vector.queryNodes`` returns the nearest
nodes of a whole index *before* any WHERE, so each wanted index whose label is in use is asked
for a window of k candidates, guarded, and the top k of the union (by the index's score) is
re-scored exactly with ``vector.similarity.cosine``. An index is done when its window held all
it has, k of its own guarded nodes, or nothing below its window's lowest score can beat the k-th;
only the others widen. Before widening, the guarded candidates are counted: few enough
(``EXACT_MAX``) and they are all scored exactly. The windows run in one query, or (when
``PLUGHOST_VECTOR_THREADS`` is set above 1) split over that many read transactions side by side.
Scores are cosines in [-1, 1], as in the embedded store.

Full-text search asks ``db.index.fulltext.queryNodes`` for every match among the account's nodes
and scores them with the account's own statistics as the embedded store does
(:mod:`plughost.plugins.graph.bm25`: FTS5's BM25, not Lucene's), from each node's analysed text;
the guards then keep the top k in that order (exact). User text is Lucene-escaped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plughost import Guards, Hit, UserError, log
from plughost.api.store import VECTOR_LABELS
from plughost.plugins.graph import bm25
from plughost.plugins.graph.analysis import query_terms
from plughost.plugins.graph.bm25 import TextStats
from plughost.plugins.graph.common import check_embedding, check_labels, guards_ok
from plughost.plugins.graph.neo4j_store.nodes import cosine_hits, node_of
from plughost.plugins.graph.neo4j_store.queries import (
    FULLTEXT_INDEX,
    Q_AWAIT_INDEXES,
    Q_INDEXES,
    Q_KEYWORD,
    Q_LABELS_PRESENT,
    Q_TEXT_HITS,
    Q_TEXT_STATS,
    Q_VECTOR_DEFS,
    guard_params,
    lucene_query,
    q_fulltext,
    q_rebuild_vector_index,
    q_vector_count,
    q_vector_exact,
    q_vector_windows,
    where_cypher,
    within_cypher,
)

OVERFETCH = 1
"""Vector candidates asked of each index at first = max(k * OVERFETCH, MIN_FETCH): the global top
k lies in the union of every index's top k, and an HNSW search costs about its window; an index
whose window the guards cut short is widened alone (exactness is kept)."""
MIN_FETCH = 10
EXACT_MAX = 5000
"""Guarded candidate sets up to this size are scored exactly when the first windows hold fewer than
k guarded nodes (Cypher reads each stored vector: ~40 µs a node, where widening an index is cheap)."""
WIDEN = 8
TEXT_STATS_TTL = 30.0
"""Seconds this process reuses an account's full-text statistics (its document count and total
length, which BM25's IDF and length normalisation read); any write of its own drops them at once,
another process's reaches them within this time (a few documents more or less move a score by
about their share of the account)."""
INDEX_GONE = "no such vector schema index"
"""The procedure's error for an index dropped since discovery (or mid-swap by a compaction)."""


def _keep_best(best: dict[str, Any], hits: list[Any]) -> None:
    """Each hit kept under its node id when it beats the one kept (the highest index score wins)."""
    for hit in hits:
        if hit["id"] not in best or hit["approx"] > best[hit["id"]]["approx"]:
            best[hit["id"]] = hit


class Search:
    """The store's ``vector_search``, ``fulltext_search`` and ``keyword_search``, and the vector
    index discovery and compaction behind them."""

    overfetch = OVERFETCH
    min_fetch = MIN_FETCH
    exact_max = EXACT_MAX
    """Vector-search tunables (per instance; the guard property test narrows them to reach every path)."""

    if TYPE_CHECKING:  # provided by Neo4jStore
        vector_threads: int
        _indexes: dict[str, tuple[str, int]] | None
        _fulltext_warned: bool
        _executor: Any
        _text_stats: dict[str, tuple[float, int, TextStats]]
        _writes: int

        @property
        def read_only(self) -> bool: ...

        def read(self, work: Callable[[Any], Any]) -> Any: ...

        def write(self, work: Callable[[Any], Any]) -> Any: ...

        def _rows(self, query: str, params: Mapping[str, Any] | None = None, *, read: bool = True) -> list[Any]: ...

        def _auto(self, query: str, params: Mapping[str, Any] | None = None) -> None: ...

    def fulltext_search(self, query: str, k: int, *, guards: Guards, labels: Sequence[str] | None = None,
                        where: Mapping[str, Any] | None = None,
                        within: tuple[str, str] | None = None, stemmed: bool = False) -> list[Hit]:
        """BM25 with the account's own statistics (FTS5's arithmetic), guards and filters before the cut,
        in one read transaction; ties in node id order."""
        import neo4j

        g = guards_ok(guards)
        lucene = lucene_query(query)
        if not lucene or k <= 0:
            return []
        phrases = query_terms(query)[:32]
        wh, wparams = where_cypher(where)
        inside, iparams = within_cypher(within)
        params = {**guard_params(g), "labels": list(check_labels(labels)) if labels else [],
                  "index": FULLTEXT_INDEX, "query": lucene, **wparams, **iparams}
        query = q_fulltext(wh + inside)

        def work(tx: Any) -> list[tuple[Any, float]]:
            got = tx.run(query, params).single()
            found = list(zip(got["e"], got["id"], got["text"], got["passed"], strict=True))
            if not found:
                return []
            stats = self._account_text_stats(tx, g.account_id, at_least=len(found))
            freqs, lengths = bm25.text_counts([f[2] or "" for f in found], phrases)
            scored = bm25.scores(freqs, lengths, bm25.phrase_idfs(freqs, stats), stats.avgdl).tolist()
            chosen = sorted((-scored[i], nid, e) for i, (e, nid, _, passed) in enumerate(found)
                            if passed and any(column[i] for column in freqs))[:k]
            rows = {r["id"]: r for r in tx.run(Q_TEXT_HITS, {"elements": [e for _, _, e in chosen]})}
            return [(rows[nid], -negated) for negated, nid, _ in chosen if nid in rows]

        try:
            ranked = self.read(work)
        except neo4j.exceptions.ClientError as exc:
            if "fulltext" in str(exc).lower() or "index" in str(exc).lower():
                if not self._fulltext_warned:
                    log("graph-search", "fulltext-index-missing", index=FULLTEXT_INDEX, fallback="vector-only")
                    self._fulltext_warned = True
                return []
            raise
        return [Hit(node_of(r), score) for r, score in ranked]

    def _account_text_stats(self, tx: Any, account_id: str, at_least: int = 0) -> TextStats:
        """The account's document count and total length (a scan of its nodes: ~30 ms at 20,000),
        reused for :data:`TEXT_STATS_TTL` seconds unless this process wrote since, or a search
        matched more of the account's documents (``at_least``) than they count (another process
        wrote them)."""
        now, writes = time.monotonic(), self._writes
        kept = self._text_stats.get(account_id)
        if kept is not None and kept[1] == writes and now - kept[0] < TEXT_STATS_TTL and kept[2].docs >= at_least:
            return kept[2]
        totals = tx.run(Q_TEXT_STATS, {"accountId": account_id}).single()
        stats = TextStats(int(totals["docs"]), int(totals["tokens"] or 0))
        if len(self._text_stats) >= 256:
            self._text_stats.clear()
        self._text_stats[account_id] = (now, writes, stats)
        return stats

    def keyword_search(self, keyword: str, k: int, *, guards: Guards,
                       labels: Sequence[str] | None = None) -> list[Hit]:
        tag = str(keyword).strip().lower()
        if not tag or k <= 0:
            return []
        params = {**guard_params(guards_ok(guards)), "labels": list(check_labels(labels)) if labels else [],
                  "keyword": tag, "k": int(k)}
        return [Hit(node_of(r), 1.0) for r in self._rows(Q_KEYWORD, params)]

    def vector_search(self, vector: Sequence[float], k: int, *, guards: Guards, labels: Sequence[str] | None = None,
                      where: Mapping[str, Any] | None = None, within: tuple[str, str] | None = None) -> list[Hit]:
        """Exact guarded cosine top-k (see the module docstring for the window and the exact fallback).

        An index dropped since discovery (another process's :meth:`compact_vector_indexes`
        swaps each one in a single transaction) fails the procedure: the indexes are
        discovered again and the search runs once more."""
        import neo4j

        try:
            return self._vector_search(vector, k, guards=guards, labels=labels, where=where, within=within)
        except neo4j.exceptions.ClientError as exc:
            if INDEX_GONE not in str(exc):
                raise
            log("graph-search", "op=index-gone", action="rediscover")
            self.clear_index_cache()
            return self._vector_search(vector, k, guards=guards, labels=labels, where=where, within=within)

    def _vector_search(self, vector: Sequence[float], k: int, *, guards: Guards, labels: Sequence[str] | None,
                       where: Mapping[str, Any] | None, within: tuple[str, str] | None) -> list[Hit]:
        g = guards_ok(guards)
        vec = check_embedding(vector, "vector")
        if k <= 0 or not vec or not any(vec):
            return []
        k = int(k)
        indexes = self._index_map()
        wanted = [lab for lab in (check_labels(labels) if labels else indexes)
                  if lab in indexes and indexes[lab][1] in (0, len(vec))]
        wh, wparams = where_cypher(where)
        inside, iparams = within_cypher(within)
        filters = wh + inside
        params = {**guard_params(g), "labels": list(check_labels(labels)) if labels else [], "vector": vec,
                  "k": k, "dims": len(vec), "wanted": wanted or list(check_labels(labels) if labels else VECTOR_LABELS),
                  **wparams, **iparams}
        if not wanted:  # no index holds vectors of this length: the guarded nodes, exactly
            return cosine_hits(self._rows(q_vector_exact(filters), params))
        fetch = {indexes[lab][0]: max(k * self.overfetch, self.min_fetch) for lab in wanted}
        label_of = {indexes[lab][0]: lab for lab in wanted}
        return self._widening(filters, params, fetch, label_of, k)

    def _widening(self, filters: str, params: dict[str, Any], fetch: dict[str, int], label_of: dict[str, str],
                  k: int) -> list[Hit]:
        """Each index's window widened until the union of the windows holds the guarded top ``k``."""
        query = q_vector_windows(filters)
        best: dict[str, Any] = {}  # node id -> its hit (the highest index score of any window)
        todo = list(fetch)
        eligible: int | None = None
        while True:
            stats = []
            for found in self._windows(query, params, fetch, label_of, todo):
                stats += found["stats"]
                _keep_best(best, found["hits"])
            top = sorted(best.values(), key=lambda h: (-h["approx"], h["id"]))[:k]
            kth = top[-1]["approx"] if len(top) >= k else None
            # An index is done when its window held all it has, k of its own guarded nodes, or
            # nothing below its window can beat the k-th: then the union holds the guarded top k.
            todo = [st["name"] for st in stats
                    if st["got"] >= fetch[st["name"]] and st["passed"] < k
                    and (kth is None or kth <= st["floor"])]
            if len(top) < k and eligible is None:
                eligible = self.read(lambda tx: tx.run(q_vector_count(filters), params).single()["c"])
            settled = self._settled(len(top) < k, len(best), eligible, bool(todo))
            if settled == "exact":
                return cosine_hits(self._rows(q_vector_exact(filters), params))
            if settled == "top":
                return cosine_hits(sorted(top, key=lambda h: (-h["score"], h["id"])))
            for name in todo:
                fetch[name] *= WIDEN

    def _settled(self, short: bool, seen: int, eligible: int | None, more: bool) -> str | None:
        """How a widening round ends: "top" (the windows' top k), "exact" (score the guarded nodes
        exactly) or None (widen again). ``short``: fewer than k found; ``seen``: distinct hits."""
        if not more:
            if short and eligible is not None and seen < eligible:  # an index returned less than it holds
                return "exact"  # (HNSW after deletions)
            return "top"
        if short and eligible is not None:  # selective guards: few enough candidates are scored exactly
            if seen >= eligible:
                return "top"
            if eligible <= self.exact_max:
                return "exact"
        return None

    def _windows(self, query: str, params: dict[str, Any], fetch: dict[str, int], label_of: dict[str, str],
                 names: list[str]) -> list[Any]:
        """The windows of ``names`` (their current sizes), on parallel read transactions."""
        groups = [names[i::self.vector_threads] for i in range(min(self.vector_threads, len(names)))]

        def one(group: list[str]) -> Any:
            ixs = [{"label": label_of[n], "name": n, "fetch": fetch[n]} for n in group]
            return self.read(lambda tx: tx.run(query, {**params, "indexes": ixs}).single())

        if len(groups) == 1:
            return [one(groups[0])]
        return list(self._pool().map(one, groups))

    def _pool(self) -> Any:
        """Threads that run one search's index windows side by side (``PLUGHOST_VECTOR_THREADS``)."""
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(self.vector_threads, thread_name_prefix="neo4j-vector")
        return self._executor

    def _index_map(self) -> dict[str, tuple[str, int]]:
        """Index discovery: label → (vector index name, dimensions), cached per process."""
        if self._indexes is None:
            found: dict[str, tuple[str, int]] = {}
            for r in self._rows(Q_INDEXES):
                config = (r["options"] or {}).get("indexConfig") or {}
                dims = int(config.get("vector.dimensions") or 0)
                for label in r["labelsOrTypes"] or []:
                    found[label] = (r["name"], dims)
            self._indexes = found
        return self._indexes

    def compact_vector_indexes(self, labels: Sequence[str] | None = None, *, wait_s: int = 3600) -> list[str]:
        """Rebuild the vector indexes of the labels in use (or of ``labels``) from the stored vectors.

        Neo4j writes each committed transaction's vectors into a new Lucene segment of every
        index it touches and merges vector segments only 50 at a time, and a query searches
        each segment's HNSW graph on its own: after a bulk load (20 transactions of 5,000
        vectors at 100k nodes) a top-10 costs about 4x what it costs on an index built in
        one pass. Each index is dropped and created again under its name, label, property and
        options, all in one transaction (a search meanwhile sees the old index or waits for
        the new one; one started between the two re-discovers and runs again), then populated
        from the store (one segment). Returns the rebuilt names; a reader refuses.
        """
        if self.read_only:
            raise UserError("PLUGHOST_GRAPH_READ_ONLY=1: a reader never rebuilds indexes")
        present = set(self._rows(Q_LABELS_PRESENT)[0]["labels"])
        chosen = set(check_labels(labels)) if labels else present
        defs = [r for r in self._rows(Q_VECTOR_DEFS)
                if len(r["labelsOrTypes"] or []) == 1 and len(r["properties"] or []) == 1
                and r["labelsOrTypes"][0] in chosen]
        if not defs:
            return []
        statements = [(q_rebuild_vector_index(r["name"], r["labelsOrTypes"][0], r["properties"][0]),
                       {"indexConfig": dict((r["options"] or {}).get("indexConfig") or {})}) for r in defs]

        def swap(tx: Any) -> None:
            for (drop, create), options in statements:
                tx.run(drop).consume()
                tx.run(create, {"options": options}).consume()

        t0 = time.perf_counter()
        self.write(swap)
        self._auto(Q_AWAIT_INDEXES, {"seconds": int(wait_s)})
        self.clear_index_cache()
        names = [r["name"] for r in defs]
        log("graph-store", "op=vectors-compacted", indexes=len(names), names=",".join(names[:8]),
            seconds=f"{time.perf_counter() - t0:.1f}")
        return names

    def vector_indexes(self) -> dict[str, int]:
        return {label: dims for label, (_, dims) in sorted(self._index_map().items())}

    def clear_index_cache(self) -> None:
        """Forget discovered indexes (after a reindex or a schema change)."""
        self._indexes = None
