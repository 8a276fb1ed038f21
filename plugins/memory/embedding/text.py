"""What text a node embeds (docs/memory.md#writes): one bounded representation for every write path and reindex.

Small entities embed a bounded properties text (labels, then the canonical text properties in
their fixed order, then the others sorted); documents embed their ``summary``, sections their
body, chunks their document and section titles then their content, a Message its turn then its
context (``searchContext``, see :mod:`plughost.plugins.memory.embedding.indexed_form`). Provider-level
caps (``EMBED_INPUT_MAX_CHARS``) still apply after.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from plughost.api.store import TEXT_PROPERTIES, VECTOR_LABELS
from plughost.plugins.memory.embedding import indexed_form

PROPS_TEXT_MAX_CHARS = 2000
SKIPPED = frozenset({"accountId", "scope", "agents", "deletedAt", "createdAt", "updatedAt", "embedding",
                     "backlinkCount", "id", "attachmentId", "contentHash", "documentId", "sectionId",
                     "searchContext"})
DOCUMENT_FIELDS: dict[str, tuple[str, ...]] = {
    "KnowledgeDocument": ("summary", "title", "body", "content"),
    "Section": ("body", "summary", "title"),
    "Chunk": ("content", "summary", "body"),
}


def is_vector_label(labels: Sequence[str]) -> bool:
    return any(label in VECTOR_LABELS for label in labels)


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        return ", ".join(_render(v) for v in value if v is not None)
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def embedding_text(labels: Sequence[str], properties: Mapping[str, Any], *,
                   max_chars: int = PROPS_TEXT_MAX_CHARS) -> str | None:
    """The text to embed for a node, or None when it has no vector-indexed label or no text."""
    if not is_vector_label(labels):
        return None
    if indexed_form.is_message(labels):
        return indexed_form.embedding_text(properties)
    for label, fields in DOCUMENT_FIELDS.items():
        if label in labels:
            for name in fields:
                value = properties.get(name)
                if isinstance(value, str) and value.strip():
                    context = properties.get(indexed_form.CONTEXT_PROPERTY) if label == "Chunk" else None
                    # the section path first: a long chunk is cut at 256 tokens, the title never is
                    return f"{context}\n{value.strip()}" if isinstance(context, str) and context else value.strip()
            return None
    lines = [" ".join(labels)]
    keys = [k for k in TEXT_PROPERTIES if k in properties]
    keys += sorted(k for k in properties if k not in TEXT_PROPERTIES)
    for key in keys:
        if key in SKIPPED or properties.get(key) in (None, "", [], {}):
            continue
        lines.append(f"{key}: {_render(properties[key])}")
    if len(lines) == 1:
        return None
    text = "\n".join(lines)
    return text[:max_chars]
