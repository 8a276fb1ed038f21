"""The indexed form of a conversation turn: what a Message is embedded and BM25-indexed with.

A turn alone is often unfindable: "Loved it, we stayed four nights" says nothing of Lisbon, of
who is speaking or of when. The indexed form adds, in the ``searchContext`` property (part of the
full-text union, never shown in results), a header ``<speaker>, <day month year>`` and the
preceding turns of the same conversation (``PLUGHOST_MESSAGE_CONTEXT_TURNS``, default
:data:`DEFAULT_TURNS`; 0 turns the context off, header included) under a budget: each turn cut
at :data:`TURN_CHARS` characters, the whole context at :data:`CONTEXT_CHARS`.

What is embedded is ``PLUGHOST_MESSAGE_EMBED``: ``turn`` (default) the bare turn, so the vector
path scores what was said while BM25 scores who, when and around what; ``context`` the turn
then its context. On the conversational set the two tie on R@5 with fusion, ``turn`` is ahead on
nDCG@10 and MRR@10 and embeds four times faster (short inputs), see bench/RESULTS.md.

The window is causal (earlier turns only), so the form a turn gets when it is appended is the
form a rebuild gives it later: ``conversation-append``, ``memory import`` of Message nodes and
``plughost memory reindex --context`` (the channels and the turn recorder write without it; the
background embedder of :mod:`plughost.plugins.memory.embedding.queue` and the backfill of ``plughost memory
reindex`` fill it in) all produce the same text. Search results still return the turn itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from plughost import Principal
from plughost.api.store import MESSAGE_LABEL
from plughost.api.util import read_time
from plughost.plugins.memory.settings import MESSAGE_CONTEXT_TURNS, MESSAGE_EMBED

CONTEXT_PROPERTY = "searchContext"
EMBED_MODES = MESSAGE_EMBED.choices
DEFAULT_EMBED = MESSAGE_EMBED.default
DEFAULT_TURNS = MESSAGE_CONTEXT_TURNS.default
MAX_TURNS = int(MESSAGE_CONTEXT_TURNS.maximum or 10)
TURN_CHARS = 200
CONTEXT_CHARS = 600
TEXT_KEYS = ("text", "content", "body")
TIME_KEYS = ("sentAt", "createdAt", "timestamp")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def context_turns(env: Mapping[str, str] | None = None) -> int:
    """``PLUGHOST_MESSAGE_CONTEXT_TURNS``: preceding turns in a Message's indexed form (0: no context)."""
    return MESSAGE_CONTEXT_TURNS.read(env)


def turn_text(props: Mapping[str, Any]) -> str:
    for key in TEXT_KEYS:
        value = props.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def speaker(props: Mapping[str, Any]) -> str:
    for key in ("senderName", "sender", "role"):
        value = props.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return "someone"


def when(props: Mapping[str, Any]) -> str:
    for key in TIME_KEYS:
        value = props.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def day(props: Mapping[str, Any]) -> str | None:
    """``sentAt`` as "4 March 2026" (words a question about a date uses), None when absent or unreadable."""
    raw = when(props)
    if not raw:
        return None
    at = read_time(raw)
    if at is None:
        return None
    return f"{at.day} {_MONTHS[at.month - 1]} {at.year}"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def context_line(props: Mapping[str, Any]) -> str | None:
    """The line a turn takes in the context of the turns after it (None for an empty turn)."""
    text = turn_text(props)
    return f"{speaker(props)}: {_cut(text, TURN_CHARS)}" if text else None


