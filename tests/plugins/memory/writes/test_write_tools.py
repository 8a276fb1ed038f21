"""The memory write tools over a real MCP client and the real SQLite store (docs/memory.md#writes).

Every tool: a happy path and error paths, each asserting the one outcome line.
"""

from __future__ import annotations

import json
import re

import pytest
from memory_support import ACCOUNT, call_tool, outcome_lines, server_log

from plughost.ports.graph import Guards

OK = re.compile(r"^\[mcp:memory\] (?P<tool>[\w-]+) account=(?P<account>\S+) session=(?P<session>\S+) "
                r"labels=(?P<labels>\S+) nameChars=(?P<name>\d+|—) result=ok elementId=(?P<id>\S+) ms=\d+$")
ERR = re.compile(r"^\[mcp:memory\] (?P<tool>[\w-]+) account=(?P<account>\S+) session=(?P<session>\S+) "
                 r"labels=(?P<labels>\S+) nameChars=(?P<name>\d+|—) result=error reason=(?P<reason>[a-z-]+) "
                 r"detail=(?P<detail>\"[^\"]*\"|\S+) ms=\d+$")


def ok_line(home, tool: str) -> re.Match:
    lines = outcome_lines(home, tool)
    assert len(lines) == 1, lines
    match = OK.match(lines[0])
    assert match, lines[0]
    return match


def err_line(home, tool: str, reason: str) -> re.Match:
    lines = outcome_lines(home, tool)
    assert len(lines) == 1, lines
    match = ERR.match(lines[0])
    assert match, lines[0]
    assert match["reason"] == reason
    assert len(match["detail"].strip('"')) <= 120
    return match


def write(host, **args) -> dict:
    is_error, text = call_tool(host, "memory-write", args)
    assert not is_error, text
    return json.loads(text)


def guards() -> Guards:
    return Guards(ACCOUNT)


# ---------------------------------------------------------------- memory-write
def test_memory_write_happy_with_task_provenance(memory_host, plughost_home) -> None:
    host = memory_host(SESSION_NODE_ID="sess-1")
    task = write(host, labels=["Task"], properties={"title": "Import contacts"})
    person = write(host, labels=["Person"], properties={"name": "Ada Lovelace", "email": "ada@example.com"},
                   producedByTaskId=task["elementId"])
    assert person["provenance"] == f"task:{task['elementId']}"
    lines = outcome_lines(plughost_home, "memory-write")
    assert len(lines) == 2
    m = OK.match(lines[1])
    assert m and m["account"] == ACCOUNT and m["session"] == "sess-1" and m["labels"] == "Person"
    assert m["name"] == str(len("Ada Lovelace")) and m["id"] == person["elementId"]
    store = host.store()
    node = store.get(person["elementId"], guards=guards())
    assert node.properties["email"] == "ada@example.com" and node.account_id == ACCOUNT
    inbound = store.expand([person["elementId"]], guards=guards())[person["elementId"]]
    assert [(n.type, n.direction, n.node.id) for n in inbound] == [("PRODUCED", "in", task["elementId"])]
    assert not [line for line in server_log(plughost_home) if "missing-provenance" in line]


def test_memory_write_relationships_both_directions(memory_host) -> None:
    host = memory_host()
    org = write(host, labels=["Organization"], properties={"name": "Acme"})
    event = write(host, labels=["Event"], properties={"name": "Launch"})
    person = write(host, labels=["Person"], properties={"name": "Bob"}, relationships=[
        {"type": "WORKS_FOR", "targetId": org["elementId"]},
        {"type": "ATTENDED_BY", "targetId": event["elementId"], "direction": "in", "properties": {"role": "host"}},
    ])
    around = host.store().expand([person["elementId"]], guards=guards())[person["elementId"]]
    assert sorted((n.type, n.direction) for n in around) == [("ATTENDED_BY", "in"), ("WORKS_FOR", "out")]


def test_missing_provenance_warns_and_writes(memory_host, plughost_home) -> None:
    host = memory_host()
    person = write(host, labels=["Person"], properties={"name": "Eve"})
    assert person["provenance"] == "missing"
    assert "[graph-write] warn reason=missing-provenance labels=Person" in server_log(plughost_home)
    ok_line(plughost_home, "memory-write")


