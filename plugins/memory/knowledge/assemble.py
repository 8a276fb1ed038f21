"""KNOWLEDGE.md's assembled part from the matched documents: pure, one section per document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_CHARS = 40_000
"""The assembled part's ceiling: it goes into every public turn's system prompt."""


@dataclass
class Source:
    """One matched document (or a tagged entity) and the keywords that matched it."""

    node_id: str
    title: str
    sections: list[tuple[str, str]] | None = field(default_factory=list)  # (heading, text); None: left out
    keywords: list[str] = field(default_factory=list)


def render(sources: Sequence[Source], keywords: Sequence[str], *, limit: int = MAX_CHARS) -> str:
    """The Markdown of the matched sources, whole documents first come first served under ``limit``."""
    if not keywords:
        return "This agent subscribes to no keywords yet: add `keywords:` to the front matter of its IDENTITY.md."
    if not sources:
        return f"No public document matches this agent's keywords ({', '.join(keywords)}) yet."
    blocks: list[str] = []
    used = 0
    left_out = 0
    for src in sources:
        if src.sections is None:
            left_out += 1
            continue
        block = _block(src)
        if used + len(block) > limit:
            left_out += 1
            continue
        blocks.append(block)
        used += len(block)
    if left_out:
        blocks.append(f"({left_out} more matching document(s) left out: the part is capped at {limit} characters.)")
    return "\n\n".join(blocks)


def _block(src: Source) -> str:
    parts = [f"## {src.title}\nSource: {src.title} (matched: {', '.join(src.keywords)})"]
    for heading, text in src.sections or []:
        text = text.strip()
        if not text:
            continue
        heading = heading.strip()
        parts.append(f"### {heading}\n{text}" if heading and heading != src.title else text)
    return "\n\n".join(parts)
