"""The public knowledge an agent's keywords match: documents tagged with a keyword or whose text
holds it, and entities tagged with one, read under public guards only (never admin or shared)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plughost import GraphStore, Guards, Principal
from plughost.plugins.memory.knowledge.assemble import MAX_CHARS, Source

DOCUMENT = "KnowledgeDocument"
PARTS = ("Section", "Chunk")
PER_KEYWORD = 25
MAX_SOURCES = 60
ENTITY_FIELDS = ("description", "telephone", "email", "address", "openingHours", "url")
NOT_KNOWLEDGE = {"Message", "WebchatMessage", "TelegramMessage", "WhatsAppMessage", "Conversation", "Preference",
                 "Outcome", "Session", "Turn", "Report", "Briefing", "Task", "ToolCall", "TimeEntry", "Lead"}
"""Labels that are the team's records, never an agent's knowledge, whatever their scope."""


def public_guards(account_id: str) -> Guards:
    """Public scope of the account, no agent filter: what any public visitor may be told."""
    return Principal.owner(account_id).narrowed_to(scopes=["public"]).guards


def gather(store: GraphStore, account_id: str, keywords: Sequence[str], budget: int = MAX_CHARS) -> list[Source]:
    """The matched sources, in keyword order then rank, each once with every keyword that found it.
    Once ``budget`` characters are gathered, a further match is counted (``Source.sections`` None:
    left out) without reading its sections."""
    guards = public_guards(account_id)
    found: dict[str, Source] = {}
    used = [0]
    for keyword in keywords:
        hits = [h.node for h in store.keyword_search(keyword, PER_KEYWORD, guards=guards)]
        hits += [h.node for h in store.fulltext_search(keyword, PER_KEYWORD, guards=guards,
                                                       labels=[DOCUMENT, *PARTS])]
        for node in hits:
            if set(node.labels) & NOT_KNOWLEDGE or node.properties.get("scope") != "public":
                continue
            source = _source(store, guards, node, found, used, budget)
            if source is None:
                continue
            if keyword not in source.keywords:
                source.keywords.append(keyword)
            if len(found) >= MAX_SOURCES:
                break
    return list(found.values())


def _source(store: GraphStore, guards: Guards, node: Any, found: dict[str, Source], used: list[int],
            budget: int) -> Source | None:
    """The source a hit belongs to: a part's document (by its ``attachmentId``), a document, or an entity."""
    props = node.properties
    attachment = props.get("attachmentId")
    if DOCUMENT in node.labels or (set(node.labels) & set(PARTS) and attachment):
        key = f"doc:{attachment or node.id}"
        if key in found:
            return found[key]
        if used[0] >= budget:  # over the part's ceiling: counted as left out, its sections never read
            found[key] = Source(node.id, "", None)
            return found[key]
        doc = _document_of(store, guards, node)
        if doc is None:
            return None
        sections = store.find(guards=guards, labels=["Section"], where={"attachmentId": doc.properties.get(
            "attachmentId")}, limit=500) if doc.properties.get("attachmentId") else []
        sections.sort(key=lambda s: int(s.properties.get("index") or 0))
        title = str(doc.properties.get("title") or doc.id)
        parts = [(str(s.properties.get("title") or ""), str(s.properties.get("body") or "")) for s in sections]
        if not parts and doc.properties.get("summary"):
            parts = [("", str(doc.properties["summary"]))]
        found[key] = Source(doc.id, title, parts)
        used[0] += len(title) + sum(len(h) + len(t) for h, t in parts)
        return found[key]
    if set(node.labels) & set(PARTS):
        return None  # a part with no document: its document is what is quoted
    key = f"node:{node.id}"
    if key not in found:
        name = str(props.get("name") or props.get("title") or node.id)
        lines = [f"- {f}: {_plain(props[f])}" for f in ENTITY_FIELDS if props.get(f)]
        found[key] = Source(node.id, name, [("", "\n".join(lines))] if lines else [])
    return found[key]


def _document_of(store: GraphStore, guards: Guards, node: Any) -> Any:
    """A part's document, up its edges (Chunk ←HAS_CHUNK— Section ←HAS_SECTION— document): indexed
    lookups, where a search by ``attachmentId`` reads every node of the label."""
    current = node
    for edge in ((["HAS_CHUNK"] if "Chunk" in node.labels else []) + (["HAS_SECTION"] if DOCUMENT not in node.labels
                                                                       else [])):
        parents = [p for p in store.linked([current.id], edge, guards=guards, limit=5).get(current.id) or []]
        if not parents:
            return None
        current = parents[0]
    return current if DOCUMENT in current.labels else None


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(str(v) for v in value.values() if v)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)
