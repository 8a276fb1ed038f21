"""The ``PLUGHOST_GS_*`` switches, one per stage.

``SearchFlags()`` (every stage off) is the SPEC 9.4 baseline, bit for bit. The process defaults
(:data:`SHIPPED`, what :meth:`SearchFlags.from_env` gives for an unset variable) are the stages
the quality benchmark kept (``bench/retrieval_quality.py``, figures in the README), declared in
:mod:`plugins.memory.settings`; setting a variable to 0 (or 0.7 / 50 / 60 for the numbers) gives
the baseline back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.util.settings import Setting
from plugins.memory import settings as s
from plugins.memory.retrieval.fuse import RRF_K, VECTOR_WEIGHT
from plugins.memory.retrieval.rank import RERANK_DEPTH

DEFAULT_CANDIDATES = 50
"""Hits fetched per path and per query before fusion (never fewer than the requested limit)."""
PATHS = s.SEARCH_PATHS.choices
"""``PLUGHOST_GS_PATHS``: both paths (default) or one alone, for diagnosis and the quality benchmark."""
SETTINGS: dict[str, Setting[Any]] = {
    "expansion": s.SEARCH_EXPANSION, "route": s.SEARCH_ROUTE, "rrf": s.SEARCH_RRF, "boosts": s.SEARCH_BOOSTS,
    "dedup": s.SEARCH_DEDUP, "normalize": s.SEARCH_NORMALIZE, "candidates": s.SEARCH_CANDIDATES,
    "min_score": s.SEARCH_MIN_SCORE, "paths": s.SEARCH_PATHS, "stem": s.SEARCH_STEM, "stopwords": s.SEARCH_STOPWORDS,
    "vector_weight": s.SEARCH_VECTOR_WEIGHT, "rrf_k": s.SEARCH_RRF_K, "rerank_depth": s.SEARCH_RERANK_DEPTH,
    "neighbours": s.SEARCH_NEIGHBOURS, "neighbours_back": s.SEARCH_NEIGHBOURS_BACK,
}
"""Each field's setting."""


@dataclass(frozen=True)
class SearchFlags:
    """Which enhancements run. All False is the baseline of SPEC 9.4, exactly."""

    expansion: bool = False
    route: bool = False
    rrf: bool = False
    boosts: bool = False
    dedup: bool = False
    normalize: bool = False
    candidates: int = DEFAULT_CANDIDATES
    min_score: float = 0.0
    paths: str = "hybrid"
    stem: bool = False
    stopwords: bool = False
    vector_weight: float = VECTOR_WEIGHT
    rrf_k: int = RRF_K
    rerank_depth: int | None = RERANK_DEPTH
    neighbours: float = 0.0
    neighbours_back: float = 0.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SearchFlags:
        env = os.environ if env is None else env
        return cls(**{field: setting.read(env) for field, setting in SETTINGS.items()})

    @classmethod
    def baseline(cls) -> SearchFlags:
        """Every stage off: the SPEC 9.4 baseline, bit for bit, whatever the shipped defaults are."""
        return cls()

    @property
    def mode(self) -> str:
        return "rrf" if self.rrf else "weighted"


SHIPPED: dict[str, Any] = {k: v.default for k, v in SETTINGS.items() if v.default != getattr(SearchFlags(), k)}
"""Defaults chosen by the measurements (the README's retrieval table); unlisted stages stay off."""
