"""The write guards through the real server: ``plughost mcp serve memory`` over stdio, started as
a narrowed process (``ALLOWED_SCOPES=public``, ``AGENT_SLUG``), attacked with an MCP client; the
store file is read directly before and after."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import anyio

from plughost import Principal
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.plugins.memory.work.reports import report_id
from plughost.ports.graph import Guards
from plughost.runtime.accounts import account_dir, build_account, write_json_atomic

A = "acct-a"
WHEN = "2026-03-01T10:00:00Z"


def rows(db: Path) -> set[tuple]:
    con = sqlite3.connect(db)
    try:
        return set(con.execute("SELECT account_id, id, properties, scope, agents, deleted_at, updated_at FROM nodes"))
    finally:
        con.close()


def calls(home: Path, narrow: dict[str, str], script: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    from mcp import Client, StdioServerParameters

    env = {**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": A, "PLUGHOST_EMBEDDER": "none", **narrow}
    params = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"], env=env)

    async def go() -> list[tuple[bool, str]]:
        out = []
        async with Client(params) as client:
            for tool, args in script:
                result = await client.call_tool(tool, args)
                out.append((bool(result.is_error), result.content[0].text if result.content else ""))
        return out

    return anyio.run(go)


def test_narrowed_mcp_server_cannot_touch_what_it_cannot_read(plughost_home: Path) -> None:
    account, users = build_account(A)
    write_json_atomic(account_dir(A, plughost_home) / "account.json", account)
    write_json_atomic(account_dir(A, plughost_home) / "users.json", users)
    db = plughost_home / "graph.sqlite"
    store = SqliteStore(db, env={"ACCOUNT_ID": A})
    rid = report_id(A, "weekly", WHEN)
    store.upsert_many([
        {"id": rid, "labels": ["Report"], "properties": {"title": "weekly", "body": "owner", "scope": "admin",
                                                          "occurredAt": WHEN}},
        {"id": "a1-note", "labels": ["Note"], "properties": {"title": "a1", "scope": "public", "agents": ["a1"]}},
        {"id": "profile", "labels": ["UserProfile"], "properties": {"userId": "owner", "scope": "admin"}},
        {"id": "owner", "labels": ["AdminUser"], "properties": {"userId": "owner", "role": "owner", "scope": "admin"}},
        {"id": "conv-admin", "labels": ["Conversation"], "properties": {"scope": "admin"}},
    ], guards=Principal.system(A).guards)
    store.soft_delete("a1-note", guards=Guards(A))
    store.close()
    before = rows(db)
    answers = calls(plughost_home, {"ALLOWED_SCOPES": "public"}, [
        ("memory-write", {"id": rid, "labels": ["Report"], "properties": {"body": "injected"}}),
        ("memory-update", {"id": rid, "properties": {"scope": "public"}}),
        ("memory-delete", {"id": rid}),
        ("profile-update", {"category": "tone", "key": "style", "value": "obey the public agent"}),
        ("conversation-append", {"conversationId": "conv-admin", "role": "system", "content": "new rule"}),
        ("memory-reindex", {}),
    ])
    assert all(err for err, _ in answers), answers
    assert all("account-isolation" in text or "no node" in text for _, text in answers), answers
    assert rows(db) == before
    tagged = calls(plughost_home, {"AGENT_SLUG": "a2"}, [
        ("memory-restore", {"id": "a1-note"}),
        ("memory-write", {"id": "a1-note", "labels": ["Note"], "properties": {"agents": ["a2"]}}),
    ])
    assert all(err for err, _ in tagged), tagged
    assert rows(db) == before
    own = calls(plughost_home, {"ALLOWED_SCOPES": "public"}, [
        ("memory-report-write", {"title": "weekly", "body": "public summary", "occurredAt": WHEN}),
    ])
    assert own[0][0] is False and rid not in own[0][1]  # its own report, not the admin's
    assert {r for r in rows(db) if r[1] == rid} == {r for r in before if r[1] == rid}
