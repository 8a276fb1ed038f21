"""EXPAND (``PLUGHOST_GS_EXPANSION``): 3–5 paraphrases of the query, each searched, unioned.

The provider is the ``plughost_query_expansions`` hook; the built-in one (:func:`rule_based`) is
deterministic and offline: a keyword form without question words and stop words, a
singular/plural variant and synonym swaps from a small thesaurus. Answers are cached for an hour
per (accountId, query, retrievalClass); a raising provider degrades to the original query.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from plughost import log

MAX_EXPANSIONS = 5
MIN_EXPANSIONS = 3
MAX_WORDS = 32
CACHE_TTL_S = 3600.0

Provider = Callable[[str, str | None], list[str] | None]

STOP_WORDS = frozenset(
    "a an the of to in on for and or with by at from is are was were be been being do does did "
    "how what which who whom whose when where why can could should would will shall may might i "
    "me my we our you your it its this that these those there about into any some please tell "
    "show give get me".split()
)

SYNONYMS: dict[str, tuple[str, ...]] = {
    "price": ("cost", "fee"), "cost": ("price",), "fee": ("price", "charge"), "buy": ("purchase",),
    "purchase": ("buy",), "contact": ("reach", "phone"), "phone": ("telephone", "contact"),
    "email": ("mail",), "mail": ("email",), "meeting": ("appointment",), "appointment": ("booking",),
    "booking": ("reservation",), "reservation": ("booking",), "customer": ("client",),
    "client": ("customer",), "company": ("organization", "business"), "business": ("company",),
    "organization": ("company",), "person": ("contact",), "review": ("feedback",),
    "feedback": ("review",), "task": ("todo",), "document": ("file",), "file": ("document",),
    "delete": ("remove",), "remove": ("delete",), "create": ("make", "add"), "make": ("create",),
    "show": ("display",), "display": ("show",), "change": ("modify", "update"), "modify": ("change",),
    "update": ("change",), "start": ("begin",), "begin": ("start",), "stop": ("end", "terminate"),
    "end": ("finish",), "error": ("failure", "problem"), "problem": ("issue",), "issue": ("problem",),
    "fast": ("quick",), "quick": ("fast",), "big": ("large",), "large": ("big",), "small": ("little",),
    "help": ("support",), "support": ("help",), "schedule": ("calendar",), "event": ("occasion",),
    "invoice": ("bill",), "bill": ("invoice",), "order": ("purchase",), "address": ("location",),
    "location": ("place",), "opening": ("open",), "hours": ("times",), "read": ("get",),
    "write": ("put",), "copy": ("duplicate",), "move": ("relocate",), "search": ("find",),
    "find": ("search",), "list": ("enumerate",), "print": ("output",), "convert": ("transform",),
}


def _words(text: str) -> list[str]:
    return re.findall(r"[\w.-]+", text.lower())


def _variant(word: str) -> str | None:
    """A crude singular/plural flip (good enough to widen BM25 over one inflection)."""
    if len(word) <= 3 or not word.isalpha():
        return None
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def _singular(word: str) -> str:
    variant = _variant(word)
    return variant if variant and len(variant) < len(word) else word


def rule_based(query: str, retrieval_class: str | None = None) -> list[str]:
    """Up to five paraphrases of ``query`` (its first :data:`MAX_WORDS` words), never the query itself, never a network call.

    In order: the keyword form (question and stop words dropped), one synonym swap per word
    (from :data:`SYNONYMS`, looked up by singular), every word's number flipped, and, for three
    words or more, the last two words moved to the front; then, while there are fewer than
    :data:`MIN_EXPANSIONS`, the keyword form with one word left out (last word first: the head
    of a question is usually its first content words).
    """
    words = _words(query)[:MAX_WORDS]  # a paraphrase of a page of text is not a query: the head of it
    content = [w for w in words if w not in STOP_WORDS] or words
    out: list[str] = []
    original = " ".join(words)

    def add(candidate_words: list[str]) -> None:
        text = " ".join(candidate_words).strip()
        if text and text != original and text not in out:
            out.append(text)

    add(content)
    for i, word in enumerate(content):
        for syn in SYNONYMS.get(word, SYNONYMS.get(_singular(word), ()))[:1]:
            add(content[:i] + [syn] + content[i + 1:])
    add([_variant(w) or w for w in content])
    if len(content) > 2:
        add(content[-2:] + content[:-2])
    for i in reversed(range(len(content))):
        if len(out) >= MIN_EXPANSIONS or len(content) < 2:
            break
        add(content[:i] + content[i + 1:])
    return out[:MAX_EXPANSIONS]


@dataclass
class ExpansionCache:
    """Per-process answers for an hour, keyed by (accountId, query, retrievalClass)."""

    ttl: float = CACHE_TTL_S
    clock: Callable[[], float] = time.monotonic
    _items: dict[tuple[str, str, str | None], tuple[float, list[str]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: tuple[str, str, str | None]) -> list[str] | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            if self.clock() - item[0] >= self.ttl:
                del self._items[key]
                return None
            return list(item[1])

    def put(self, key: tuple[str, str, str | None], value: list[str]) -> None:
        with self._lock:
            self._items[key] = (self.clock(), list(value))


DEFAULT_CACHE = ExpansionCache()


def clean(query: str, answer: list[str] | None) -> list[str]:
    """At most five distinct non-empty paraphrases that differ from the query."""
    out: list[str] = []
    seen = {query.strip().casefold()}
    for item in answer or []:
        if not isinstance(item, str):
            continue
        text = item.strip()
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
        if len(out) >= MAX_EXPANSIONS:
            break
    return out


def expansions(query: str, retrieval_class: str | None, account_id: str, provider: Provider | None,
               cache: ExpansionCache | None = None) -> list[str]:
    """The paraphrases for one call (cached); [] when there is no provider or it fails."""
    if provider is None:
        return []
    cache = DEFAULT_CACHE if cache is None else cache
    key = (account_id, query, retrieval_class)
    hit = cache.get(key)
    if hit is not None:
        return hit
    try:
        answer = clean(query, provider(query, retrieval_class))
    except Exception as exc:
        log("graph-search:hybrid", "warn", reason="expansion-failed", detail=f"{type(exc).__name__}: {exc}"[:120])
        return []
    cache.put(key, answer)
    return answer