def test_session_conversation_is_the_provenance_fallback(memory_host, plughost_home) -> None:
    host = memory_host()
    conv = write(host, labels=["Conversation"], properties={"sessionId": "s-42", "title": "chat"})
    host2 = memory_host(SESSION_NODE_ID="s-42")
    person = write(host2, labels=["Person"], properties={"name": "Zed"})
    assert person["provenance"] == f"session:{conv['elementId']}"
    inbound = host2.store().expand([person["elementId"]], guards=guards())[person["elementId"]]
    assert [(n.type, n.direction, n.node.id) for n in inbound] == [("PRODUCED", "in", conv["elementId"])]


@pytest.mark.parametrize(("args", "reason", "env"), [
    ({"labels": ["Persn"], "properties": {"name": "x"}}, "schema-unknown-label", {}),
    ({"labels": ["Person"], "properties": {"First_Name": "x"}}, "schema-property-naming", {}),
    ({"labels": ["Person"], "properties": {"name": "x", "accountId": "acct-b"}}, "account-isolation", {}),
    ({"labels": ["Person"], "properties": {"name": "x"}}, "account-isolation", {"ACCOUNT_ID": ""}),
    ({"labels": ["Person"], "properties": {"name": "x"}, "producedByTaskId": "nope"}, "producedby-task-not-found", {}),
    ({"labels": ["Event"], "properties": {"name": "x"}, "relationships": [{"type": "AT", "targetId": "gone"}]},
     "invalid-target-node-id", {}),
    ({"labels": ["Event"], "properties": {"name": "x"}, "relationships": [{"type": "at", "targetId": "gone"}]},
     "invalid-input", {}),
    ({"labels": ["Event"], "properties": {"name": "x", "meta": {"nested": 1}}}, "invalid-input", {}),
    ({"labels": ["Event"], "properties": {"name": "x", "tags": [1, "a"]}}, "invalid-input", {}),
    ({"labels": ["Event"], "properties": {"name": "x", "createdAt": "2020"}}, "invalid-input", {}),
    ({"labels": ["Event"], "properties": {"name": "x\ud800"}}, "invalid-input", {}),
    ({"labels": ["Event"], "properties": {"name": "x", "tags": ["a", "\udfff"]}}, "invalid-input", {}),
    ({"labels": ["Event"], "properties": {"name": "x", "scope": "admin"}}, "account-isolation",
     {"ALLOWED_SCOPES": "public"}),
])
def test_memory_write_errors(memory_host, plughost_home, args, reason, env) -> None:
    host = memory_host(**env)
    is_error, text = call_tool(host, "memory-write", args)
    assert is_error and f"({reason})" in text and "\n" not in text
    err_line(plughost_home, "memory-write", reason)
    assert host.store().count(guards=guards()) == 0 if env.get("ACCOUNT_ID", "x") else True


def test_a_foreign_account_id_is_logged_whole(memory_host, plughost_home) -> None:
    host = memory_host()
    foreign = "acct-b-" + "9" * 40
    is_error, _ = call_tool(host, "memory-write", {"labels": ["Person"], "properties": {"name": "x", "accountId": foreign}})
    assert is_error
    assert any(f"reason=invalid-account-id accountId='{foreign}'" in line for line in server_log(plughost_home))


def test_memory_write_conflicting_element_id(memory_host, plughost_home) -> None:
    host = memory_host()
    write(host, labels=["Event"], properties={"name": "first"}, id="ev-1")
    is_error, text = call_tool(host, "memory-write", {"labels": ["Event"], "properties": {"name": "b"}, "id": "ev-1"})
    assert is_error and "already exists" in text
    assert ERR.match(outcome_lines(plughost_home, "memory-write")[-1])["reason"] == "conflicting-element-id"
    assert host.store().get("ev-1", guards=guards()).properties["name"] == "first"


def test_producing_task_of_another_account_is_rejected(memory_host, plughost_home) -> None:
    other = memory_host(ACCOUNT_ID="acct-b")
    task = write(other, labels=["Task"], properties={"title": "theirs"})
    host = memory_host()
    is_error, _ = call_tool(host, "memory-write", {"labels": ["Person"], "properties": {"name": "x"},
                                                   "producedByTaskId": task["elementId"]})
    assert is_error
    assert ERR.match(outcome_lines(plughost_home, "memory-write")[-1])["reason"] == "producedby-task-not-found"


def test_schema_errors_are_rejected_at_the_boundary(memory_host) -> None:
    host = memory_host()
    is_error, text = call_tool(host, "memory-write", {"labels": ["Person"]})
    assert is_error and text == "memory-write: parameter 'properties' is required"


