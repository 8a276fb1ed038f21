"""CLASSIFY (``PLUGHOST_GS_CLASSIFY``): the query sets its own ``retrievalClass`` when the caller gave none.

Rule-based and offline. A greeting or an acknowledgement ("hi", "thanks!", "ok great") is class
``none``: nothing in memory answers it, so no lookup runs. A question about time ("When did...",
"what year", "how long ago") is class ``temporal``: the turns that say when (a date, a month, a
weekday, "last week", "yesterday") are bumped (:mod:`.composite`). Anything else stays
unclassified. A caller's own ``retrievalClass`` always wins, and the classifier never turns the
label filter of :mod:`.route` on: a dated turn is a Message, not an Event.
"""

from __future__ import annotations

import re

GREETINGS = frozenset(
    "hi hello hey hiya howdy yo morning evening afternoon good thanks thank thx ty cheers ok okay k kk "
    "cool great nice awesome perfect sure yes yeah yep no nope bye goodbye later cya you lol haha hmm "
    "alright fine welcome much very so night day there all again".split())
_WORD = re.compile(r"[a-z']+")
_TEMPORAL = re.compile(
    r"^\s*(?:when|since when|until when)\b|\b(?:what|which)\s+(?:date|day|year|month|week|time|season)\b"
    r"|\bhow\s+long\s+(?:ago|since|before|after|has|have|had|did|was)\b|\bin\s+which\s+(?:year|month)\b"
    r"|\bhow\s+many\s+(?:days|weeks|months|years)\b",
    re.IGNORECASE)


def classify(query: str) -> str | None:
    """``none``, ``temporal`` or None (unclassified) for one query."""
    words = _WORD.findall(query.lower())
    if not words or (len(words) <= 4 and all(w in GREETINGS for w in words)):
        return "none"
    if _TEMPORAL.search(query):
        return "temporal"
    return None
