"""Per-visitor memory (docs/channels.md#visitor-memory): what a visitor told us, kept for them alone.

The channels pipeline stamps every stored user Message of a non-admin sender with ``visitorKey``
(:func:`plughost.ports.graph.visitor_key`: a hash of the token only their browser carries, or of
their number) and ``slicePending``. A visitor's conversation **ends** when they start another
(a new webchat session with the same browser) or after ``PLUGHOST_VISITOR_IDLE_S`` seconds
without a message of theirs (a longer gap inside one conversation ends the part before it).
An ended conversation becomes one ``VisitorSlice`` ``{sliceToken: <visitorKey>, scope: 'user'}``
holding an extractive summary of their own messages (no language model): the facts and mentions
:mod:`plughost.plugins.memory.entities.extract` finds, and their sentences that say something about them
or name something; its Messages lose ``slicePending`` in the same write. Slices are written by
the standing audits (the idle sweep) and, at the latest, when the visitor's next turn asks for
their memory (:func:`recall`, the ``plughost_visitor_memory`` hook), which reads that key's slices
alone, in scope ``user`` only. Lines: ``[visitor-memory] op=slice|inject|sweep ..``.
"""

from __future__ import annotations

import hashlib
import re
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from plughost import GraphStore, Node, Principal, log
from plughost.api.store import MESSAGE_LABEL, USER_SCOPE, VISITOR_SLICE_LABEL
from plughost.plugins.memory.entities.extract import extract
from plughost.plugins.memory.settings import VISITOR_IDLE_S

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

SCAN = 10_000
MAX_SENTENCES = 6
SENTENCE_MAX_CHARS = 200
SLICE_MAX_CHARS = 1_200
INJECT_MAX_CHARS = 1_500
INJECT_MAX_SLICES = 5
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_ABOUT_THEM = re.compile(r"\b(i|i'm|i've|i'd|me|my|mine|we|we're|our|us)\b", re.IGNORECASE)
PREDICATES = {"livesIn": "lives in", "movedTo": "moved to", "worksAt": "works at", "name": "name"}


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ns(node: Node) -> int:
    return int(node.properties.get("receivedNs") or 0)


def summarise(texts: list[str]) -> list[str]:
    """The extractive slice of what a visitor wrote: facts, mentions, then their telling sentences."""
    found = extract("\n".join(texts), speaker="visitor")
    lines: list[str] = []
    for fact in found.facts:
        lines.append(f"{PREDICATES.get(fact.predicate, fact.predicate)}: {fact.object}")
    named = [m.name for m in found.mentions if m.kind != "person" or m.key != "visitor"]
    if named:
        lines.append("mentioned: " + ", ".join(dict.fromkeys(named)))
    keys = {m.name.lower() for m in found.mentions if m.key != "visitor"}
    sentences = 0
    for text in texts:
        for sentence in _SENTENCE.split(text):
            sentence = " ".join(sentence.split())
            if not sentence or sentences >= MAX_SENTENCES:
                continue
            if _ABOUT_THEM.search(sentence) or any(k and k in sentence.lower() for k in keys):
                lines.append(sentence[:SENTENCE_MAX_CHARS])
                sentences += 1
    out: list[str] = []
    used = 0
    for line in dict.fromkeys(lines):
        if used + len(line) > SLICE_MAX_CHARS:
            break
        out.append(line)
        used += len(line) + 1
    return out


def _segments(messages: list[Node], idle_ns: int) -> list[list[Node]]:
    """One conversation's pending Messages cut where the visitor was silent ``idle`` or longer."""
    parts: list[list[Node]] = []
    for node in sorted(messages, key=_ns):
        if parts and _ns(node) - _ns(parts[-1][-1]) < idle_ns:
            parts[-1].append(node)
        else:
            parts.append([node])
    return parts


