"""THRESHOLD + SORT + SLICE, and the rerank point between them."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

from plughost import log
from plughost.plugins.memory.retrieval.dedup import by_score
from plughost.plugins.memory.retrieval.rows import Row

Reranker = Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None]


def threshold(rows: Sequence[Row], min_score: float) -> list[Row]:
    """Drop rows scoring below ``min_score`` (default 0: nothing is dropped)."""
    return [r for r in rows if r.score >= min_score]


def rerank(rows: list[Row], reranker: Reranker | None, depth: int | None = None) -> list[Row]:
    """Let a ``plughost_rerank`` provider reorder (or shorten) the rows; None or a failure keeps them.

    With ``depth``, the provider sees the ``depth`` best rows by fused score and the rest follow
    them in fused order. The provider sees ``Row.as_dict()`` views and returns them (or
    ``{"id": ...}`` dicts) in its order; ids it invents are ignored, and a new ``score`` it sets
    is taken.
    """
    if reranker is None or not rows:
        return rows
    tail: list[Row] = []
    if depth is not None and len(rows) > depth:
        ordered = by_score(rows)
        rows, tail = ordered[:depth], ordered[depth:]
    try:
        answer = reranker([r.as_dict() for r in rows])
    except Exception as exc:
        log("graph-search:hybrid", "warn", reason="rerank-failed", detail=f"{type(exc).__name__}: {exc}"[:120])
        return rows + tail if tail else rows
    if answer is None:
        return rows + tail if tail else rows
    by_id = {r.id: r for r in rows}
    out: list[Row] = []
    for item in answer:
        row = by_id.pop(item["id"], None) if isinstance(item, dict) and isinstance(item.get("id"), str) else None
        if row is None:
            continue
        if isinstance(item.get("score"), (int, float)):
            row.score = float(item["score"])
        out.append(row)
    return out + tail


def sort_and_slice(rows: Sequence[Row], limit: int, *, keep_order: bool = False) -> list[Row]:
    """Best first (score, then id), at most ``limit``; ``keep_order`` trusts a reranker's order."""
    if keep_order:
        return list(rows)[:limit]
    if limit < 0:
        return by_score(rows)[:limit]
    return heapq.nsmallest(limit, rows, key=lambda r: (-r.score, r.id))  # by_score(rows)[:limit], the rest unsorted
