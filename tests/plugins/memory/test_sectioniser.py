"""The deterministic sectioniser and the embedding text (docs/memory.md#writes)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from plughost.plugins.memory.embedding.text import embedding_text
from plughost.plugins.memory.sectioniser import CHUNK_MAX_CHARS, chunk_id, document_id, section_id, sectionise


def test_markdown_headings_paths_and_fences() -> None:
    text = "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n```\n# not a heading\n```\n\n### Linux\n\napt.\n\n## Use\n\nWell."
    doc = sectionise(text)
    assert doc.format == "markdown" and doc.title == "Guide" and doc.summary == "Intro."
    assert [(s.title, s.level, s.path) for s in doc.sections] == [
        ("Guide", 1, ("Guide",)), ("Install", 2, ("Guide", "Install")),
        ("Linux", 3, ("Guide", "Install", "Linux")), ("Use", 2, ("Guide", "Use"))]
    assert "# not a heading" in doc.sections[1].body


def test_plain_text_packs_paragraphs() -> None:
    paras = [f"Paragraph {i}. " + "word " * 150 for i in range(12)]
    doc = sectionise("\n\n".join(paras), fmt="text")
    assert doc.format == "text" and len(doc.sections) > 1
    assert all(len(s.body) <= 4000 for s in doc.sections)
    assert all(len(c.content) <= CHUNK_MAX_CHARS for s in doc.sections for c in s.chunks)


def test_long_sentence_is_hard_split() -> None:
    doc = sectionise("x" * 5000, fmt="text")
    assert sum(len(c.content) for s in doc.sections for c in s.chunks) == 5000


def test_stable_ids() -> None:
    d = document_id("acct", "att-1")
    assert d == document_id("acct", "att-1") != document_id("other", "att-1")
    assert section_id(d, 2) == f"{d}_s0002" and chunk_id(d, 2, 3) == f"{d}_s0002_c0003"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=300),
                min_size=1, max_size=12))
def test_deterministic_and_lossless_words(paragraphs: list[str]) -> None:
    text = "\n\n".join(paragraphs)
    a, b = sectionise(text), sectionise(text)
    assert a == b
    words_in = text.split()
    words_out = " ".join(c.content for s in a.sections for c in s.chunks).split()
    heading_words = [w for s in a.sections if s.level for w in s.title.split()]
    kept = Counter(w for w in words_in if set(w) != {"#"})
    assert not kept - Counter(words_out + heading_words)  # no word is lost
    assert all(len(c.content) <= CHUNK_MAX_CHARS for s in a.sections for c in s.chunks)
    if a.format == "text":
        assert "".join(words_out) == "".join(words_in)


def test_embedding_text_bounded_and_document_fields() -> None:
    text = embedding_text(["Person"], {"name": "Ada", "accountId": "x", "scope": "admin", "bio": "b" * 5000,
                                       "tags": ["a", "b"], "age": 36})
    assert text.startswith("Person\nname: Ada\n") and "accountId" not in text and "scope" not in text
    assert len(text) == 2000
    assert embedding_text(["Company"], {"name": "Acme"}) is None  # not vector-indexed
    assert embedding_text(["KnowledgeDocument"], {"title": "T", "summary": "S", "body": "B"}) == "S"
    assert embedding_text(["Section"], {"title": "T", "body": "Body", "summary": "S"}) == "Body"
    assert embedding_text(["Chunk"], {"content": "C"}) == "C"
    assert embedding_text(["Event"], {}) is None


def test_the_fast_helpers_agree_with_their_plain_definitions() -> None:
    """First sentences, paragraphs and first lines are found without collapsing or splitting the
    whole text; on random text over the awkward characters (Unicode spaces and line breaks,
    sentence ends, heading and fence marks) they equal the plain definitions."""
    import random
    import re

    from plughost.plugins.memory import sectioniser as s

    def first_sentence(text: str) -> str:
        return s._clip(re.split(r"(?<=[.!?])\s+", " ".join(text.split()), maxsplit=1)[0], 200)

    def paragraphs(text: str) -> list[str]:
        return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]

    alphabet = ["a", "b", ".", "!", "?", " ", "\n", "\t", "\xa0", "\u2028", "\x1c", "\x85", "\r", "#", "`", "~", "é"]
    rng = random.Random(7)
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert s._first_sentence(text) == first_sentence(text), repr(text)
        assert list(s._iter_paragraphs(text)) == paragraphs(text), repr(text)
        doc = s.sectionise(text, fmt="markdown")
        body = text.replace("\r\n", "\n").replace("\r", "\n").strip()
        first_line = next((line.strip(" #") for line in body.splitlines() if line.strip()), "")
        assert doc.title == (s._markdown_sections(body, "Introduction")[1] or s._clip(first_line, s.TITLE_MAX_CHARS)
                             or "Untitled"), repr(text)
