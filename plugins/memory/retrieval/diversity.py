"""DIVERSITY (``PLUGHOST_GS_MMR``): maximal marginal relevance over the best fused rows.

A question whose evidence sits in several turns loses when the top k is five wordings of the same
turn or five turns of one session. MMR picks, one at a time, the row maximising
``λ × relevance − (1 − λ) × max similarity to the rows already picked``, where relevance is the
fused score over the pool's best and similarity is the Jaccard overlap of the rows' words, raised
to ``PLUGHOST_GS_MMR_SESSION`` for two turns of the same conversation. ``λ = 1`` (the default) is
off: the fused order, untouched. Only the best :data:`DEPTH` rows are reordered (the rest follow
in fused order), so the stage costs no store call and reads only text the pool already holds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from plughost.plugins.memory.retrieval.dedup import by_score
from plughost.plugins.memory.retrieval.rows import Row

DEPTH = 50
TEXT_KEYS = ("text", "content", "body", "title", "name")
_WORD = re.compile(r"[^\W_]{3,}")


def words(row: Row) -> frozenset[str]:
    for key in TEXT_KEYS:
        value = row.props.get(key)
        if isinstance(value, str) and value:
            return frozenset(w.casefold() for w in _WORD.findall(value[:2000]))
    return frozenset()


def similarity(a: Row, b: Row, wa: frozenset[str], wb: frozenset[str], session: float) -> float:
    union = len(wa | wb)
    overlap = len(wa & wb) / union if union else 0.0
    if session > 0:
        conv = a.props.get("conversationId")
        if conv and conv == b.props.get("conversationId"):
            return max(overlap, session)
    return overlap


def mmr(rows: Sequence[Row], lam: float, *, session: float = 0.0, depth: int = DEPTH) -> list[Row]:
    """The rows best first, the top ``depth`` in MMR order; ``lam >= 1`` gives the fused order."""
    ordered = by_score(rows)
    if lam >= 1 or len(ordered) < 2:
        return ordered
    head, tail = ordered[:depth], ordered[depth:]
    top = head[0].score or 1.0
    bag = {r.id: words(r) for r in head}
    picked: list[Row] = [head[0]]
    left = head[1:]
    closest = {r.id: similarity(r, head[0], bag[r.id], bag[head[0].id], session) for r in left}
    while left:
        best = max(left, key=lambda r: lam * r.score / top - (1 - lam) * closest[r.id])
        picked.append(best)
        left = [r for r in left if r is not best]
        for r in left:
            closest[r.id] = max(closest[r.id], similarity(r, best, bag[r.id], bag[best.id], session))
    return picked + tail
