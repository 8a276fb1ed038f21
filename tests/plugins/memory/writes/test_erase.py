"""`plughost erase` / `plughost export` on both backends (docs/cli.md#erase-and-export): a visitor's
email left in a webchat conversation, a follow-up lead, a tool-call audit row, a briefing and a
soft-deleted note; export gives it back, a dry run removes nothing, erase leaves no trace in
memory-search, conversation-search, the raw SQLite file and its WAL, the full-text vocabulary or
Neo4j, and the receipt counts what was seeded. A narrowed process is refused."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from plughost import Principal
from plughost.ports.graph import CHANNEL_MESSAGE_LABELS, HAS_MESSAGE, Guards, conversation_node_id
from tests.backends import BACKENDS, neo4j_env, wipe
from tests.conftest import run_cli
from tests.convids import keyed_id

ACCOUNT = "erase-acct"
EMAIL = "Zyxq.Visitor@EraseTest.example"
VISITOR = "wc-visitor-erase-1"
OTHER = "wc-visitor-keep-2"
TERMS = ("zyxq", "erasetest")  # the email's tokens no other seeded text has
DIMS = 384


def _store(backend: str, home: Path) -> Any:
    if backend == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        return Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT})
    from plughost.plugins.graph.sqlite_store import SqliteStore

    return SqliteStore(home / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT})


def _env(backend: str, **extra: str) -> dict[str, str]:
    store = {**neo4j_env(), "PLUGHOST_STORE": "neo4j"} if backend == "neo4j" else {"PLUGHOST_STORE": "sqlite"}
    return {**store, "ACCOUNT_ID": ACCOUNT, **extra}


def _vector(seed: int) -> list[float]:
    raw = [math.sin(seed * 7.0 + i) for i in range(DIMS)]
    norm = math.sqrt(sum(x * x for x in raw))
    return [x / norm for x in raw]


def _conversation(store: Any, sender: str, texts: list[tuple[str, str]]) -> tuple[str, list[str]]:
    conv = conversation_node_id(ACCOUNT, "webchat", sender)
    rows: list[dict[str, Any]] = []
    for i, (role, text) in enumerate(texts):
        rows.append({"id": f"msg-{conv}-{i}", "labels": ["Message", CHANNEL_MESSAGE_LABELS["webchat"]],
                     "properties": {"role": role, "channel": "webchat", "sender": sender, "text": text,
                                    "conversationId": conv, "sentAt": f"2026-01-01T00:00:{i:02d}Z",
                                    "scope": "public", "sessionId": f"s-{sender}"}})
    rows.append({"id": conv, "labels": ["Conversation"],
                 "properties": {"channel": "webchat", "sender": sender, "sessionId": f"s-{sender}",
                                "scope": "public", "title": "Webchat visitor"},
                 "edges": [{"type": HAS_MESSAGE, "to": r["id"]} for r in rows]})
    store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
    return conv, [r["id"] for r in rows[:-1]]


def _seed(store: Any) -> dict[str, Any]:
    conv, msgs = _conversation(store, VISITOR, [
        ("user", "Do you bake gluten free sourdough loaves?"),
        ("assistant", "Sorry, I don't know the answer to that. I can pass your question on to the team."),
        ("user", f"Sure, write to me at {EMAIL} please"),
        ("assistant", f"Thank you. The team will get back to you at {EMAIL.lower()}."),
    ])
    keep_conv, keep_msgs = _conversation(store, OTHER, [("user", "What time do you open on Sundays?")])
    lead = "task-erase-lead"
    inputs = json.dumps({"question": "Do you bake gluten free sourdough loaves?", "contact": EMAIL,
                         "channel": "webchat", "sender": VISITOR})
    store.upsert_many([
        {"id": lead, "labels": ["Task"], "properties": {
            "kind": "follow-up", "title": "Answer a visitor: Do you bake gluten free sourdough loaves?",
            "inputs": inputs, "status": "running", "conversationId": conv, "scope": "admin"},
         "edges": [{"type": "RAISED_DURING", "to": conv}]},
        {"id": "toolcall-erase-1", "labels": ["ToolCall"], "properties": {
            "toolName": "mcp__memory__work-create", "input": json.dumps({"inputs": inputs}),
            "output": json.dumps({"taskId": lead}), "scope": "admin"}},
        {"id": "briefing-erase-1", "labels": ["Briefing"], "properties": {
            "summary": f"A visitor asked about sourdough and left {EMAIL.upper()} for a reply", "scope": "admin"}},
        {"id": "note-erase-deleted", "labels": ["Note"], "properties": {
            "title": "Callback list", "body": f"call back {EMAIL}", "scope": "admin"}},
        {"id": "note-keep", "labels": ["Note"], "properties": {
            "title": "Opening hours", "body": "Tuesday to Sunday, 7:00 to 16:00", "scope": "public"}},
        {"id": "note-lookalike", "labels": ["Note"], "properties": {
            "title": "Another customer", "body": "write to xzyxq.visitor@erasetest.example.org", "scope": "admin"}},
    ], guards=Principal.system(ACCOUNT).guards)
    store.create_edge(conv, "toolcall-erase-1", "HAS_TOOL_CALL", guards=Principal.system(ACCOUNT).guards)
    store.create_edge(conv, "briefing-erase-1", "HAS_BRIEFING", guards=Principal.system(ACCOUNT).guards)
    store.set_embeddings([(msgs[2], _vector(1)), (msgs[3], _vector(2)), (msgs[0], _vector(3)),
                          (keep_msgs[0], _vector(4))], account_id=ACCOUNT)
    store.soft_delete("note-erase-deleted", guards=Guards(ACCOUNT))
    gone = [conv, *msgs, lead, "toolcall-erase-1", "briefing-erase-1"]
    kept = [keep_conv, *keep_msgs, "note-keep", "note-lookalike", "note-erase-deleted"]
    return {"conv": conv, "gone": gone, "kept": kept,
            "receipt": {"nodes": 8, "labels": {"Briefing": 1, "Conversation": 1, "Message": 4, "Task": 1,
                                               "ToolCall": 1},
                        "edges": 7, "embeddings": 3, "fulltext": 7, "mentions": 1,
                        "files": {"aliases": 0, "scheduled": 0, "sessions": 0, "transcripts": 0}}}


def _present(store: Any, ids: list[str]) -> set[str]:
    return {i for i in ids if store.get(i, guards=Guards(ACCOUNT), include_deleted=True) is not None}


def _searches(backend: str, make_host: Any) -> str:
    """What memory-search and conversation-search answer an admin for the email (their whole text)."""
    from plughost.runtime.tooltable import call_tool

    host = make_host(**_env(backend))
    out = []
    for tool in ("memory-search", "conversation-search"):
        for query in (EMAIL, "zyxq erasetest"):
            out.append(json.dumps(call_tool(host, "memory", tool, {"query": query}), default=str))
    host.close()
    return "\n".join(out)


def _raw_sqlite(home: Path) -> bytes:
    path = home / "graph.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = path.read_bytes()
    wal = path.with_name(path.name + "-wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


def _vocabulary(home: Path) -> set[str]:
    conn = sqlite3.connect(home / "graph.sqlite")
    try:
        terms: set[str] = set()
        for table in ("node_text", "node_text_stem"):
            conn.execute(f"CREATE VIRTUAL TABLE temp.vocab_{table} USING fts5vocab(main, {table}, 'row')")
            terms |= {r[0] for r in conn.execute(f"SELECT term FROM temp.vocab_{table}")}
        return terms
    finally:
        conn.close()


def _neo4j_contains(store: Any) -> int:
    rows = store._rows("MATCH (n:GraphNode {accountId: $a}) WHERE any(k IN keys(n) WHERE n[k] IS :: STRING "
                       "AND toLower(n[k]) CONTAINS $v) RETURN count(n) AS c", {"a": ACCOUNT, "v": "zyxq.visitor@"})
    hits = store._rows("CALL db.index.fulltext.queryNodes('entity_search', $q) YIELD node "
                       "WHERE node.accountId = $a RETURN count(node) AS c", {"q": "zyxq", "a": ACCOUNT})
    return int(rows[0]["c"]) + int(hits[0]["c"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_export_then_erase_leaves_no_trace(backend: str, plughost_home: Path, make_host: Any) -> None:
    store = _store(backend, plughost_home)
    wipe(store, ACCOUNT)
    try:
        seeded = _seed(store)
        assert "zyxq" in _searches(backend, make_host).lower()  # found before
        if backend == "sqlite":
            assert set(TERMS) <= _vocabulary(plughost_home)
        else:
            assert _neo4j_contains(store) > 0

        # a narrowed process is refused, nothing removed
        for narrowed in ({"ALLOWED_SCOPES": "public"}, {"AGENT_SLUG": "bot"}):
            for command in ("erase", "export"):
                res = run_cli(command, "--contact", EMAIL, env=_env(backend, **narrowed))
                assert res.returncode == 2 and f"{command}: admin only" in res.stderr, res.stderr
                assert "Traceback" not in res.stderr and EMAIL.lower() not in res.stdout.lower()
        # bad input: one line naming the flag
        for args, flag in ((["--contact", "not-an-email@"], "--contact"), (["--contact", "12"], "--contact"),
                           ([], "--contact / --visitor / --conversation"),
                           (["--contact", EMAIL, "--visitor", VISITOR], "--contact / --visitor / --conversation")):
            res = run_cli("erase", *args, env=_env(backend))
            assert res.returncode == 2 and res.stderr.strip().startswith(f"plughost: {flag}:"), (args, res.stderr)
            assert len(res.stderr.strip().splitlines()) == 1, res.stderr

        out = plughost_home / "export.json"
        res = run_cli("export", "--contact", EMAIL.upper(), "--out", str(out), env=_env(backend))
        assert res.returncode == 0, res.stderr
        exported = json.loads(out.read_text())
        assert sorted(n["id"] for n in exported["nodes"]) == sorted(seeded["gone"])
        assert EMAIL in out.read_text() and "embedding" not in out.read_text()
        conv, msg = seeded["conv"], f"msg-{seeded['conv']}"
        assert {(e["source"], e["type"], e["target"]) for e in exported["edges"]} == {
            *((conv, HAS_MESSAGE, f"{msg}-{i}") for i in range(4)), ("task-erase-lead", "RAISED_DURING", conv),
            (conv, "HAS_TOOL_CALL", "toolcall-erase-1"), (conv, "HAS_BRIEFING", "briefing-erase-1")}
        assert exported["mentions"] == ["note-erase-deleted"]  # the owner's note naming it: listed, not taken
        assert (out.stat().st_mode & 0o777) == 0o600

        res = run_cli("erase", "--contact", EMAIL, "--dry-run", "--json", env=_env(backend))
        assert res.returncode == 0, res.stderr
        dry = json.loads(res.stdout)
        assert dry == {"dryRun": True, **seeded["receipt"]}, dry
        assert "[erase] op=dry-run" in res.stderr and EMAIL.lower() not in (res.stdout + res.stderr).lower()
        assert _present(store, seeded["gone"]) == set(seeded["gone"])  # nothing removed

        res = run_cli("erase", "--contact", EMAIL.lower(), env=_env(backend))
        assert res.returncode == 0, res.stderr
        assert res.stdout.startswith("erased: nodes=8 labels=Briefing:1,Conversation:1,Message:4,Task:1,ToolCall:1 "
                                     "edges=7 embeddings=3 fulltext=7 mentions=1"), res.stdout
        done = [line for line in res.stderr.splitlines() if line.startswith("[erase] op=done")]
        assert len(done) == 1 and "nodes=8" in done[0] and "edges=7" in done[0] and "embeddings=3" in done[0], done
        assert "zyxq" not in (res.stdout + res.stderr).lower()

        assert _present(store, seeded["gone"]) == set()
        assert _present(store, seeded["kept"]) == set(seeded["kept"])
        store.erase_nodes(["note-erase-deleted"], account_id=ACCOUNT)  # the owner acts on the mention
        lookalike = "xzyxq.visitor@erasetest.example.org"
        assert "zyxq.visitor@erasetest.example" not in _searches(backend, make_host).lower().replace(lookalike, "")
        if backend == "sqlite":
            raw = _raw_sqlite(plughost_home).lower()
            assert b"zyxq.visitor@erasetest.example" not in raw.replace(lookalike.encode(), b"")
            assert lookalike.encode() in raw  # another person's stays
            assert "sundays" in _vocabulary(plughost_home)  # the other visitor's message
        else:
            rows = store._rows("MATCH (n:GraphNode {accountId: $a}) WHERE any(k IN keys(n) WHERE n[k] IS :: STRING "
                               "AND toLower(n[k]) CONTAINS $v) RETURN n.id AS id",
                               {"a": ACCOUNT, "v": "zyxq.visitor@erasetest.example"})
            assert [r["id"] for r in rows] == ["note-lookalike"]

        # the look-alike is another person's address in the owner's note: a mention, never taken by an erase
        res = run_cli("erase", "--contact", "xzyxq.visitor@erasetest.example.org", env=_env(backend))
        assert res.returncode == 0 and res.stdout.startswith("erased: nodes=0 labels=none "), res.stdout
        assert "mentions=1" in res.stdout
        store.erase_nodes(["note-lookalike"], account_id=ACCOUNT)  # the owner acts on it
        assert "zyxq" not in _searches(backend, make_host).lower()
        if backend == "sqlite":
            raw = _raw_sqlite(plughost_home).lower()
            assert b"zyxq" not in raw and b"erasetest" not in raw
            assert not set(TERMS) & _vocabulary(plughost_home)
        else:
            assert _neo4j_contains(store) == 0
        res = run_cli("erase", "--contact", EMAIL, env=_env(backend))  # a second erase finds nothing
        assert res.returncode == 0 and res.stdout.startswith("erased: nodes=0 labels=none edges=0"), res.stdout
    finally:
        wipe(store, ACCOUNT)
        store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_erase_a_visitor_takes_the_whole_conversation(backend: str, plughost_home: Path) -> None:
    store = _store(backend, plughost_home)
    wipe(store, ACCOUNT)
    try:
        seeded = _seed(store)
        res = run_cli("export", "--visitor", VISITOR, env=_env(backend))  # to stdout
        assert res.returncode == 0, res.stderr
        exported = json.loads(res.stdout)
        assert exported["request"] == "visitor" and len(exported["nodes"]) == 8 and EMAIL in res.stdout
        assert all("embedding" not in n["properties"] for n in exported["nodes"])
        taken = plughost_home / "taken.json"
        taken.write_text("{}")
        res = run_cli("export", "--visitor", VISITOR, "--out", str(taken), env=_env(backend))
        assert res.returncode == 2 and res.stderr.startswith("plughost: --out:") and taken.read_text() == "{}"
        res = run_cli("erase", "--visitor", VISITOR, "--json", env=_env(backend))
        assert res.returncode == 0, res.stderr
        receipt = json.loads(res.stdout)
        # the conversation, its 4 messages, the lead (sender in its inputs, RAISED_DURING), the tool call and
        # briefing hanging from it; the soft-deleted note is not the visitor's
        assert receipt["labels"] == {"Briefing": 1, "Conversation": 1, "Message": 4, "Task": 1, "ToolCall": 1}, receipt
        assert receipt["embeddings"] == 3 and receipt["edges"] == 7, receipt
        assert _present(store, seeded["gone"]) == set() and _present(store, ["note-erase-deleted"])
        keep = conversation_node_id(ACCOUNT, "webchat", OTHER)
        assert _present(store, [keep, "note-keep"]) == {keep, "note-keep"}
        res = run_cli("erase", "--conversation", keep, env=_env(backend))
        assert res.returncode == 0 and res.stdout.startswith("erased: nodes=2 labels=Conversation:1,Message:1 "), \
            res.stdout
    finally:
        wipe(store, ACCOUNT)
        store.close()


@pytest.mark.parametrize(("value", "text", "found"), [
    ("+49 170 1234567", "or 0049-170-123 4567", True),
    ("0170/1234567", "my number is 0170 123-4567", True),
    # a national form says no country: never matched to an international one (someone else's, ending alike)
    ("+49 170 1234567", "call me on 0170 1234567 tomorrow", False),
    ("0170 1234567", "mine is +44 170 1234567, his +1 170 123 4567", False),
    ("0170 1234567", "Invoice 77701701234567", False),
    ("01234567", "Order number 98001234567", False),
    ("+49 170 1234567", "order 4917012345678 shipped", False),
    ("+49 170 1234567", "call 0170 7654321", False),
    ("Ann@Example.com", "mail ann@example.COM.", True),
    ("ann@example.com", "mail joann@example.com", False),
    ("ann@example.com", "mail ann@example.com.au", False),
])
def test_contact_matching(value: str, text: str, found: bool) -> None:
    import argparse

    from plughost.plugins.memory.writes.erase import Person, contact_test, request_of

    request = request_of(argparse.Namespace(contact=value, visitor=None, conversation=None))
    person = Person({(str(request.contact), request.value)}, set(), set(), set())
    assert contact_test(person)(text) is found


def test_derived_nodes_go_only_with_their_last_source(tmp_path: Path) -> None:
    """An Entity (or Fact) that only erased nodes link is erased with them; one another node still
    mentions stays. By phone number, digits matched whatever the format."""
    import argparse

    from plughost.plugins.graph.sqlite_store import SqliteStore
    from plughost.plugins.memory.writes.erase import erase, request_of

    store = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT})
    try:
        store.upsert_many([
            {"id": "m1", "labels": ["Message"], "properties": {"text": "ring me on +44 7700 900123, Ada Baker",
                                                               "role": "user", "senderPhone": "+447700900123",
                                                               "conversationId": "cv-1"}},
            {"id": "m2", "labels": ["Message"], "properties": {"text": "Ada Baker again", "role": "user",
                                                               "conversationId": "cv-2"}},
            {"id": "e-phone", "labels": ["Entity"], "properties": {"entityName": "+44 7700 900123", "kind": "number"}},
            {"id": "e-name", "labels": ["Entity"], "properties": {"entityName": "Ada Baker", "kind": "person"}},
            {"id": "e-only", "labels": ["Entity"], "properties": {"entityName": "ring", "kind": "name"}},
            {"id": "f1", "labels": ["Fact"], "properties": {"subjectName": "Ada Baker", "predicate": "says"}},
        ], guards=Principal.system(ACCOUNT).guards)
        store.create_edges([("m1", "MENTIONS", "e-phone", None), ("m1", "MENTIONS", "e-name", None),
                            ("m2", "MENTIONS", "e-name", None), ("m1", "MENTIONS", "e-only", None),
                            ("m1", "STATES", "f1", None), ("f1", "ABOUT", "e-only", None)], guards=Principal.system(ACCOUNT).guards)
        request = request_of(argparse.Namespace(contact="+44 7700-900-123", visitor=None, conversation=None))
        dry = erase(store, ACCOUNT, request, dry_run=True)
        result = erase(store, ACCOUNT, request, dry_run=False)
        assert result == dry == {"nodes": 4, "labels": {"Entity": 2, "Fact": 1, "Message": 1}, "edges": 5,
                                 "embeddings": 0, "fulltext": 1, "mentions": 0}
        left = {n.id for n in store.scan_nodes(account_id=ACCOUNT)}
        assert left == {"m2", "e-name"}
    finally:
        store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_erase_what_the_real_writers_stored(backend: str, plughost_home: Path, make_host: Any) -> None:
    """The conversation, the lead and the audit row written by conversation-append, work-create and
    the tool-call audit (not hand-made rows): the receipt equals the dry run, no search finds the email."""
    from plughost.plugins.memory.toolcalls.trail import record
    from plughost.runtime.tooltable import call_tool

    store = _store(backend, plughost_home)
    wipe(store, ACCOUNT)
    try:
        host = make_host(**_env(backend))
        for role, text in (("user", "Do you deliver wedding cakes to Lindau?"),
                           ("user", f"Please answer me at {EMAIL}"),
                           ("assistant", f"Thank you. The team will get back to you at {EMAIL}.")):
            call_tool(host, "memory", "conversation-append", {"role": role, "content": text, "channel": "webchat",
                                                               "sender": VISITOR})
        conv = keyed_id(ACCOUNT, "webchat", VISITOR)
        args = {"kind": "follow-up", "title": "Answer a visitor: Do you deliver wedding cakes to Lindau?",
                "inputs": {"question": "Do you deliver wedding cakes to Lindau?", "contact": EMAIL,
                           "channel": "webchat", "sender": VISITOR}, "conversationId": conv}
        created = call_tool(host, "memory", "work-create", args)
        record(host, account_id=ACCOUNT, session_id=conv, tool_name="mcp__plugin_memory_memory__work-create",
               tool_input=args, tool_response=created, role="admin", tool_use_id="toolu-erase-1")
        host.close()
        assert "zyxq" in _searches(backend, make_host).lower()

        res = run_cli("erase", "--contact", EMAIL, "--dry-run", "--json", env=_env(backend))
        assert res.returncode == 0, res.stderr
        dry = json.loads(res.stdout)
        # the whole conversation the lead names: the Conversation, its three messages, the lead, its audit row;
        # their five edges (three HAS_MESSAGE, RAISED_DURING, HAS_TOOL_CALL); the messages, the lead's and the
        # conversation's titles are indexed text; no embedder here, so no vector
        assert dry == {"dryRun": True, "nodes": 6, "labels": {"Conversation": 1, "Message": 3, "Task": 1, "ToolCall": 1},
                       "edges": 5, "embeddings": 0, "fulltext": 5, "mentions": 0,
                       "files": {"aliases": 0, "scheduled": 0, "sessions": 0, "transcripts": 0}}, dry
        res = run_cli("erase", "--contact", EMAIL, "--json", env=_env(backend))
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout) == {**dry, "dryRun": False}
        assert "zyxq" not in _searches(backend, make_host).lower()
        if backend == "sqlite":
            raw = _raw_sqlite(plughost_home).lower()
            assert b"zyxq" not in raw and b"erasetest" not in raw
            assert not set(TERMS) & _vocabulary(plughost_home)
        else:
            assert _neo4j_contains(store) == 0
    finally:
        wipe(store, ACCOUNT)
        store.close()


def test_a_contact_only_in_message_text_is_a_mention_and_the_visitor_erase_leaves_no_byte(tmp_path: Path) -> None:
    """An address that only appears inside a message's text (no lead holds it as a contact) does not
    make that message's sender the person: an erase by it takes nothing and counts the mentions (the
    message, and the next turn's derived ``searchContext``); the erase of the visitor takes the whole
    conversation, and no byte of it stays in the file."""
    import argparse

    from plughost.plugins.graph.sqlite_store import SqliteStore
    from plughost.plugins.memory.conversations.service import Conversations
    from plughost.plugins.memory.writes.erase import erase, request_of

    env = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_MESSAGE_CONTEXT_TURNS": "1"}
    store = SqliteStore(tmp_path / "graph.sqlite", env=env)
    try:
        svc = Conversations(store, None, env)
        for i, (role, text) in enumerate((("user", "reach me at zed.q@mailz.org please"),
                                          ("assistant", "Noted, we will write to you soon."))):
            svc.append(role=role, content=text, conversationId="cv", sender="visitor-z",
                       timestamp=f"2025-03-0{i + 1}T10:00:00Z")
        reply = [n for n in store.find(guards=Guards(ACCOUNT), labels=["Message"]) if n.properties["role"] == "assistant"]
        assert "zed.q@mailz.org" in reply[0].properties["searchContext"]
        request = request_of(argparse.Namespace(contact="zed.q@mailz.org", visitor=None, conversation=None))
        result = erase(store, ACCOUNT, request, dry_run=False)
        assert result["nodes"] == 0 and result["mentions"] == 2, result
        request = request_of(argparse.Namespace(contact=None, visitor="visitor-z", conversation=None))
        assert erase(store, ACCOUNT, request, dry_run=False)["labels"] == {"Conversation": 1, "Message": 2}
        assert store.scan_nodes(account_id=ACCOUNT) == []
    finally:
        store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("graph.sqlite*"))
    assert b"zed.q" not in raw and b"mailz" not in raw


@pytest.mark.parametrize(("flag", "value"), [("visitor", "v" * 10_000), ("conversation", "c\n"),
                                             ("visitor", ""), ("conversation", "a\x00b")])
def test_a_bad_id_is_one_line_naming_the_flag(flag: str, value: str) -> None:
    import argparse

    from plughost.plugins.memory.writes.erase import request_of
    from plughost.util.errors import UserError

    args = {"contact": None, "visitor": None, "conversation": None, flag: value}
    with pytest.raises(UserError, match=rf"^--{flag}: expected a non-empty id of at most 512 characters"):
        request_of(argparse.Namespace(**args))


def test_a_contact_with_control_characters_is_refused() -> None:
    import argparse

    from plughost.plugins.memory.writes.erase import request_of
    from plughost.util.errors import UserError

    with pytest.raises(UserError, match=r"^--contact: .* without control characters"):
        request_of(argparse.Namespace(contact="a\x01b@example.com", visitor=None, conversation=None))


def _files(home: Path, config: Path) -> dict[str, Path]:
    """What the channels plugin keeps about the visitor outside the store, and someone else's beside it."""
    from plughost.plugins.channels.runner import session_id_for

    acct = home / "accounts" / ACCOUNT
    (acct / "channels").mkdir(parents=True, exist_ok=True)
    (acct / "channels" / "aliases.json").write_text(json.dumps(
        {f"telegram:{VISITOR}": "+491701234567", "telegram:keep-1": "+441234567890"}))
    (acct / "schedule.json").write_text(json.dumps([
        {"id": "sch-1", "channel": "telegram", "to": VISITOR, "text": "Your cake is ready", "status": "pending"},
        {"id": "sch-2", "channel": "telegram", "to": "keep-1", "text": f"tell {EMAIL} hello", "status": "pending"},
        {"id": "sch-3", "channel": "telegram", "to": "keep-1", "text": "Your bread is ready", "status": "pending"}]))
    mine, theirs = session_id_for(ACCOUNT, f"webchat:{VISITOR}"), session_id_for(ACCOUNT, "webchat:keep-1")
    (acct / "claude-sessions.json").write_text(json.dumps({mine: {}, theirs: {}}))
    project = config / "projects" / "-srv-agent"
    (project / mine).mkdir(parents=True)  # a session's subagent folder
    (project / f"{mine}.jsonl").write_text(json.dumps({"type": "user", "message": {"content": EMAIL}}) + "\n")
    (project / f"{theirs}.jsonl").write_text("{}\n")
    return {"aliases": acct / "channels" / "aliases.json", "schedule": acct / "schedule.json",
            "sessions": acct / "claude-sessions.json", "mine": project / f"{mine}.jsonl",
            "side": project / mine, "theirs": project / f"{theirs}.jsonl"}


