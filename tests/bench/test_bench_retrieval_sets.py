"""The retrieval-quality bench's sets and metric (bench/retrieval_quality.py): the real-text question
file's shape, the generator's multi-hop questions, and R@k / nDCG over several evidence items.
Figures come from the bench, not from here."""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
_PATH = list(sys.path)
sys.path.insert(0, str(BENCH))
try:  # the bench's modules by their bare names, as the bench imports them; its folder off the path after
    import conversations
    import realtext
    import retrieval_quality as rq
finally:
    sys.path[:] = _PATH

LOCATOR = re.compile(r"^faq:(ch\d+|\d+(\.\d+)*)#\d+$")


def test_realtext_question_file_shape() -> None:
    source, questions = realtext.load_questions()
    assert source["package"] == "debian-faq" and source["version"]
    assert len(questions) >= 120
    kinds = [q.type for q in questions]
    assert set(kinds) <= set(realtext.TYPES)
    assert kinds.count("multi-hop") >= 40 and kinds.count("open-domain") >= 15
    assert len({q.text.casefold() for q in questions}) == len(questions), "a question asked twice"
    for q in questions:
        assert q.evidence and len(set(q.evidence)) == len(q.evidence), q.text
        assert all(LOCATOR.match(e) for e in q.evidence), q.text
        assert (len(q.evidence) >= 2) == (q.type == "multi-hop"), q.text
    assert realtext.check(questions, {e for q in questions for e in q.evidence}) == []


@pytest.mark.skipif(not realtext.SOURCE.is_file(), reason="apt-get install -y debian-faq")
def test_realtext_locators_resolve_in_the_installed_package() -> None:
    passages, questions, _ = realtext.load()
    assert len({p.id for p in passages}) == len(passages)
    assert realtext.check(questions, {p.id for p in passages}) == []


def test_realtext_check_names_a_locator_that_does_not_resolve() -> None:
    q = realtext.RealQuestion("Which one?", "multi-hop", ("faq:1.1#1", "faq:99.9#1"))
    assert realtext.check([q], {"faq:1.1#1"}) == ["'Which one?': no passage faq:99.9#1"]
    assert realtext.check([realtext.RealQuestion("Two?", "multi-hop", ("faq:1.1#1",))], {"faq:1.1#1"})


def test_split_cuts_sections_into_paragraphs_with_stable_ids() -> None:
    text = ("Contents\n\n    1.1. What is it?\n\nChapter\u00a01. Basics\n\n    A chapter introduction that is long "
            "enough to stand on its own as a passage of the text.\n\n1.1.\u00a0What is it? A question whose\n"
            "heading wraps\n\n    The first paragraph of the answer, long enough to be a passage of its own in this small example.\n\n"
            "    The list that follows names the two items of the example, each on a line of its own:\n\n      * one item\n\n      * another item\n\n1.2.\u00a0Next?\n\n"
            "    Short.\n")
    passages = realtext.split(text)
    assert [p.id for p in passages] == ["faq:ch1#1", "faq:1.1#1", "faq:1.1#2", "faq:1.2#1"]
    assert passages[1].heading == "What is it? A question whose heading wraps"
    assert passages[2].text.endswith("of its own: * one item * another item")  # a list joins its lead-in
    assert passages[3].text == "Short."
    assert passages[1].document.startswith("What is it?")


def test_generated_multi_hop_questions_need_two_turns_of_two_sessions() -> None:
    data = conversations.build(seed=22)
    turns = {t.id: t for t in data.turns}
    multi = [q for q in data.questions if q.type == "multi-hop"]
    assert len(multi) == 60
    assert data.questions[-60:] == multi, "the multi-hop questions come after the others"
    for q in multi:
        assert len(q.evidence) == 2 and len(set(q.evidence)) == 2, q.text
        first, second = (turns[e] for e in q.evidence)
        assert first.session != second.session, q.text
        assert first.speaker in q.text and second.speaker in q.text, q.text
    assert any(q.text.startswith("Which came first") for q in multi)
    assert any(q.evidence and turns[q.evidence[0]].speaker != turns[q.evidence[1]].speaker for q in multi)
    assert len({q.text.casefold() for q in data.questions}) == len(data.questions)


def test_generated_one_fact_questions_are_unchanged_and_typed() -> None:
    data = conversations.build(seed=22)
    before = [q for q in data.questions if q.type != "multi-hop"]
    assert len(before) == 300 and all(len(q.evidence) == 1 for q in before)
    # the questions this seed had before it had multi-hop ones: the old figures stay comparable
    digest = hashlib.sha256(json.dumps([(q.text, q.answer, q.kind, q.owner) for q in before]).encode()).hexdigest()
    assert digest == "eaa0405b042df46526dd0d3fb0569047ed7d504aac23506eeb94543d943578d9"
    for q in before:
        assert q.type == ("temporal" if re.match(r"^(In \w+ \d{4}, |When |On what day |What time )", q.text)
                          else "single"), q.text
    assert {q.type for q in before} == {"single", "temporal"}


def test_metric_over_several_evidence_items() -> None:
    ids = ["a", "x", "y", "z", "w", "v", "b", "u"]
    assert rq.ranks_of(ids, ("a", "b", "c")) == [1, 7, None]
    # one evidence item each: the usual hit rate, nDCG and MRR
    one = rq.metrics([[1], [None], [3]])
    assert one["R@5"] == pytest.approx(2 / 3) and one["R@10"] == pytest.approx(2 / 3)
    assert one["nDCG@10"] == pytest.approx((1 + 1 / math.log2(4)) / 3)
    assert one["MRR@10"] == pytest.approx((1 + 1 / 3) / 3)
    # two evidence items, one in the top 5 and one at 7: half found at 5, all at 10
    two = rq.metrics([[1, 7]])
    assert two["R@5"] == pytest.approx(0.5) and two["R@10"] == pytest.approx(1.0) and two["all@5"] == 0
    assert two["nDCG@10"] == pytest.approx((1 + 1 / math.log2(8)) / (1 + 1 / math.log2(3)))
    assert two["MRR@10"] == pytest.approx(1.0)
    assert rq.metrics([[2, 1]])["nDCG@10"] == pytest.approx(1.0)
    assert rq.metrics([[4, 2]])["all@5"] == 1


def test_per_type_rows_and_the_one_evidence_row() -> None:
    typed = rq.by_type([[1], [None], [1, None]], ["single", "temporal", "multi-hop"])
    assert list(typed) == ["single", "temporal", "multi-hop", rq.ONE, "all"]
    assert typed["multi-hop"] == (1, rq.metrics([[1, None]]))
    assert typed[rq.ONE][0] == 2 and typed[rq.ONE][1]["R@5"] == pytest.approx(0.5)
    assert typed["all"][1]["R@5"] == pytest.approx((1 + 0 + 0.5) / 3)
    assert list(rq.by_type([[1], [2]], ["single", "single"])) == ["single", "all"]


def test_realtext_says_what_to_install_when_the_package_is_missing(tmp_path: Path) -> None:
    with pytest.raises(realtext.MissingSource, match="apt-get install -y debian-faq"):
        realtext.passages(tmp_path / "debian-faq.en.txt.gz")
