"""``plughost memory recall`` as a user runs it: bad ids and arguments refused in one line (exit 2),
an empty history said plainly, and a narrowed process neither sees admin items nor changes the
account's ranking."""

from __future__ import annotations

import json
import os
from pathlib import Path

from surfacing_support import ACCOUNT, seed

from plughost.plugins.memory.surfacing import recall, sessions
from tests.conftest import run_cli


def _history(home: Path) -> None:
    for n in range(3):
        sessions.append(sessions.session_path(home, ACCOUNT, f"h-{n}"), {
            "query": "q", "base": "q", "items": ["falcon-budget", "falcon-public"],
            "shown": {"falcon-budget": {"title": "Project Falcon budget", "text": "two million euros"},
                      "falcon-public": {"title": "Project Falcon announcement", "text": "garden"}}})


def _one_line_refusal(out, *needles: str) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    for needle in needles:
        assert needle in out.stderr, out.stderr


def test_recall_refuses_unknown_ids_extra_arguments_and_says_when_empty(plughost_home: Path) -> None:
    seed(plughost_home)
    env = {"ACCOUNT_ID": ACCOUNT}
    empty = run_cli("memory", "recall", env=env)
    assert empty.returncode == 0 and "no surfaced items yet" in empty.stdout and "none" != empty.stdout
    assert "surfaced=0" not in empty.stdout
    for bad in ("nonexistent-id", "../../etc"):
        _one_line_refusal(run_cli("memory", "recall", "pin", bad, env=env), "recall pin", "no node")
    assert not recall.decisions_path(plughost_home, ACCOUNT).exists()  # nothing written
    _one_line_refusal(run_cli("memory", "recall", "list", "extra", env=env), "recall list", "extra")
    ok = run_cli("memory", "recall", "pin", "falcon-budget", env=env)
    assert ok.returncode == 0 and "1 pinned" in ok.stdout
    no_account = {k: v for k, v in os.environ.items() if k != "ACCOUNT_ID"}
    out = run_cli("memory", "recall", env={**no_account, "PLUGHOST_TEST_NO_ACCOUNT": "1", "ACCOUNT_ID": ""})
    _one_line_refusal(out, "ACCOUNT_ID", "recall history")
    assert "to write to" not in out.stderr


def test_a_narrowed_process_sees_only_its_items_and_cannot_pin_or_snooze(plughost_home: Path) -> None:
    seed(plughost_home)
    _history(plughost_home)
    public = {"ACCOUNT_ID": ACCOUNT, "ALLOWED_SCOPES": "public"}
    listed = run_cli("memory", "recall", "--json", "--min-surfaced", "1", env=public)
    assert listed.returncode == 0, listed.stderr
    assert "falcon-budget" not in listed.stdout and "Project Falcon budget" not in listed.stdout
    assert [h["id"] for h in json.loads(listed.stdout)["snooze"]] == ["falcon-public"]
    for action in ("pin", "snooze", "clear"):
        for env in (public, {"ACCOUNT_ID": ACCOUNT, "AGENT_SLUG": "helper"}):
            _one_line_refusal(run_cli("memory", "recall", action, "falcon-public", env=env), "admin only")
    assert not recall.decisions_path(plughost_home, ACCOUNT).exists()
    admin = run_cli("memory", "recall", "--json", "--min-surfaced", "1", env={"ACCOUNT_ID": ACCOUNT})
    assert {h["id"] for h in json.loads(admin.stdout)["snooze"]} == {"falcon-budget", "falcon-public"}
