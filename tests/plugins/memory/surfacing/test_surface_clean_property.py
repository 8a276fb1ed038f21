"""Property: whatever strings a hook input spells (lone surrogates included), ``decide.clean`` makes it
encodable, leaves valid input untouched and is idempotent; the JSON text Claude Code sends is the oracle."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from plughost.plugins.memory.surfacing.client import parse_input
from plughost.plugins.memory.surfacing.decide import clean

ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())
TEXT = st.text(ANY_CHAR, max_size=20)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(TEXT, JSON, max_size=5))
def test_clean_makes_any_hook_input_encodable(hook: dict) -> None:
    wire = json.dumps(hook).encode()  # ASCII escapes, as a lone surrogate reaches the hook ("\udcff")
    parsed = parse_input(wire)
    assert parsed == hook
    cleaned = clean(parsed)
    json.dumps(cleaned, ensure_ascii=False).encode("utf-8")  # never a UnicodeEncodeError
    assert clean(cleaned) == cleaned
    try:
        json.dumps(hook, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        assert cleaned != hook
    else:
        assert cleaned == hook
