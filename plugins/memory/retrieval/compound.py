"""COMPOUND (``PLUGHOST_GS_COMPOUND``): a question about two things is searched as two questions too.

"What do Ana and Ben have in common?", "Did Ana or Ben go to Lisbon?", "Compare the pasta and the
pizza", "When did Ana move and when did she start the job?": the evidence sits in two places, and
one query vector lands between them. :func:`decompose` gives the sub-queries (rule-based, never a
network call): two names (or two short noun phrases) joined by ``and`` / ``or`` / ``vs`` /
``than`` give one question per name, with the other left out; two clauses joined by ``and`` (each
with a question word or three content words) give one question per clause. :func:`interleave`
merges the ranked rows of the whole question and of every sub-query round-robin, so each part's
best turn reaches the top k. A question with no such shape gives no sub-queries: one search, as
before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from plughost.plugins.memory.retrieval.rows import Row

MAX_PARTS = 3
_NAME = r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?"
_PAIR = re.compile(rf"\b(?P<a>{_NAME})\s*(?:,\s*)?(?:and|or|&|vs\.?|versus)\s+(?P<b>{_NAME})\b")
_BETWEEN = re.compile(r"\b(?:between|compare|comparing|both)\s+(?:the\s+)?(?P<a>[\w'’ -]{2,40}?)\s+"
                      r"(?:and|with|to)\s+(?:the\s+)?(?P<b>[\w'’ -]{2,40}?)(?=[?.,!]|$| have| do| did| are| is)",
                      re.IGNORECASE)
_CLAUSE = re.compile(r"\s*(?:,\s*)?\band\s+(?=(?:when|where|what|who|how|why|which|did|does|do|is|was|has)\b)",
                     re.IGNORECASE)
_QUESTION_WORDS = frozenset("what when where who whom which how why did does do is was are were has have".split())
_STARTERS = frozenset(("What", "When", "Where", "Who", "Which", "How", "Why", "Did", "Does", "Do", "Is", "Was",
                       "Are", "Were", "Has", "Have", "Can", "Could", "Would", "Should", "The", "A", "An"))


def _tidy(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip(" ,")


def _names(match: re.Match[str]) -> tuple[str, str] | None:
    a, b = match.group("a").strip(), match.group("b").strip()
    if a.split()[0] in _STARTERS and " " in a:  # "Did Ana or Ben": the pair is Ana, Ben
        a = a.split(None, 1)[1]
    if a in _STARTERS or b in _STARTERS or a.casefold() == b.casefold():
        return None
    return a, b


def decompose(query: str) -> list[str]:
    """The sub-queries of a compound question (never the question itself), or [] for a simple one."""
    text = query.strip()
    if len(text) > 500:
        return []
    parts: list[str] = []
    for match in _PAIR.finditer(text):
        names = _names(match)
        if names:
            a, b = names
            head, tail = text[:match.end("a") - len(a)], text[match.end():]
            parts = [_tidy(head + a + tail), _tidy(head + b + tail)]
            break
    if not parts:
        between = _BETWEEN.search(text)
        if between:
            a, b = between.group("a").strip(), between.group("b").strip()
            if a and b and a.casefold() != b.casefold():
                parts = [a, b]
    if not parts:
        clauses = [_tidy(c) for c in _CLAUSE.split(text)]
        if len(clauses) > 1 and all(_substantial(c) for c in clauses):
            parts = [clauses[0]] + [_resolve(c, clauses[0]) for c in clauses[1:]]
    seen = {text.casefold()}
    out = []
    for part in parts:
        if part and part.casefold() not in seen:
            seen.add(part.casefold())
            out.append(part)
    return out[:MAX_PARTS] if len(out) > 1 else []


_PRONOUN = re.compile(r"\b(?:he|she|they|him|her|them|his|their)\b", re.IGNORECASE)


def _resolve(clause: str, first: str) -> str:
    """A later clause's pronoun is the first clause's name ("... and when did she ..." → Ana)."""
    names = [w for w in re.findall(r"\b[A-Z][\w'’-]+", first) if w not in _STARTERS]
    return _PRONOUN.sub(names[0], clause, count=1) if names else clause


def _substantial(clause: str) -> bool:
    words = re.findall(r"[\w'’]+", clause.lower())
    return len(words) >= 3 and (words[0] in _QUESTION_WORDS or len(words) >= 4)


def interleave(lists: Sequence[Sequence[Row]], limit: int) -> list[Row]:
    """Round-robin over the ranked lists (the whole question's first), each row once, at most ``limit``."""
    out: list[Row] = []
    seen: set[str] = set()
    depth = max((len(x) for x in lists), default=0)
    for i in range(depth):
        for ranked in lists:
            if i < len(ranked) and ranked[i].id not in seen:
                seen.add(ranked[i].id)
                out.append(ranked[i])
                if len(out) >= limit:
                    return out
    return out