def test_erase_reaches_the_files_outside_the_store(plughost_home: Path, tmp_path: Path) -> None:
    """The alias cache, the schedule, the agent session record and Claude Code's transcripts of the
    visitor's session go too (``plughost_person_erased``); a dry run counts them and keeps them."""
    store = _store("sqlite", plughost_home)
    _seed(store)
    store.close()
    config = tmp_path / "claude"
    files = _files(plughost_home, config)
    env = _env("sqlite", PLUGHOST_CLAUDE_CONFIG_DIR=str(config))
    res = run_cli("erase", "--visitor", VISITOR, "--dry-run", "--json", env=env)
    assert res.returncode == 0, res.stderr
    # the schedule: the turn to them, and the one to someone else naming their email (the lead's contact)
    want = {"aliases": 1, "scheduled": 2, "sessions": 1, "transcripts": 2}
    assert json.loads(res.stdout)["files"] == want and files["mine"].exists()
    res = run_cli("erase", "--visitor", VISITOR, "--json", env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["files"] == want
    assert json.loads(files["aliases"].read_text()) == {"telegram:keep-1": "+441234567890"}
    assert [e["id"] for e in json.loads(files["schedule"].read_text())] == ["sch-3"]
    assert len(json.loads(files["sessions"].read_text())) == 1
    assert not files["mine"].exists() and not files["side"].exists() and files["theirs"].exists()
    res = run_cli("erase", "--contact", EMAIL, env=env)  # the same person: nothing left
    assert res.returncode == 0 and res.stdout.startswith("erased: nodes=0 ") and "files=none" in res.stdout
    res = run_cli("erase", "--visitor", VISITOR, env=env)
    assert res.returncode == 0 and res.stdout.startswith("erased: nodes=0 ") and "files=none" in res.stdout


def test_hook_plughost_person_erased(plughost_home: Path, make_host: Any, capsys: Any) -> None:
    """Every plugin's part runs; one that raises is named and the command exits 1 (a re-run retries it)."""
    from collections import Counter

    from plughost.runtime import hooktable
    from plughost.runtime.hookspecs import hookimpl

    seen: list[tuple[str, list[str], bool]] = []

    class Notes:
        @hookimpl
        def plughost_person_erased(self, account_id: str, senders: list[str], holds: Any, dry_run: bool,
                                   tally: Counter[str]) -> None:
            seen.append((account_id, senders, dry_run))
            tally["notes"] += sum(holds(line) for line in ("mail " + EMAIL.lower(), "nothing here"))

    class Broken:
        @hookimpl
        def plughost_person_erased(self) -> None:
            raise OSError("disk full")

    host = make_host(**_env("sqlite"))
    _seed(host.store())
    with host.temporary_plugin(Notes(), "notes-files"):
        tally: Counter[str] = Counter()
        assert host.call_each(hooktable.PERSON_ERASED, account_id=ACCOUNT, senders=[VISITOR], holds=lambda s: True,
                              dry_run=True, tally=tally) == []
        assert tally["notes"] == 2 and seen == [(ACCOUNT, [VISITOR], True)]
        with host.temporary_plugin(Broken(), "broken-files"):
            import argparse

            from plughost.plugins.memory.writes.erase import run_erase

            code = run_erase(argparse.Namespace(contact=EMAIL, visitor=None, conversation=None, dry_run=False,
                                                json=True), host)
    out, err = capsys.readouterr()
    assert code == 1 and "plugin 'broken-files' could not erase its files" in err, err
    assert json.loads(out.splitlines()[0])["files"]["notes"] == 1
    assert seen[-1][1] == [VISITOR]  # the sender of the user message that held the email
