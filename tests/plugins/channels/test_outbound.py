"""Outbound helpers: Retry-After parsing, backoff, splitting long replies on whole characters."""

from __future__ import annotations

import email.utils

from hypothesis import given, settings
from hypothesis import strategies as st

from plughost.plugins.channels.outbound import backoff, chunks, retry_after, utf16_len


def test_retry_after_forms() -> None:
    assert retry_after("7") == 7.0
    assert retry_after(None) is None and retry_after("soon") is None
    assert 29 <= retry_after(email.utils.formatdate(1_000_030, usegmt=True), now=1_000_000) <= 30
    assert [backoff(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0] and backoff(30) == 30.0


words = st.text(alphabet=st.sampled_from(["a", "b", "😀", " ", "\n", "é"]), max_size=400)


@settings(max_examples=300, deadline=None)
@given(words, st.integers(min_value=2, max_value=50))
def test_chunks_property(text: str, limit: int) -> None:
    parts = chunks(text, limit)
    assert all(utf16_len(p) <= limit for p in parts)
    for p in parts:
        p.encode("utf-8")  # strict: never a split character
    assert all(parts) or parts == [""]
    assert "".join(parts).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")
    assert len(parts) >= 1


def test_chunks_prefer_boundaries() -> None:
    text = "first paragraph here\n\nsecond one"
    assert chunks(text, 25) == ["first paragraph here", "second one"]
    assert chunks("short", 4096) == ["short"]