def end_conversations(store: GraphStore, account_id: str, *, idle_s: int, key: str | None = None,
                      current: str | None = None, now_ns: int | None = None) -> int:
    """Write the slices of every ended conversation (of the visitor ``key``, or of everyone);
    ``current`` is the conversation a turn of that visitor is in (it has not ended). Returns how
    many slices were written."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    idle_ns = idle_s * 1_000_000_000
    where: dict[str, Any] = {"slicePending": True, **({"visitorKey": key} if key else {})}
    pending = store.find(guards=Principal.owner(account_id).guards, labels=[MESSAGE_LABEL], where=where, limit=SCAN)
    groups: dict[tuple[str, str], list[Node]] = {}
    for node in pending:
        visitor, conv = node.properties.get("visitorKey"), node.properties.get("conversationId")
        if isinstance(visitor, str) and isinstance(conv, str):
            groups.setdefault((visitor, conv), []).append(node)
    written = 0
    for (visitor, conv), messages in sorted(groups.items()):
        parts = _segments(messages, idle_ns)
        last_open = (key is None or conv == current) and now_ns - _ns(parts[-1][-1]) < idle_ns
        for part in parts[:-1] if last_open else parts:
            written += _write_slice(store, account_id, visitor, conv, part,
                                    "new-conversation" if key and conv != current else "idle")
    return written


def _write_slice(store: GraphStore, account_id: str, visitor: str, conv: str, part: list[Node], why: str) -> int:
    texts = [str(n.properties.get("text") or "") for n in part if n.properties.get("role") == "user"]
    lines = summarise([t for t in texts if t.strip()])
    digest = hashlib.sha256("\x1f".join((account_id, visitor, conv, part[0].id)).encode()).hexdigest()[:32]
    slice_id = f"slice-{digest}"
    rows: list[dict[str, Any]] = [{"id": n.id, "labels": [MESSAGE_LABEL],
                                   "properties": {"slicePending": None, **({"sliceId": slice_id} if lines else {})}}
                                  for n in part]
    if lines:
        rows.insert(0, {"id": slice_id, "labels": [VISITOR_SLICE_LABEL], "properties": {
            "sliceToken": visitor, "scope": USER_SCOPE, "conversationId": conv,
            "channel": part[0].properties.get("channel"), "lines": lines, "text": "\n".join(lines),
            "messages": len(texts), "firstAt": _iso(_ns(part[0])), "lastAt": _iso(_ns(part[-1])),
            "createdAt": _iso(time.time_ns())}})
    # the slice and its Messages' pending flags at once
    store.upsert_many(rows, guards=Principal.system(account_id).guards)
    log("visitor-memory", "op=slice", visitor=visitor[3:11], conversation=conv[5:13], messages=len(part),
        lines=len(lines), reason=why)
    return 1 if lines else 0


def memory_lines(store: GraphStore, account_id: str, key: str) -> tuple[list[str], int]:
    """The visitor's slices' lines, newest slice first, bounded; read by their key in scope ``user`` only."""
    slices = store.find(guards=Principal.owner(account_id).narrowed_to(scopes=(USER_SCOPE,)).guards, labels=[VISITOR_SLICE_LABEL],
                        where={"sliceToken": key}, limit=SCAN)
    slices = [s for s in slices if s.properties.get("sliceToken") == key]  # the oracle holds no wider read
    slices.sort(key=lambda s: str(s.properties.get("lastAt") or ""), reverse=True)
    out: list[str] = []
    used = 0
    for node in slices[:INJECT_MAX_SLICES]:
        for line in node.properties.get("lines") or []:
            line = str(line)
            if line in out or used + len(line) > INJECT_MAX_CHARS:
                continue
            out.append(line)
            used += len(line) + 1
    return out, min(len(slices), INJECT_MAX_SLICES)


def recall(host: Host, account_id: str, key: str, conversation_id: str) -> list[str]:
    """The ``plughost_visitor_memory`` hook: end the visitor's ended conversations, then read their slices."""
    store = host.store()
    end_conversations(store, account_id, idle_s=VISITOR_IDLE_S.read(host.env), key=key, current=conversation_id)
    lines, slices = memory_lines(store, account_id, key)
    log("visitor-memory", "op=inject", visitor=key[3:11], slices=slices, lines=len(lines),
        chars=sum(len(x) for x in lines))
    return lines


def sweep(host: Host, account_id: str) -> int:
    """The standing audits' idle sweep: every visitor's conversations idle past the timeout end now."""
    written = end_conversations(host.store(), account_id, idle_s=VISITOR_IDLE_S.read(host.env))
    log("visitor-memory", "op=sweep", slices=written)
    return written
