"""SESSION: a conversation turn gains part of the evidence its own conversation (session) holds.

The turns that answer a question about a day's talk are often several of one session, each
matching the question only a little ("What expensive purchase could Elise make?": the painting,
the price, the plan, in three turns). ``PLUGHOST_GS_SESSION`` (a share, 0 = off) adds ``share ×
session score`` to every Message of the pool, the session score being the mean of the
:data:`TOP` best fused scores among that conversation's turns in the pool (a conversation with
fewer candidates counts the missing ones as 0, so one lucky turn lifts its session little).
Only rows already in the pool take part (their ``conversationId``), so the stage costs no store
call and sees nothing the guards hid; rows that are not Messages are untouched.
"""

from __future__ import annotations

from collections.abc import Sequence

from plughost.plugins.memory.embedding.indexed_form import is_message
from plughost.plugins.memory.retrieval.rows import Row

TOP = 3
"""Turns of a conversation whose scores make its session score."""


def session_scores(rows: Sequence[Row], top: int = TOP) -> dict[str, float]:
    """conversationId → the mean of its ``top`` best scores in the pool (missing turns count 0)."""
    scores: dict[str, list[float]] = {}
    for row in rows:
        if is_message(row.node.labels):
            conversation = row.props.get("conversationId")
            if conversation:
                scores.setdefault(str(conversation), []).append(row.score)
    return {c: sum(sorted(s, reverse=True)[:top]) / top for c, s in scores.items()}


def propagate(rows: Sequence[Row], share: float, top: int = TOP) -> int:
    """Add ``share × session score`` to each Message's score in place (the session scores taken
    before the stage); returns how many rows moved."""
    if share <= 0:
        return 0
    sessions = session_scores(rows, top)
    moved = 0
    for row in rows:
        if not is_message(row.node.labels):
            continue
        conversation = row.props.get("conversationId")
        if conversation and sessions.get(str(conversation)):
            row.score += share * sessions[str(conversation)]
            moved += 1
    return moved
