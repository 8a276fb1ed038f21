"""The entity graph on both stores: its shape, the supersede rule, and the guards confining it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plughost import Principal
from plughost.plugins.memory import entities
from plughost.plugins.memory.bulk_import import import_jsonl
from plughost.plugins.memory.conversations.service import Conversations
from plughost.plugins.memory.entities.graph import ENTITY_LABEL, FACT_LABEL, MENTIONS, entity_id
from plughost.plugins.memory.retrieval.entities import entity_list
from plughost.ports.graph import Guards


def message(i: int, text: str, speaker: str = "Maya", at: str = "2025-03-12T10:00:00Z", **props: Any):
    return {"id": f"m{i}", "labels": ["Message"],
            "properties": {"role": "user", "sender": speaker, "text": text, "conversationId": "c1", "sentAt": at,
                           "scope": "admin", **props}}


def write(store: Any, rows: list[dict[str, Any]], guards: Guards | None = None) -> dict[str, int]:
    account = store.test_account
    store.upsert_many(rows, guards=Principal.system(account).guards)
    return entities.write(store, [(r["id"], r["properties"]) for r in rows], guards=guards or Guards(account))


def entity(store: Any, key: str, guards: Guards | None = None):
    found = store.find(guards=guards or Guards(store.test_account), labels=[ENTITY_LABEL], where={"entityKey": key})
    return found


def facts(store: Any, predicate: str) -> dict[str, dict[str, Any]]:
    nodes = store.find(guards=Guards(store.test_account), labels=[FACT_LABEL], where={"predicate": predicate})
    return {n.properties["objectKey"]: n.properties | {"id": n.id} for n in nodes}


def test_the_graph_shape(store: Any) -> None:
    counts = write(store, [message(1, "You're back from Lisbon! How was it, Tom?", speaker="Priya"),
                           message(2, "Wonderful. We stayed 4 nights; order ORD-2025-0042 is the hotel.", speaker="Tom"),
                           message(3, "I adopted a puppy yesterday, we named him Biscuit.", speaker="Tom")])
    assert counts["entities"] >= 6 and counts["facts"] == 2
    g = Guards(store.test_account)
    lisbon = entity(store, "lisbon")
    assert [(n.properties["kind"], n.properties["entityName"], n.properties["scope"]) for n in lisbon] == [
        ("place", "Lisbon", "admin")]
    assert lisbon[0].id == entity_id(store.test_account, "place", "lisbon", "admin", None)
    tom = entity(store, "tom")  # the speaker of two turns and a name in a third: one node per kind
    assert sorted(n.properties["kind"] for n in tom) == ["name", "person"]
    person = next(n for n in tom if n.properties["kind"] == "person")
    assert sorted(n.id for n in store.linked([person.id], MENTIONS, guards=g)[person.id]) == ["m2", "m3"]
    assert [n.id for n in store.linked([lisbon[0].id], MENTIONS, guards=g)[lisbon[0].id]] == ["m1"]
    assert entity(store, "ord-2025-0042")[0].properties["kind"] == "code"
    assert entity(store, "2025-03-11")[0].properties["kind"] == "date"  # "yesterday", from the turn's time
    assert entity(store, "4 night")[0].properties["kind"] == "number"
    adopted = facts(store, "adopted")["puppy"]
    assert adopted["subjectName"] == "Tom" and adopted["validFrom"] == "2025-03-12T10:00:00Z"
    assert "validTo" not in adopted or adopted["validTo"] is None
    related = store.expand([adopted["id"]], guards=g)[adopted["id"]]
    assert {(nb.type, nb.direction, nb.node.id) for nb in related} == {
        ("STATES", "in", "m3"), ("ABOUT", "out", person.id)}
    again = write(store, [message(1, "You're back from Lisbon! How was it, Tom?", speaker="Priya")])
    assert again["entities"] >= 1 and len(entity(store, "lisbon")) == 1  # a repeat merges


def test_a_superseded_fact_is_closed_not_deleted(store: Any) -> None:
    write(store, [message(2, "We're moving to Kyoto next spring.", at="2025-06-01T09:00:00Z")])
    write(store, [message(1, "I live in Oslo.", at="2025-01-01T09:00:00Z")])  # older, written later
    write(store, [message(3, "I adopted a cat.", at="2025-07-01T09:00:00Z"),
                  message(4, "I adopted a dog.", at="2025-08-01T09:00:00Z")])
    lives = facts(store, "livesIn")
    assert set(lives) == {"oslo", "kyoto"}
    assert lives["oslo"]["validTo"] == "2025-06-01T09:00:00Z" and lives["oslo"]["supersededBy"] == lives["kyoto"]["id"]
    assert lives["kyoto"].get("validTo") is None
    assert all(f.get("validTo") is None for f in facts(store, "adopted").values())  # adopted is many-valued
    write(store, [message(5, "I live in Oslo again, finally.", at="2025-09-01T09:00:00Z")])
    lives = facts(store, "livesIn")  # the same fact said again: one node, its first validFrom
    assert lives["oslo"]["validFrom"] == "2025-01-01T09:00:00Z" and len(lives) == 2


def test_guards_confine_entities_like_their_messages(store: Any, tmp_path: Path) -> None:
    account = store.test_account
    write(store, [message(1, "The Zanzibar trip was admin only.", speaker="Priya"),
                  message(2, "We loved Zanzibar, said the public.", speaker="Priya", scope="public"),
                  message(3, "Sales loved Zanzibar.", speaker="Priya", scope="public", agents=["sales"])])
    admin = Guards(account)
    assert len(entity(store, "zanzibar", admin)) == 3  # one per scope and agents: never shared across them
    public = Guards(account, ["public"])
    support = Guards(account, ["public"], "support")
    sales = Guards(account, ["public"], "sales")
    other = Guards(account + "-other")
    assert {n.properties["scope"] for n in entity(store, "zanzibar", public)} == {"public"}
    assert [n.properties.get("agents") for n in entity(store, "zanzibar", sales)] == [["sales"]]
    assert entity(store, "zanzibar", support) == [] and entity(store, "zanzibar", other) == []
    admin_only = entity_id(account, "name", "zanzibar", "admin", None)
    assert store.linked([admin_only], MENTIONS, guards=public) == {admin_only: []}  # an unreadable origin
    assert store.get(admin_only, guards=public) is None and store.expand([admin_only], guards=public)[admin_only] == []

    def reached(g: Guards) -> set[str]:
        ranked, _ = entity_list(store, "What about Zanzibar?", g, 50)
        return {h.node.id for h in ranked.hits} if ranked else set()

    assert reached(admin) == {"m1", "m2", "m3"}
    assert reached(public) == {"m2", "m3"} and reached(sales) == {"m3"}
    assert reached(support) == set() and reached(other) == set()
    # a narrowed process's memory-search never shows an Entity or Fact (they link other conversations)
    visible = Conversations(store, None, {"ACCOUNT_ID": account, "ALLOWED_SCOPES": "public"}).visible()
    assert visible is not None and not any(visible(n) for n in entity(store, "zanzibar", public))


def test_memory_import_and_conversation_append_write_entities_behind_the_flag(store: Any, tmp_path: Path,
                                                                              monkeypatch: Any) -> None:
    account = store.test_account
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(message(i, f"Tom flew to Lisbon on trip {i}.", speaker="Priya")) + "\n"
                            for i in range(3)))
    monkeypatch.setenv("PLUGHOST_MEMORY_ENTITIES", "0")
    import_jsonl(store, None, path, guards=Principal.owner(account).guards, progress=False)
    assert entity(store, "lisbon") == []
    monkeypatch.setenv("PLUGHOST_MEMORY_ENTITIES", "1")
    import_jsonl(store, None, path, guards=Principal.owner(account).guards, progress=False)
    assert len(store.linked([entity(store, "lisbon")[0].id], MENTIONS, guards=Guards(account))[
        entity(store, "lisbon")[0].id]) == 3
    env = {"ACCOUNT_ID": account, "PLUGHOST_MEMORY_ENTITIES": "1"}
    out = Conversations(store, None, env).append(role="user", content="I moved to Valparaiso in May.",
                                                 conversationId="conv-x", sender="Aiko",
                                                 timestamp="2025-05-02T10:00:00Z")
    found = entity(store, "valparaiso")
    assert found and store.linked([found[0].id], MENTIONS, guards=Guards(account))[found[0].id][0].id == out["messageId"]
    assert facts(store, "livesIn")["valparaiso"]["subjectName"] == "Aiko"


def test_the_backfill_writes_what_the_flag_would_have(store: Any) -> None:
    from plughost.plugins.memory.entities.graph import backfill

    account = store.test_account
    store.upsert_many([message(2, "We're moving to Kyoto.", at="2025-06-01T09:00:00Z"),
                       message(1, "I live in Oslo.", at="2025-01-01T09:00:00Z")], guards=Principal.system(account).guards)
    first = backfill(store, account)
    assert first["nodes"] == 2 and first["closed"] == 1
    assert facts(store, "livesIn")["oslo"]["validTo"] == "2025-06-01T09:00:00Z"
    again = backfill(store, account)
    assert again["entities"] == first["entities"] and len(entity(store, "kyoto")) == 1


def test_notes_and_ingested_chunks_get_entities_behind_the_flag(store: Any, tmp_path: Path, monkeypatch: Any) -> None:
    from plughost.plugins.memory.writes.outcome import Call
    from plughost.plugins.memory.writes.writer import MemoryWriter

    account = store.test_account
    env = {"ACCOUNT_ID": account, "PLUGHOST_MEMORY_ENTITIES": "1"}
    writes = MemoryWriter(store, None, env)
    note = writes.write(Call("memory-write", env), labels=["Concept"],
                        properties={"name": "Travel", "body": "Maya flew to Reykjavik for the ORD-77 launch."})
    doc = writes.ingest(Call("memory-ingest", env), content="# Trips\n\nThe team met in Reykjavik in June 2024.",
                        title="Trips")
    g = Guards(account)
    found = entity(store, "reykjavik")
    assert found
    sources = {n.id for e in found for n in store.linked([e.id], MENTIONS, guards=g)[e.id]}
    assert note["elementId"] in sources and any(s != note["elementId"] for s in sources)
    assert doc["chunks"] >= 1 and entity(store, "ord-77") and entity(store, "2024-06")
    ranked, _ = entity_list(store, "Who went to Reykjavik?", g, 10)
    assert ranked is not None and note["elementId"] in {h.node.id for h in ranked.hits}
