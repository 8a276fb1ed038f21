"""The webchat page in headless Chromium: type a message into the page, see the agent's reply."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from channels_support import channel_host, serve

from plugins.channels.server import build_app
from tests.conftest import which_or_skip


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
