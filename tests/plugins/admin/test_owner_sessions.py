"""The owner's agent sessions over HTTP (``/api/admin/sessions``, plugins/admin/owner_sessions.py) and
the ``plughost_owner_sessions`` hook the channels plugin answers (plugins/channels/owner_sessions.py):
a session started with a first message runs its agent (a recording stand-in ``claude``) in the
chosen permission mode and model; bad levers are 400 ``{error, detail}`` and start nothing; stop,
resume and purge change what the admin chat continues; no other role gets in."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from channels_support import ACCOUNT, read_jsonl, wait_for, write_account
from serve_helpers import LiveServer, raw_request

from plughost.plugins.admin import sessions
from tests.plugins.channels.test_claude_runner import STAND_IN


@pytest.fixture
def served(plughost_home: Path, tmp_path: Path, make_host, live_app) -> tuple[LiveServer, str, Path]:
    write_account(plughost_home)
    script = tmp_path / "claude"
    script.write_text(f"#!{sys.executable} -S\n{STAND_IN}")
    script.chmod(0o755)
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_AGENT="claude",
                     PLUGHOST_CLAUDE_BIN=str(script), PLUGHOST_CLAUDE_CONFIG_DIR=str(tmp_path / "config"),
                     STAND_IN_LOG=str(tmp_path / "calls.jsonl"))
    token = sessions.mint(sessions.load_secret(plughost_home), ACCOUNT, "u-owner", now_ms=int(time.time() * 1000))
    return live_app(host), token, tmp_path


def call(server: LiveServer, method: str, path: str, token: str | None, body: Any = None):
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    return raw_request(server.port, path, method, headers=headers,
                       body=json.dumps(body).encode() if body is not None else b"")


def calls(tmp: Path) -> list[dict]:
    return read_jsonl(tmp / "calls.jsonl")


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_hook_plughost_owner_sessions(served) -> None:
    """The channels plugin answers the hook; a session starts with its first message in the chosen
    mode and model, and every later turn of it keeps them (they are fixed at the session's birth)."""
    from plughost.api import hooks

    server, token, tmp = served
    assert type(server.host.first(hooks.OWNER_SESSIONS)).__name__ == "SessionManager"
    started = call(server, "POST", "/api/admin/sessions", token,
                   {"initialMessage": "Draft the week's bread order", "permissionMode": "plan", "model": "haiku"})
    assert started.status == 202, started.body
    view = started.json()
    assert view["conversation"] == 1 and view["status"] == "current"
    assert view["permissionMode"] == "plan" and view["model"] == "haiku"
    wait_for(lambda: len(calls(tmp)) == 1)
    argv = calls(tmp)[0]["argv"]
    assert flag(argv, "--session-id") == view["sessionId"]
    assert flag(argv, "--permission-mode") == "plan" and flag(argv, "--model") == "haiku"
    assert calls(tmp)[0]["stdin"].rstrip().endswith("Draft the week's bread order")  # the first turn is the message
    more = call(server, "POST", "/api/admin/chat", token, {"text": "add rye"})  # the admin chat continues it
    assert more.status == 202 and more.json()["sessionId"] == view["sessionId"]
    wait_for(lambda: len(calls(tmp)) == 2)
    argv = calls(tmp)[1]["argv"]
    assert flag(argv, "--resume") == view["sessionId"] and flag(argv, "--model") == "haiku"
    assert flag(argv, "--permission-mode") == "plan"
    # left out: the user's last choice; a plain admin-chat conversation: the runner's own dontAsk
    again = call(server, "POST", "/api/admin/sessions", token, {"initialMessage": "and the invoices"})
    assert again.status == 202 and again.json()["model"] == "haiku" and again.json()["permissionMode"] == "plan"
    plain = call(server, "POST", "/api/admin/chat", token, {"text": "hi", "newConversation": True})
    wait_for(lambda: len(calls(tmp)) == 4)
    [last] = [c for c in calls(tmp) if flag(c["argv"], "--session-id") == plain.json()["sessionId"]]
    assert flag(last["argv"], "--permission-mode") == "dontAsk" and "--model" not in last["argv"]


@pytest.mark.parametrize("body, error", [
    ({"initialMessage": "x", "permissionMode": "yolo"}, "invalid-permissionMode"),
    ({"initialMessage": "x", "permissionMode": "bypassPermissions"}, "invalid-permissionMode"),
    ({"initialMessage": "x", "model": "gpt-4o"}, "invalid-model"),
    ({"initialMessage": "x", "model": 3}, "invalid-model"),
    ({"initialMessage": "  "}, "invalid-initialMessage"),
    ({"initialMessage": "x", "channel": "browser"}, "invalid-body"),
    ([1, 2], "invalid-body"),
])
def test_bad_levers_are_400_naming_the_field_and_start_nothing(served, body: Any, error: str) -> None:
    server, token, tmp = served
    refused = call(server, "POST", "/api/admin/sessions", token, body)
    assert refused.status == 400 and refused.json()["error"] == error, refused.body
    detail = refused.json()["detail"]
    assert "\n" not in detail and detail.split(":")[0].split(".")[0] in error
    if error == "invalid-model":
        assert "sonnet, opus, haiku" in detail
    listed = call(server, "GET", "/api/admin/sessions", token)
    assert listed.status == 200 and listed.json() == {"sessions": []}
    assert calls(tmp) == []


def test_the_model_list_is_a_setting(served, make_host, live_app, plughost_home: Path) -> None:
    server, token, _tmp = served
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_SESSION_MODELS="claude-opus-4-5")
    other = live_app(host)
    assert call(other, "POST", "/api/admin/sessions", token, {"initialMessage": "x", "model": "sonnet"}).status == 400


