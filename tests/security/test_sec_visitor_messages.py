"""Visitors cannot read each other's conversations: webchat Messages are ``public``, so the scope
guard alone lets one public visitor's ``memory-search`` (and a session-less public process's
``conversation-search``) return another's. Through the real ``plughost mcp serve memory`` over
stdio, started narrowed, with an MCP client, on each backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from plughost import Principal
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.ports.graph import HAS_MESSAGE
from plughost.runtime.accounts import account_dir, build_account, write_json_atomic
from tests.backends import BACKENDS, neo4j_env
from tests.security.test_sec_mcp_stdio import A
from tests.security.test_sec_mcp_stdio import calls as stdio_calls

SECRET = "My secret pin is 4711 and I live at 12 Elm Street"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def _store_env(backend: str) -> dict[str, str]:
    return {**neo4j_env(), "PLUGHOST_STORE": "neo4j"} if backend == "neo4j" else {}


def calls(home: Path, narrow: dict[str, str], script: list[tuple[str, dict]], backend: str) -> list[tuple[bool, str]]:
    return stdio_calls(home, {**_store_env(backend), **narrow}, script)


def _seed(home: Path, backend: str) -> None:
    account, users = build_account(A)
    write_json_atomic(account_dir(A, home) / "account.json", account)
    write_json_atomic(account_dir(A, home) / "users.json", users)
    if backend == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        store = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": A})
        store.wipe_account(A)
    else:
        store = SqliteStore(home / "graph.sqlite", env={"ACCOUNT_ID": A})
    rows = [{"id": "note-elm", "labels": ["KnowledgeDocument"], "properties": {"title": "Elm Street opening hours",
                                                                  "scope": "public"}}]
    for visitor, text in (("A", SECRET), ("B", "Where is the Elm Street shop?")):
        rows += [{"id": f"conv-{visitor}", "labels": ["Conversation"],
                  "properties": {"sessionId": f"sess-{visitor}", "channel": "webchat", "scope": "public",
                                 "title": f"webchat Elm Street visitor {visitor}"}},
                 {"id": f"msg-{visitor}", "labels": ["Message", "WebchatMessage"],
                  "properties": {"role": "user", "text": text, "conversationId": f"conv-{visitor}",
                                 "sessionId": f"sess-{visitor}", "channel": "webchat", "scope": "public"}}]
    store.upsert_many(rows, guards=Principal.system(A).guards)
    for visitor in "AB":
        store.create_edge(f"conv-{visitor}", f"msg-{visitor}", HAS_MESSAGE, guards=Principal.system(A).guards)
    store.create_edge("note-elm", "msg-A", "MENTIONED_IN",
                      guards=Principal.system(A).guards)  # a related line into A's talk
    store.close()


SEARCHES = [("memory-search", {"query": "Elm Street", "limit": 20}),
            ("conversation-search", {"query": "Elm Street", "limit": 20})]


def test_a_visitor_sees_only_its_own_conversation(plughost_home: Path, backend: str) -> None:
    _seed(plughost_home, backend)
    b = calls(plughost_home, {"ALLOWED_SCOPES": "public", "SESSION_ID": "sess-B"}, SEARCHES, backend)
    assert not any(err for err, _ in b), b
    for _, text in b:
        assert "4711" not in text and "conv-A" not in text and "msg-A" not in text, text
    assert "msg-B" in b[0][1] and "note-elm" in b[0][1]  # its own message and public knowledge remain
    assert "msg-B" in b[1][1]


def test_a_narrowed_process_without_session_sees_no_conversation(plughost_home: Path, backend: str) -> None:
    _seed(plughost_home, backend)
    for narrow in ({"ALLOWED_SCOPES": "public"}, {"AGENT_SLUG": "a1"}):
        out = calls(plughost_home, narrow, SEARCHES, backend)
        assert not any(err for err, _ in out), out
        for _, text in out:
            assert "4711" not in text and "msg-" not in text and "conv-" not in text, (narrow, text)


def test_an_admin_process_still_searches_every_conversation(plughost_home: Path, backend: str) -> None:
    _seed(plughost_home, backend)
    *out, note_only = calls(plughost_home, {}, [*SEARCHES, ("memory-search", {"query": "opening hours",
                                                                            "labels": ["KnowledgeDocument"]})], backend)
    assert all("msg-A" in text and "msg-B" in text for _, text in out), out
    assert "4711" in note_only[1]  # the admin still sees the related line (one admin server for all three)


def test_related_lines_never_reach_another_visitor(plughost_home: Path, backend: str) -> None:
    _seed(plughost_home, backend)
    out = calls(plughost_home, {"ALLOWED_SCOPES": "public", "SESSION_ID": "sess-B"},
                [("memory-search", {"query": "opening hours", "labels": ["KnowledgeDocument"]})], backend)
    assert not out[0][0] and "note-elm" in out[0][1] and "4711" not in out[0][1], out
