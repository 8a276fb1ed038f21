"""The chat-answers bench's question sets (bench/chat_answers.py) through the default runner: at
least 40 questions a business, some unanswerable, some held out; no wrong passage, and at least
90% of the answerable ones right, on the demo bakery and on the bike shop."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
_PATH = list(sys.path)
sys.path.insert(0, str(BENCH))
try:
    import chat_answers
finally:
    sys.path[:] = _PATH


@pytest.mark.parametrize("business", ["bakery", "bikes"])
def test_the_chat_answers_what_the_business_knows_and_no_wrong_passage(business: str, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    documents, entities, questions = chat_answers.businesses()[business]
    assert len(questions) >= 40 and len({q.text for q in questions}) == len(questions)
    assert any(q.expected is None for q in questions) and any(q.held_out for q in questions)
    monkeypatch.delenv("ACCOUNT_ID", raising=False)
    host = chat_answers.seeded_host(tmp_path, documents, entities)
    rows = chat_answers.ask_all(host, questions)
    wrong = [(q.text, reply) for q, reply, said in rows if said == "wrong"]
    assert wrong == []
    for part in ([r for r in rows if not r[0].held_out], [r for r in rows if r[0].held_out]):
        totals = chat_answers.totals(part)
        assert totals["right"] >= 0.9 * totals["answerable"], chat_answers.line(business, totals)