# ---------------------------------------------------------------- embeddings at write time
def test_vector_labels_are_embedded_at_write_time(memory_host, fake_ollama) -> None:
    fake_ollama.dims = 8
    host = memory_host(PLUGHOST_EMBEDDER="ollama", OLLAMA_URL=fake_ollama.url, EMBED_DIMENSIONS="8")
    person = write(host, labels=["Person"], properties={"name": "Ada", "email": "ada@example.com"})
    org = write(host, labels=["Company"], properties={"name": "NotIndexed"})  # full-text only label
    assert person["embedded"] is True and org["embedded"] is False
    assert host.store().get_embedding(person["elementId"], guards=guards()) is not None
    sent = fake_ollama.requests[0].body["input"]
    assert sent == ["Person\nname: Ada\nemail: ada@example.com"]


def test_unreachable_ollama_stores_without_embedding(memory_host, plughost_home, closed_port_url) -> None:
    host = memory_host(PLUGHOST_EMBEDDER="ollama", OLLAMA_URL=closed_port_url, EMBED_DIMENSIONS="8")
    person = write(host, labels=["Person"], properties={"name": "Ada"})
    assert person["embedded"] is False
    assert host.store().get(person["elementId"], guards=guards()) is not None
    assert host.store().get_embedding(person["elementId"], guards=guards()) is None
    warn = [line for line in server_log(plughost_home) if line.startswith("[graph-write] warn reason=embed-failed")]
    assert len(warn) == 1 and "labels=Person" in warn[0] and "ConnectError" in warn[0]
    ok_line(plughost_home, "memory-write")


# ---------------------------------------------------------------- memory-update
def test_memory_update_happy_reembeds(memory_host, plughost_home, fake_ollama) -> None:
    fake_ollama.dims = 8
    host = memory_host(PLUGHOST_EMBEDDER="ollama", OLLAMA_URL=fake_ollama.url, EMBED_DIMENSIONS="8")
    person = write(host, labels=["Person"], properties={"name": "Ada", "title": "Countess"})
    before = host.store().get_embedding(person["elementId"], guards=guards())
    is_error, text = call_tool(host, "memory-update", {"id": person["elementId"],
                                                       "properties": {"email": "ada@example.com", "title": None}})
    assert not is_error, text
    node = host.store().get(person["elementId"], guards=guards())
    assert node.properties["email"] == "ada@example.com" and "title" not in node.properties
    assert host.store().get_embedding(person["elementId"], guards=guards()) != before
    assert fake_ollama.requests[-1].body["input"] == ["Person\nname: Ada\nemail: ada@example.com"]
    m = ok_line(plughost_home, "memory-update")
    assert m["id"] == person["elementId"] and m["labels"] == "Person" and m["name"] == "3"
    log = (plughost_home / "logs" / "server.log").read_text()
    assert "Ada" not in log and "ada@example.com" not in log  # a name or contact is never logged


@pytest.mark.parametrize(("args", "reason"), [
    ({"id": "missing", "properties": {"name": "x"}}, "invalid-target-node-id"),
    ({"id": "$EXISTING", "properties": {"Bad Key": 1}}, "schema-property-naming"),
    ({"id": "$EXISTING", "addLabels": ["Nope"]}, "schema-unknown-label"),
    ({"id": "$EXISTING"}, "invalid-input"),
])
def test_memory_update_errors(memory_host, plughost_home, args, reason) -> None:
    host = memory_host()
    event = write(host, labels=["Event"], properties={"name": "Launch"})
    args = {k: (event["elementId"] if v == "$EXISTING" else v) for k, v in args.items()}
    is_error, _ = call_tool(host, "memory-update", args)
    assert is_error
    err_line(plughost_home, "memory-update", reason)
    assert host.store().get(event["elementId"], guards=guards()).properties["name"] == "Launch"


# ---------------------------------------------------------------- memory-delete / memory-restore
def test_memory_delete_and_restore_happy(memory_host, plughost_home) -> None:
    host = memory_host()
    event = write(host, labels=["Event"], properties={"name": "Launch"})
    is_error, text = call_tool(host, "memory-delete", {"id": event["elementId"]})
    assert not is_error and json.loads(text)["deleted"] == 1
    assert host.store().get(event["elementId"], guards=guards()) is None
    m = ok_line(plughost_home, "memory-delete")
    assert m["id"] == event["elementId"] and m["labels"] == "Event"
    is_error, text = call_tool(host, "memory-restore", {"id": event["elementId"]})
    assert not is_error and json.loads(text)["restored"] == 1
    assert host.store().get(event["elementId"], guards=guards()) is not None
    ok_line(plughost_home, "memory-restore")


