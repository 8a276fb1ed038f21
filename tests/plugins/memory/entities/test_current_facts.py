"""Facts that change over time, used when answering (docs/retrieval.md#current-facts): the supersession
set (tests/plugins/memory/data/supersessions.json) written through conversation-append with
PLUGHOST_MEMORY_ENTITIES=1, asked through memory-search's pipeline with the stage on (PLUGHOST_GS_FACTS=0.2, the default) and off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plughost.plugins.memory.conversations.service import Conversations
from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
from plughost.plugins.memory.retrieval.current import question
from plughost.ports.graph import Guards

ON = 0.2
"""PLUGHOST_GS_FACTS as shipped (docs/retrieval.md#current-facts)."""
SET = json.loads((Path(__file__).parents[1] / "data" / "supersessions.json").read_text())


def seeded(store: Any) -> None:
    env = {"ACCOUNT_ID": store.test_account, "PLUGHOST_MEMORY_ENTITIES": "1"}
    tools = Conversations(store, None, env)
    for turn in sorted(SET["turns"], key=lambda t: t["sentAt"]):
        tools.append(role="user", content=turn["text"], conversationId=turn["conversation"], sender=turn["sender"],
                     timestamp=turn["sentAt"], messageId=turn["id"])


def first(store: Any, query: str, flags: SearchFlags) -> str:
    out = search(store, SearchRequest(query, limit=5, expand_hops=0), guards=Guards(store.test_account), flags=flags,
                 emit_log=False)
    return out.rows[0].node.properties.get("text", "") if out.rows else ""


def test_the_current_fact_ranks_first(store: Any) -> None:
    assert len(SET["current"]) >= 30
    seeded(store)
    text = {t["id"]: t["text"] for t in SET["turns"]}
    hits = {name: sum(first(store, q["question"], flags) == text[q["current"]] for q in SET["current"])
            for name, flags in (("off", SearchFlags(facts=0)), ("on", SearchFlags()))}
    as_of = sum(first(store, q["question"], SearchFlags(facts=ON)) == text[q["expected"]] for q in SET["asOf"])
    print(f"current fact first: {hits['on']} of {len(SET['current'])} (stage off: {hits['off']}); "
          f"as of a date: {as_of} of {len(SET['asOf'])}")
    assert hits["on"] >= 0.9 * len(SET["current"])
    assert as_of >= 0.8 * len(SET["asOf"])


def test_questions() -> None:
    assert question("Where does Maya live now?").predicates == ("livesIn",)
    assert question("Where did Maya live before?") is None
    assert question("Which city will Maya live in after the move?") is None
    assert question("Where did Maya live as of 1 July 2025?").as_of == "2025-07-01"
    assert question("What did you recommend for dinner?") is None
    assert question("Which band did Carlos see live?") is None
    assert question("How much can Tom spend on the works?").predicates == ("price",)
    assert question("In January 2026, which car does Jonas drive now?") is None


@pytest.mark.parametrize("text", [
    "What kind of joint business could Fahim and Akib open based on their hobby?",  # based on: no residence
    "Who does Nebraas live with?",  # who, not where
    "Does Nicolas have enough money to live a comfortable life?",
    "What unpleasant situation happened in the lives of both Kate and Elise?",
    "What might have inspired Elise to create an abstract art work?",
    "Which works of art did Ana like?",
    "What movie did Akib watch with his wife on Sunday?",
    "What are Kevin's favorite sportsmen?",  # a set, not one value
    "Do Kate and Elise have the same favorite art style?",  # a comparison
])
def test_questions_that_name_no_state(text: str) -> None:
    """Words of a state predicate in another sense ask no current fact (found on REALTALK's tuning half)."""
    assert question(text) is None


def test_the_senses_kept() -> None:
    assert question("Where is Ines based currently?").predicates == ("livesIn",)
    assert question("Who is Ben's wife now?").predicates == ("marriedTo",)
    assert question("What is Sam's favourite band currently?").predicates == ("favouriteBand",)
    assert question("Where is Nora working now?").predicates == ("worksAt",)


def _transcript(path: Path, turns: list[tuple[str, str, str]]) -> Path:
    lines = []
    for i, (role, text, at) in enumerate(turns):
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        lines.append({"type": role, "uuid": f"{path.stem}-{i}", "timestamp": at,
                      "message": {"role": role, "content": content,
                                  **({"id": f"msg-{path.stem}-{i}"} if role == "assistant" else {})}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_turn_recorders_transcripts_make_facts_that_answer(make_host: Any, plughost_home: Path,
                                                               tmp_path: Path) -> None:
    from plughost.plugins.channels.turn_recorder import record_turn
    from plughost.plugins.memory.entities.graph import FACT_LABEL
    from plughost.plugins.memory.retrieval.service import run_search
    from tests.conftest import ensure_account

    env = {"PLUGHOST_SESSION_ROLE": "admin", "ACCOUNT_ID": "acct-0001", "PLUGHOST_HOME": str(plughost_home),
           "PLUGHOST_MEMORY_ENTITIES": "1", "PLUGHOST_EMBEDDER": "none", "PLUGHOST_GS_FACTS": str(ON)}
    ensure_account(env)
    host = make_host(**env)
    old = _transcript(tmp_path / "a.jsonl", [
        ("user", "I work at Northwind, mostly on the design system. Work at Northwind is calm.", "2025-03-01T09:00:00Z"),
        ("assistant", "Noted: you work at Northwind.", "2025-03-01T09:00:05Z")])
    new = _transcript(tmp_path / "b.jsonl", [
        ("user", "Quick update: I now work at Blue Harbor Labs.", "2025-09-01T09:00:00Z"),
        ("assistant", "Congratulations on the new job!", "2025-09-01T09:00:05Z")])
    for session, path in (("sess-a", old), ("sess-b", new)):
        stdin = json.dumps({"session_id": session, "transcript_path": str(path)}).encode()
        assert record_turn(stdin, {**env}, host) == 0
    facts = host.store().find(guards=Guards("acct-0001"), labels=[FACT_LABEL], where={"predicate": "worksAt"},
                              limit=10)
    current = {f.properties["objectKey"]: f.properties.get("validTo") for f in facts}
    assert current["blue harbor labs"] is None and current["northwind"] == "2025-09-01T09:00:00Z"
    rows = run_search(host, SearchRequest("Where do I work now?", limit=5, expand_hops=0), env=env).rows
    assert rows[0].node.properties["text"] == "Quick update: I now work at Blue Harbor Labs."
