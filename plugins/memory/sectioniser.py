"""The deterministic sectioniser for ``memory-ingest`` (docs/memory.md#writes).

No model decides anything here: the same text always gives the same sections, chunks,
summaries and ids, so re-ingesting a document replaces its hierarchy node for node.
Markdown splits at headings (ignoring fenced code); plain text packs paragraphs into sections.
Chunks pack paragraphs up to a character budget, splitting long paragraphs at sentence ends.
Summaries are extractive: a section's is its first sentence, a chunk's (:func:`chunk_summary`) the
chunk itself when it is short, else its most telling sentences in their own order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

SECTION_MAX_CHARS = 4000
CHUNK_MAX_CHARS = 800
SUMMARY_MAX_CHARS = 300
TITLE_MAX_CHARS = 80

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SENTENCE_END_RAW = re.compile(r"[.!?]\s")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


@dataclass
class ChunkPart:
    index: int
    content: str
    summary: str = ""


@dataclass
class SectionPart:
    index: int
    title: str
    level: int
    path: tuple[str, ...]
    body: str
    summary: str
    chunks: list[ChunkPart] = field(default_factory=list)


@dataclass
class Sectioned:
    title: str
    summary: str
    format: str
    sections: list[SectionPart]


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut.rstrip(",;:") + "…"


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]


def _iter_paragraphs(text: str) -> Iterator[str]:
    """:func:`_paragraphs`, one at a time (for a caller that needs only the first few)."""
    start = 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        para = text[start:m.start()].strip()
        if para:
            yield para
        start = m.end()
    para = text[start:].strip()
    if para:
        yield para


def _first_sentence(text: str) -> str:
    """The first sentence, whitespace collapsed, clipped: the text up to the first ``.``, ``!`` or
    ``?`` followed by whitespace (found in the raw text: collapsing whitespace moves no sentence
    end, so the rest of a long body is never collapsed)."""
    end = _SENTENCE_END_RAW.search(text)
    return _clip(text[:end.start() + 1] if end else text, 200)


def _split_long(paragraph: str, limit: int) -> list[str]:
    if len(paragraph) <= limit:
        return [paragraph]
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(paragraph):
        while len(sentence) > limit:  # one enormous sentence: hard split
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[:limit])
            sentence = sentence[limit:]
        if current and len(current) + 1 + len(sentence) > limit:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        pieces.append(current)
    return pieces


def _pack(paragraphs: list[str], limit: int) -> list[str]:
    """Greedy packing of paragraphs (joined by blank lines) into pieces of at most ``limit`` chars."""
    out: list[str] = []
    current = ""
    for para in paragraphs:
        for piece in _split_long(para, limit):
            if current and len(current) + 2 + len(piece) > limit:
                out.append(current)
                current = piece
            else:
                current = f"{current}\n\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


def chunk(body: str, limit: int = CHUNK_MAX_CHARS) -> list[ChunkPart]:
    return [ChunkPart(i, text, chunk_summary(text)) for i, text in enumerate(_pack(_paragraphs(body), limit))]


_WORD = re.compile(r"[^\W_]{3,}")
_STOPWORDS = frozenset(
    "the and for are but not you all any can her was one our out day get has him his how its may new now old see "
    "two way who did let put say she too use that with have this will your from they know want been good much some "
    "time very when come here just like long make many more only over such take than them well were what into "
    "also each other which their there these those would could should about after again being below between "
    "both during every further most same then through under until while where why yet own off once".split())


def chunk_summary(text: str, limit: int = SUMMARY_MAX_CHARS) -> str:
    """A chunk's summary, extractive and deterministic (no model): the chunk itself when it fits
    ``limit``; else its sentences scored by how often the chunk uses their content words (each word's
    count, averaged over the sentence's words, the first sentence a little ahead), the best taken
    while they fit and given in their own order; a first choice longer than ``limit`` is clipped."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    sentences = [x for x in _SENTENCE_END.split(flat) if x]
    counts: dict[str, int] = {}
    words_of = []
    for sentence in sentences:
        words = [w for w in (m.group(0).lower() for m in _WORD.finditer(sentence)) if w not in _STOPWORDS]
        words_of.append(words)
        for w in set(words):
            counts[w] = counts.get(w, 0) + 1
    scores = [(sum(counts[w] for w in words) / (len(words) ** 0.5) if words else 0.0) * (1.2 if i == 0 else 1.0)
              for i, words in enumerate(words_of)]
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    picked: list[int] = []
    used = 0
    for i in order:
        extra = len(sentences[i]) + (1 if picked else 0)
        if used + extra <= limit:
            picked.append(i)
            used += extra
    if not picked:
        return _clip(sentences[order[0]], limit)
    return " ".join(sentences[i] for i in sorted(picked))


def is_markdown(text: str) -> bool:
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and _HEADING.match(line):
            return True
    return False


def _markdown_sections(text: str, fallback_title: str) -> tuple[list[tuple[str, int, tuple[str, ...], str]], str]:
    raw: list[tuple[str, int, tuple[str, ...], list[str]]] = []
    stack: list[tuple[int, str]] = []
    current: tuple[str, int, tuple[str, ...], list[str]] = (fallback_title, 0, (), [])
    first_h1: str | None = None
    in_fence = False
    for line in text.splitlines():  # the patterns run only where their opening can be
        if ("`" in line or "~" in line) and _FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence or line[:1] != "#" else _HEADING.match(line)
        if heading:
            raw.append(current)
            level, title = len(heading.group(1)), heading.group(2).strip()
            if level == 1 and first_h1 is None:
                first_h1 = title
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            current = (title, level, tuple(t for _, t in stack), [])
        else:
            current[3].append(line)
    raw.append(current)
    sections = [(t, lvl, path, "\n".join(lines).strip()) for t, lvl, path, lines in raw]
    return [s for s in sections if s[3]], first_h1 or ""


def sectionise(text: str, *, title: str | None = None, fmt: str = "auto", summary: str | None = None,
               section_max_chars: int = SECTION_MAX_CHARS, chunk_max_chars: int = CHUNK_MAX_CHARS) -> Sectioned:
    """Split a document into titled sections and chunks, deterministically."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    kind = ("markdown" if is_markdown(text) else "text") if fmt == "auto" else fmt
    # the text is stripped, so its first line is its first non-blank one (and ends by the first "\n")
    head = text.partition("\n")[0].splitlines()
    first_line = head[0].strip(" #") if head else ""
    parts: list[tuple[str, int, tuple[str, ...], str]]
    if kind == "markdown":
        parts, h1 = _markdown_sections(text, title or "Introduction")
        doc_title = title or h1 or _clip(first_line, TITLE_MAX_CHARS)
    else:
        doc_title = title or _clip(first_line, TITLE_MAX_CHARS)
        parts = [(_clip(body.split("\n", 1)[0], TITLE_MAX_CHARS), 0, (), body)
                 for body in _pack(_paragraphs(text), section_max_chars)]
    sections = [
        SectionPart(i, t, lvl, path or (t,), body, _first_sentence(body), chunk(body, chunk_max_chars))
        for i, (t, lvl, path, body) in enumerate(parts)
    ]
    prose = next((p for p in _iter_paragraphs(text) if not _HEADING.match(p.splitlines()[0])), "")
    doc_summary = _clip(summary, 2000) if summary else _clip(prose or doc_title, SUMMARY_MAX_CHARS)
    return Sectioned(doc_title or "Untitled", doc_summary, kind, sections)


def document_id(account_id: str, attachment_id: str) -> str:
    """Stable per (account, attachmentId): re-ingesting the same attachment targets the same nodes."""
    return "kd_" + hashlib.sha256(f"{account_id}\0{attachment_id}".encode()).hexdigest()[:24]


def section_id(doc_id: str, index: int) -> str:
    return f"{doc_id}_s{index:04d}"


def chunk_id(doc_id: str, section: int, index: int) -> str:
    return f"{doc_id}_s{section:04d}_c{index:04d}"


def content_attachment_id(text: str) -> str:
    """The default attachmentId: a hash of the text, so identical text re-ingests in place."""
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:32]