def test_memory_delete_error_unknown_and_foreign_node(memory_host, plughost_home) -> None:
    other = memory_host(ACCOUNT_ID="acct-b")
    theirs = write(other, labels=["Event"], properties={"name": "Theirs"})
    host = memory_host()
    is_error, _ = call_tool(host, "memory-delete", {"id": theirs["elementId"]})
    assert is_error
    err_line(plughost_home, "memory-delete", "invalid-target-node-id")
    assert other.store().get(theirs["elementId"], guards=Guards("acct-b")) is not None


def test_memory_restore_error_unknown(memory_host, plughost_home) -> None:
    host = memory_host()
    is_error, text = call_tool(host, "memory-restore", {"id": "never-was"})
    assert is_error and "never-was" in text
    err_line(plughost_home, "memory-restore", "invalid-target-node-id")


# ---------------------------------------------------------------- memory-ingest
DOC = """# Field guide

Birds of the northern coast, and how to tell them apart.

## Gulls

Herring gulls are large. Common gulls are smaller and have dark eyes.

## Terns

Arctic terns migrate further than any other bird. Code W5-3.12 marks the colony.
"""


def test_memory_ingest_happy_hierarchy_and_stable_ids(memory_host, plughost_home) -> None:
    host = memory_host()
    is_error, text = call_tool(host, "memory-ingest", {"content": DOC, "attachmentId": "att-1"})
    assert not is_error, text
    result = json.loads(text)
    assert result["title"] == "Field guide" and result["sections"] == 3 and result["chunks"] == 3
    doc_id = result["elementId"]
    store = host.store()
    doc = store.get(doc_id, guards=guards())
    assert doc.labels == ("KnowledgeDocument",) and doc.properties["attachmentId"] == "att-1"
    assert doc.properties["summary"] == "Birds of the northern coast, and how to tell them apart."
    sections = store.expand([doc_id], guards=guards())[doc_id]
    assert sorted(n.node.properties["title"] for n in sections if n.type == "HAS_SECTION") == \
        ["Field guide", "Gulls", "Terns"]
    m = ok_line(plughost_home, "memory-ingest")
    assert m["id"] == doc_id and m["labels"] == "KnowledgeDocument" and m["name"] == str(len("Field guide"))
    # same attachment again with one section less: same document id, hierarchy replaced
    shorter = DOC.split("## Terns")[0]
    is_error, text = call_tool(host, "memory-ingest", {"content": shorter, "attachmentId": "att-1"})
    assert not is_error and json.loads(text)["elementId"] == doc_id
    assert store.count(guards=guards(), labels=["Section"]) == 2
    assert store.count(guards=guards(), labels=["KnowledgeDocument"]) == 1
    # soft delete cascades to sections and chunks; restore brings them back
    call_tool(host, "memory-delete", {"id": doc_id})
    assert store.count(guards=guards()) == 0
    call_tool(host, "memory-restore", {"id": doc_id})
    assert store.count(guards=guards(), labels=["Chunk"]) == 2


def test_memory_ingest_same_text_gives_same_ids(memory_host) -> None:
    a = json.loads(call_tool(memory_host(), "memory-ingest", {"content": DOC})[1])
    b = json.loads(call_tool(memory_host(), "memory-ingest", {"content": DOC})[1])
    assert a["elementId"] == b["elementId"] and a["attachmentId"] == b["attachmentId"]


def test_memory_ingest_embeds_summary_sections_and_chunks(memory_host, fake_ollama) -> None:
    fake_ollama.dims = 8
    host = memory_host(PLUGHOST_EMBEDDER="ollama", OLLAMA_URL=fake_ollama.url, EMBED_DIMENSIONS="8",
                       EMBED_SUBBATCH_COOLDOWN_MS="0")
    result = json.loads(call_tool(host, "memory-ingest", {"content": DOC})[1])
    sent = [t for r in fake_ollama.requests for t in r.body["input"]]
    assert sent[0] == "Birds of the northern coast, and how to tell them apart."  # the summary probe first
    assert fake_ollama.sizes()[0] == 1 and max(fake_ollama.sizes()) <= 4
    assert result["embedded"] == 7  # document + 3 sections + 3 chunks (identical texts embedded once)
    assert len(sent) == 6  # the intro section body equals the summary; chunks lead with their section path
    assert "Field guide › Gulls\nHerring gulls are large. Common gulls are smaller and have dark eyes." in sent
    assert host.store().missing_embeddings(account_id=ACCOUNT) == []


