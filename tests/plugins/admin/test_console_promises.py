"""What the owner and a visitor are promised on a real `plughost serve` with the default runner:
an owner's reply to a visitor who left waits for them and reaches them when they come back from
the same browser (the console says whether it was seen, and the contact to use until then); a
contact is asked for once and later questions join the lead; while the owner holds the
conversation the visitor is told once that a person answers; a returning visitor is known."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

import pytest

from plughost import Principal
from plughost.plugins.admin import sessions
from plughost.plugins.channels.memory_runner import DONT_KNOW
from plughost.plugins.channels.webchat import LIVE_S
from tests.plugins.admin.test_console import PIN, _cookie, _events, _post, _raw, _wait_events
from tests.support.serve_helpers import start_serve


@pytest.fixture
def console(plughost_home: Path, serve_env: dict[str, str]) -> Any:
    sessions.set_pin(plughost_home, serve_env["ACCOUNT_ID"], PIN, "owner")
    server = start_serve(env={**serve_env, "PLUGHOST_AGENT": "memory", "PLUGHOST_EMBEDDER": "none"})
    yield server
    server.terminate()


def _say(base: str, session: str, visitor: str, text: str, replies: int) -> dict[str, Any]:
    answer = _post(base, "/channels/webchat/messages", {"session": session, "visitor": visitor, "text": text})
    if replies:
        _wait_events(base, session, replies)
    return answer


def _until(predicate: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("never happened")


def test_an_owner_reply_to_a_visitor_who_left_reaches_them_on_their_return(console, plughost_home: Path) -> None:
    base = console.base
    browser, tab = "browser-" + secrets.token_hex(12), "visitor-" + secrets.token_hex(6)
    _say(base, tab, browser, "Can you bake a cake for 80 guests on 4 March?", 1)
    _say(base, tab, browser, "ana@example.com", 2)
    _say(base, tab, browser, "Do you also do gluten-free cupcakes for the kids?", 3)
    later = [e["text"] for e in _events(base, tab) if e["role"] == "assistant"][-1]
    assert "ana@example.com" in later and "email or phone" not in later and later != DONT_KNOW
    cookie = {"Cookie": _cookie(base)}
    _, _, body = _raw(f"{base}/admin/leads", headers=cookie)
    assert body.count('href="/admin/leads/task-') == 1  # one lead, both questions on it
    lead = body.split('href="/admin/leads/task-', 1)[1].split('"', 1)[0]
    _, _, page = _raw(f"{base}/admin/leads/task-{lead}", headers=cookie)
    assert "80 guests" in page and "gluten-free cupcakes" in page and "Questions (2)" in page
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]

    time.sleep(LIVE_S + 0.5)  # the visitor closed the tab: nobody reads their chat now
    status, headers, _ = _raw(f"{base}/admin/leads/task-{lead}/reply",
                              f"csrf={csrf}&text=Yes+we+can%2C+Ana.+The+owner.".encode(), headers=cookie)
    assert status == 303 and headers["location"].endswith("?notice=waiting")
    _, _, page = _raw(f"{base}/admin/leads/task-{lead}?notice=waiting", headers=cookie)
    assert "not on the chat now" in page and "not seen by the visitor yet" in page and "ana@example.com" in page

    # someone else's browser reopens nothing; the same browser reopens the conversation holding the reply
    assert _post(base, "/channels/webchat/resume", {"visitor": "stranger-" + secrets.token_hex(12)}) == {"session": None}
    assert _post(base, "/channels/webchat/resume", {"visitor": browser}) == {"session": tab}
    owner = [e for e in _events(base, tab) if e.get("from") == "owner"]
    assert [e["text"] for e in owner] == ["Yes we can, Ana. The owner."] and owner[0]["role"] == "assistant"
    assert owner[0]["by"]  # the business's name, for the page's "From …" label
    _, _, page = _raw(f"{base}/admin/leads/task-{lead}", headers=cookie)
    assert "seen by the visitor" in page and "not seen by the visitor yet" not in page

    # the owner holds the conversation: the visitor is told once that a person answers, no agent reply
    answer = _say(base, tab, browser, "Lovely! Chocolate, please.", 0)
    assert answer["held"] is True
    notices = _until(lambda: [e for e in _events(base, tab) if e["role"] == "notice"])
    assert len(notices) == 1 and "will answer you here" in notices[0]["text"]
    _say(base, tab, browser, "And a candle shaped like an 8?", 0)
    log = plughost_home / "logs" / "server.log"
    _until(lambda: log.read_text(errors="replace").count("op=held-by-owner") >= 2)
    assert len([e for e in _events(base, tab) if e["role"] == "notice"]) == 1
    assert "ana@example.com" not in log.read_text(errors="replace")  # no contact in the log


def test_an_owner_reply_that_cannot_be_sent_names_the_contact_to_use(console, make_host, serve_env) -> None:
    """A Telegram visitor's lead on a server whose Telegram cannot send (no bot token here): the
    reply is kept, marked failed, and the page says so with the number they left."""
    from plughost.ports.graph import Guards

    account = serve_env["ACCOUNT_ID"]
    store = make_host(ACCOUNT_ID=account, PLUGHOST_EMBEDDER="none").store()
    inputs = {"question": "Can I order a cake for Friday?", "contact": "+44 7700 900123", "channel": "telegram",
              "sender": "4242"}
    store.upsert_node(["Task"], {"kind": "follow-up", "title": "Follow up: a cake for Friday", "status": "open",
                                 "startedAt": "2026-03-04T10:00:00Z", "inputs": json.dumps(inputs), "scope": "admin"},
                      guards=Principal.system(account).guards, node_id="task-tg-lead")
    base, cookie = console.base, {"Cookie": _cookie(console.base)}
    _, _, page = _raw(f"{base}/admin/leads/task-tg-lead", headers=cookie)
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    status, headers, _ = _raw(f"{base}/admin/leads/task-tg-lead/reply", f"csrf={csrf}&text=Yes+we+can".encode(),
                              headers=cookie)
    assert status == 303 and headers["location"].endswith("?notice=failed")
    _, _, page = _raw(base + headers["location"], headers=cookie)
    assert "could not be sent. Reach them at +44 7700 900123." in page
    replies = [n for n in store.find(guards=Guards(account), labels=["Message"], where={"text": "Yes we can"})]
    assert [n.properties.get("deliveryStatus") for n in replies] == ["failed"]


def test_a_returning_visitor_is_known_by_the_default_runner(console) -> None:
    base = console.base
    browser = "browser-" + secrets.token_hex(12)
    first, second = "visitor-" + secrets.token_hex(6), "visitor-" + secrets.token_hex(6)
    _say(base, first, browser, "Hi, my name is Ana and I live in Lisbon.", 1)
    assert _post(base, "/channels/webchat/resume", {"visitor": browser}) == {"session": None}  # nothing waits
    for body in (b'{"visitor": "short"}', b"[]", b"{"):
        status, _, text = _raw(f"{base}/channels/webchat/resume", body, {"Content-Type": "application/json"})
        assert status == 400 and set(json.loads(text)) == {"error", "detail"}
    _say(base, second, browser, "What is my name?", 1)
    reply = [e["text"] for e in _events(base, second) if e["role"] == "assistant"][-1]
    assert "Ana" in reply, reply
    stranger = "visitor-" + secrets.token_hex(6)
    _say(base, stranger, "browser-" + secrets.token_hex(12), "What is my name?", 1)
    assert "Ana" not in json.dumps(_events(base, stranger))


def test_a_returning_visitors_earlier_order_is_on_their_lead(console) -> None:
    """The order a visitor described on an earlier visit (no contact left then) is on the lead they
    leave on a later one, with a link to that conversation; another visitor's lead shows none of it."""
    base = console.base
    browser = "browser-" + secrets.token_hex(12)
    first, second = "visitor-" + secrets.token_hex(6), "visitor-" + secrets.token_hex(6)
    _say(base, first, browser, "Hi, my name is Ana. I need a cake for 80 guests on 4 March.", 1)
    _say(base, second, browser, "Can you make a cake shaped like a lighthouse?", 1)  # a new tab ends the first visit
    _say(base, second, browser, "ana@example.com", 2)
    stranger, theirs = "visitor-" + secrets.token_hex(6), "browser-" + secrets.token_hex(12)
    _say(base, stranger, theirs, "Can you make a cake shaped like a windmill?", 1)
    _say(base, stranger, theirs, "bo@example.com", 2)
    cookie = {"Cookie": _cookie(base)}
    _, _, body = _raw(f"{base}/admin/leads", headers=cookie)
    ids = [part.split('"', 1)[0] for part in body.split('href="/admin/leads/task-')[1:]]
    pages = {}
    for lead in dict.fromkeys(ids):
        page = _raw(f"{base}/admin/leads/task-{lead}", headers=cookie)[2]
        pages["ana" if "ana@example.com" in page else "bo"] = page
    assert set(pages) == {"ana", "bo"}
    told = pages["ana"].split("What this visitor told us before", 1)[1].split("</ul>", 1)[0]
    assert "80 guests" in told and 'href="/admin/conversations/conv-' in told
    conv = told.split('href="/admin/conversations/', 1)[1].split('"', 1)[0]
    page = _raw(f"{base}/admin/conversations/{conv}", headers=cookie)[2]  # one visitor message: no Conversation node
    assert "80 guests" in page and 'id="reply"' in page
    assert _raw(f"{base}/admin/conversations/conv-{'0' * 32}", headers=cookie)[0] == 404  # no Messages: none
    assert "What this visitor told us before" not in pages["bo"] and "80 guests" not in pages["bo"]


