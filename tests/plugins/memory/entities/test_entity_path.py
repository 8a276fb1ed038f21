"""The entity path in memory-search: a third ranked list, off in the baseline, fused with the others."""

from __future__ import annotations

from typing import Any

from plughost import Principal
from plughost.plugins.memory import entities
from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
from plughost.plugins.memory.retrieval.flags import SHIPPED
from plughost.ports.graph import Guards

FILLER = ["What did you recommend for dinner?", "Any tips for the weekend?", "What did you say about the film?",
          "Did you recommend that bakery?", "I said the weekend was fine.", "What did Omar say?"]


def seed(store: Any) -> None:
    account = store.test_account
    rows = [{"id": f"f{i}", "labels": ["Message"],
             "properties": {"role": "user", "sender": "Omar" if i % 2 else "Lena", "text": text,
                            "conversationId": "c1", "sentAt": f"2025-01-01T10:{i:02d}:00Z", "scope": "admin"}}
            for i, text in enumerate(FILLER * 3)]
    rows.append({"id": "answer", "labels": ["Message"],
                 "properties": {"role": "user", "sender": "Priya", "text": "Go to Casa Mar, order the paella.",
                                "conversationId": "c2", "sentAt": "2025-02-01T10:00:00Z", "scope": "admin"}})
    store.upsert_many(rows, guards=Principal.system(account).guards)
    entities.write(store, [(r["id"], r["properties"]) for r in rows], guards=Guards(account))


def ids(store: Any, flags: SearchFlags, query: str = "What did Priya recommend?") -> list[str]:
    out = search(store, SearchRequest(query, limit=5, expand_hops=0), guards=Guards(store.test_account), flags=flags,
                 emit_log=False)
    return [r.id for r in out.rows]


def test_the_entity_path_finds_a_turn_sharing_only_a_name(store: Any) -> None:
    seed(store)
    assert "answer" not in ids(store, SearchFlags.baseline())  # BM25 alone: every filler shares words, it none
    assert "answer" not in ids(store, SearchFlags())
    assert "answer" in ids(store, SearchFlags(entities=True))  # Priya spoke it: the entity path reaches it
    assert "answer" in ids(store, SearchFlags.baseline(entities=True))
    assert ids(store, SearchFlags(entities=True, entity_weight=1.0))[0] == "answer"
    assert ids(store, SearchFlags(entities=True, rrf=True))[:5].count("answer") == 1
    out = search(store, SearchRequest("What did Priya recommend?", limit=5, expand_hops=0),
                 guards=Guards(store.test_account), flags=SearchFlags(entities=True), emit_log=False)
    assert out.stats["entity"] == 1 and out.stats["entity_ms"] > 0 and out.stats["entity_keys"] == 1
    answer = next(r for r in out.as_json()["results"] if r["id"] == "answer")
    assert answer["entity"] == 1.0 and answer["bm25"] == 0.0


def test_the_baseline_and_the_defaults_leave_the_path_off(store: Any) -> None:
    assert SearchFlags.baseline().entities is False and SearchFlags().entities is False
    assert "entities" not in SHIPPED
    seed(store)
    out = search(store, SearchRequest("Priya Casa Mar", limit=10, expand_hops=1), guards=Guards(store.test_account),
                 flags=SearchFlags(), emit_log=False)
    assert out.stats["entity"] == 0 and out.stats["entity_ms"] == 0.0
    assert not any({"Entity", "Fact"} & set(r.node.labels) for r in out.rows)  # an index, never a result


def test_a_question_naming_nothing_costs_no_store_call(store: Any) -> None:
    seed(store)
    out = search(store, SearchRequest("what did you recommend?", limit=5, expand_hops=0),
                 guards=Guards(store.test_account), flags=SearchFlags(entities=True), emit_log=False)
    assert out.stats["entity_keys"] == 0 and out.stats["entity"] == 0
