"""Derived nodes follow their sources: re-scoping, re-tagging, editing or deleting a turn withdraws
its entities and facts (and re-derives them under its new visibility); reindex --entities sweeps."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from plughost import Principal
from plughost.plugins.graph.tools import graph_tools
from plughost.plugins.memory import entities
from plughost.plugins.memory.bulk_import import import_jsonl
from plughost.plugins.memory.entities.graph import (
    ENTITY_LABEL,
    FACT_LABEL,
    STATES,
    backfill,
    entity_id,
    sweep,
)
from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
from plughost.plugins.memory.writes.outcome import Call
from plughost.plugins.memory.writes.writer import MemoryWriter
from plughost.ports.graph import Guards
from plughost.ports.principal import resolve
from plughost.util.errors import UserError


def turn(i: int, text: str, speaker: str, at: str, scope: str = "public") -> dict[str, Any]:
    return {"id": f"m{i}", "labels": ["Message"],
            "properties": {"role": "user", "sender": speaker, "text": text, "conversationId": "c1", "sentAt": at,
                           "scope": scope}}


TURNS = [turn(1, "I live in Porto.", "Priya", "2025-03-01T10:00:00Z"),
         turn(2, "I adopted a puppy, booking code ORD-2025-0042.", "Ben", "2025-03-02T10:00:00Z"),
         turn(3, "We met in Lisbon.", "Ben", "2025-03-03T10:00:00Z")]


def imported(store: Any, tmp_path: Path, monkeypatch: Any, rows: list[dict[str, Any]] = TURNS) -> MemoryWriter:
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("PLUGHOST_MEMORY_ENTITIES", "1")
    import_jsonl(store, None, path, guards=Principal.owner(store.test_account).guards, progress=False)
    return MemoryWriter(store, None, {"ACCOUNT_ID": store.test_account, "PLUGHOST_MEMORY_ENTITIES": "1"})


def facts(store: Any, guards: Guards, **where: Any) -> list[Any]:
    return store.find(guards=guards, labels=[FACT_LABEL], where=where)


def tools(store: Any, env: dict[str, str]) -> dict[str, Any]:
    host = SimpleNamespace(env=env, principal=resolve(env), store=lambda: store)
    return {t.name: t.handler for t in graph_tools(host)}  # type: ignore[arg-type]


def test_a_rescoped_turn_takes_its_fact_out_of_public_view(store: Any, tmp_path: Path, monkeypatch: Any) -> None:
    account = store.test_account
    writer = imported(store, tmp_path, monkeypatch)
    public, admin = Guards(account, ["public"]), Guards(account)
    public_env = {"ACCOUNT_ID": account, "ALLOWED_SCOPES": "public"}
    priya = entity_id(account, "person", "priya", "public", None)
    owner_env = {"ACCOUNT_ID": account}  # a narrowed process is never shown an Entity (graph-neighbors refuses it)
    with pytest.raises(UserError):
        tools(store, public_env)["graph-neighbors"](node_id=priya)
    before = json.loads(tools(store, owner_env)["graph-neighbors"](node_id=priya))
    assert any(n["node"]["properties"].get("sourceId") == "m1" for n in (before[0] if isinstance(before, list)
                                                                          else before)["neighbors"])
    assert [f.properties["objectKey"] for f in facts(store, public, predicate="livesIn")] == ["porto"]

    writer.update(Call("memory-update", writer.env), id="m1", properties={"scope": "admin"})

    assert facts(store, public, predicate="livesIn") == [] and facts(store, public, sourceId="m1") == []
    with pytest.raises(UserError):  # the public Priya entity had m1 alone: gone, for the owner too
        tools(store, owner_env)["graph-neighbors"](node_id=priya)
    schema = json.loads(tools(store, public_env)["graph-schema"]())
    schema = schema[0] if isinstance(schema, list) else schema
    assert FACT_LABEL not in schema["labels"] and "Message" not in schema["labels"]  # a narrowed view: no counts
    assert "MENTIONS" not in schema["relationshipTypes"]
    owned_schema = json.loads(tools(store, owner_env)["graph-schema"]())
    owned_schema = owned_schema[0] if isinstance(owned_schema, list) else owned_schema
    assert owned_schema["labels"].get(FACT_LABEL, 0) == 2  # Ben's puppy, public, and Priya's re-derived at admin
    out = search(store, SearchRequest("Where does Priya live? Porto", limit=10, expand_hops=1), guards=public,
                 flags=SearchFlags(entities=True), emit_log=False)
    assert not any(r.id == "m1" or {ENTITY_LABEL, FACT_LABEL} & set(r.node.labels) for r in out.rows)
    # the owner sees it again, derived at the turn's new scope
    owned = facts(store, admin, predicate="livesIn")
    assert [(f.properties["scope"], f.properties["sourceId"]) for f in owned] == [("admin", "m1")]
    assert [n.id for n in store.linked([owned[0].id], STATES, guards=admin)[owned[0].id]] == ["m1"]


def test_a_deleted_turn_takes_its_fact_and_orphans_along(store: Any, tmp_path: Path, monkeypatch: Any) -> None:
    account = store.test_account
    writer = imported(store, tmp_path, monkeypatch)
    public = Guards(account, ["public"])
    code = entity_id(account, "code", "ord-2025-0042", "public", None)
    ben = entity_id(account, "person", "ben", "public", None)
    assert facts(store, public, sourceId="m2") and store.get(code, guards=public) is not None

    writer.delete(Call("memory-delete", writer.env), id="m2")

    assert facts(store, Guards(account), sourceId="m2") == [] and facts(store, Guards(account), predicate="adopted") == []
    assert store.get(code, guards=Guards(account), include_deleted=True) is None  # hard-deleted: derived copies
    assert store.get(ben, guards=public) is not None  # m3 still mentions Ben
    assert store.get("m1", guards=public) is not None and facts(store, public, sourceId="m1")
    writer.restore(Call("memory-restore", writer.env), id="m2")
    assert facts(store, public, sourceId="m2") and store.get(code, guards=public) is not None


def test_an_edit_rederives_and_a_withdrawn_fact_reopens_the_one_it_closed(store: Any, tmp_path: Path,
                                                                          monkeypatch: Any) -> None:
    account = store.test_account
    writer = imported(store, tmp_path, monkeypatch,
                      TURNS[:1] + [turn(4, "I moved to Braga.", "Priya", "2025-06-01T10:00:00Z")])
    g = Guards(account)
    lives = {f.properties["objectKey"]: f for f in facts(store, g, predicate="livesIn")}
    assert lives["porto"].properties["supersededBy"] == lives["braga"].id
    writer.update(Call("memory-update", writer.env), id="m4", properties={"text": "I moved to Faro."})
    lives = {f.properties["objectKey"]: f for f in facts(store, g, predicate="livesIn")}
    assert set(lives) == {"porto", "faro"} and lives["porto"].properties["supersededBy"] == lives["faro"].id
    assert lives["porto"].properties["validTo"] == "2025-06-01T10:00:00Z"
    writer.delete(Call("memory-delete", writer.env), id="m4")
    (porto,) = facts(store, g, predicate="livesIn")
    assert porto.properties.get("validTo") is None and porto.properties.get("supersededBy") is None
    # an update that changes nothing the extraction reads leaves the derived nodes alone
    writer.update(Call("memory-update", writer.env), id="m1", properties={"title": "home"})
    assert [f.id for f in facts(store, g, predicate="livesIn")] == [porto.id]


def test_a_turn_appended_again_with_new_text_withdraws_the_old_facts(store: Any) -> None:
    from plughost.plugins.memory.conversations.service import Conversations

    account = store.test_account
    convs = Conversations(store, None, {"ACCOUNT_ID": account, "PLUGHOST_MEMORY_ENTITIES": "1"})
    args = {"role": "user", "conversationId": "conv-x", "sender": "Aiko", "timestamp": "2025-05-02T10:00:00Z",
            "messageId": "turn-1"}
    convs.append(content="I live in Oslo.", **args)
    convs.append(content="I live in Bergen.", **args)
    assert [f.properties["objectKey"] for f in facts(store, Guards(account), predicate="livesIn")] == ["bergen"]
    assert store.find(guards=Guards(account), labels=[ENTITY_LABEL], where={"entityKey": "oslo"}) == []


def test_reindex_entities_sweeps_what_earlier_changes_left(store: Any, tmp_path: Path, monkeypatch: Any) -> None:
    account = store.test_account
    imported(store, tmp_path, monkeypatch)
    g, public = Guards(account), Guards(account, ["public"])
    # changes that bypassed the write tools (an older build): the derived nodes stayed behind
    store.upsert_many([{"id": "m1", "labels": ["Message"], "properties": {"scope": "admin"}}],
                      guards=Principal.system(account).guards)
    store.soft_delete("m2", guards=g)
    assert facts(store, public, sourceId="m1") and facts(store, public, sourceId="m2")
    swept = sweep(store, account)
    assert swept["facts_removed"] == 2 and swept["entities_removed"] >= 3
    assert facts(store, public, sourceId="m1") == [] and facts(store, g, sourceId="m2") == []
    assert store.get(entity_id(account, "person", "ben", "public", None), guards=public) is not None
    backfill(store, account)
    assert [f.properties["scope"] for f in facts(store, g, sourceId="m1")] == ["admin"]
    assert facts(store, g, sourceId="m2") == []
    again = sweep(store, account)
    assert again["facts_removed"] == 0 and again["entities_removed"] == 0
    assert entities.withdraw(store, ["m-unknown"], guards=g)["facts_removed"] == 0


def test_a_turn_made_private_or_deleted_leaves_the_next_turns_indexed_form(store: Any, tmp_path: Path,
                                                                           monkeypatch: Any) -> None:
    """A later turn's ``searchContext`` holds the turns before it: a turn re-scoped to admin, or
    deleted, leaves it (rebuilt at once), a restore brings it back; graph-neighbors never shows it."""
    account = store.test_account
    monkeypatch.setenv("PLUGHOST_MESSAGE_CONTEXT_TURNS", "1")
    rows = [{"id": f"s{i}", "labels": ["Message"], "properties": {
        "text": text, "sender": "Ana", "conversationId": "cv", "scope": "public", "sentAt": f"2025-03-0{i}T10:00:00Z"}}
        for i, text in ((1, "the vault code is XQZ-7781-SECRET"), (2, "ok noted"), (3, "bye"))]
    rows.append({"id": "cv", "labels": ["Conversation"], "properties": {"scope": "public"},
                 "edges": [{"type": "HAS_MESSAGE", "to": f"s{i}"} for i in (1, 2, 3)]})
    writer = imported(store, tmp_path, monkeypatch, rows)

    def context() -> str:
        node = store.get("s2", guards=Guards(account))
        return str(node.properties.get("searchContext", ""))

    assert "XQZ-7781-SECRET" in context()
    writer.update(Call("memory-update", writer.env), id="s1", properties={"scope": "admin"})
    assert "XQZ" not in context()
    out = search(store, SearchRequest("XQZ-7781-SECRET", limit=5, expand_hops=0), guards=Guards(account, ["public"]),
                 emit_log=False)
    assert not out.rows
    writer.update(Call("memory-update", writer.env), id="s1", properties={"scope": "public"})
    assert "XQZ-7781-SECRET" in context()
    writer.delete(Call("memory-delete", writer.env), id="s1")
    assert "XQZ" not in context()
    writer.restore(Call("memory-restore", writer.env), id="s1")
    assert "XQZ-7781-SECRET" in context()
    owner = json.loads(tools(store, {"ACCOUNT_ID": account})["graph-neighbors"](node_id="cv"))
    assert all("searchContext" not in n["node"]["properties"] for n in owner[0]["neighbors"])
