"""The ``PLUGHOST_GS_*`` switches: each enhancement off by default, so the default is the baseline."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from host import config
from host.config import env_int
from host.errors import UserError
from plugins.memory.retrieval.fuse import RRF_K, VECTOR_WEIGHT

DEFAULT_CANDIDATES = 50
PATHS = ("hybrid", "vector", "bm25")
"""``PLUGHOST_GS_PATHS``: both paths (default) or one alone, for diagnosis and the quality benchmark."""
"""Hits fetched per path and per query before fusion (never fewer than the requested limit)."""


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

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SearchFlags:
        env = os.environ if env is None else env
        return cls(
            expansion=config.flag("PLUGHOST_GS_EXPANSION", env),
            route=config.flag("PLUGHOST_GS_ROUTE", env),
            rrf=config.flag("PLUGHOST_GS_RRF", env),
            boosts=config.flag("PLUGHOST_GS_BOOSTS", env),
            dedup=config.flag("PLUGHOST_GS_DEDUP", env),
            normalize=config.flag("PLUGHOST_GS_NORMALIZE", env),
            candidates=_int(env, "PLUGHOST_GS_CANDIDATES", DEFAULT_CANDIDATES, 1, 1000),
            min_score=_float(env, "PLUGHOST_GS_MIN_SCORE", 0.0),
            paths=_choice(env, "PLUGHOST_GS_PATHS", PATHS),
            stem=config.flag("PLUGHOST_GS_STEM", env),
            stopwords=config.flag("PLUGHOST_GS_STOPWORDS", env),
            vector_weight=_float(env, "PLUGHOST_GS_VECTOR_WEIGHT", VECTOR_WEIGHT, 0.0, 1.0),
            rrf_k=_int(env, "PLUGHOST_GS_RRF_K", RRF_K, 1, 1000),
        )

    @classmethod
    def baseline(cls) -> SearchFlags:
        """Every stage off: the SPEC 9.4 baseline, bit for bit, whatever the shipped defaults are."""
        return cls(stem=False, stopwords=False)

    @property
    def mode(self) -> str:
        return "rrf" if self.rrf else "weighted"


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