def same_view(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two turns are visible to the same principals (scope and agents), so one's words may
    stand in the other's indexed form."""
    def agents(p: Mapping[str, Any]) -> tuple[str, ...]:
        value = p.get("agents")
        return tuple(sorted(str(x) for x in value)) if isinstance(value, (list, tuple)) else ()

    return a.get("scope") == b.get("scope") and agents(a) == agents(b)


def search_context(props: Mapping[str, Any], previous: Sequence[Mapping[str, Any]], turns: int) -> str | None:
    """The ``searchContext`` of a turn given the turns before it (oldest first); None when off."""
    if turns <= 0:
        return None
    stamp = day(props)
    lines = [speaker(props) + (f", {stamp}" if stamp else "")]
    budget = CONTEXT_CHARS - len(lines[0])
    before: list[str] = []
    for prior in reversed(list(previous)[-turns:]):  # nearest first, so the budget keeps the closest turns
        line = context_line(prior)
        if not line or not same_view(prior, props):  # a private turn's words never index a public one
            continue
        if len(line) + 1 > budget:
            break
        before.append(line)
        budget -= len(line) + 1
    return "\n".join(lines + before[::-1])


def embed_mode(env: Mapping[str, str] | None = None) -> str:
    """``PLUGHOST_MESSAGE_EMBED``: ``context`` (the turn, then its context) or ``turn`` (the bare turn;
    the context then reaches BM25 only)."""
    return MESSAGE_EMBED.read(env)


def embedding_text(props: Mapping[str, Any], env: Mapping[str, str] | None = None) -> str | None:
    """What a Message embeds: the turn, then its context when it has one (``PLUGHOST_MESSAGE_EMBED``)."""
    text = turn_text(props)
    if not text:
        return None
    context = props.get(CONTEXT_PROPERTY)
    if embed_mode(env) == "turn" or not (isinstance(context, str) and context):
        return text
    return f"{text}\n{context}"


def is_message(labels: Iterable[str]) -> bool:
    return MESSAGE_LABEL in labels


def order_key(node_id: str, props: Mapping[str, Any]) -> tuple[str, str]:
    return when(props), node_id


def previous_turns(store: Any, account_id: str, conversation_id: str, turns: int, *, before: str,
                   exclude: str | None = None) -> list[dict[str, Any]]:
    """The ``turns`` newest stored turns of a conversation sent before ``before`` (oldest first)."""
    if turns <= 0 or not conversation_id:
        return []
    nodes = store.find(guards=Principal.owner(account_id).guards, labels=[MESSAGE_LABEL], where={"conversationId": conversation_id},
                       order_by="sentAt", descending=True, limit=turns + 8)
    kept = [n for n in nodes if n.id != exclude and order_key(n.id, n.properties) < (before, exclude or "\uffff")]
    kept.sort(key=lambda n: order_key(n.id, n.properties))
    return [dict(n.properties) for n in kept[-turns:]]


def with_context(props: Mapping[str, Any], previous: Sequence[Mapping[str, Any]], turns: int) -> dict[str, Any]:
    """``props`` with ``searchContext`` set from ``previous`` (or removed when the context is off)."""
    out = dict(props)
    out[CONTEXT_PROPERTY] = search_context(props, previous, turns)
    if out[CONTEXT_PROPERTY] is None:
        out.pop(CONTEXT_PROPERTY)
    return out


def contexts(turns_in_order: Sequence[tuple[str, Mapping[str, Any]]], turns: int) -> dict[str, str | None]:
    """Node id → ``searchContext`` for one conversation's turns, given oldest first."""
    out: dict[str, str | None] = {}
    for i, (node_id, props) in enumerate(turns_in_order):
        out[node_id] = search_context(props, [p for _, p in turns_in_order[max(0, i - turns):i]], turns)
    return out


def indexed_message(store: Any, account_id: str, node_id: str, props: Mapping[str, Any],
                    env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A new turn's properties in their indexed form (``None`` values dropped), for a write path
    that has the store: the context comes from the conversation's stored turns before it."""
    clean = {k: v for k, v in props.items() if v is not None}
    turns = context_turns(env)
    if turns <= 0:
        return clean
    previous = previous_turns(store, account_id, str(clean.get("conversationId") or ""), turns,
                              before=when(clean), exclude=node_id)
    return with_context(clean, previous, turns)


def chunk_context(document_title: str, section_path: Sequence[str]) -> dict[str, str]:
    """A Chunk's ``searchContext``: its document title and section path ("Guide › Install › Linux"),
    cut at :data:`CONTEXT_CHARS`; {} when the context is off (``PLUGHOST_MESSAGE_CONTEXT_TURNS=0``)."""
    if context_turns() <= 0:
        return {}
    parts = [p for p in (document_title, *section_path) if p]
    parts = [p for i, p in enumerate(parts) if i == 0 or p != parts[i - 1]]
    return {CONTEXT_PROPERTY: _cut(" › ".join(parts), CONTEXT_CHARS)} if parts else {}
