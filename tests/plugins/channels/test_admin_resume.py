"""Admin sessions survive a restart: a token minted before `plughost serve` restarts is rehydrated
(logged with its age), and the next admin turn over `POST /api/admin/chat` continues the user's
latest conversation, so the claude runner (a recording stand-in `claude`) is asked to
``--resume`` the prior session id; ``newConversation: true`` starts a fresh one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from channels_support import ACCOUNT, read_jsonl, wait_for, write_account
from serve_helpers import raw_request, start_serve
from test_claude_runner import STAND_IN

from plughost.plugins.admin import sessions
from plughost.ports.graph import Guards
from tests.backends import BACKENDS, neo4j_env

PIN = "4821-blue"


def post(port: int, path: str, body: dict, token: str | None = None):
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    return raw_request(port, path, "POST", headers=headers, body=json.dumps(body).encode())


def test_token_and_conversation_survive_a_restart(plughost_home: Path, tmp_path: Path, make_host) -> None:
    write_account(plughost_home)
    sessions.set_pin(plughost_home, ACCOUNT, PIN, "u-owner")
    script = tmp_path / "claude"
    script.write_text(f"#!{sys.executable} -S\n{STAND_IN}")
    script.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    env = {"PLUGHOST_HOME": str(plughost_home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_AGENT": "claude",
           "PLUGHOST_CLAUDE_BIN": str(script), "PLUGHOST_CLAUDE_CONFIG_DIR": str(tmp_path / "config"),
           "STAND_IN_LOG": str(log)}

    def calls() -> list[dict]:
        return read_jsonl(log)

    def flags(call: dict) -> tuple[str, str]:
        argv = call["argv"]
        return (argv[3], argv[4])

    first = start_serve(env=env)
    try:
        minted = post(first.port, "/api/admin/session", {"accountId": ACCOUNT, "pin": PIN})
        assert minted.status == 200, minted.body
        token = minted.json()["token"]
        assert post(first.port, "/api/admin/chat", {"text": "hello"}).status == 401  # no credential
        http_token = (plughost_home / "accounts" / ACCOUNT / "credentials" / "http-token").read_text().strip()
        refused = post(first.port, "/api/admin/chat", {"text": "hello"}, http_token)  # opens the door, names no user
        assert refused.status == 401 and refused.json()["error"] == "unauthorized"
        forged = post(first.port, "/api/admin/chat", {"text": "hello"}, token[:-2] + ("AA" if token[-2:] != "AA" else "BB"))
        assert forged.status == 401
        turn = post(first.port, "/api/admin/chat", {"text": "remember the blue door"}, token)
        assert turn.status == 202, turn.body
        prior, conv = turn.json()["sessionId"], turn.json()["conversationId"]
        wait_for(lambda: len(calls()) == 1)
        assert flags(calls()[0]) == ("--session-id", prior)
        assert calls()[0]["env"]["PLUGHOST_SESSION_ROLE"] == "admin"
    finally:
        first.terminate()

    second = start_serve(env=env)
    try:
        again = post(second.port, "/api/admin/chat", {"text": "what door?"}, token)
        assert again.status == 202, again.body
        assert again.json()["sessionId"] == prior and again.json()["conversationId"] == conv
        wait_for(lambda: len(calls()) == 2)
        assert flags(calls()[1]) == ("--resume", prior)  # the runner was asked to resume the prior session
        assert calls()[1]["stdin"].rstrip().endswith("what door?")
        fresh = post(second.port, "/api/admin/chat", {"text": "new topic", "newConversation": True}, token)
        assert fresh.status == 202 and fresh.json()["conversation"] == 2 and fresh.json()["sessionId"] != prior
        wait_for(lambda: len(calls()) == 3)
        assert flags(calls()[2]) == ("--session-id", fresh.json()["sessionId"])
        bad = post(second.port, "/api/admin/chat", {"text": "x", "newConversation": "yes"}, token)
        assert bad.status == 400 and bad.json()["error"] == "invalid-newConversation"
    finally:
        _code, out, err = second.terminate()
    lines = [line for line in (out + err).splitlines() if "[session-rehydrate-from-token]" in line]
    assert len(lines) == 1 and "userId=u-owner" in lines[0] and "ageMs=" in lines[0], out + err
    host = make_host(ACCOUNT_ID=ACCOUNT)  # the store as the oracle: both turns are in the one conversation
    edges = host.store().expand([conv], guards=Guards(ACCOUNT))[conv]
    texts = {n.node.properties.get("text") for n in edges if n.type == "HAS_MESSAGE"}
    assert {"remember the blue door", "what door?"} <= texts and "new topic" not in texts


def get(port: int, path: str, token: str | None = None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return raw_request(port, path, "GET", headers=headers)


@pytest.mark.parametrize("backend", BACKENDS)
def test_admin_chat_replies_are_read_back_by_their_user_only(plughost_home: Path, tmp_path: Path,
                                                             backend: str) -> None:
    """``GET /api/admin/chat`` over real loopback HTTP, on each backend: the user's turns and the
    agent's replies, oldest first; the HTTP token, a forged token, another user's or another
    account's conversation and a made-up id read nothing (401, or 404 exactly as for an absent id)."""
    from channels_support import agent_command

    from plughost.util import credentials

    write_account(plughost_home)
    sessions.set_pin(plughost_home, ACCOUNT, PIN, "u-owner")
    store = {**neo4j_env(), "PLUGHOST_STORE": "neo4j"} if backend == "neo4j" else {"PLUGHOST_STORE": "sqlite"}
    if backend == "neo4j":
        _wipe(ACCOUNT)
    env = {"PLUGHOST_HOME": str(plughost_home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_AGENT": "command",
           "PLUGHOST_AGENT_COMMAND": agent_command(tmp_path), "AGENT_CAPTURE": str(tmp_path / "calls.jsonl"),
           **store}
    served = start_serve(env=env)
    try:
        token = post(served.port, "/api/admin/session", {"accountId": ACCOUNT, "pin": PIN}).json()["token"]
        turn = post(served.port, "/api/admin/chat", {"text": "what is on today?"}, token)
        assert turn.status == 202, turn.body
        conv = turn.json()["conversationId"]

        def replies() -> list[dict]:
            got = get(served.port, f"/api/admin/chat?conversationId={conv}", token)
            assert got.status == 200, got.body
            return got.json()["messages"]

        wait_for(lambda: any(m["role"] == "assistant" for m in replies()))
        messages = replies()
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[0]["text"] == "what is on today?" and messages[1]["inReplyTo"] == messages[0]["id"]
        assert messages[1]["text"]
        current = get(served.port, "/api/admin/chat", token)  # no id: the user's current conversation
        assert current.status == 200 and current.json()["conversationId"] == conv
        assert current.json()["conversation"] == 1

        secret = credentials.load_secret(plughost_home)
        other_user = credentials.mint(secret, ACCOUNT, "u-other")
        other_account = credentials.mint(secret, "acct-other", "u-owner")
        http_token = (plughost_home / "accounts" / ACCOUNT / "credentials" / "http-token").read_text().strip()
        path = f"/api/admin/chat?conversationId={conv}"
        assert get(served.port, path).status == 401
        assert get(served.port, path, http_token).status == 401  # opens the door, is no admin session
        assert get(served.port, path, token[:-2] + ("AA" if token[-2:] != "AA" else "BB")).status == 401
        assert get(served.port, path, other_account).status == 401
        absent = get(served.port, "/api/admin/chat?conversationId=conv-" + "0" * 32, token)
        theirs = get(served.port, path, other_user)
        assert absent.status == theirs.status == 404 and absent.json() == theirs.json()
        assert get(served.port, "/api/admin/chat", other_user).status == 404  # that user has none yet
        for bad in ("conv-x", "%00", "conv-" + "a" * 2000, "%C2%B2", "%ED%A0%80", "conv-" + "A" * 32):
            r = get(served.port, "/api/admin/chat?conversationId=" + bad, token)
            assert r.status == 400 and set(r.json()) == {"error", "detail"}, (bad, r.body)
        for limit in ("0", "%C2%B2", "9" * 50, "-1"):
            r = get(served.port, f"/api/admin/chat?conversationId={conv}&limit={limit}", token)
            assert r.status == 400 and r.json()["error"] == "invalid-limit", (limit, r.body)
        assert len(get(served.port, f"/api/admin/chat?conversationId={conv}&limit=1", token).json()["messages"]) == 1
        assert not (plughost_home / "accounts" / ACCOUNT / "admin-conversations.json").read_text().count("u-other")
    finally:
        _code, _out, err = served.terminate()
        if backend == "neo4j":
            _wipe(ACCOUNT)
    assert "Traceback" not in err


def _wipe(account: str) -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    store = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": account})
    try:
        store.wipe_account(account)
    finally:
        store.close()
