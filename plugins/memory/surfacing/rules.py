"""Whether a prompt is worth a search, and what to search for (stdlib only: the hook imports it).

Greetings, acknowledgements, slash commands and very short prompts are skipped; a short
follow-up ("and the second one?", "why?") is folded into the session's previous query so it
still finds the thread's memory; one that names something of its own ("what about wombat") is
also searched by itself (``Decision.alone``), and those finds rank first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ACKNOWLEDGEMENTS = frozenset("""
hi hello hey hiya howdy yo morning evening thanks thank thx ty cheers ok okay k kk yes yeah yep yup
no nope nah sure cool great nice good fine perfect awesome excellent lgtm done right alright
continue proceed go ahead on do it please again retry sounds got you bye goodbye wow indeed exactly
correct agreed noted understood love that this is works worked now much very so all
""".split())
"""Words a pure greeting or acknowledgement is made of ("ok thanks", "yes please go ahead")."""

FOLLOW_UP_STARTS = ("and ", "but ", "also ", "what about", "how about", "why", "how come", "then ",
                    "so ", "or ", "what else", "more", "which one", "the other", "same for", "and?")
FOLLOW_UP_WORDS = frozenset({"it", "its", "that", "this", "those", "these", "they", "them", "he", "she",
                             "one", "ones", "there", "then"})
MIN_CHARS = 4
"""Fewer letters or digits than this: never a search."""
MIN_WORDS = 3
"""Fewer words than this and no earlier query to fold into: skipped as too short."""
FOLLOW_UP_MAX_WORDS = 8
"""A prompt this short that reads like a follow-up is folded into the previous query."""
QUERY_MAX_CHARS = 500

_WORD = re.compile(r"[\w'-]+", re.UNICODE)


@dataclass(frozen=True)
class Decision:
    """``query`` is None when the prompt is skipped (``reason`` says why)."""

    query: str | None
    reason: str
    base: str = ""
    folded: bool = False
    alone: str = ""
    """A folded follow-up that names something of its own ("what about wombat"): searched by itself
    too, and its finds rank first, so folding never drowns the new topic in the old one."""


def words(text: str) -> list[str]:
    return [w.lower().strip("'-") for w in _WORD.findall(text) if w.strip("'-_")]


def is_acknowledgement(tokens: list[str]) -> bool:
    return bool(tokens) and all(t in ACKNOWLEDGEMENTS for t in tokens)


def looks_like_follow_up(text: str, tokens: list[str]) -> bool:
    lowered = text.strip().lower()
    if len(tokens) > FOLLOW_UP_MAX_WORDS:
        return False
    return lowered.startswith(FOLLOW_UP_STARTS) or len(tokens) < MIN_WORDS or any(
        t in FOLLOW_UP_WORDS for t in tokens)


def decide(prompt: str, previous: str | None = None) -> Decision:
    """Skip, search the prompt, or search the previous query folded with this follow-up."""
    text = (prompt or "").strip()
    if not text:
        return Decision(None, "empty")
    if text.startswith("/") or text.startswith("#") and len(text.split()) == 1:
        return Decision(None, "command")
    tokens = words(text)
    if sum(ch.isalnum() for ch in text) < MIN_CHARS and not (previous and tokens):
        return Decision(None, "too-short")
    if is_acknowledgement(tokens):
        return Decision(None, "acknowledgement")
    text = text[:QUERY_MAX_CHARS]
    if previous and looks_like_follow_up(text, tokens):
        folded = (previous[: max(0, QUERY_MAX_CHARS - len(text) - 1)] + " " + text).strip()
        own = [t for t in tokens if t not in STOPWORDS and t not in FOLLOW_UP_WORDS and len(t) > 1]
        return Decision(folded, "follow-up", base=previous, folded=True, alone=text if own else "")
    if len(tokens) < MIN_WORDS:
        return Decision(None, "too-short")
    return Decision(text, "search", base=text)


STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our
ours out over own same she should so some such than that the their theirs them then there these they this those
through to too under until up very was we were what when where which while who whom why will with would you your
yours please tell show find give get know remind explain help want need look let lets can't don't i'm it's
what's how's there's notes note thing things something anything works work using use
""".split())
"""Function words and request phrasing dropped from the search terms (BM25 over them is slow and noisy)."""
MAX_TERMS = 10


def search_terms(query: str) -> str:
    """The query's content words (at most ``MAX_TERMS``, in order, each once); the query when none are left."""
    out: list[str] = []
    for w in words(query):
        if w not in STOPWORDS and len(w) > 1 and w not in out:
            out.append(w)
    return " ".join(out[:MAX_TERMS]) or query