OWNER_REPLY = "Yes, we can bake it for 80 guests. The owner."
LAST_OWNER = "(() => { const li = [...document.querySelectorAll('#log li.owner')].pop(); " \
             "return li ? li.textContent : ''; })()"
LAST_REPLY = "(() => { const li = [...document.querySelectorAll('#log li.assistant:not(.typing)')].pop(); " \
             "return li ? li.textContent : ''; })()"


def _types(visitor: Any, text: str) -> None:
    before = visitor.eval("document.querySelectorAll('#log li.assistant:not(.typing):not(.greeting)').length")
    visitor.eval("document.getElementById('text').focus()")
    visitor.type(text)
    visitor.press_enter()
    visitor.wait(f"document.querySelectorAll('#log li.assistant:not(.typing):not(.greeting)').length > {before}",
                 timeout=60)


def _return(visitor: Any, base: str) -> None:
    """The visitor comes back in the same browser: a new tab (no session of its own), the old one closed."""
    old = visitor.page
    visitor.page = visitor.context.new_page()
    old.close()
    visitor.open(f"{base}/channels/webchat")


@pytest.mark.e2e
def test_a_visitor_who_left_sees_the_owners_reply_on_return_in_chromium(console, tmp_path: Path) -> None:
    """Chromium: the visitor asks, leaves an email and a second question, closes the tab; the owner
    (another Chromium) answers from the lead; the visitor opens the chat again in the same browser
    and sees the reply marked as the owner's; the console then says it was seen; after the hand-back
    a new visit asks "What is my name?" and is answered."""
    from browser import Browser

    from tests.conftest import which_or_skip

    chromium = which_or_skip("chromium")
    base = console.base
    screens = tmp_path / "screens"
    screens.mkdir()
    visitor = Browser(chromium, tmp_path / "visitor")
    owner = None
    try:
        visitor.open(f"{base}/channels/webchat")
        _types(visitor, "Hi, my name is Ana and I live in Lisbon.")
        _types(visitor, "Can you bake a cake for 80 guests on 4 March?")
        _types(visitor, "ana@example.com")
        _types(visitor, "Do you also do gluten-free cupcakes for the kids?")
        joined = visitor.eval(LAST_REPLY)
        assert "ana@example.com" in joined and "email or phone" not in joined
        visitor.screenshot(screens / "0-visitor-before-leaving.png")
        visitor.page.close()  # the visitor leaves
        visitor.page = visitor.context.new_page()
        time.sleep(LIVE_S + 0.5)

        owner = Browser(chromium, tmp_path / "owner", width=1000, height=900)
        owner.open(f"{base}/admin/leads")
        owner.wait("location.pathname === '/admin/login' && document.activeElement.id === 'pin'")
        owner.type(PIN)
        owner.press_enter()
        owner.wait("location.pathname === '/admin/leads' && !!document.querySelector('tbody a')")
        assert owner.eval("document.querySelectorAll('tbody tr').length") == 1  # one lead for both questions
        owner.eval("document.querySelector('tbody a').click()")
        owner.wait("location.pathname.startsWith('/admin/leads/task-') && !!document.getElementById('reply')")
        page = owner.eval("document.querySelector('main').innerText")
        assert "80 guests" in page and "gluten-free cupcakes" in page
        owner.eval("document.getElementById('reply').focus()")
        owner.type(OWNER_REPLY)
        owner.eval("document.getElementById('reply').form.querySelector('button').click()")
        owner.wait("new URLSearchParams(location.search).get('notice') === 'waiting'")
        main = owner.eval("document.querySelector('main').innerText")
        assert "not seen by the visitor yet" in main and "ana@example.com" in main
        owner.screenshot(screens / "1-owner-reply-waiting.png")

        _return(visitor, base)
        visitor.wait(f"{LAST_OWNER} === {json.dumps(OWNER_REPLY)}", timeout=30)
        label = visitor.eval("document.querySelector('#log li.owner').getAttribute('data-label')")
        assert label.startswith("From ")
        visitor.screenshot(screens / "2-visitor-sees-the-owner.png")

        owner.open(base + owner.eval("location.pathname"))
        owner.wait("document.querySelector('main').innerText.includes('seen by the visitor 20')")
        owner.eval("[...document.querySelectorAll('form')].find(f => f.action.endsWith('/hand-back'))"
                   ".querySelector('button').click()")
        owner.wait("!document.querySelector('main').innerText.includes('Hand back to the agent')")

        _return(visitor, base)  # nothing waits now: a new conversation, and the runner knows them
        _types(visitor, "What is my name?")
        assert "Ana" in visitor.eval(LAST_REPLY)
        visitor.screenshot(screens / "3-visitor-known-on-return.png")
    finally:
        visitor.close()
        if owner is not None:
            owner.close()
