"""FUSE: merge the ranked lists of every path and query into one row per node, then score.

Baseline (docs/retrieval.md#baseline): a node found by several lists keeps the max vector score and the max BM25
score; BM25 scores are min-max normalised within each result list; ``0.7 × vector + 0.3 ×
bm25``. ``PLUGHOST_GS_NORMALIZE`` min-max normalises vector lists too (raw cosines of some
models are bunched, which lets the vector term drown BM25). ``PLUGHOST_GS_RRF`` replaces the
weighted sum with Reciprocal Rank Fusion, ``Σ w / (k + rank)``. The entity path
(``PLUGHOST_GS_ENTITIES``, :mod:`.entities`) is a third channel: its scores arrive in 0..1 and are
kept as they are, and the weighted sum adds ``entity_weight × entity`` on top of the pair.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from plughost import Hit
from plughost.plugins.memory.retrieval.rows import Row
from plughost.plugins.memory.retrieval.scores import min_max
from plughost.plugins.memory.settings import SEARCH_RRF_K

VECTOR_WEIGHT = 0.7
BM25_WEIGHT = 0.3

Channel = Literal["vector", "bm25", "entity"]


@dataclass
class RankedList:
    """One path's hits for one query (or one keyword subscription), best first."""

    channel: Channel
    hits: list[Hit] = field(default_factory=list)
    source: str = "query"


def merge(lists: Iterable[RankedList], *, normalise_vector: bool = False) -> dict[str, Row]:
    """One row per node id; per channel the max (normalised) score over every list that found it.

    A list whose hits are the very object an earlier list of its channel holds (paraphrases the
    store searched as one query) is merged once: the max of the same scores is the same."""
    rows: dict[str, Row] = {}
    merged: set[tuple[str, int]] = set()
    for ranked in lists:
        same = (ranked.channel, id(ranked.hits))
        if same in merged:
            continue
        merged.add(same)
        raw = [h.score for h in ranked.hits]
        normalise = ranked.channel == "bm25" or (ranked.channel == "vector" and normalise_vector)
        scores = min_max(raw) if normalise else raw
        found = []
        for hit in ranked.hits:
            node = hit.node
            row = rows.get(node.id)
            if row is None:
                row = rows[node.id] = Row(node)
            found.append(row)
        if ranked.channel == "vector":
            for row, score in zip(found, scores, strict=True):
                if score > row.vector:
                    row.vector = score
        elif ranked.channel == "entity":
            for row, score in zip(found, scores, strict=True):
                if score > row.entity:
                    row.entity = score
        else:
            for row, score in zip(found, scores, strict=True):
                if score > row.bm25:
                    row.bm25 = score
    return rows


def weighted(rows: Mapping[str, Row], vector_weight: float = VECTOR_WEIGHT,
             bm25_weight: float = BM25_WEIGHT, entity_weight: float = 0.0) -> None:
    """``score = vector_weight × vector + bm25_weight × bm25 (+ entity_weight × entity)`` for every row."""
    for row in rows.values():
        row.score = vector_weight * row.vector + bm25_weight * row.bm25
        if entity_weight:
            row.score += entity_weight * row.entity


def rrf(rows: Mapping[str, Row], lists: Iterable[RankedList], *, k: int = SEARCH_RRF_K.default,
        weights: Mapping[str, float] | None = None) -> None:
    """``score = Σ weight(channel) / (k + rank)`` over every list holding the row; rank starts at 1."""
    weights = weights or {"vector": 1.0, "bm25": 1.0}
    for row in rows.values():
        row.score = 0.0
    for ranked in lists:
        weight = weights.get(ranked.channel, 1.0)
        if weight == 0:
            continue
        for rank, hit in enumerate(ranked.hits, start=1):
            rows[hit.node.id].score += weight / (k + rank)
