"""DATES: a question that names a day prefers the turns said that day or the day after.

"What kind of pasta did Kate make on 29 Dec 2023?" is answered by a turn sent on the 29th, or on
the 30th ("I made pasta yesterday"), which need not repeat the date: a turn's day is its
``sentAt``, which BM25 sees only as the ``searchContext`` header's "29 December 2023" (and not at
all as "29 Dec" or "29.12.2023"). ``PLUGHOST_GS_DATES`` (a bump, 0 = off) multiplies by ``1 +
bump`` the score of every Message of the pool sent on a day the question names, or the day after.
A day read with "before", "after", "since" or "until" in front of it is a bound, not a day, and
is left alone. Read: "29 Dec 2023", "29th of December, 2023", "December 29th, 2023", "Dec 29
2023", "29.12.2023", "2023-12-29"; a day without a year takes the pool's years. No store call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, timedelta

from plughost.api.util import read_time
from plughost.plugins.memory.embedding.indexed_form import is_message, when
from plughost.plugins.memory.retrieval.rows import Row

_MONTHS = {m: i for i, name in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                          "nov", "dec"), 1) for m in (name,)}
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?(?!\d)"
_BOUND = r"(before|after|since|until|till|by)\s+(?:the\s+)?$"
_PATTERNS = (
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s*(\d{{4}})?", re.I), ("d", "m", "y")),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s*(\d{{4}})?", re.I), ("m", "d", "y")),
    (re.compile(r"\b(\d{1,2})[./](\d{1,2})[./](\d{4})\b"), ("d", "mn", "y")),
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), ("y", "mn", "d")),
)


def named_days(query: str) -> list[tuple[int | None, int, int]]:
    """(year or None, month, day) of each day the question names, bounds ("before 3 Jan") left out."""
    out = []
    for pattern, order in _PATTERNS:
        for m in pattern.finditer(query):
            if re.search(_BOUND, query[:m.start()], re.I):
                continue
            parts = dict(zip(order, m.groups(), strict=True))
            month = _MONTHS[parts["m"][:3].lower()] if parts.get("m") else int(parts["mn"])
            day, year = int(parts["d"]), (int(parts["y"]) if parts.get("y") else None)
            if 1 <= month <= 12 and 1 <= day <= 31:
                out.append((year, month, day))
    return list(dict.fromkeys(out))


def _day(row: Row) -> date | None:
    raw = when(row.props)
    at = read_time(raw) if raw else None
    return at.date() if at is not None else None


def bump(rows: Sequence[Row], query: str, weight: float) -> int:
    """Multiply the turns sent on a named day (or the day after) by ``1 + weight`` in place;
    returns how many moved."""
    if weight <= 0:
        return 0
    named = named_days(query)
    if not named:
        return 0
    days = {row.id: _day(row) for row in rows if is_message(row.node.labels)}
    years = {d.year for d in days.values() if d is not None}
    wanted: set[date] = set()
    for year, month, day in named:
        for y in [year] if year else sorted(years):
            try:
                first = date(y, month, day)
            except ValueError:
                continue
            wanted |= {first, first + timedelta(days=1)}
    moved = 0
    for row in rows:
        if days.get(row.id) in wanted:
            row.score *= 1 + weight
            moved += 1
    return moved
