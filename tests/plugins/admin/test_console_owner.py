"""The console as a shop owner reads it, on a real `plughost serve`: the brand's name on every
page, conversations by their first question and contact (a returning visitor's grouped), leads
linked to their conversation, gates and doctor in words, log lines with their times, memory
rows by name; the login lockout says when to try again."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import pytest

from plughost.plugins.admin import sessions
from tests.plugins.admin.test_console import PIN, _cookie, _post, _raw, _wait_events
from tests.support.serve_helpers import start_serve

BRAND = "Harbour Street Bakery"  # host/manifests/brands/bakery.json's productName


@pytest.fixture
def console(plughost_home: Path, serve_env: dict[str, str]) -> Any:
    sessions.set_pin(plughost_home, serve_env["ACCOUNT_ID"], PIN, "owner")
    server = start_serve(env={**serve_env, "PLUGHOST_AGENT": "memory", "PLUGHOST_EMBEDDER": "none",
                              "PLUGHOST_BRAND": "bakery"})
    yield server
    server.terminate()


def test_every_console_page_carries_the_brand_name_and_the_lockout_says_when(console) -> None:
    base = console.base
    _, _, body = _raw(f"{base}/admin/login")
    assert f"<title>Sign in · {BRAND}</title>" in body and "plughost console" not in body
    cookie = {"Cookie": _cookie(base)}
    for path in ("/admin", "/admin/leads", "/admin/conversations", "/admin/health", "/admin/logs", "/admin/nope"):
        body = _raw(base + path, headers=cookie)[2]
        assert BRAND in body.split("</header>", 1)[0] and "plughost console" not in body, path
    statuses = [_raw(f"{base}/admin/login", b"pin=000000&next=/admin")[0] for _ in range(6)]
    assert statuses[:5] == [401] * 5 and statuses[5] == 429
    status, headers, body = _raw(f"{base}/admin/login", b"pin=000000&next=/admin")
    assert status == 429 and int(headers["retry-after"]) > 0 and "locked" in body


def _say(base: str, session: str, browser: str, text: str, replies: int) -> None:
    _post(base, "/channels/webchat/messages", {"session": session, "visitor": browser, "text": text})
    _wait_events(base, session, replies)


def test_conversations_read_by_first_question_contact_and_person(console) -> None:
    """A returning visitor (the same browser, two visits) is one person with two conversations,
    named by the contact their lead holds; another visitor stands alone; each row starts with the
    visitor's first question and counts the messages; the lead links to its conversation."""
    base = console.base
    browser = "browser-" + secrets.token_hex(12)
    first, second, other = ("visitor-" + secrets.token_hex(6) for _ in range(3))
    _say(base, first, browser, "Can you bake a cake for 80 guests on 4 March?", 1)
    _say(base, first, browser, "Write to me at ana@example.com", 2)
    _say(base, second, browser, "Do you also make gluten-free cupcakes for children's parties?", 1)
    _say(base, second, browser, "Thanks!", 2)
    _say(base, other, "browser-" + secrets.token_hex(12), "Are you open on Sundays?", 1)
    _say(base, other, "browser-" + secrets.token_hex(12), "ok", 2)
    cookie = {"Cookie": _cookie(base)}
    status, _, body = _raw(f"{base}/admin/conversations", headers=cookie)
    assert status == 200
    people = body.split('<section class="person"')[1:]
    assert len(people) == 2
    ana = next(p for p in people if "ana@example.com" in p.split("</h2>", 1)[0])
    assert "2 conversations" in ana and ana.count('href="/admin/conversations/conv-') == 2
    assert "Can you bake a cake for 80 guests on 4 March?" in ana and "gluten-free cupcakes" in ana
    assert '<td data-label="Messages">4</td>' in ana
    alone = next(p for p in people if p is not ana)
    assert "1 conversation<" in alone and "Are you open on Sundays?" in alone and "Webchat visitor" in alone
    assert "visitor-" not in body.split("<main", 1)[1].split("</h1>", 1)[0]
    _, _, leads = _raw(f"{base}/admin/leads", headers=cookie)
    conv = leads.split('href="/admin/conversations/', 1)[1].split('"', 1)[0]
    _, _, page = _raw(f"{base}/admin/conversations/{conv}", headers=cookie)
    assert "80 guests" in page and "ana@example.com" in page


