"""MMR, compound questions, the query classifier and the composite factors: each off in the baseline."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from retrieval_support import ACCOUNT, LookupEmbedder, row

from plughost.plugins.memory.retrieval import SearchRequest, search
from plughost.plugins.memory.retrieval.classify import classify
from plughost.plugins.memory.retrieval.composite import confidence, dated, recency
from plughost.plugins.memory.retrieval.compound import decompose, interleave
from plughost.plugins.memory.retrieval.diversity import mmr
from plughost.plugins.memory.retrieval.flags import SearchFlags
from plughost.ports.graph import Guards


@pytest.mark.parametrize(("query", "parts"), [
    ("What do Melanie and Caroline have in common?",
     ["What do Melanie have in common?", "What do Caroline have in common?"]),
    ("Did Ana or Ben go to Lisbon?", ["Did Ana go to Lisbon?", "Did Ben go to Lisbon?"]),
    ("When did Ana move to Porto and when did she start the new job?",
     ["When did Ana move to Porto", "when did Ana start the new job?"]),
    ("What is the difference between the pasta and the pizza?", ["pasta", "pizza"]),
    ("What did Caroline research?", []),
    ("How do I copy files and directories recursively?", []),
    ("What are the opening hours and the address?", []),
    ("", []),
    ("and and and " * 300, []),
])
def test_decompose(query, parts):
    assert decompose(query) == parts


def test_interleave_takes_each_list_in_turn_and_each_row_once():
    a, b, c, d = (row(x, 1.0) for x in "abcd")
    assert [r.id for r in interleave([[a, b], [c, a], [d]], 10)] == ["a", "c", "d", "b"]
    assert [r.id for r in interleave([[a, b], [c, d]], 3)] == ["a", "c", "b"]


def test_mmr_prefers_a_new_turn_over_a_second_wording_of_the_first():
    first = row("1", 1.0, "Message", text="we stayed four nights in lisbon near the river")
    again = row("2", 0.9, "Message", text="we stayed four nights in lisbon by the river")
    other = row("3", 0.8, "Message", text="my sister started her new job at the bakery")
    assert [r.id for r in mmr([first, again, other], 1.0)] == ["1", "2", "3"]  # λ = 1: off
    assert [r.id for r in mmr([first, again, other], 0.7)] == ["1", "3", "2"]
    # the same conversation counts as similar when asked
    s1 = row("4", 1.0, "Message", text="alpha", conversationId="c1")
    s2 = row("5", 0.9, "Message", text="beta", conversationId="c1")
    s3 = row("6", 0.8, "Message", text="gamma", conversationId="c2")
    assert [r.id for r in mmr([s1, s2, s3], 0.7)] == ["4", "5", "6"]
    assert [r.id for r in mmr([s1, s2, s3], 0.7, session=0.5)] == ["4", "6", "5"]


@pytest.mark.parametrize(("query", "klass"), [
    ("hi", "none"), ("Thanks!", "none"), ("ok great", "none"), ("", "none"),
    ("When did Ana move to Porto?", "temporal"), ("what year did she graduate", "temporal"),
    ("How long ago did Ben adopt the dog?", "temporal"),
    ("What does Ana do for work?", None), ("hi, where is the shop?", None),
])
def test_classify(query, klass):
    assert classify(query) == klass


def test_composite_factors():
    new = row("n", 1.0, "Message", text="x", sentAt="2025-06-01T00:00:00Z")
    old = row("o", 1.0, "Message", text="x", sentAt="2025-03-03T00:00:00Z")
    assert recency([new, old], 1.0, 90) == 2 and new.score == 2.0 and 1.49 < old.score < 1.51
    # a note written today is aged among notes, not against the imported turns
    note_today = row("t", 1.0, "Note", createdAt="2026-12-01T00:00:00Z")
    turn_old, turn_new = (row(i, 1.0, "Message", sentAt=at) for i, at in (("a", "2023-01-01T00:00:00Z"),
                                                                          ("b", "2023-04-01T00:00:00Z")))
    assert recency([note_today, turn_old, turn_new], 1.0, 90) == 3
    assert note_today.score == turn_new.score == 2.0 and turn_old.score < 1.51
    sure = row("s", 1.0, "Fact", confidence=1.0)
    unsure = row("u", 1.0, "Fact", confidence=0.5)
    bare = row("b", 1.0, "Fact")
    assert confidence([sure, unsure, bare], 0.4) == 2 and (sure.score, unsure.score, bare.score) == (1.0, 0.8, 1.0)
    when = row("w", 1.0, "Message", text="We moved last week, on Tuesday")
    plain = row("p", 1.0, "Message", text="We moved")
    note = row("k", 1.0, "Note", text="in March")
    assert dated([when, plain, note], 0.5) == 1 and when.score == 1.5 and plain.score == 1.0
    assert recency([new], 0.0, 90) == confidence([sure], 0.0) == dated([when], 0.0) == 0


def test_the_baseline_keeps_every_new_stage_off():
    flags = SearchFlags.baseline()
    assert (flags.mmr, flags.compound, flags.classify, flags.dated, flags.recency, flags.confidence) == (
        1.0, False, False, 0.0, 0.0, 0.0)


def _append(store, turns):
    from plughost.plugins.memory.conversations.service import Conversations

    svc = Conversations(store, LookupEmbedder({}), {"ACCOUNT_ID": ACCOUNT})
    for i, (sender, text) in enumerate(turns):
        svc.append(role="user", content=text, conversationId=f"c{i % 2}", sender=sender,
                   timestamp=f"2025-03-0{1 + i}T10:00:00Z")


def test_a_compound_question_brings_each_part_into_the_top(store):
    _append(store, [("Ana", "Ana loves hiking in the mountains every weekend"),
                    ("Ana", "Ana hiking boots again, the mountains were great"),
                    ("Ana", "Ana says the mountains hiking trail was muddy"),
                    ("Ben", "Ben enjoys painting watercolours by the lake")])
    req = SearchRequest("What hobbies do Ana and Ben enjoy?", limit=2, expand_hops=0)
    off = search(store, req, guards=Guards(ACCOUNT), flags=SearchFlags.baseline(stem=True, stopwords=True),
                 emit_log=False)
    on = search(store, req, guards=Guards(ACCOUNT), emit_log=False,
                flags=SearchFlags.baseline(stem=True, stopwords=True, compound=True))
    assert on.stats["parts"] == 2 and len(on.queries) == 3
    assert any("Ben" in r.props["text"] for r in on.rows)
    assert off.stats["parts"] == 0


def test_a_greeting_is_not_searched_when_classified(store, capsys):
    _append(store, [("Ana", "hi there"), ("Ben", "hello")])
    flags = SearchFlags.baseline(classify=True)
    out = search(store, SearchRequest("hi", limit=5), guards=Guards(ACCOUNT), flags=flags)
    assert out.rows == [] and out.stats["retrievalClass"] == "none"
    assert "retrievalClass=none" in capsys.readouterr().err
    # the caller's class wins over the classifier
    out = search(store, SearchRequest("hi", limit=5, retrieval_class="general"), guards=Guards(ACCOUNT), flags=flags,
                 emit_log=False)
    assert out.rows and out.stats["retrievalClass"] == "general"


@pytest.mark.parametrize("query", ["What did Caroline research?", "When did Ana move to Porto?", "copy files",
                                   "opening hours", "How do I list open network sockets"])
def test_expansion_gives_three_to_five_variants_for_two_content_words_or_more(query):
    from plughost.plugins.memory.retrieval.expand import rule_based

    variants = rule_based(query)
    assert 3 <= len(variants) <= 5 and query.lower() not in variants and len(set(variants)) == len(variants)

_TEXT = st.text(alphabet=st.sampled_from(list("AaBb and or vs Ana Ben when did she ?,'’-\u00e9\u4e2d ")), max_size=300)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_the_question_stages_never_raise_on_any_text(query):
    parts = decompose(query)
    assert len(parts) <= 3 and all(p and p.casefold() != query.strip().casefold() for p in parts)
    assert classify(query) in ("none", "temporal", None)
