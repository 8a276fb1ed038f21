"""Reports (docs/memory.md#reports): idempotency per minute, body limit, latest per keyword, stable pagination."""

from __future__ import annotations

import json
import threading

from memory_support import ACCOUNT, call_tool, server_log

from plughost import Principal
from plughost.ports.graph import Guards


def report(host, **args) -> dict:
    is_error, text = call_tool(host, "memory-report-write", args)
    assert not is_error, text
    return json.loads(text)


def test_idempotent_within_the_minute_not_across(memory_host, plughost_home) -> None:
    host = memory_host()
    a = report(host, title="Daily briefing", body="All quiet.", keywords=["daily-briefing"],
               sourceWorkflow="daily-briefing", occurredAt="2026-03-01T07:00:05Z")
    b = report(host, title="Daily briefing", body="All quiet again.", keywords=["daily-briefing"],
               occurredAt="2026-03-01T07:00:55Z")
    c = report(host, title="Daily briefing", body="Next minute.", keywords=["daily-briefing"],
               occurredAt="2026-03-01T07:01:00Z")
    assert a["reportId"] == b["reportId"] != c["reportId"]
    assert b["idempotent"] is True and a["idempotent"] is False
    assert host.store().count(guards=Guards(ACCOUNT), labels=["Report"]) == 2
    lines = [line for line in server_log(plughost_home) if line.startswith("[reports] op=write")]
    assert len(lines) == 3 and lines[1].endswith("idempotent=1") and "keywords=daily-briefing" in lines[0]


def test_concurrent_writers_make_one_node(memory_host) -> None:
    hosts = [memory_host(), memory_host()]
    results: list[dict] = []

    def go(h) -> None:
        results.append(report(h, title="Dream cycle", body="x", occurredAt="2026-03-02T03:00:00Z"))

    threads = [threading.Thread(target=go, args=(h,)) for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({r["reportId"] for r in results}) == 1
    assert hosts[0].store().count(guards=Guards(ACCOUNT), labels=["Report"]) == 1


def test_body_limit_rejects_and_writes_nothing(memory_host) -> None:
    host = memory_host()
    is_error, text = call_tool(host, "memory-report-write", {"title": "Too long", "body": "x" * 10_001})
    assert is_error and text == "body: 10,001 characters; expected at most 10,000 (nothing was written)"
    assert host.store().count(guards=Guards(ACCOUNT), labels=["Report"]) == 0
    ok = report(host, title="Just right", body="x" * 10_000)
    assert ok["bodyChars"] == 10_000


def test_parented_to_conversation_else_admin_user(memory_host) -> None:
    host = memory_host()
    store = host.store()
    store.upsert_many([{"id": "adm", "labels": ["AdminUser"], "properties": {"userId": "u1", "role": "owner"}},
                       {"id": "conv", "labels": ["Conversation"], "properties": {"sessionId": "s-9"}}],
                      guards=Principal.system(ACCOUNT).guards)
    r1 = report(host, title="No session", body="b")
    assert r1["parent"] == "adm"
    r2 = report(memory_host(SESSION_NODE_ID="s-9"), title="In session", body="b")
    assert r2["parent"] == "conv"
    around = store.expand([r2["reportId"]], guards=Guards(ACCOUNT))[r2["reportId"]]
    assert [(n.type, n.direction, n.node.id) for n in around] == [("PRODUCED", "in", "conv")]


def test_read_latest_and_list_pagination(memory_host, plughost_home) -> None:
    host = memory_host()
    for day in range(1, 8):
        report(host, title=f"Briefing {day}", body=f"day {day}", keywords=["daily-briefing"],
               sourceWorkflow="daily-briefing", occurredAt=f"2026-04-0{day}T07:00:00Z")
    report(host, title="Analysis", body="deep", keywords=["analysis"], occurredAt="2026-04-09T07:00:00Z")
    is_error, text = call_tool(host, "memory-report-read-latest", {"keyword": "daily-briefing"})
    latest = json.loads(text)["reports"]
    assert not is_error and [r["title"] for r in latest] == ["Briefing 7"] and latest[0]["body"] == "day 7"
    assert any(line.startswith("[reports] op=read-latest") and "hits=1" in line for line in server_log(plughost_home))
    page1 = json.loads(call_tool(host, "memory-report-list", {"sourceWorkflow": "daily-briefing", "limit": 3})[1])
    assert [r["title"] for r in page1["reports"]] == ["Briefing 7", "Briefing 6", "Briefing 5"]
    assert page1["total"] == 7 and "body" not in page1["reports"][0]
    # a new report arrives between pages: the next page continues where the first stopped
    report(host, title="Briefing 8", body="day 8", keywords=["daily-briefing"], sourceWorkflow="daily-briefing",
           occurredAt="2026-04-08T07:00:00Z")
    page2 = json.loads(call_tool(host, "memory-report-list", {"sourceWorkflow": "daily-briefing", "limit": 3,
                                                              "cursor": page1["nextCursor"]})[1])
    assert [r["title"] for r in page2["reports"]] == ["Briefing 4", "Briefing 3", "Briefing 2"]
    assert any(line.startswith("[reports] op=list") and "total=" in line for line in server_log(plughost_home))
    everything = json.loads(call_tool(host, "memory-report-list", {"limit": 200})[1])
    assert everything["total"] == 9 and everything["nextCursor"] is None


def test_report_cli_write_from_stdin_latest_and_list(plughost_home, tmp_path) -> None:
    import os
    import subprocess

    from cli_support import run_in_process
    from memory_support import REPO

    from tests.conftest import ensure_account

    env = dict(os.environ, ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none")
    ensure_account(env)

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_in_process(("report", *args), env, input=stdin, cwd=REPO)

    done = run("write", "--title", "Nightly", "--keywords", "nightly,ops", stdin="Everything green.\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["keywords"] == ["nightly", "ops"]
    body = tmp_path / "body.txt"
    body.write_text("y" * 10_001)
    too_long = run("write", "--title", "Big", "--file", str(body))
    assert too_long.returncode == 2 and too_long.stderr.strip().splitlines()[-1] == (
        "plughost: body: 10,001 characters; expected at most 10,000 (nothing was written)")
    latest = run("latest", "nightly")
    assert latest.returncode == 0 and "Nightly" in latest.stdout and "Everything green." in latest.stdout
    listed = run("list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)["total"] == 1
