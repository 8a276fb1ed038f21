"""The orchestrator: one ``memory-search`` call through every stage against a GraphStore.

It takes the store, the guards and (optionally) an embedder, expander, reranker, extra boosts and
keyword subscriptions as plain values, so it runs the same under the MCP tool, the CLI, the
benchmarks and the tests. Every store call carries the caller's :class:`Guards`; the keyword
subscriptions carry them without the agent filter (see :mod:`.keywords`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from plughost import Embedder, GraphStore, Guards, Hit, Node, RetrievalBoost, UserError, log
from plughost.plugins.memory.entities.graph import DERIVED_LABELS
from plughost.plugins.memory.retrieval import boosts as boost_stage
from plughost.plugins.memory.retrieval import classify as classify_stage
from plughost.plugins.memory.retrieval import (
    composite,
    compound,
    current,
    dates,
    diversity,
    fuse,
    rank,
    route,
)
from plughost.plugins.memory.retrieval import entities as entity_stage
from plughost.plugins.memory.retrieval import expand as expand_stage
from plughost.plugins.memory.retrieval import neighbours as neighbour_stage
from plughost.plugins.memory.retrieval import session as session_stage
from plughost.plugins.memory.retrieval import speakers as speaker_stage
from plughost.plugins.memory.retrieval.dedup import best_per_id, dedup
from plughost.plugins.memory.retrieval.flags import SearchFlags
from plughost.plugins.memory.retrieval.format import format_results
from plughost.plugins.memory.retrieval.keyterms import strip_stop_words
from plughost.plugins.memory.retrieval.keywords import keyword_lists
from plughost.plugins.memory.retrieval.project import project
from plughost.plugins.memory.retrieval.rows import Row

EXPAND_LIMIT = 20
PARAPHRASE_ROWS = 4096
"""EXPAND: a paraphrase's vector list is its top-k among the question's this many nearest rows (at
least 8 × k), not among every row: the paraphrases are the question's words moved, dropped, swapped
for a synonym or flipped in number, so their neighbours are the question's, and the matrix is read
once a call instead of once a query (docs/retrieval.md, step 1)."""
MAX_LIMIT = 100
_LABEL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")


@dataclass
class SearchRequest:
    """The parameters of docs/retrieval.md#request, validated by :meth:`checked`."""

    query: str
    limit: int = 10
    labels: list[str] | None = None
    fields: list[str] | None = None
    expand_hops: int = 1
    retrieval_class: str | None = None

    def checked(self, what: str = "memory-search") -> SearchRequest:
        if not isinstance(self.query, str) or not self.query.strip():
            raise UserError(f"{what}: parameter 'query': expected a non-empty string")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or not 1 <= self.limit <= MAX_LIMIT:
            raise UserError(f"{what}: parameter 'limit': expected an integer from 1 to {MAX_LIMIT}, got {self.limit!r}")
        if self.expand_hops not in (0, 1) or isinstance(self.expand_hops, bool):
            raise UserError(f"{what}: parameter 'expandHops': expected 0 or 1, got {self.expand_hops!r}")
        if self.retrieval_class is not None and self.retrieval_class not in route.RETRIEVAL_CLASSES:
            raise UserError(f"{what}: parameter 'retrievalClass': expected one of "
                            f"{', '.join(route.RETRIEVAL_CLASSES)}, got {self.retrieval_class!r}")
        if self.labels is not None:
            if not isinstance(self.labels, list) or not all(isinstance(x, str) and _LABEL.match(x) for x in self.labels):
                raise UserError(f"{what}: parameter 'labels': expected a list of label names")
        if self.fields is not None and (not isinstance(self.fields, list)
                                        or not all(isinstance(x, str) for x in self.fields)):
            raise UserError(f"{what}: parameter 'fields': expected a list of property names")
        return self