@pytest.mark.parametrize(("args", "reason"), [
    ({"content": "   \n  "}, "invalid-input"),
    ({"content": "text", "scope": "admin"}, "account-isolation"),
])
def test_memory_ingest_errors(memory_host, plughost_home, args, reason) -> None:
    host = memory_host(ALLOWED_SCOPES="public")
    is_error, _ = call_tool(host, "memory-ingest", args)
    assert is_error
    err_line(plughost_home, "memory-ingest", reason)
    assert host.store().count(guards=Guards(ACCOUNT)) == 0


# ---------------------------------------------------------------- memory-reindex
def test_memory_reindex_happy(memory_host, plughost_home, fake_ollama) -> None:
    fake_ollama.dims = 8
    plain = memory_host(PLUGHOST_EMBEDDER="none", EMBED_DIMENSIONS="8")
    ids = [write(plain, labels=["Event"], properties={"name": f"e{i}"})["elementId"] for i in range(3)]
    assert len(plain.store().missing_embeddings(account_id=ACCOUNT)) == 3
    host = memory_host(PLUGHOST_EMBEDDER="ollama", OLLAMA_URL=fake_ollama.url, EMBED_DIMENSIONS="8",
                       EMBED_SUBBATCH_COOLDOWN_MS="0")
    is_error, text = call_tool(host, "memory-reindex", {})
    assert not is_error and json.loads(text)["processed"] == 3
    assert host.store().missing_embeddings(account_id=ACCOUNT) == []
    assert sum("[reindex] op=embedded" in line for line in server_log(plughost_home)) == 3
    assert any(line.startswith("[reindex] op=done processed=3 skipped=0") for line in server_log(plughost_home))
    ok_line(plughost_home, "memory-reindex")
    assert set(ids) == {n.id for n in host.store().find(guards=guards(), labels=["Event"])}


def test_memory_reindex_error_without_embedder(memory_host, plughost_home) -> None:
    host = memory_host(PLUGHOST_EMBEDDER="none")
    is_error, text = call_tool(host, "memory-reindex", {})
    assert is_error and "no embedder" in text
    err_line(plughost_home, "memory-reindex", "gate-blocked")


def test_tools_list_serves_the_declared_write_tools(memory_host) -> None:
    import anyio
    from mcp import Client

    from plughost.mcp.server import build_server

    async def names() -> list[str]:
        async with Client(build_server(memory_host(), "memory")) as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert set(anyio.run(names)) >= {"memory-write", "memory-update", "memory-delete", "memory-restore",
                                     "memory-ingest", "memory-reindex"}


def _sample(schema: dict) -> object:
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: _sample(v) for k, v in (schema.get("properties") or {}).items() if k in schema.get("required", [])}
    return {"array": ["Person"], "integer": 1, "number": 1, "boolean": True}.get(kind, "x")


def test_every_memory_tool_names_the_fix_when_the_install_has_no_account(memory_host, plughost_home) -> None:
    """A Claude-CLI-only install (no account): each tool that needs the account answers what is missing
    and the one command that fixes it, the way memory-search does (plughost.runtime.install_record)."""
    from plughost.runtime.install_record import account_fix
    from plughost.runtime.tooltable import served_tools

    host = memory_host(ACCOUNT_ID="")
    fix = account_fix(host.env)
    answered = {}
    for tool in sorted(served_tools(host, "memory"), key=lambda t: t.name):
        name = tool.name
        is_error, text = call_tool(host, name, _sample(tool.schema))
        if "ACCOUNT_ID" in text:
            answered[name] = text
            assert is_error and text.endswith(fix) and "\n" not in text, (name, text)
    names = {tool.name for tool in served_tools(host, "memory")}
    assert {"memory-write", "memory-search", "memory-reindex", "memory-report-write", "profile-update"} <= names
    assert names - set(answered) <= {"work-time-adjust", "workflow-execute"}, sorted(names - set(answered))  # their samples are refused first
    err_line(plughost_home, "memory-write", "account-isolation")  # the outcome line keeps its reason
