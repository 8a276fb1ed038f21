"""The owner console (docs/console.md) on a real `plughost serve`: the PIN login, a webchat
visitor's lead answered from the console and read back in the visitor's webchat, in headless
Chromium (screenshots under the test's tmp output); the policy, the session and CSRF checks."""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from plughost import Principal
from plughost.plugins.admin import sessions
from tests.conftest import run_cli
from tests.support.serve_helpers import start_serve

PIN = "482913"
REPLY = "Yes, we deliver on Saturdays. The owner here."


def _post(base: str, path: str, data: Any) -> Any:
    req = urllib.request.Request(base + path, data=json.dumps(data).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def _events(base: str, session: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{base}/channels/webchat/messages?session={session}&after=0", timeout=30) as resp:
        return list(json.load(resp)["events"])


def _wait_events(base: str, session: str, count: int, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = _events(base, session)
        if sum(e["role"] == "assistant" for e in events) >= count:
            return events
        time.sleep(0.2)
    raise AssertionError(f"no reply {count} in the webchat: {_events(base, session)}")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _raw(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data is not None else "GET")
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


@pytest.fixture
def console(plughost_home: Path, serve_env: dict[str, str]) -> Any:
    sessions.set_pin(plughost_home, serve_env["ACCOUNT_ID"], PIN, "owner")
    server = start_serve(env={**serve_env, "PLUGHOST_AGENT": "memory"})
    yield server
    server.terminate()


def _leave_lead(base: str, email: str = "ana@example.com") -> str:
    visitor = "visitor-" + secrets.token_hex(6)
    _post(base, "/channels/webchat/messages", {"session": visitor, "text": "Do you deliver wedding cakes on Saturdays?"})
    _wait_events(base, visitor, 1)
    _post(base, "/channels/webchat/messages", {"session": visitor, "text": f"Please write to me at {email}"})
    _wait_events(base, visitor, 2)
    return visitor


def test_signed_out_pages_redirect_to_login_and_posts_need_the_form_check(console) -> None:
    base = console.base
    status, headers, _ = _raw(f"{base}/admin/leads?page=2")
    assert status == 303 and headers["location"] == "/admin/login?next=/admin/leads%3Fpage%3D2"
    status, headers, body = _raw(f"{base}/admin/login")
    assert status == 200 and "script-src 'none'" in headers["content-security-policy"]
    assert "style-src 'self';" in headers["content-security-policy"] and "<style" not in body and "style=" not in body
    assert '<label for="pin">' in body and 'href="#main"' in body
    # the PIN field takes what sign-in checks (an earlier release's shorter PIN too) and states set-pin's rule
    assert f'minlength="{sessions.SIGN_IN_MIN_PIN}" maxlength="{sessions.MAX_PIN}"' in body
    assert f"{sessions.MIN_PIN} to {sessions.MAX_PIN} characters without spaces, as <code>plughost admin set-pin" in body
    status, _, body = _raw(f"{base}/admin/login", b"pin=123&next=/admin")
    assert status == 400 and f"The PIN is {sessions.SIGN_IN_MIN_PIN} to {sessions.MAX_PIN} characters" in body
    status, headers, _ = _raw(f"{base}/admin/static/console.css")
    assert status == 200 and headers["content-type"].startswith("text/css")
    status, _, body = _raw(f"{base}/admin/login", b"pin=000000&next=/admin")
    assert status == 401 and "not right" in body
    status, headers, _ = _raw(f"{base}/admin/login", b"pin=" + PIN.encode() + b"&next=//evil.example/")
    assert status == 303 and headers["location"] == "/admin"
    cookie = headers["set-cookie"].split(";", 1)[0]
    status, _, body = _raw(f"{base}/admin/leads", headers={"Cookie": cookie})
    assert status == 200 and "<h1>Follow-up leads</h1>" in body
    status, _, _ = _raw(f"{base}/admin/leads/x/done", b"csrf=wrong", headers={"Cookie": cookie})
    assert status == 403
    status, _, _ = _raw(f"{base}/admin/leads/x/done", b"csrf=wrong")
    assert status == 401


LAST_ASSISTANT = "(() => { const li = [...document.querySelectorAll('#log li.assistant:not(.typing)')].pop(); " \
                 "return li ? li.textContent : ''; })()"


def _visitor_says(visitor: Any, text: str) -> None:
    replies = visitor.eval("document.querySelectorAll('#log li.assistant:not(.typing):not(.greeting)').length")
    visitor.eval("document.getElementById('text').focus()")
    visitor.type(text)
    visitor.press_enter()
    visitor.wait(f"document.querySelectorAll('#log li.assistant:not(.typing):not(.greeting)').length > {replies}",
                 timeout=60)


@pytest.mark.e2e
def test_owner_answers_a_webchat_lead_from_the_console_in_chromium(console, tmp_path: Path) -> None:
    """The visitor chats in the webchat page (one Chromium) and leaves an email; the owner (another
    Chromium) signs in with the PIN, opens the lead, replies; the visitor's page shows the reply."""
    from browser import Browser

    from tests.conftest import which_or_skip

    chromium = which_or_skip("chromium")
    base = console.base
    screens = tmp_path / "screens"
    screens.mkdir()
    (tmp_path / "visitor").mkdir()
    (tmp_path / "owner").mkdir()
    visitor = Browser(chromium, tmp_path / "visitor")
    owner = None
    try:
        visitor.open(f"{base}/channels/webchat")
        _visitor_says(visitor, "Do you deliver wedding cakes on Saturdays?")
        _visitor_says(visitor, "Please write to me at ana@example.com")
        assert "ana@example.com" in visitor.eval(LAST_ASSISTANT)
        visitor.screenshot(screens / "0-visitor-left-a-lead.png")

        owner = Browser(chromium, tmp_path / "owner", width=1000, height=900)
        owner.open(f"{base}/admin/leads")
        owner.wait("location.pathname === '/admin/login' && document.activeElement.id === 'pin'")
        owner.wait("getComputedStyle(document.body).backgroundColor === 'rgb(251, 247, 241)'")  # the stylesheet applies
        owner.screenshot(screens / "1-login.png")
        owner.type(PIN)
        owner.press_enter()
        owner.wait("location.pathname === '/admin/leads' && !!document.querySelector('tbody a')")
        assert "ana@example.com" in owner.eval("document.querySelector('tbody').innerText")
        owner.screenshot(screens / "2-leads.png")
        owner.eval("document.querySelector('tbody a').click()")
        owner.wait("location.pathname.startsWith('/admin/leads/task-') && !!document.getElementById('reply')")
        page = owner.eval("document.querySelector('main').innerText")
        assert "wedding cakes" in page and "ana@example.com" in page
        owner.screenshot(screens / "3-lead.png")
        owner.eval("document.getElementById('reply').focus()")
        owner.type(REPLY)
        owner.eval("document.getElementById('reply').form.querySelector('button').click()")
        owner.wait("new URLSearchParams(location.search).get('notice') === 'sent'")
        assert REPLY in owner.eval("document.querySelector('.messages').innerText")
        owner.screenshot(screens / "4-replied.png")

        visitor.wait(f"{LAST_ASSISTANT} === {json.dumps(REPLY)}", timeout=30)  # the visitor's open page shows it
        visitor.screenshot(screens / "5-visitor-sees-the-reply.png")
    finally:
        visitor.close()
        if owner is not None:
            owner.close()
    assert len(list(screens.glob("*.png"))) == 6

def _cookie(base: str) -> str:
    status, headers, _ = _raw(f"{base}/admin/login", b"pin=" + PIN.encode() + b"&next=/admin")
    assert status == 303
    return headers["set-cookie"].split(";", 1)[0]


def test_tasks_audit_and_logs_pages_are_paged_and_read_only(console, serve_env: dict[str, str]) -> None:
    base = console.base
    _leave_lead(base)
    cookie = {"Cookie": _cookie(base)}
    status, _, body = _raw(f"{base}/admin/tasks", headers=cookie)
    assert status == 200 and "Answer a visitor: Do you deliver wedding cakes" in body and "follow-up" in body
    task = body.split('href="/admin/tasks/', 1)[1].split('"', 1)[0]
    status, _, body = _raw(f"{base}/admin/tasks/{task}", headers=cookie)
    assert status == 200 and "<h2>What it produced</h2>" in body and "running" in body
    assert "Time logged: 0 h 0 min (0 s)" in body
    env = {"ACCOUNT_ID": serve_env["ACCOUNT_ID"]}
    assert run_cli("memory", "work-time", "adjust", task, "--seconds", "5400", "--reason", "call", env=env).returncode == 0
    assert run_cli("memory", "work-time", "start", task, env=env).returncode == 0
    status, _, body = _raw(f"{base}/admin/tasks/{task}", headers=cookie)
    assert "Time logged: 1 h 30 min (5400 s), a timer is running" in body
    status, _, body = _raw(f"{base}/admin/tasks?page=2", headers=cookie)
    assert status == 200 and "Nothing on this page." in body and 'rel="prev"' in body
    status, _, body = _raw(f"{base}/admin/audit", headers=cookie)
    assert status == 200 and "<h1>Tool calls</h1>" in body
    status, _, body = _raw(f"{base}/admin/logs", headers=cookie)
    assert status == 200 and "[console] op=login" in body
    assert _raw(f"{base}/admin/tasks/task-nope", headers=cookie)[0] == 404
    assert _raw(f"{base}/admin/logs?page=x%C2%B2", headers=cookie)[0] == 200


def test_an_owner_reply_holds_the_conversation_until_handed_back(console, plughost_home: Path) -> None:
    base = console.base
    visitor = _leave_lead(base)
    cookie = {"Cookie": _cookie(base)}
    _, _, body = _raw(f"{base}/admin/leads", headers=cookie)
    lead = body.split('href="/admin/leads/task-', 1)[1].split('"', 1)[0]
    _, _, page = _raw(f"{base}/admin/leads/task-{lead}", headers=cookie)
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    status, headers, _ = _raw(f"{base}/admin/leads/task-{lead}/reply", f"csrf={csrf}&text=Hello+from+the+owner".encode(),
                              headers=cookie)
    assert status == 303 and headers["location"].endswith("?notice=sent")
    _, _, page = _raw(f"{base}/admin/leads/task-{lead}", headers=cookie)
    assert "Hand back to the agent" in page
    conv = page.split('action="/admin/conversations/', 1)[1].split('/hand-back"', 1)[0]
    _post(base, "/channels/webchat/messages", {"session": visitor, "text": "Great, and on Sundays?"})
    log = plughost_home / "logs" / "server.log"
    deadline = time.monotonic() + 30
    while "op=held-by-owner" not in log.read_text(errors="replace") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "op=held-by-owner" in log.read_text(errors="replace")
    assert sum(e["role"] == "assistant" for e in _events(base, visitor)) == 3  # two agent replies, the owner's
    status, headers, _ = _raw(f"{base}/admin/conversations/{conv}/hand-back",
                              f"csrf={csrf}&back=/admin/leads/task-{lead}".encode(), headers=cookie)
    assert status == 303 and headers["location"] == f"/admin/leads/task-{lead}"
    _post(base, "/channels/webchat/messages", {"session": visitor, "text": "And on Mondays?"})
    _wait_events(base, visitor, 4)
    _, _, page = _raw(f"{base}/admin/conversations/{conv}", headers=cookie)
    assert "Hand back to the agent" not in page and "Hello from the owner" in page


def test_a_reply_to_a_one_message_visitor_holds_their_conversation(console, plughost_home: Path) -> None:
    """A visitor's first message leaves the email: no Conversation exists yet, the reply makes one."""
    base = console.base
    visitor = "visitor-" + secrets.token_hex(6)
    _post(base, "/channels/webchat/messages", {"session": visitor,
                                               "text": "Please write to me at bo@example.com about a birthday cake"})
    _wait_events(base, visitor, 1)
    cookie = {"Cookie": _cookie(base)}
    _, _, body = _raw(f"{base}/admin/leads", headers=cookie)
    lead = body.split('href="/admin/leads/task-', 1)[1].split('"', 1)[0]
    _, _, page = _raw(f"{base}/admin/leads/task-{lead}", headers=cookie)
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    status, headers, _ = _raw(f"{base}/admin/leads/task-{lead}/reply", f"csrf={csrf}&text=Hello+Bo".encode(),
                              headers=cookie)
    assert status == 303 and headers["location"].endswith("?notice=sent")
    _, _, page = _raw(f"{base}/admin/leads/task-{lead}", headers=cookie)
    assert "Hand back to the agent" in page and "birthday cake" in page and "Hello Bo" in page
    _post(base, "/channels/webchat/messages", {"session": visitor, "text": "Thanks! Chocolate please."})
    log = plughost_home / "logs" / "server.log"
    deadline = time.monotonic() + 30
    while "op=held-by-owner" not in log.read_text(errors="replace") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "op=held-by-owner" in log.read_text(errors="replace")
    assert sum(e["role"] == "assistant" for e in _events(base, visitor)) == 2  # the agent's first reply, the owner's
    _, _, body = _raw(f"{base}/admin/conversations", headers=cookie)
    assert "the owner" in body  # listed, and who answers it


def test_memory_search_shows_the_owner_view_and_the_public_view(console, make_host, serve_env) -> None:
    """memory-search's ranking as the owner and as a visitor: a visitor sees the public menu, never
    the admin lead nor another visitor's conversation."""
    base = console.base
    _leave_lead(base)
    store = make_host(ACCOUNT_ID=serve_env["ACCOUNT_ID"], PLUGHOST_EMBEDDER="none").store()
    store.upsert_node(["Service"], {"name": "Wedding cakes", "description": "Three-tier wedding cakes, delivered "
                                    "on Saturdays", "scope": "public"}, guards=Principal.system(serve_env["ACCOUNT_ID"]).guards,
                      node_id="svc-wedding")
    cookie = {"Cookie": _cookie(base)}
    status, _, body = _raw(f"{base}/admin/memory?q=wedding+cakes", headers=cookie)
    assert status == 200 and "As the owner" in body and "As a public visitor would see it" in body
    owner, public = body.split("As a public visitor would see it", 1)
    assert "admin" in owner.split("As the owner", 1)[1] and ">Service<" in owner  # the lead's Task, admin-scoped
    assert ">Service<" in public and ">admin<" not in public  # the public menu only
    assert "Do you deliver wedding cakes" not in public  # a visitor never reads another's conversation
    status, _, body = _raw(f"{base}/admin/health", headers=cookie)
    assert status == 200 and "<h2>Checks before serving</h2>" in body and "admin" in body


def test_the_gates_page_shows_doctor_findings_and_runs_doctor(console, plughost_home: Path) -> None:
    from plughost.payload import doctor

    base = console.base
    cookie = {"Cookie": _cookie(base)}
    _, _, body = _raw(f"{base}/admin/health", headers=cookie)
    assert "Doctor has not run on this install yet." in body
    doctor.record(plughost_home, doctor.DoctorReport(plughost_home / "claude", problems=["settings.json: unreadable"]))
    _, _, body = _raw(f"{base}/admin/health", headers=cookie)
    assert "[doctor] FAIL settings.json: unreadable" in body and "needs attention: 1 problem</strong>" in body
    csrf = body.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    assert _raw(f"{base}/admin/health/doctor", b"csrf=nope", headers=cookie)[0] == 403
    status, _, body = _raw(f"{base}/admin/health/doctor", f"csrf={csrf}".encode(), headers=cookie)
    assert status == 409 and "run `plughost install` first" in body  # this serve has no install to check


def test_export_and_erase_a_person_from_the_console(console, serve_env) -> None:
    base = console.base
    visitor = _leave_lead(base)
    other = _leave_lead(base, "bea@example.com")  # another person: an erase of Ana never reaches her
    cookie = {"Cookie": _cookie(base)}
    _, _, page = _raw(f"{base}/admin/people", headers=cookie)
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    form = f"csrf={csrf}&kind=contact&value=ana%40example.com"
    status, headers, body = _raw(f"{base}/admin/people", f"{form}&mode=export".encode(), headers=cookie)
    assert status == 200 and headers["content-disposition"].startswith("attachment")
    assert "ana@example.com" in body and json.loads(body)["nodes"]
    status, _, body = _raw(f"{base}/admin/people", f"{form}&mode=dry-run".encode(), headers=cookie)
    assert status == 200 and "Dry run (nothing removed)" in body
    assert _raw(f"{base}/admin/people", f"{form}&mode=erase".encode(), headers=cookie)[0] == 400  # not confirmed
    status, _, body = _raw(f"{base}/admin/people", f"{form}&mode=erase&confirm=yes".encode(), headers=cookie)
    assert status == 200 and "<h2 id=\"receipt-heading\">Erased</h2>" in body
    _, _, body = _raw(f"{base}/admin/leads", headers=cookie)
    assert "ana@example.com" not in body
    assert _events(base, visitor) == []  # the whole person, every conversation: the running webchat forgot it too
    assert "bea@example.com" in body
    # an erase from a shell (another process): the server's next fresh read drops what the store lost
    assert _events(base, other)
    from tests.conftest import run_cli_process

    res = run_cli_process("erase", "--visitor", other, env=serve_env)
    assert res.returncode == 0 and res.stdout.startswith("erased: nodes="), res.stderr
    assert _events(base, other) == []


def test_conversations_are_listed_by_channel_with_who_answers(console) -> None:
    base = console.base
    _leave_lead(base)
    cookie = {"Cookie": _cookie(base)}
    status, _, body = _raw(f"{base}/admin/conversations", headers=cookie)
    assert status == 200 and "webchat" in body and "the agent" in body
    conv = body.split('href="/admin/conversations/conv-', 1)[1].split('"', 1)[0]
    _, _, page = _raw(f"{base}/admin/conversations/conv-{conv}", headers=cookie)
    assert "Please write to me at ana@example.com" in page and 'id="reply"' in page
    assert "webchat" in _raw(f"{base}/admin/conversations?channel=webchat", headers=cookie)[2].split("<tbody>", 1)[1].lower()
    status, _, body = _raw(f"{base}/admin/conversations?channel=telegram&page=1", headers=cookie)
    assert status == 200 and "No conversations on this page." in body


def test_sign_out_needs_the_form_check_and_ends_the_console_session(console) -> None:
    base = console.base
    cookie = {"Cookie": _cookie(base)}
    _, _, page = _raw(f"{base}/admin", headers=cookie)
    assert 'action="/admin/logout"' in page
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    assert csrf and _raw(f"{base}/admin/logout", b"csrf=nope", headers=cookie)[0] == 403
    status, headers, _ = _raw(f"{base}/admin/logout", f"csrf={csrf}".encode(), headers=cookie)
    assert status == 303 and headers["location"] == "/admin/login" and 'admin_session=""' in headers["set-cookie"]
    status, headers, _ = _raw(f"{base}/admin/leads", headers=cookie)  # the old cookie, kept by someone
    assert status == 303 and headers["location"].startswith("/admin/login")


def test_a_new_pin_ends_every_earlier_session(console, plughost_home: Path, serve_env) -> None:
    base = console.base
    first, second = {"Cookie": _cookie(base)}, {"Cookie": _cookie(base)}
    assert _raw(f"{base}/admin/leads", headers=first)[0] == 200
    time.sleep(0.01)
    sessions.set_pin(plughost_home, serve_env["ACCOUNT_ID"], "731904", "owner")
    for cookie in (first, second):
        status, headers, _ = _raw(f"{base}/admin/leads", headers=cookie)
        assert status == 303 and headers["location"].startswith("/admin/login")
    token = first["Cookie"].split("=", 1)[1]
    status, _, body = _raw(f"{base}/api/admin/session", headers={"Authorization": f"Bearer {token}"})
    assert status == 401 and "session-revoked" in body
    status, headers, _ = _raw(f"{base}/admin/login", b"pin=731904&next=/admin")
    assert status == 303 and _raw(f"{base}/admin", headers={"Cookie": headers["set-cookie"].split(";", 1)[0]})[0] == 200


def test_rough_input_gets_a_page_that_says_what_happened(console, plughost_home: Path) -> None:
    """An empty reply, a NUL in a reply, a hand-back of no conversation, a page that does not exist."""
    base = console.base
    visitor = _leave_lead(base)
    cookie = {"Cookie": _cookie(base)}
    _, _, body = _raw(f"{base}/admin/leads", headers=cookie)
    lead = "task-" + body.split('href="/admin/leads/task-', 1)[1].split('"', 1)[0]
    _, _, page = _raw(f"{base}/admin/leads/{lead}", headers=cookie)
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    status, headers, _ = _raw(f"{base}/admin/leads/{lead}/reply", f"csrf={csrf}&text=+%0A+".encode(), headers=cookie)
    assert status == 303 and headers["location"].endswith("?notice=empty")
    assert "Write a reply first" in _raw(base + headers["location"], headers=cookie)[2]
    status, _, _ = _raw(f"{base}/admin/leads/{lead}/reply", f"csrf={csrf}&text=hi%00there%07".encode(), headers=cookie)
    assert status == 303
    assert [e["text"] for e in _events(base, visitor)][-1] == "hithere"
    status, _, body = _raw(f"{base}/admin/conversations/conv-nope/hand-back", f"csrf={csrf}".encode(), headers=cookie)
    assert status == 404 and "does not exist" in body
    status, headers, body = _raw(f"{base}/admin/nope/deeper", headers=cookie)
    assert status == 404 and "There is no such console page." in body and "script-src 'none'" in headers[
        "content-security-policy"]
    assert _raw(f"{base}/admin/nope")[0] == 303  # signed out: the login first, as every page


def test_the_console_refuses_a_narrowed_server_and_names_a_missing_pin(plughost_home: Path, serve_env) -> None:
    from plughost.runtime import accounts

    narrowed = start_serve(env={**serve_env, "ALLOWED_SCOPES": "public", "PLUGHOST_AGENT": "memory"})
    try:
        base = narrowed.base
        for path in ("/admin/login", "/admin/conversations", "/admin"):
            status, _, body = _raw(base + path)
            assert status == 403 and "This server is narrowed" in body, path
        assert _raw(f"{base}/admin/login", b"pin=" + PIN.encode())[0] == 403
    finally:
        narrowed.terminate()
    accounts.create_account("nopin", plughost_home)
    server = start_serve(env={**serve_env, "ACCOUNT_ID": "nopin", "PLUGHOST_AGENT": "memory"})
    try:
        status, _, body = _raw(f"{server.base}/admin/login", b"pin=123456&next=/admin")
        assert status == 401 and "run `plughost admin set-pin nopin`" in body
    finally:
        server.terminate()