def test_gates_and_doctor_speak_plainly_and_doctor_runs_in_the_background(plughost_home: Path, serve_env,
                                                                          tmp_path: Path) -> None:
    """The state matches the findings (never "ok" above a count); each gate and finding says what
    it means; "Run doctor now" answers at once and the page shows the run, then its result."""
    from plughost.payload import doctor

    claude = tmp_path / "claude"
    claude.mkdir()  # an install folder with no servers in it: doctor finds that
    sessions.set_pin(plughost_home, serve_env["ACCOUNT_ID"], PIN, "owner")
    server = start_serve(env={**serve_env, "PLUGHOST_AGENT": "memory", "PLUGHOST_EMBEDDER": "none",
                              "CLAUDE_CONFIG_DIR": str(claude)})
    try:
        base = server.base
        cookie = {"Cookie": _cookie(base)}
        _, _, body = _raw(f"{base}/admin/health", headers=cookie)
        # an install folder without servers: the tool-registration gate warns, and the state says so
        assert "State: <strong>needs attention</strong>: 1 thing to look at" in body and "Status: ok" not in body
        assert body.count('<li class="attention">') == 1 and "(tool-registration)" in body
        assert "<strong>Fine</strong>: Every plugin started." in body and "Doctor has not run on this install yet." in body
        report = doctor.DoctorReport(claude, problems=["settings.json: unreadable", "a", "b"])
        doctor.record(plughost_home, report)
        _, _, body = _raw(f"{base}/admin/health", headers=cookie)
        assert "State: <strong>needs attention</strong>: 4 things" in body and "all good" not in body
        assert "needs attention: 3 problems</strong>" in body
        csrf = body.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        status, headers, _ = _raw(f"{base}/admin/health/doctor", f"csrf={csrf}".encode(), headers=cookie)
        assert status == 303 and headers["location"] == "/admin/health?notice=started"
        deadline = time.monotonic() + 60
        while True:  # the page answers while doctor runs ("running… (started HH:MM)"), then shows its result
            _, _, body = _raw(f"{base}/admin/health", headers=cookie)
            if "Doctor is running…" not in body and "No assistant servers are installed" in body:
                break
            assert "Doctor is running… (started " in body or "Doctor is running" not in body
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
        assert "Run plughost install." in body and "needs attention: 1 problem</strong>" in body
    finally:
        server.terminate()


def test_memory_rows_are_titled_by_what_they_say_never_by_id() -> None:
    from plughost.plugins.admin.console.pages import node_title

    assert node_title(["Service"], {"name": "Wedding cakes", "text": "x"}) == "Wedding cakes"
    long = "Do you deliver three-tier wedding cakes to the harbour on Saturday mornings before nine o'clock?"
    assert node_title(["Message"], {"text": long}).endswith("…") and len(node_title(["Message"], {"text": long})) <= 61
    assert node_title(["Chunk"], {"id": "chunk-9f2"}) == "An untitled Chunk"


@pytest.mark.e2e
def test_an_owner_walks_through_the_console_on_a_phone(console, tmp_path: Path) -> None:
    """Chromium at 390×844: sign in, conversations grouped with previews, a lead linked to its
    conversation, gates in words, logs; no page scrolls sideways. Screenshots stay under the
    test's tmp dir, and are copied to PLUGHOST_SCREENSHOTS_DIR when it is set."""
    import os
    import shutil

    from browser import Browser

    from tests.conftest import which_or_skip

    chromium = which_or_skip("chromium")
    base = console.base
    browser_key = "browser-" + secrets.token_hex(12)
    first, second = ("visitor-" + secrets.token_hex(6) for _ in range(2))
    _say(base, first, browser_key, "Can you bake a cake for 80 guests on 4 March?", 1)
    _say(base, first, browser_key, "Write to me at ana@example.com", 2)
    _say(base, second, browser_key, "Do you also make gluten-free cupcakes?", 1)
    _say(base, second, browser_key, "Thanks!", 2)
    screens = tmp_path / "screens"
    screens.mkdir()
    (tmp_path / "owner").mkdir()
    owner = Browser(chromium, tmp_path / "owner", width=390, height=844)
    fits = "document.documentElement.scrollWidth <= 390"
    try:
        owner.open(f"{base}/admin/conversations")
        owner.wait("location.pathname === '/admin/login' && document.activeElement.id === 'pin'")
        assert BRAND in owner.eval("document.title") and owner.eval(fits)
        owner.screenshot(screens / "1-login.png")
        owner.type(PIN)
        owner.press_enter()
        owner.wait("location.pathname === '/admin/conversations' && !!document.querySelector('section.person')")
        text = owner.eval("document.querySelector('main').innerText")
        assert "ana@example.com" in text and "2 conversations" in text and "80 guests" in text
        assert owner.eval(fits)
        owner.screenshot(screens / "2-conversations.png")
        owner.open(f"{base}/admin/leads")
        owner.wait("!!document.querySelector('td[data-label=\"Conversation\"] a')")
        assert owner.eval(fits)
        owner.screenshot(screens / "3-leads.png")
        owner.eval("document.querySelector('td[data-label=\"Conversation\"] a').click()")
        owner.wait("location.pathname.startsWith('/admin/conversations/conv-')")
        assert "80 guests" in owner.eval("document.querySelector('main').innerText") and owner.eval(fits)
        owner.screenshot(screens / "4-conversation.png")
        owner.open(f"{base}/admin/health")
        text = owner.eval("document.querySelector('main').innerText")
        assert "State:" in text and "Status: ok" not in text and "Every plugin started." in text
        assert owner.eval(fits)
        owner.screenshot(screens / "5-gates.png")
        owner.open(f"{base}/admin/logs")
        assert "[console] op=login" in owner.eval("document.querySelector('main').innerText") and owner.eval(fits)
        owner.screenshot(screens / "6-logs.png")
    finally:
        owner.close()
    assert len(list(screens.glob("*.png"))) == 6
    keep = os.environ.get("PLUGHOST_SCREENSHOTS_DIR")
    if keep:
        target = Path(keep) / "console-walkthrough"
        target.mkdir(parents=True, exist_ok=True)
        for shot in screens.glob("*.png"):
            shutil.copy2(shot, target / shot.name)
