"""The console's public-agent page: the owner reads what the public agent knows, edits its files
(CSRF-checked, bad front matter refused in one line), and a save assembles its knowledge again."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from plughost.plugins.admin import sessions
from plughost.runtime import agent_files as af
from plughost.runtime.tooltable import call_tool
from tests.plugins.admin.test_console import PIN, _cookie, _raw

ACCOUNT = "acct-agents"


@pytest.fixture
def site(make_host, live_app, plughost_home: Path) -> Any:
    from plughost.runtime.accounts import create_account

    folder = create_account(ACCOUNT, plughost_home)
    data = json.loads((folder / "account.json").read_text())
    (folder / "account.json").write_text(json.dumps({**data, "publicAgent": "counter"}))
    af.write_file(plughost_home, ACCOUNT, "counter", af.IDENTITY, "---\nkeywords: [bread]\n---\nYou are the counter.\n")
    sessions.set_pin(plughost_home, ACCOUNT, PIN, "owner")
    host = make_host(ACCOUNT_ID=ACCOUNT)
    call_tool(host, "memory", "memory-ingest", {"attachmentId": "cakes", "scope": "public",
                                                "content": "# Cakes\n\nBirthday cakes take two days.\n"})
    return live_app(host)


def _csrf(body: str) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', body).group(1)  # type: ignore[union-attr]


def test_the_owner_reads_and_edits_what_the_public_agent_knows(site, plughost_home: Path) -> None:
    base = site.base
    cookie = {"Cookie": _cookie(base)}
    assert "No public document matches this agent's keywords (bread) yet." in (af.knowledge(
        plughost_home, ACCOUNT, "counter") or "")  # the public ingest assembled it
    (af.agent_dir(plughost_home, ACCOUNT, "counter") / af.KNOWLEDGE).unlink()
    status, _, body = _raw(f"{base}/admin/agents", headers=cookie)
    assert status == 200 and 'href="/admin/agents/counter"' in body and "(answers visitors)" in body
    assert "missing: KNOWLEDGE.md" in body and "bread" in body
    status, _, page = _raw(f"{base}/admin/agents/counter", headers=cookie)
    assert status == 200 and "You are the counter." in page and "Missing: KNOWLEDGE.md" in page
    csrf = _csrf(page)
    # the owner subscribes the agent to cakes: saved, and its knowledge assembled at once
    form = urlencode({"csrf": csrf, "text": "---\nkeywords: [cakes]\n---\nYou are the counter.\n"}).encode()
    status, headers, _ = _raw(f"{base}/admin/agents/counter/files/IDENTITY.md", form, headers=cookie)
    assert status == 303 and headers["location"] == "/admin/agents/counter?notice=saved"
    knowledge = af.knowledge(plughost_home, ACCOUNT, "counter") or ""
    assert "Birthday cakes take two days." in knowledge
    _, _, page = _raw(f"{base}/admin/agents/counter?notice=saved", headers=cookie)
    assert "Birthday cakes take two days." in html.unescape(page) and "Missing:" not in page
    # the owner's own note in KNOWLEDGE.md survives the next assembling
    form = urlencode({"csrf": csrf, "text": "Ask for Maria.\n\n" + knowledge}).encode()
    assert _raw(f"{base}/admin/agents/counter/files/KNOWLEDGE.md", form, headers=cookie)[0] == 303
    status, headers, _ = _raw(f"{base}/admin/agents/counter/rebuild", urlencode({"csrf": csrf}).encode(), headers=cookie)
    assert status == 303 and headers["location"].endswith("notice=rebuilt")
    text = af.knowledge(plughost_home, ACCOUNT, "counter") or ""
    assert text.startswith("Ask for Maria.\n\n") and "Birthday cakes take two days." in text


def test_a_forged_or_bad_edit_is_refused_in_one_line(site, plughost_home: Path) -> None:
    base = site.base
    cookie = {"Cookie": _cookie(base)}
    before = (af.agent_dir(plughost_home, ACCOUNT, "counter") / af.IDENTITY).read_text()
    form = urlencode({"csrf": "0" * 40, "text": "hijacked"}).encode()
    assert _raw(f"{base}/admin/agents/counter/files/IDENTITY.md", form, headers=cookie)[0] == 403
    csrf = _csrf(_raw(f"{base}/admin/agents/counter", headers=cookie)[2])
    form = urlencode({"csrf": csrf, "text": "---\nkeywords: [a\n---\n"}).encode()
    status, _, body = _raw(f"{base}/admin/agents/counter/files/IDENTITY.md", form, headers=cookie)
    assert status == 400 and "IDENTITY.md: front matter: invalid YAML" in body
    status, _, body = _raw(f"{base}/admin/agents/counter/files/notes.txt", urlencode({"csrf": csrf, "text": "x"}).encode(),
                           headers=cookie)
    assert status == 400 and "&#39;notes.txt&#39; is not an agent file" in body
    assert _raw(f"{base}/admin/agents/stranger", headers=cookie)[0] == 404
    assert (af.agent_dir(plughost_home, ACCOUNT, "counter") / af.IDENTITY).read_text() == before
