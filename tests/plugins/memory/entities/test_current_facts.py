"""Facts that change over time, used when answering (docs/retrieval.md#current-facts): the supersession
set (tests/plugins/memory/data/supersessions.json) written through conversation-append with
PLUGHOST_MEMORY_ENTITIES=1, asked through memory-search's pipeline with the shipped flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plughost.plugins.memory.conversations import Conversations
from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
from plughost.plugins.memory.retrieval.current import question
from plughost.ports.graph import Guards

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
            for name, flags in (("off", SearchFlags(facts=0.0)), ("defaults", SearchFlags()))}
    as_of = sum(first(store, q["question"], SearchFlags()) == text[q["expected"]] for q in SET["asOf"])
    print(f"current fact first: {hits['defaults']} of {len(SET['current'])} (stage off: {hits['off']}); "
          f"as of a date: {as_of} of {len(SET['asOf'])}")
    assert hits["defaults"] >= 0.9 * len(SET["current"])
    assert as_of >= 0.8 * len(SET["asOf"])


def test_questions() -> None:
    assert question("Where does Maya live now?").predicates == ("livesIn",)
    assert question("Where did Maya live before?") is None
    assert question("Where did Maya live as of 1 July 2025?").as_of == "2025-07-01"
    assert question("What did you recommend for dinner?") is None
