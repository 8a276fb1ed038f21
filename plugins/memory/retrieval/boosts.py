"""BOOST (``PLUGHOST_GS_BOOSTS``): fractional bumps that add up, applied as ``score × (1 + Σ)``.

Built in: +15% for a non-null ``compiledTruth``; backlinks ``clamp(0.05 + 0.05 × log10(n),
0.05, 0.25)`` (1 → 5%, 10 → 10%, 100 → 15%, 1000 → 20%, capped at 25%). Plugins add bumps
through ``plughost_retrieval_boosts``; a raising bump is logged and counts as 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from plughost import RetrievalBoost, log
from plughost.plugins.memory.retrieval.rows import Row

COMPILED_TRUTH_BUMP = 0.15
BACKLINK_FLOOR = 0.05
BACKLINK_CAP = 0.25


def compiled_truth_bump(props: Mapping[str, Any]) -> float:
    return COMPILED_TRUTH_BUMP if props.get("compiledTruth") is not None else 0.0


def backlink_bump(count: Any) -> float:
    """No backlinks (or an unreadable count) → 0; otherwise the clamped log curve."""
    try:
        n = float(count)
    except (TypeError, ValueError):
        return 0.0
    if not n >= 1:
        return 0.0
    return min(max(0.05 + 0.05 * math.log10(n), BACKLINK_FLOOR), BACKLINK_CAP)


def row_bump(row: Row, extra: Sequence[RetrievalBoost] = ()) -> float:
    """The summed fractional bump for one row."""
    props = row.props
    total = compiled_truth_bump(props) + backlink_bump(props.get("backlinkCount"))
    if extra:
        view = row.as_dict()
        for boost in extra:
            try:
                total += float(boost.bump(view))
            except Exception as exc:  # a plugin's bump must not break search
                log("graph-search:hybrid", "warn", reason="boost-failed", boost=boost.name,
                    detail=f"{type(exc).__name__}: {exc}"[:120])
    return total


def apply(rows: Iterable[Row], extra: Sequence[RetrievalBoost] = ()) -> int:
    """Bump every row in place; returns how many rows were boosted."""
    boosted = 0
    for row in rows:
        bump = row_bump(row, extra)
        row.bump = bump
        if bump:
            row.score *= 1.0 + bump
            boosted += 1
    return boosted