def test_stop_resume_purge(served) -> None:
    server, token, tmp = served
    first = call(server, "POST", "/api/admin/sessions", token, {"initialMessage": "one"}).json()
    wait_for(lambda: len(calls(tmp)) == 1)
    transcript = tmp / "config" / "projects" / "-shop" / f"{first['sessionId']}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type": "user"}\n')
    assert call(server, "POST", "/api/admin/sessions/1/purge", token).status == 409  # open: stop it first
    stopped = call(server, "POST", "/api/admin/sessions/1/stop", token)
    assert stopped.status == 200 and stopped.json()["status"] == "ended" and stopped.json()["transcript"] is True
    # a stopped session is never continued: the admin chat starts the next one
    nxt = call(server, "POST", "/api/admin/chat", token, {"text": "two"})
    assert nxt.status == 202 and nxt.json()["conversation"] == 2
    resumed = call(server, "POST", "/api/admin/sessions/1/resume", token)
    assert resumed.status == 200 and resumed.json()["status"] == "current"
    back = call(server, "POST", "/api/admin/chat", token, {"text": "three"})
    assert back.json()["conversation"] == 1 and back.json()["sessionId"] == first["sessionId"]
    listed = call(server, "GET", "/api/admin/sessions", token).json()["sessions"]
    assert [(s["conversation"], s["status"]) for s in listed] == [(2, "open"), (1, "current")]
    wait_for(lambda: len(calls(tmp)) == 3)
    assert call(server, "POST", "/api/admin/sessions/1/stop", token).status == 200
    purged = call(server, "POST", "/api/admin/sessions/1/purge", token)
    assert purged.status == 200 and purged.json()["removed"] == 1 and purged.json()["transcript"] is False
    assert not transcript.exists() and purged.json()["messages"] >= 2  # the Messages stay (erase removes them)
    assert call(server, "POST", "/api/admin/sessions/9/stop", token).status == 404
    assert call(server, "POST", "/api/admin/sessions/x/stop", token).status == 400
    assert call(server, "POST", "/api/admin/sessions/1/explode", token).status == 404
    log = (Path(server.host.home) / "logs" / "server.log").read_text()
    assert "[owner-sessions] op=purge user=u-owner conversation=1" in log


def test_every_other_role_is_refused(served, make_host, live_app, plughost_home: Path) -> None:
    server, token, tmp = served
    body = {"initialMessage": "hello"}
    assert call(server, "POST", "/api/admin/sessions", None, body).status == 401  # public: no credential
    http = server.app.state.door.http_token  # the account's HTTP token: opens the door, names no user
    assert call(server, "POST", "/api/admin/sessions", http, body).status == 401
    assert call(server, "GET", "/api/admin/sessions", http).status == 401
    write_account(plughost_home, "acct-0002")
    other = sessions.mint(sessions.load_secret(plughost_home), "acct-0002", "u-owner", now_ms=int(time.time() * 1000))
    assert call(server, "POST", "/api/admin/sessions", other, body).status == 401  # another account
    assert call(server, "POST", "/api/admin/sessions/1/stop", other).status == 401
    for narrowed in ({"AGENT_SLUG": "baker"}, {"ALLOWED_SCOPES": "public"}):  # an agent's or a visitor's process
        host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), **narrowed)
        agent = live_app(host)
        refused = call(agent, "POST", "/api/admin/sessions", token, body)
        assert refused.status == 403 and refused.json()["error"] == "account-isolation", narrowed
        assert call(agent, "GET", "/api/admin/sessions", token).status == 403
    assert calls(tmp) == [] and call(server, "GET", "/api/admin/sessions", token).json() == {"sessions": []}


