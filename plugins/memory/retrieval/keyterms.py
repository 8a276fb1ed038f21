"""The BM25 query text under ``PLUGHOST_GS_STOPWORDS``: question and function words dropped.

An OR query over every word lets "what", "did", "the" match nearly every turn of a conversation;
their IDF is low but not zero, and over hundreds of short turns they decide the ranking among
the weakly matching ones. A chunk (whitespace-separated word) is dropped only when it is a stop
word as a whole; anything holding a digit or punctuation inside (``INV-2024-0042``, ``w5``,
``3.12``) is kept as typed, so exact identifiers match exactly (docs/graph.md#full-text-search). A query made of stop
words only is kept whole.
"""

from __future__ import annotations

import re

STOP_WORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't
down during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's
her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it
it's its itself let's me more most mustn't my myself no nor not of off on once only or other ought
our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some such
than that that's the their theirs them themselves then there there's these they they'd they'll
they're they've this those through to too under until up very was wasn't we we'd we'll we're we've
were weren't what what's when when's where where's which while who who's whom why why's with won't
would wouldn't you you'd you'll you're you've your yours yourself yourselves
tell know remember say said mention mentioned anything something ever also just really
""".split())
"""English function words (the classic list) plus the verbs questions wrap around a fact."""

_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def strip_stop_words(query: str) -> str:
    """``query`` without its stop-word chunks; unchanged when nothing else would remain."""
    kept = []
    for chunk in query.split():
        word = _EDGE.sub("", chunk).lower().replace("\u2019", "'")
        if word in STOP_WORDS:
            continue
        kept.append(chunk)
    return " ".join(kept) if kept else query
