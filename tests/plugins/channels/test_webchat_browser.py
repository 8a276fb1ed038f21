"""The webchat page in headless Chromium: type a message into the page, see the agent's reply."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from channels_support import channel_host, serve

from plughost.plugins.channels.server import build_app
from tests.conftest import which_or_skip

pytestmark = pytest.mark.e2e  # end to end: -m "not e2e" leaves it out locally; CI runs it


def dump_dom(chromium: str, url: str, tmp_path: Path) -> str:
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-dev-shm-usage", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=600000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.parametrize("transport", ["poll", "sse"])
def test_browser_types_and_sees_reply(make_host, account, tmp_path: Path, transport: str) -> None:
    chromium = which_or_skip("chromium")
    host = channel_host(make_host, tmp_path)
    with serve(build_app(host)) as base:
        dom = dump_dom(chromium, f"{base}/channels/webchat?transport={transport}#say=Hi%20from%20the%20browser",
                       tmp_path)
    assert 'class="user" data-seq="1">Hi from the browser</li>' in dom
    assert 'class="assistant" data-seq="2">echo: Hi from the browser</li>' in dom


HOSTILE_AGENT = r'''
import sys, time
sys.stdin.read()
time.sleep(1.5)  # long enough to see the typing indicator
print("Our menu: https://example.com/menu?cake=1&size=2.\nSecond line <b>not bold</b> <img src=x onerror=alert(1)>"
      "<script>window.pwned = 1</script>")
'''


def test_product_page_on_a_phone_by_keyboard(make_host, account, tmp_path: Path) -> None:
    """A person on a phone: the brand and greeting, Enter sends, a typing indicator, a safely rendered
    reply (a link, a line break, markup shown as text), a visible error once the server is gone."""
    from browser import Browser

    chromium = which_or_skip("chromium")
    agent = tmp_path / "hostile_agent.py"
    agent.write_text(HOSTILE_AGENT)
    host = channel_host(make_host, tmp_path, PLUGHOST_AGENT_COMMAND=f"{sys.executable} -S {agent}")
    browser = Browser(chromium, tmp_path / "profile")
    try:
        with serve(build_app(host)) as base:
            browser.open(f"{base}/channels/webchat")
            assert browser.eval("document.getElementById('product').textContent") == "plughost"
            assert browser.eval("document.title") == "plughost · Chat"
            assert "welcome to plughost" in browser.eval("document.querySelector('#log li.greeting').textContent")
            assert browser.eval("document.activeElement.id") == "text"  # ready to type
            browser.type("Do you have a menu?")
            browser.press_enter()
            assert browser.wait("!!document.querySelector('#log li.typing')", timeout=10)
            browser.wait("document.body.getAttribute('data-replied') === 'yes'", timeout=30)
            assert not browser.eval("!!document.querySelector('#log li.typing')")
            reply = browser.eval("(() => { const li = [...document.querySelectorAll('#log li.assistant')].pop();"
                                 " return {text: li.textContent, html: li.innerHTML,"
                                 " links: [...li.querySelectorAll('a')].map(a => [a.href, a.target, a.rel]),"
                                 " tags: [...li.querySelectorAll('*')].map(e => e.tagName)}; })()")
            assert reply["links"] == [["https://example.com/menu?cake=1&size=2", "_blank", "noopener noreferrer nofollow"]]
            assert reply["tags"] == ["A"]  # no <b>, <img> or <script> made it into the page
            assert "\nSecond line <b>not bold</b> <img src=x onerror=alert(1)>" in reply["text"]
            assert browser.eval("window.pwned === undefined")
            assert browser.eval("getComputedStyle(document.querySelector('#log li.assistant:last-child')).whiteSpace") \
                == "pre-wrap"  # the line break shows as one
            assert browser.eval("document.documentElement.scrollWidth") <= 390  # no sideways scrolling on a phone
            assert browser.eval("document.activeElement.id") == "text"
            shot = browser.screenshot(tmp_path / "webchat-phone.png")
            print(f"screenshot: {shot}")
        # the server is gone: the next message shows a visible error and stays in the box
        browser.type("Are you still there?")
        browser.press_enter()
        error = browser.wait("document.getElementById('error').classList.contains('shown')"
                             " && document.getElementById('error').textContent", timeout=20)
        assert "Can't reach the chat server" in error
        assert browser.eval("document.getElementById('text').value") == "Are you still there?"
        assert browser.eval("getComputedStyle(document.getElementById('error')).display") == "block"
        print(f"screenshot: {browser.screenshot(tmp_path / 'webchat-unreachable.png')}")
    finally:
        browser.close()
