"""The REALTALK bench's reading of the corpus (bench/realtalk.py): evidence ids, dates, the halves
and the import lines. Figures come from the bench, not from here (the corpus is never committed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
_PATH = list(sys.path)
sys.path.insert(0, str(BENCH))
try:
    import realtalk
finally:
    sys.path[:] = _PATH


def test_evidence_ids_repair_the_corpus_slips():
    assert realtalk.evidence_ids(["D5:12;D5:16", "D20:17.", "D 2:18", "D12:3-D12:5", "D13:45:D20:19", "", "D1:6"]) == [
        "D5:12", "D5:16", "D20:17", "D2:18", "D12:3", "D12:4", "D12:5", "D1:6"]


def test_halves_are_fixed_by_chat_and_disjoint():
    assert set(realtalk.TUNE).isdisjoint(realtalk.HELD) and sorted(realtalk.TUNE + realtalk.HELD) == list(range(1, 11))


def test_a_chat_reads_as_sessions_of_messages(tmp_path):
    chat = {"name": {"speaker_1": "Ann", "speaker_2": "Bo"},
            "session_1": [{"clean_text": "Hi Bo! I made pasta.", "speaker": "Ann", "date_time": "29.12.2023, 22:42:04",
                           "dia_id": "D1:1"},
                          {"clean_text": "  ", "speaker": "Bo", "date_time": "29.12.2023, 22:43:00", "dia_id": "D1:2"}],
            "qa": [{"question": "What did Ann make?", "evidence": ["D1:1", "D9:9"], "category": 2},
                   {"question": "Nothing?", "evidence": ["D9:9"], "category": 1}]}
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "Chat_3_Ann_Bo.json").write_text(json.dumps(chat))
    [c] = realtalk.load(tmp_path)
    assert c.account == "realtalk-3" and list(c.sessions) == ["rt3-s1"]
    assert [t.at for t in c.sessions["rt3-s1"]] == ["2023-12-29T22:42:04Z"]  # the empty turn is not imported
    assert [(q.text, q.category, q.evidence) for q in c.questions] == [("What did Ann make?", "temporal", ("rt3:D1:1",))]
    assert (c.dropped, c.unanswerable) == (2, 1)
    lines = [json.loads(x) for x in realtalk.jsonl(c).splitlines()]
    assert lines[0]["properties"] == {"role": "user", "senderName": "Ann", "text": "Hi Bo! I made pasta.",
                                      "conversationId": "rt3-s1", "sentAt": "2023-12-29T22:42:04Z"}
    assert lines[1]["labels"] == ["Conversation"] and lines[1]["edges"] == [{"type": "HAS_MESSAGE", "to": "rt3:D1:1"}]
