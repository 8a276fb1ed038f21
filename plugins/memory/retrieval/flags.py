"""The ``PLUGHOST_GS_*`` switches, one per stage.

``SearchFlags()`` (every stage off) is the baseline (docs/retrieval.md#baseline), bit for bit. The process defaults
(:data:`SHIPPED`, what :meth:`SearchFlags.from_env` gives for an unset variable) are the stages
the quality benchmark kept (``bench/retrieval_quality.py``, figures in bench/RESULTS.md); setting a
variable to 0 (or 0.7 / 50 / 60 for the numbers) gives the baseline back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.util.config import env_int
from host.util.errors import UserError
from plugins.memory.retrieval.fuse import RRF_K, VECTOR_WEIGHT
from plugins.memory.retrieval.rank import RERANK_DEPTH

DEFAULT_CANDIDATES = 50
SHIPPED: dict[str, Any] = {"stem": True, "stopwords": True, "normalize": True, "vector_weight": 0.5,
                           "candidates": 200, "neighbours": 0.3}
"""Defaults chosen by the measurements (docs/retrieval.md#defaults); unlisted stages stay off."""
PATHS = ("hybrid", "vector", "bm25")
"""``PLUGHOST_GS_PATHS``: both paths (default) or one alone, for diagnosis and the quality benchmark."""
"""Hits fetched per path and per query before fusion (never fewer than the requested limit)."""


@dataclass(frozen=True)
class SearchFlags:
    """Which enhancements run. All False is the baseline of docs/retrieval.md#baseline, exactly."""

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
        d = SHIPPED
        return cls(
            expansion=_flag(env, "PLUGHOST_GS_EXPANSION", bool(d.get("expansion", False))),
            route=_flag(env, "PLUGHOST_GS_ROUTE", bool(d.get("route", False))),
            rrf=_flag(env, "PLUGHOST_GS_RRF", bool(d.get("rrf", False))),
            boosts=_flag(env, "PLUGHOST_GS_BOOSTS", bool(d.get("boosts", False))),
            dedup=_flag(env, "PLUGHOST_GS_DEDUP", bool(d.get("dedup", False))),
            normalize=_flag(env, "PLUGHOST_GS_NORMALIZE", bool(d.get("normalize", False))),
            candidates=_int(env, "PLUGHOST_GS_CANDIDATES", int(d.get("candidates", DEFAULT_CANDIDATES)), 1, 1000),
            min_score=_float(env, "PLUGHOST_GS_MIN_SCORE", 0.0),
            paths=_choice(env, "PLUGHOST_GS_PATHS", PATHS),
            stem=_flag(env, "PLUGHOST_GS_STEM", bool(d.get("stem", False))),
            stopwords=_flag(env, "PLUGHOST_GS_STOPWORDS", bool(d.get("stopwords", False))),
            vector_weight=_float(env, "PLUGHOST_GS_VECTOR_WEIGHT", float(d.get("vector_weight", VECTOR_WEIGHT)),
                                 0.0, 1.0),
            rrf_k=_int(env, "PLUGHOST_GS_RRF_K", int(d.get("rrf_k", RRF_K)), 1, 1000),
            rerank_depth=_int(env, "PLUGHOST_GS_RERANK_DEPTH", RERANK_DEPTH, 1, 1000),
            neighbours=_float(env, "PLUGHOST_GS_NEIGHBOURS", float(d.get("neighbours", 0.0)), 0.0, 1.0),
            neighbours_back=_float(env, "PLUGHOST_GS_NEIGHBOURS_BACK", float(d.get("neighbours_back", 0.0)),
                                   0.0, 1.0),
        )

    @classmethod
    def baseline(cls) -> SearchFlags:
        """Every stage off: the baseline (docs/retrieval.md#baseline), bit for bit, whatever the shipped defaults are."""
        return cls()

    @property
    def mode(self) -> str:
        return "rrf" if self.rrf else "weighted"


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise UserError(f"{name}: expected 1 or 0 (on or off), got {raw!r:.40}")


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    return env_int(env, name, default, low=low, high=high)


def _float(env: Mapping[str, str], name: str, default: float, low: float | None = None,
           high: float | None = None) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{name}: expected a number, got {raw!r:.40}") from None
    if value != value or (low is not None and value < low) or (high is not None and value > high):
        raise UserError(f"{name}: expected a number from {low} to {high}, got {raw!r:.40}")
    return value


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return choices[0]
    if raw not in choices:
        raise UserError(f"{name}: expected one of {', '.join(choices)}, got {raw!r:.40}")
    return raw
