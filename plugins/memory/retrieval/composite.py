"""COMPOSITE: score factors beyond the match, each behind its own weight (0 = off).

* ``PLUGHOST_GS_RECENCY`` (weight) and ``PLUGHOST_GS_RECENCY_HALF_LIFE`` (days): ``score × (1 +
  w × 0.5^(age / half-life))``, age measured from the newest row of its kind in the pool (turns
  among turns, other nodes among theirs), so a store imported from an archive ranks its own
  recent past first, and a note written today does not outrank every imported turn.
* ``PLUGHOST_GS_CONFIDENCE`` (weight): a row with a ``confidence`` in [0, 1] (a Fact, a
  Preference) scores ``× (1 − w × (1 − confidence))``; rows without one are untouched.
* ``PLUGHOST_GS_DATED`` (bump): for a ``temporal`` question (:mod:`.classify`, or the caller's
  class), a Message whose own text says when (a date, a month, a weekday, "last week",
  "yesterday", "ago") scores ``× (1 + bump)``.

* ``PLUGHOST_GS_MESSAGE_WEIGHT`` (factor, 1 = off): a conversation turn (a Message) and a
  Conversation score ``× factor``, so an owner's documents and notes are not crowded out by the chat history
  (docs/retrieval.md#documents-and-conversations). Applied to every turn alike, it never
  reorders turns among themselves.

Pins are the recall ranking's (``PLUGHOST_RECALL_RANKING``, a boost). None of these costs a
store call: they read the pool's own properties.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from plughost.api.store import CONVERSATION_LABEL
from plughost.api.util import read_time
from plughost.plugins.memory.embedding.indexed_form import is_message
from plughost.plugins.memory.retrieval.rows import Row

TIME_KEYS = ("sentAt", "receivedAt", "createdAt", "timestamp", "updatedAt")
DATED = re.compile(
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|yesterday|today|tonight|tomorrow|weekend|ago|last\s+(?:week|month|year|night|time)"
    r"|next\s+(?:week|month|year)|(?:19|20)\d\d|\d{1,2}(?:st|nd|rd|th)|\d{1,2}[/.-]\d{1,2}(?:[/.-]\d{2,4})?)\b",
    re.IGNORECASE)


def _time(row: Row) -> datetime | None:
    for key in TIME_KEYS:
        value = row.props.get(key)
        if value:
            found = read_time(value)
            if found is not None:
                return found
    return None


def recency(rows: Sequence[Row], weight: float, half_life_days: float) -> int:
    """Apply the recency factor in place; returns how many rows moved."""
    if weight <= 0 or half_life_days <= 0 or not rows:
        return 0
    times = {r.id: _time(r) for r in rows}
    newest: dict[bool, datetime] = {}  # per kind: turns are aged among turns, other nodes among theirs
    for row in rows:
        at, kind = times[row.id], is_message(row.node.labels)
        if at is not None and (kind not in newest or at > newest[kind]):
            newest[kind] = at
    moved = 0
    for row in rows:
        at = times[row.id]
        if at is None:
            continue
        age = max((newest[is_message(row.node.labels)] - at).total_seconds() / 86400, 0.0)
        row.score *= 1 + weight * 0.5 ** (age / half_life_days)
        moved += 1
    return moved


def confidence(rows: Sequence[Row], weight: float) -> int:
    if weight <= 0:
        return 0
    moved = 0
    for row in rows:
        value = row.props.get("confidence")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
            row.score *= 1 - weight * (1 - float(value))
            moved += 1
    return moved


def says_when(row: Row) -> bool:
    text = row.props.get("text")
    return isinstance(text, str) and DATED.search(text[:2000]) is not None


def dated(rows: Sequence[Row], bump: float) -> int:
    """Bump the Messages that say when; returns how many."""
    if bump <= 0:
        return 0
    moved = 0
    for row in rows:
        if is_message(row.node.labels) and says_when(row):
            row.score *= 1 + bump
            moved += 1
    return moved


def message_weight(rows: Sequence[Row], factor: float) -> int:
    """Scale the Messages' and Conversations' scores by ``factor`` in place; returns how many."""
    if factor >= 1:
        return 0
    moved = 0
    for row in rows:
        if is_message(row.node.labels) or CONVERSATION_LABEL in row.node.labels:
            row.score *= factor
            moved += 1
    return moved
