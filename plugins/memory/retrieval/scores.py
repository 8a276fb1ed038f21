"""Score normalisation (the baseline fusion of docs/retrieval.md#fusion)."""

from __future__ import annotations

from collections.abc import Sequence


def min_max(scores: Sequence[float]) -> list[float]:
    """Min-max to [0, 1] within one result set; all equal or a single score → 1.0 each."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    span = high - low
    return [(s - low) / span for s in scores]
