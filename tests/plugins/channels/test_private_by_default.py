"""The newcomer's case through the real webchat: a note ingested without ``--scope`` and a
``graph import`` line without ``scope`` (both through the real CLI) are private, so an anonymous
visitor asking the memory agent gets its don't-know line; the demo's public documents are still
answered; the owner (admin role) still gets the private answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from channels_support import ACCOUNT, agent_turn, serve
from run_support import ask

from plughost.plugins.channels.memory_runner import DONT_KNOW
from plughost.plugins.channels.runner_choice import get_runner
from plughost.plugins.channels.server import build_app
from plughost.ports.graph import Guards
from plughost.serve.app import build_app as serve_app
from tests.conftest import run_cli

WIFI = "The staff wifi password is croissant42."
DISCOUNT = "Millbrook Flour gives us a supplier discount of 12 percent on orders above 40 sacks."


@pytest.mark.parametrize("front", ["channels-app", "serve-app"])
def test_unscoped_writes_stay_private_in_the_webchat(make_host, account, tmp_path: Path, front: str) -> None:
    """``serve-app`` is the whole app ``plughost serve`` runs, its front door included (whose
    per-request principal once reached the visitor's host and answered as the owner)."""
    note = tmp_path / "staff.md"
    note.write_text(f"# Staff notes\n\n## Wifi\n\n{WIFI}\n")
    ingested = run_cli("memory", "ingest", str(note))  # no --scope, as a new user types it
    assert ingested.returncode == 0, ingested.stderr
    lines = tmp_path / "suppliers.jsonl"
    lines.write_text(json.dumps({"id": "supplier-millbrook", "labels": ["Organization"],
                                 "properties": {"name": "Millbrook Flour supplier discount",
                                                "description": DISCOUNT}}) + "\n")  # no "scope"
    imported = run_cli("graph", "import", str(lines), "--no-progress")
    assert imported.returncode == 0, imported.stderr
    demo = run_cli("demo")  # the demo seeds this account (ACCOUNT_ID): its documents are public
    assert demo.returncode == 0, demo.stderr

    host = make_host(PLUGHOST_AGENT="memory")
    store = host.store()
    assert store.get("supplier-millbrook", guards=Guards(ACCOUNT)).properties["scope"] == "admin"
    docs = store.find(guards=Guards(ACCOUNT), labels=["KnowledgeDocument"], where={"title": "Staff notes"})
    assert [d.properties.get("scope") for d in docs] == ["admin"]

    app = build_app(host) if front == "channels-app" else serve_app(host, mcp=False)
    with serve(app) as base:
        reply, session, after, _ = ask(base, "What is the staff wifi password?", None, 0)
        assert reply == DONT_KNOW and "croissant42" not in reply
        reply, session, after, _ = ask(base, "What supplier discount does Millbrook Flour give?", session, after)
        assert reply == DONT_KNOW and "12 percent" not in reply
        reply, session, after, _ = ask(base, "What are your opening hours?", session, after)
        assert "Tuesday to Saturday from 7:00 to 16:00" in reply and "Source:" in reply, reply

    def as_owner(text: str) -> str:
        payload = {"text": text, "payload": f"## Context\n{text}", "role": "admin", "channel": "webchat",
                   "sender": "owner"}
        return asyncio.run(get_runner(host).run("owner", agent_turn(payload, host.principal, "owner")))

    assert WIFI in as_owner("What is the staff wifi password?")  # stored, and the owner's to read
    assert "12 percent" in as_owner("What supplier discount does Millbrook Flour give?")
