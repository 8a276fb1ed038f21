"""A narrowed server is a narrowed caller on every HTTP entry (docs/roles.md#a-credential-never-widens-the-guards): the principal is built once
where HTTP calls enter and a credential never widens it. Against a real `plughost serve` started with
``ALLOWED_SCOPES=public`` on loopback: MCP over HTTP (a real MCP client with the account's HTTP
token) writes and reads only inside ``public`` (on each backend); the admin chat, whose turns and transcripts are
admin-wide, refuses an admin session token with 403 ``account-isolation`` and stores nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from channels_support import ACCOUNT, agent_command, write_account
from serve_helpers import raw_request, start_serve

from plughost import Principal
from plughost.plugins.admin import sessions
from plughost.plugins.graph.sqlite_store import SqliteStore
from tests.backends import BACKENDS, neo4j_env

PIN = "4821-blue"


def nodes(db: Path, backend: str) -> dict[str, tuple[str, str | None]]:
    """id -> (properties, scope) of the account's nodes, from the file or the database (the oracle)."""
    if backend == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        store = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT})
        try:
            rows = store.read(lambda tx: list(tx.run("MATCH (n:GraphNode {accountId: $a}) RETURN n.id AS id, "
                                                     "n {.*, embedding: null, updatedAt: null} AS p", a=ACCOUNT)))
        finally:
            store.close()
        return {r["id"]: (json.dumps(dict(r["p"]), sort_keys=True, default=str), r["p"].get("scope")) for r in rows}
    con = sqlite3.connect(db)
    try:
        return {r[0]: (r[1], r[2]) for r in con.execute("SELECT id, properties, scope FROM nodes WHERE account_id = ?",
                                                        (ACCOUNT,))}
    finally:
        con.close()


def _store(backend: str, db: Path) -> Any:
    if backend == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        store = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT})
        store.wipe_account(ACCOUNT)
        return store
    return SqliteStore(db, env={"ACCOUNT_ID": ACCOUNT})


async def _mcp(url: str, token: str, script: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    out = []
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client, \
            streamable_http_client(url, http_client=client) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            for name, args in script:
                result = await session.call_tool(name, args)
                out.append((bool(getattr(result, "is_error", None) or getattr(result, "isError", False)), " ".join(getattr(c, "text", "") for c in result.content)))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_narrowed_server_never_widens_over_http(plughost_home: Path, tmp_path: Path, backend: str) -> None:
    write_account(plughost_home)
    sessions.set_pin(plughost_home, ACCOUNT, PIN, "u-owner")
    db = plughost_home / "graph.sqlite"
    store = _store(backend, db)
    store.upsert_node(["Note"], {"name": "owner secret plan", "scope": "admin"},
                      guards=Principal.system(ACCOUNT).guards, node_id="secret")
    store.upsert_node(["Note"], {"name": "public opening hours"},
                      guards=Principal.system(ACCOUNT).guards, node_id="open")
    store.close()
    env = {"PLUGHOST_HOME": str(plughost_home), "ACCOUNT_ID": ACCOUNT, "ALLOWED_SCOPES": "public",
           **({**neo4j_env(), "PLUGHOST_STORE": "neo4j"} if backend == "neo4j" else
              {"PLUGHOST_STORE": "sqlite", "NEO4J_URI": ""}),
           "PLUGHOST_EMBEDDER": "none", "PLUGHOST_AGENT": "command",
           "PLUGHOST_AGENT_COMMAND": agent_command(tmp_path), "AGENT_CAPTURE": str(tmp_path / "calls.jsonl")}
    served = start_serve(env=env)
    try:
        before = nodes(db, backend)
        minted = raw_request(served.port, "/api/admin/session", "POST", headers={"Content-Type": "application/json"},
                             body=json.dumps({"accountId": ACCOUNT, "pin": PIN}).encode())
        assert minted.status == 200, minted.body
        token = minted.json()["token"]
        auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        chat = raw_request(served.port, "/api/admin/chat", "POST", headers=auth, body=b'{"text": "show me everything"}')
        assert chat.status == 403 and chat.json()["error"] == "account-isolation", chat.body
        read = raw_request(served.port, "/api/admin/chat", "GET", headers=auth)
        assert read.status == 403 and read.json()["error"] == "account-isolation", read.body
        assert nodes(db, backend) == before, "a refused admin chat stored something"

        http_token = (plughost_home / "accounts" / ACCOUNT / "credentials" / "http-token").read_text().strip()
        url = f"http://127.0.0.1:{served.port}/mcp/memory"
        results = anyio.run(_mcp, url, http_token, [
            ("memory-write", {"labels": ["Note"], "properties": {"name": "planted", "scope": "admin"}}),
            ("memory-write", {"id": "secret", "labels": ["Note"], "properties": {"name": "overwritten"}}),
            ("memory-update", {"id": "secret", "properties": {"scope": "public"}}),
            ("memory-delete", {"id": "secret"}),
            ("memory-search", {"query": "owner secret plan"}),
            ("memory-write", {"labels": ["Note"], "properties": {"name": "a public note"}}),
        ])
        for refused, text in results[:2]:
            assert refused and "account-isolation" in text, text
        for refused, text in results[2:4]:  # a hidden node is one this caller cannot name
            assert refused and ("account-isolation" in text or "no node 'secret'" in text), text
        assert "secret" not in results[4][1] and "owner secret plan" not in results[4][1], results[4]
        assert not results[5][0], results[5]
        after = nodes(db, backend)
        assert after["secret"] == before["secret"], "the admin note changed through a narrowed server"
        assert all(scope == "public" for nid, (_, scope) in after.items() if nid not in before), after
    finally:
        _code, _out, err = served.terminate()
        if backend == "neo4j":
            _store(backend, db).close()  # wiped
    assert "Traceback" not in err
