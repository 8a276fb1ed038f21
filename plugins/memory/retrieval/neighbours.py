"""NEIGHBOURS: a conversation turn inherits part of the fused score of the candidate turns before it.

A question often matches the turn that names the topic ("How was Lisbon?") better than the turn
that answers it ("We stayed four nights"), which sits right after it. ``PLUGHOST_GS_NEIGHBOURS``
(a weight, 0 = off) adds ``weight × score`` of every candidate turn found in a turn's context
window to that turn's score (``PLUGHOST_GS_NEIGHBOURS_BACK`` does the same the other way, from a
turn to the turns in its window). Only rows already in the fused pool take part, and adjacency is
read from the indexed form itself (a turn's ``searchContext`` holds the lines of the turns before
it, :mod:`.indexed_form`), so the stage costs no store call and sees nothing the guards hid.
Rows that are not Messages, or carry no context, are untouched: the man pages do not move.
"""

from __future__ import annotations

from collections.abc import Sequence

from plughost import Node
from plughost.plugins.memory.embedding.indexed_form import (
    CONTEXT_PROPERTY,
    context_line,
    is_message,
    order_key,
)
from plughost.plugins.memory.retrieval.rows import Row


def propagate(rows: Sequence[Row], forward: float, back: float = 0.0) -> int:
    """Add the neighbour shares to ``row.score`` in place (from the scores before the stage);
    returns how many rows received a share."""
    if forward <= 0 and back <= 0:
        return 0
    messages = [row for row in rows if is_message(row.node.labels)]  # a non-Message's properties are never built
    Node.read_all(row.node for row in messages)  # theirs in one read, not the whole pool's on the first
    by_line: dict[tuple[str, str], list[Row]] = {}
    for row in messages:
        line = context_line(row.props)
        if line:
            by_line.setdefault((str(row.props.get("conversationId") or ""), line), []).append(row)
    if not by_line:
        return 0
    before = {row.id: row.score for row in messages}
    touched: set[str] = set()
    for row in messages:
        context = row.props.get(CONTEXT_PROPERTY)
        if not isinstance(context, str):
            continue
        conversation = str(row.props.get("conversationId") or "")
        at = order_key(row.id, row.props)
        for line in context.split("\n")[1:]:  # the first line is the speaker, day header
            # the same words said twice ("haha nice"): the share comes from the latest one before
            earlier = [p for p in by_line.get((conversation, line), ()) if order_key(p.id, p.props) < at]
            if earlier:
                prior = max(earlier, key=lambda p: order_key(p.id, p.props))
                if forward > 0:
                    row.score += forward * before[prior.id]
                    touched.add(row.id)
                if back > 0:
                    prior.score += back * before[row.id]
                    touched.add(prior.id)
    return len(touched)
