"""The ``PLUGHOST_GS_*`` switches, one per stage.

``SearchFlags()`` is what the plugin ships: each field's default is its setting's
(:mod:`plughost.plugins.memory.settings`, the one home of name, default and doc), the stages the quality
benchmark kept (``bench/retrieval_quality.py``, figures in bench/RESULTS.md), and
:meth:`SearchFlags.from_env` gives it for unset variables. :meth:`SearchFlags.baseline` (every
stage off) is the baseline (docs/retrieval.md#baseline), bit for bit; setting the variables to 0 (or 0.7 / 50 for
the numbers) gives it back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plughost import Setting
from plughost.plugins.memory import settings as s
from plughost.plugins.memory.retrieval.fuse import VECTOR_WEIGHT

DEFAULT_CANDIDATES = 50
"""Hits fetched per path and per query before fusion in the baseline (docs/retrieval.md#baseline) (never fewer than the requested limit)."""
PATHS = s.SEARCH_PATHS.choices
"""``PLUGHOST_GS_PATHS``: both paths (default) or one alone, for diagnosis and the quality benchmark."""
SETTINGS: dict[str, Setting[Any]] = {
    "expansion": s.SEARCH_EXPANSION, "route": s.SEARCH_ROUTE, "rrf": s.SEARCH_RRF, "boosts": s.SEARCH_BOOSTS,
    "dedup": s.SEARCH_DEDUP, "normalize": s.SEARCH_NORMALIZE, "candidates": s.SEARCH_CANDIDATES,
    "min_score": s.SEARCH_MIN_SCORE, "paths": s.SEARCH_PATHS, "stem": s.SEARCH_STEM, "stopwords": s.SEARCH_STOPWORDS,
    "vector_weight": s.SEARCH_VECTOR_WEIGHT, "rrf_k": s.SEARCH_RRF_K, "rerank_depth": s.SEARCH_RERANK_DEPTH,
    "neighbours": s.SEARCH_NEIGHBOURS, "neighbours_back": s.SEARCH_NEIGHBOURS_BACK,
    "entities": s.SEARCH_ENTITIES, "entity_weight": s.SEARCH_ENTITY_WEIGHT, "facts": s.SEARCH_FACTS,
    "mmr": s.SEARCH_MMR, "mmr_session": s.SEARCH_MMR_SESSION, "compound": s.SEARCH_COMPOUND,
    "classify": s.SEARCH_CLASSIFY, "dated": s.SEARCH_DATED, "recency": s.SEARCH_RECENCY,
    "recency_half_life": s.SEARCH_RECENCY_HALF_LIFE, "confidence": s.SEARCH_CONFIDENCE,
    "session": s.SEARCH_SESSION, "speaker": s.SEARCH_SPEAKER, "message_weight": s.SEARCH_MESSAGE_WEIGHT,
    "dates": s.SEARCH_DATES,
}
"""Each field's setting."""
BASELINE: dict[str, Any] = {
    "expansion": False, "route": False, "rrf": False, "boosts": False, "dedup": False, "normalize": False,
    "candidates": DEFAULT_CANDIDATES, "min_score": 0.0, "paths": "hybrid", "stem": False, "stopwords": False,
    "vector_weight": VECTOR_WEIGHT, "rrf_k": s.SEARCH_RRF_K.default,
    "rerank_depth": s.SEARCH_RERANK_DEPTH.default, "neighbours": 0.0,
    "neighbours_back": 0.0, "entities": False, "entity_weight": s.SEARCH_ENTITY_WEIGHT.default, "facts": 0.0,
    "mmr": 1.0, "mmr_session": 0.0, "compound": False, "classify": False, "dated": 0.0,
    "recency": 0.0, "recency_half_life": 90.0, "confidence": 0.0,
    "session": 0.0, "speaker": 0.0, "message_weight": 1.0, "dates": 0.0,
}
"""The baseline (docs/retrieval.md#baseline): every stage off, the baseline's constants."""
SHIPPED: dict[str, Any] = {k: v.default for k, v in SETTINGS.items() if v.default != BASELINE[k]}
"""Where the shipped defaults differ from the baseline (the README's retrieval table)."""


@dataclass(frozen=True)
class SearchFlags:
    """Which enhancements run: by default the shipped stages; :meth:`baseline` is docs/retrieval.md#baseline's, exactly."""

    expansion: bool = s.SEARCH_EXPANSION.default
    route: bool = s.SEARCH_ROUTE.default
    rrf: bool = s.SEARCH_RRF.default
    boosts: bool = s.SEARCH_BOOSTS.default
    dedup: bool = s.SEARCH_DEDUP.default
    normalize: bool = s.SEARCH_NORMALIZE.default
    candidates: int = s.SEARCH_CANDIDATES.default
    min_score: float = s.SEARCH_MIN_SCORE.default
    paths: str = s.SEARCH_PATHS.default
    stem: bool = s.SEARCH_STEM.default
    stopwords: bool = s.SEARCH_STOPWORDS.default
    vector_weight: float = s.SEARCH_VECTOR_WEIGHT.default
    rrf_k: int = s.SEARCH_RRF_K.default
    rerank_depth: int | None = s.SEARCH_RERANK_DEPTH.default
    neighbours: float = s.SEARCH_NEIGHBOURS.default
    neighbours_back: float = s.SEARCH_NEIGHBOURS_BACK.default
    entities: bool = s.SEARCH_ENTITIES.default
    entity_weight: float = s.SEARCH_ENTITY_WEIGHT.default
    facts: float = s.SEARCH_FACTS.default
    mmr: float = s.SEARCH_MMR.default
    mmr_session: float = s.SEARCH_MMR_SESSION.default
    compound: bool = s.SEARCH_COMPOUND.default
    classify: bool = s.SEARCH_CLASSIFY.default
    dated: float = s.SEARCH_DATED.default
    recency: float = s.SEARCH_RECENCY.default
    recency_half_life: float = s.SEARCH_RECENCY_HALF_LIFE.default
    confidence: float = s.SEARCH_CONFIDENCE.default
    session: float = s.SEARCH_SESSION.default
    speaker: float = s.SEARCH_SPEAKER.default
    message_weight: float = s.SEARCH_MESSAGE_WEIGHT.default
    dates: float = s.SEARCH_DATES.default

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SearchFlags:
        env = os.environ if env is None else env
        return cls(**{field: setting.read(env) for field, setting in SETTINGS.items()})

    @classmethod
    def baseline(cls, **changes: Any) -> SearchFlags:
        """Every stage off: the baseline (docs/retrieval.md#baseline), bit for bit, whatever the shipped defaults are
        (``changes``: the stages to turn on over it, ``baseline(rrf=True)``)."""
        return cls(**{**BASELINE, **changes})

    @property
    def mode(self) -> str:
        return "rrf" if self.rrf else "weighted"