@dataclass
class SearchOutcome:
    """The ranked rows, the formatted text and the per-stage counts of the log line."""

    rows: list[Row]
    text: str
    compact: bool
    queries: list[str]
    stats: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "results": [
                {
                    "id": r.id,
                    "labels": list(r.node.labels),
                    "score": r.score,
                    "vector": r.vector,
                    "bm25": r.bm25,
                    "entity": r.entity,
                    "properties": r.visible_properties(),
                    "related": [
                        {"type": nb.type, "direction": nb.direction, "id": nb.node.id,
                         "labels": list(nb.node.labels),
                         "properties": {k: v for k, v in nb.node.properties.items()
                                        if k not in ("embedding", "accountId")}}
                        for nb in r.related
                    ],
                }
                for r in self.rows
            ],
            "queries": self.queries,
            "stats": self.stats,
        }


def weights(plan: route.RoutePlan, flags: SearchFlags) -> tuple[float, float]:
    """The weighted-fusion weights: a routed class's own, else ``PLUGHOST_GS_VECTOR_WEIGHT`` when set
    (the baseline constants of docs/retrieval.md#fusion, untouched, otherwise: the baseline stays bit for bit)."""
    if flags.vector_weight != fuse.VECTOR_WEIGHT and (plan.vector_weight, plan.bm25_weight) == (
            fuse.VECTOR_WEIGHT, fuse.BM25_WEIGHT):
        return flags.vector_weight, 1.0 - flags.vector_weight
    return plan.vector_weight, plan.bm25_weight


def search(
    store: GraphStore,
    request: SearchRequest,
    *,
    guards: Guards,
    embedder: Embedder | None = None,
    flags: SearchFlags | None = None,
    expander: expand_stage.Provider | None = None,
    reranker: rank.Reranker | None = None,
    extra_boosts: Sequence[RetrievalBoost] = (),
    keywords: Sequence[str] = (),
    cache: expand_stage.ExpansionCache | None = None,
    budget: int | None = None,
    emit_log: bool = True,
    visible: Callable[[Node], bool] | None = None,
) -> SearchOutcome:
    """Run the whole pipeline for one call.

    ``visible`` (when given) drops nodes from every path's hits before fusion and from the
    related lines: the confinement the store's guards cannot express (another visitor's
    ``public`` Messages, see ``plugins/memory/conversations/service.py``).
    """
    request = request.checked()
    flags = flags or SearchFlags.baseline()  # no flags: the baseline (docs/retrieval.md#baseline); callers pass from_env's
    started = time.perf_counter()
    stats: dict[str, Any] = {"expand_ms": 0.0, "embed_ms": 0.0, "vector_ms": 0.0, "bm25_ms": 0.0, "entity_ms": 0.0, "fuse_ms": 0.0,
                             "rerank_ms": 0.0, "expansions": 0, "vector": 0, "bm25": 0, "entity": 0, "fused": 0, "boosted": 0,
                             "neighbours": 0, "sessions": 0, "deduped": 0, "composite": 0, "facts": 0,
                             "facts_ms": 0.0}

    # CLASSIFY (the caller's class wins)
    klass = request.retrieval_class
    if klass is None and flags.classify:
        klass = classify_stage.classify(request.query)
    stage = _Stage(store, guards, embedder, flags, expander, reranker, extra_boosts, keywords, cache, visible, stats)
    queries: list[str] = []
    parts = compound.decompose(request.query) if flags.compound and klass != "none" else []
    rows = stage.ranked(request, request.query, klass, queries)
    if parts:
        # COMPOUND: every part searched alone, interleaved after the whole question's best
        lists = [rows] + [stage.ranked(request, part, klass, queries) for part in parts]
        rows = compound.interleave(lists, request.limit)

    # GRAPH EXPAND
    t = time.perf_counter()
    if request.expand_hops >= 1 and rows:
        neighbours = store.expand([r.id for r in rows], guards=guards, limit=EXPAND_LIMIT)
        for row in rows:
            related = neighbours.get(row.id, [])
            if visible is not None:
                related = [nb for nb in related if visible(nb.node)]
            row.related = list(related)[:EXPAND_LIMIT]
    stats["graph_ms"] = (time.perf_counter() - t) * 1000

    # HYDRATE: the survivors' properties are built here, in the fields projection (a store may
    # hand back nodes whose properties are built on first read; the dropped candidates never are)
    t = time.perf_counter()
    Node.read_all(row.node for row in rows)  # the survivors' properties, one read per search that found them
    rows = [row for row in rows if not row.node.withdrawn]  # deleted or narrowed since: not read, not returned
    returned, dropped = project(rows, request.fields)
    stats["hydrate_ms"] = (time.perf_counter() - t) * 1000
    if request.fields is not None and emit_log:
        log("memory-search", accountId=guards.account_id[:8], fields=list(request.fields),
            returnedProps=returned, droppedProps=dropped)
    t = time.perf_counter()
    text, compact = format_results(rows, **({"budget": budget} if budget else {}))
    stats["format_ms"] = (time.perf_counter() - t) * 1000

    ms = (time.perf_counter() - started) * 1000
    stats.update(final=len(rows), mode=flags.mode, ms=ms, compact=compact, retrievalClass=klass, parts=len(parts))
    if emit_log:
        extra: dict[str, Any] = {"parts": len(parts)} if parts else {}
        log("graph-search:hybrid", accountId=guards.account_id[:8], retrievalClass=klass, **extra,
            expansions=stats["expansions"], vector=stats["vector"], bm25=stats["bm25"],
            **({"entity": stats["entity"]} if flags.entities else {}), fused=stats["fused"],
            boosted=stats["boosted"], deduped=stats["deduped"], final=len(rows), mode=flags.mode, ms=f"{ms:.1f}")
    return SearchOutcome(rows, text, compact, queries, stats)


