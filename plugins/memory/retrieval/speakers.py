"""SPEAKERS: a question that names a speaker prefers that speaker's turns.

"What are Elise's hobbies?" is answered by what Elise said, yet BM25 sees "Elise" as one word
among the question's, matched as often by the turns that address her. ``PLUGHOST_GS_SPEAKER``
(a bump, 0 = off) multiplies by ``1 + bump`` the score of every Message of the pool whose speaker
(``senderName``, else ``sender``: the first word, case-insensitive) the question names as a
capitalised word (possessive ``'s`` dropped), or a near spelling of it (same first letter, at
most one edit per four letters: "Akim" for Akib). A bare role names nobody. No store call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from plughost.plugins.memory.embedding.indexed_form import is_message
from plughost.plugins.memory.retrieval.rows import Row

_NAME = re.compile(r"\b([A-Z][\w-]+?)(?:'s|’s)?\b")
_SPEAKER_KEYS = ("senderName", "sender")


def named(query: str) -> set[str]:
    """The capitalised words of the question, lower-cased, possessives dropped."""
    return {m.group(1).lower() for m in _NAME.finditer(query)}


def speaker_key(props: dict) -> str | None:
    for key in _SPEAKER_KEYS:
        value = props.get(key)
        if isinstance(value, str) and value.strip():
            return value.split()[0].lower()
    return None


def _distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def matches(speaker: str, names: set[str]) -> bool:
    """Whether the question names ``speaker`` (lower-cased first word), exactly or nearly."""
    if speaker in names:
        return True
    return any(len(n) >= 4 and n[0] == speaker[0] and _distance(n, speaker) <= max(1, len(speaker) // 4)
               for n in names)


def bump(rows: Sequence[Row], query: str, weight: float) -> int:
    """Multiply the named speakers' turns by ``1 + weight`` in place; returns how many moved."""
    if weight <= 0:
        return 0
    names = named(query)
    if not names:
        return 0
    named_speaker: dict[str, bool] = {}
    moved = 0
    for row in rows:
        if not is_message(row.node.labels):
            continue
        speaker = speaker_key(row.props)
        if speaker is None:
            continue
        if speaker not in named_speaker:
            named_speaker[speaker] = matches(speaker, names)
        if named_speaker[speaker]:
            row.score *= 1 + weight
            moved += 1
    return moved