def test_the_console_lists_starts_and_stops_the_owners_sessions(served) -> None:
    from urllib.parse import urlencode

    server, token, tmp = served
    cookie = {"Cookie": f"admin_session={token}"}

    def form(path: str, **fields: str):
        return raw_request(server.port, path, "POST", headers={**cookie, "Content-Type": "application/x-www-form-urlencoded"},
                           body=urlencode(fields).encode())

    assert raw_request(server.port, "/admin/sessions").status == 303  # signed out: to the login page
    page = raw_request(server.port, "/admin/sessions", headers=cookie)
    assert page.status == 200 and "No sessions yet." in page.body.decode()
    csrf = page.body.decode().split('name="csrf" value="', 1)[1].split('"', 1)[0]
    assert form("/admin/sessions", csrf="wrong", initialMessage="hi").status == 403
    bad = form("/admin/sessions", csrf=csrf, initialMessage="hi", model="gpt-4o")
    assert bad.status == 400 and "model: expected one of sonnet, opus, haiku" in bad.body.decode()
    started = form("/admin/sessions", csrf=csrf, initialMessage="Check the flour stock", permissionMode="acceptEdits",
                   model="sonnet")
    assert started.status == 303, started.body
    wait_for(lambda: len(calls(tmp)) == 1)
    assert flag(calls(tmp)[0]["argv"], "--permission-mode") == "acceptEdits"
    listed = raw_request(server.port, "/admin/sessions", headers=cookie).body.decode()
    assert "acceptEdits" in listed and 'action="/admin/sessions/1/stop"' in listed
    assert form("/admin/sessions/1/stop", csrf=csrf).status == 303
    listed = raw_request(server.port, "/admin/sessions", headers=cookie).body.decode()
    assert "ended" in listed and 'action="/admin/sessions/1/resume"' in listed
    assert form("/admin/sessions/7/stop", csrf=csrf).status == 404


def test_a_cookie_post_from_another_site_is_refused(served) -> None:
    """A POST carried by the ``admin_session`` cookie (the JSON routes here and the admin chat) must
    come from this server's page: a foreign ``Origin`` or a body that is not application/json is 403
    ``cross-origin`` and starts nothing; a bearer caller is not a browser and is not asked."""
    server, token, tmp = served
    here = f"http://127.0.0.1:{server.port}"

    def post(path: str, headers: dict[str, str], body: bytes = b'{"initialMessage": "hi", "text": "hi"}'):
        return raw_request(server.port, path, "POST", headers={"Cookie": f"admin_session={token}", **headers},
                           body=body)

    evil = {"Origin": "http://evil.test", "Content-Type": "application/json"}
    plain = {"Origin": here, "Content-Type": "text/plain"}
    for path, headers in [("/api/admin/sessions", evil), ("/api/admin/sessions", plain), ("/api/admin/chat", evil),
                          ("/api/admin/chat", {"Content-Type": "text/plain"}),
                          ("/api/admin/sessions/1/stop", {"Origin": "null"}),
                          # a bracket left open: a URL parser raises on it; it is a refusal, not a 500
                          ("/api/admin/chat", {**evil, "Origin": "http://["}),
                          ("/api/admin/chat", {**evil, "Origin": f"http://127.0.0.1:{server.port}]"}),
                          ("/api/admin/chat", {**evil, "Origin": f"ftp://127.0.0.1:{server.port}"})]:
        refused = post(path, headers, body=b"" if path.endswith("stop") else b'{"initialMessage": "hi", "text": "hi"}')
        assert refused.status == 403, (path, headers, refused.body)
        assert refused.json()["error"] == "cross-origin" and refused.json()["detail"], refused.body
    assert calls(tmp) == [] and call(server, "GET", "/api/admin/sessions", token).json() == {"sessions": []}
    started = raw_request(server.port, "/api/admin/sessions", "POST", body=b'{"initialMessage": "hi"}',
                          headers={"Cookie": f"admin_session={token}", "Origin": here,
                                   "Content-Type": "application/json; charset=utf-8"})
    assert started.status == 202, started.body
    bearer = raw_request(server.port, "/api/admin/sessions", "POST", body=b'{"initialMessage": "again"}',
                         headers={"Authorization": f"Bearer {token}", **evil, "Content-Type": "text/plain"})
    assert bearer.status == 202, bearer.body
    chat = post("/api/admin/chat", {"Origin": here, "Content-Type": "application/json"}, body=b'{"text": "hi"}')
    assert chat.status == 202, chat.body