def bm25_key(text: str) -> Any:
    """Texts with one key make one BM25 query: the store ORs the text's words, so their order is
    no part of it (a paraphrase that moves words is the same query). Long texts keep their order
    (the store takes the first words only)."""
    chunks = text.lower().split()
    return frozenset(chunks) if len(chunks) <= 24 else text


@dataclass
class _Stage:
    """One call's fixed inputs, so the whole question and each compound part rank the same way."""

    store: GraphStore
    guards: Guards
    embedder: Embedder | None
    flags: SearchFlags
    expander: expand_stage.Provider | None
    reranker: rank.Reranker | None
    extra_boosts: Sequence[RetrievalBoost]
    keywords: Sequence[str]
    cache: expand_stage.ExpansionCache | None
    visible: Callable[[Node], bool] | None
    stats: dict[str, Any]

    def _add(self, key: str, value: float) -> None:
        self.stats[key] += value

    def ranked(self, request: SearchRequest, query: str, klass: str | None, seen: list[str]) -> list[Row]:
        """EXPAND → ROUTE → paths → FUSE → NEIGHBOURS → BOOST → COMPOSITE → CURRENT FACTS → DEDUP → THRESHOLD →
        RERANK → SORT (or MMR) → SLICE for one query; ``seen`` collects the queries searched."""
        queries = self._expanded(request, query, klass)
        seen.extend(queries)

        # ROUTE (the caller's class only: a classified class never sets a label filter)
        plan = route.plan(request.retrieval_class, enabled=self.flags.route, labels=request.labels)
        if klass == "none":
            plan = route.RoutePlan(plan.labels, plan.vector_weight, plan.bm25_weight, skip=True)
        k = max(self.flags.candidates, request.limit)
        lists = [] if plan.skip else self._paths(queries, query, plan, k)
        lists = self._results_only(lists, request.labels)

        t_fuse = time.perf_counter()
        pool = self._fused(lists, plan, query, klass)
        if self.flags.facts > 0 and not plan.skip:
            self._current_facts(pool, query, request)
        rows, rerank_ms = self._cut(pool, request.limit)
        self._add("fuse_ms", (time.perf_counter() - t_fuse) * 1000 - rerank_ms)
        return rows

    def _expanded(self, request: SearchRequest, query: str, klass: str | None) -> list[str]:
        """EXPAND: the query and its paraphrases (none for the ``none`` class)."""
        queries = [query]
        if self.flags.expansion and klass != "none":
            t = time.perf_counter()
            queries += expand_stage.expansions(query, request.retrieval_class, self.guards.account_id,
                                               self.expander, self.cache)
            self._add("expand_ms", (time.perf_counter() - t) * 1000)
        self._add("expansions", len(queries) - 1)
        return queries

    def _paths(self, queries: list[str], query: str, plan: route.RoutePlan, k: int) -> list[fuse.RankedList]:
        """The ranked lists of every path the plan and the flags turn on: vector, BM25 (with the
        keyword subscriptions), entities."""
        flags = self.flags
        lists: list[fuse.RankedList] = []
        if plan.use_vector and self.embedder is not None and flags.paths != "bm25":
            lists += self._vector_lists(self.embedder, queries, plan, k)
        t = time.perf_counter()
        if plan.use_bm25 and flags.paths != "vector":
            lists += self._bm25_lists(queries, plan, k)
        # keyword subscriptions (merged into the BM25 channel)
        if self.keywords and flags.paths != "vector":
            extra = keyword_lists(self.store, self.keywords, self.guards, k, plan.labels)
            self._add("bm25", sum(len(x.hits) for x in extra))
            lists.extend(extra)
        self._add("bm25_ms", (time.perf_counter() - t) * 1000)
        if flags.entities and flags.paths == "hybrid":
            lists += self._entity_lists(query, plan, k)
        return lists

    def _vector_lists(self, embedder: Embedder, queries: list[str], plan: route.RoutePlan,
                      k: int) -> list[fuse.RankedList]:
        """EMBED → VECTOR: one list per query embedded (none when the embedder fails)."""
        t = time.perf_counter()
        try:
            vectors = embedder.embed(queries)
        except Exception as exc:
            vectors = []
            log("graph-search:hybrid", "warn", reason="embed-failed",
                detail=f"{type(exc).__name__}: {exc}"[:120])
        self._add("embed_ms", (time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        store, guards = self.store, self.guards
        many = getattr(store, "vector_search_many", None)  # paraphrases: one pass over the vectors
        if many is not None and len(vectors) > 1:
            found = many(vectors, k, guards=guards, labels=plan.labels, near_first=max(PARAPHRASE_ROWS, 8 * k))
        else:
            found = [store.vector_search(vec, k, guards=guards, labels=plan.labels) for vec in vectors]
        lists = []
        for q, hits in zip(queries, found, strict=False):
            self._add("vector", len(hits))
            lists.append(fuse.RankedList("vector", hits, q))
        self._add("vector_ms", (time.perf_counter() - t) * 1000)
        return lists

    def _bm25_lists(self, queries: list[str], plan: route.RoutePlan, k: int) -> list[fuse.RankedList]:
        """BM25: one list per query; queries the store reads as one BM25 query share one store call
        and one list (the same words; on a store that searches several texts at once, such as the
        embedded one, also the same stems: a paraphrase that flips a word's number)."""
        texts = [strip_stop_words(q) if self.flags.stopwords else q for q in queries]
        many = getattr(self.store, "fulltext_search_many", None)
        if many is not None and len(texts) > 1:
            found = many(texts, k, guards=self.guards, labels=plan.labels, stemmed=self.flags.stem)
        else:
            searched: dict[Any, list[Hit]] = {}
            found = []
            for text in texts:
                key = bm25_key(text)
                if key not in searched:
                    searched[key] = self.store.fulltext_search(text, k, guards=self.guards, labels=plan.labels,
                                                               stemmed=self.flags.stem)
                found.append(searched[key])
        lists = []
        for q, hits in zip(queries, found, strict=True):
            self._add("bm25", len(hits))
            lists.append(fuse.RankedList("bm25", hits, q))
        return lists

    def _entity_lists(self, query: str, plan: route.RoutePlan, k: int) -> list[fuse.RankedList]:
        """ENTITIES: the question's entities -> the nodes that mention them, one hop."""
        t = time.perf_counter()
        ranked, entity_stats = entity_stage.entity_list(self.store, query, self.guards, k, plan.labels)
        for key, value in entity_stats.items():
            self.stats[key] = self.stats.get(key, 0) + value
        lists = []
        if ranked is not None:
            self._add("entity", len(ranked.hits))
            lists.append(ranked)
        self._add("entity_ms", (time.perf_counter() - t) * 1000)
        return lists

    def _results_only(self, lists: list[fuse.RankedList], labels: list[str] | None) -> list[fuse.RankedList]:
        """Drop the hits that are no results: Entity and Fact nodes (they index the nodes that
        mention them) unless asked for by label, and what ``visible`` hides. Lists that shared
        their hits still share the kept ones (each list is filtered once)."""
        drop_derived = not DERIVED_LABELS.intersection(labels or ())
        visible = self.visible
        kept: dict[int, list[Hit]] = {}

        def results(hits: list[Hit]) -> list[Hit]:
            if id(hits) not in kept:
                out = hits
                if drop_derived and any(DERIVED_LABELS.intersection(h.node.labels) for h in out):
                    out = [h for h in out if not DERIVED_LABELS.intersection(h.node.labels)]
                if visible is not None:
                    out = [h for h in out if visible(h.node)]
                kept[id(hits)] = out
            return kept[id(hits)]

        return [x if (hits := results(x.hits)) is x.hits else fuse.RankedList(x.channel, hits, x.source)
                for x in lists]

    def _fused(self, lists: list[fuse.RankedList], plan: route.RoutePlan, query: str,
               klass: str | None) -> list[Row]:
        """FUSE → NEIGHBOURS → SESSION → BOOST → COMPOSITE: the scored pool."""
        flags = self.flags
        merged = fuse.merge(lists, normalise_vector=flags.normalize)
        if flags.rrf:
            fuse.rrf(merged, lists, k=flags.rrf_k, weights=plan.rrf_weights())
        else:
            fuse.weighted(merged, *weights(plan, flags), entity_weight=flags.entity_weight if flags.entities else 0.0)
        self._add("fused", len(merged))

        # NEIGHBOURS (a turn inherits part of the score of the candidate turns before it)
        self._add("neighbours", neighbour_stage.propagate(list(merged.values()), flags.neighbours,
                                                          flags.neighbours_back))

        # SESSION (a turn gains part of its conversation's evidence in the pool)
        self._add("sessions", session_stage.propagate(list(merged.values()), flags.session))

        # BOOST
        self._add("boosted", boost_stage.apply(merged.values(), self.extra_boosts) if flags.boosts else 0)

        # COMPOSITE (recency, confidence, the turns that say when for a temporal question, the named
        # speaker's turns, the turns of a named day, the Message weight)
        pool = list(merged.values())
        moved = composite.recency(pool, flags.recency, flags.recency_half_life)
        moved += composite.confidence(pool, flags.confidence)
        if klass == "temporal":
            moved += composite.dated(pool, flags.dated)
        moved += speaker_stage.bump(pool, query, flags.speaker)
        moved += dates.bump(pool, query, flags.dates)
        moved += composite.message_weight(pool, flags.message_weight)
        self._add("composite", moved)
        return pool

    def _current_facts(self, pool: list[Row], query: str, request: SearchRequest) -> None:
        """CURRENT FACTS (a state question: the turn stating the current or as-of value first)."""
        t = time.perf_counter()
        self._add("facts", current.apply(pool, self.store, query, self.guards, self.flags.facts,
                                         visible=self.visible, labels=request.labels))
        self._add("facts_ms", (time.perf_counter() - t) * 1000)

    def _cut(self, pool: list[Row], limit: int) -> tuple[list[Row], float]:
        """DEDUP → THRESHOLD → (rerank) → SORT (or MMR) → SLICE; the rows and the rerank time."""
        flags = self.flags
        # a reranker sees the rows in fused order; the sort below (and MMR) order them anyway
        rows = dedup(pool, layered=flags.dedup) if flags.dedup or self.reranker is not None else best_per_id(pool)
        self._add("deduped", len(rows))
        rows = rank.threshold(rows, flags.min_score)
        t = time.perf_counter()
        reranked = rank.rerank(rows, self.reranker, flags.rerank_depth)
        rerank_ms = (time.perf_counter() - t) * 1000 if self.reranker is not None else 0.0
        self._add("rerank_ms", rerank_ms)
        if reranked is rows and flags.mmr < 1:
            rows = diversity.mmr(rows, flags.mmr, session=flags.mmr_session)[:limit]
        else:  # the best k of the rows (unsorted when no reranker read them), or the reranker's order
            rows = rank.sort_and_slice(reranked, limit, keep_order=reranked is not rows)
        return rows, rerank_ms
