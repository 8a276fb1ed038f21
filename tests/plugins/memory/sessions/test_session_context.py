"""An owner's session context (``plugins/memory/sessions/context.py``) through the real SessionStart
hook command: open Tasks, leads awaiting a reply, the last standing audit's findings and alerts, on
startup and resume, bounded; a visitor's session (a narrowed principal) never gets it."""

from __future__ import annotations

import json
from pathlib import Path

from audit_support import ACCOUNT, COLD, recorded
from surfacing_support import run_hook

from plughost import Principal

SESSION = "0b5c9a2e-6f1d-4b7e-9c3a-2d8e4f6a1b90"


def _seed(home: Path, leads: int = 1) -> dict[str, str]:
    """Open work as the platform writes it: work-create (a turn's Task, a visitor's follow-up lead),
    work-complete for one that is done, a real standing audit run and a record with a failed audit."""
    from plughost.plugins.memory.upkeep import standing as standing_audit
    from plughost.plugins.memory.upkeep.record import record_path
    from plughost.runtime.host import Host
    from plughost.runtime.tooltable import call_tool

    host = Host(env={"PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        task = call_tool(host, "memory", "work-create", {"kind": "quote", "title": "Prepare the Falcon quote"})
        done = call_tool(host, "memory", "work-create", {"kind": "quote", "title": "Old finished job"})
        call_tool(host, "memory", "work-complete", {"taskId": done["taskId"], "outcome": "sent"})
        lead_ids = []
        for i in range(leads):
            lead = call_tool(host, "memory", "work-create", {
                "kind": "follow-up", "title": f"Answer a visitor: do you deliver {i}?",
                "inputs": {"question": f"Do you deliver to Porto on Sundays {i}?", "contact": f"ada{i}@example.com",
                           "channel": "webchat", "sender": f"wc-{i}"}})
            lead_ids.append(lead["taskId"])
        host.store().upsert_many([{"id": "doc-unembedded", "labels": ["KnowledgeDocument"],
                                   "properties": {"title": "Prices", "summary": "Bread is 2 euros", "scope": "admin"}}],
                                 guards=Principal.system(ACCOUNT).guards)
        record = standing_audit.run_once(host, ACCOUNT, 0)
        assert record is not None
        path = record_path(home, ACCOUNT)
        data = json.loads(path.read_text())
        data["warnings"] = ["embed"]  # as a run whose embed audit raised leaves it
        data["counts"]["unscoped"] = 0
        path.write_text(json.dumps(data))
    finally:
        host.close()
    return {"task": task["taskId"], "lead": lead_ids[0], "done": done["taskId"]}


def test_startup_and_resume_of_an_owners_session_get_the_open_work(admin: dict[str, Path]) -> None:
    cfg, cwd, transcript, home = admin["cfg"], admin["cwd"], admin["transcript"], admin["home"]
    ids = _seed(home)
    for source in ("startup", "resume"):
        run = run_hook(recorded("session_start_compact", transcript, source=source), cfg, cwd, **COLD)
        assert run.returncode == 0, run.stderr
        out = json.loads(run.stdout)["hookSpecificOutput"]
        assert out["hookEventName"] == "SessionStart"
        ctx = out["additionalContext"]
        assert "### Open tasks\n- Prepare the Falcon quote (running;" in ctx and ids["task"] in ctx
        assert "Old finished job" not in ctx and ids["done"] not in ctx
        assert "### Leads awaiting a reply\n- Do you deliver to Porto on Sundays 0? (contact: ada0@example.com;" in ctx
        assert "### Standing audit findings" in ctx and "- missing: " in ctx
        assert "### Alerts\n- the embed audit failed in the last run" in ctx
        assert "injected=true" in run.line("hook")
    logs = (home / "logs" / "server.log").read_text()
    lines = [ln for ln in logs.splitlines() if ln.startswith("[session-context] op=injected")]
    assert len(lines) == 2, logs
    assert f"session={SESSION[:8]} source=startup tasks=1 leads=1 findings=1 alerts=1 bytes=" in lines[0]
    assert "source=resume" in lines[1]


def test_the_context_is_bounded_in_whole_lines(admin: dict[str, Path]) -> None:
    cfg, cwd, transcript, home = admin["cfg"], admin["cwd"], admin["transcript"], admin["home"]
    _seed(home, leads=15)
    run = run_hook(recorded("session_start_compact", transcript, source="startup"), cfg, cwd,
                   PLUGHOST_SESSION_CONTEXT_CHARS="600", **COLD)
    ctx = json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(ctx) <= 600
    assert all(ln.startswith(("## ", "### ", "- ")) or not ln for ln in ctx.splitlines())  # no line cut
    [line] = [ln for ln in (home / "logs" / "server.log").read_text().splitlines()
              if ln.startswith("[session-context] op=injected")]
    leads = int(line.split(" leads=")[1].split()[0])
    assert 0 < leads < 15 and f"bytes={len(ctx.encode())}" in line
    assert " tasks=1 " in line and " alerts=1 " in line  # a flood of leads never hides the owner's own work
    assert f"- ({15 - leads} more not shown)" in ctx


def test_many_leads_leave_room_for_tasks_and_alerts_and_a_bad_budget_falls_back(admin: dict[str, Path]) -> None:
    cfg, cwd, transcript, home = admin["cfg"], admin["cwd"], admin["transcript"], admin["home"]
    _seed(home, leads=45)
    run = run_hook(recorded("session_start_compact", transcript, source="startup"), cfg, cwd,
                   PLUGHOST_SESSION_CONTEXT_CHARS="abc", **COLD)
    assert run.returncode == 0, run.stderr
    ctx = json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "### Open tasks\n- Prepare the Falcon quote" in ctx and "### Alerts" in ctx and "more not shown" in ctx
    log = (home / "logs" / "server.log").read_text()
    assert "[session-context] warn reason=bad-setting" in log and "using=3000" in log


def test_a_visitors_session_never_gets_it(admin: dict[str, Path]) -> None:
    cfg, cwd, transcript, home = admin["cfg"], admin["cwd"], admin["transcript"], admin["home"]
    _seed(home)
    for narrowed in ({"PLUGHOST_SESSION_ROLE": "public"}, {"ALLOWED_SCOPES": "public"}, {"AGENT_SLUG": "concierge"}):
        run = run_hook(recorded("session_start_compact", transcript, source="startup"), cfg, cwd, **narrowed, **COLD)
        assert run.returncode == 0 and run.stdout == "", run.stderr
        assert "reason=not-admin" in run.line("hook")
    # the server side refuses a narrowed request too, whoever sends it
    from plughost.plugins.memory.surfacing.server import dispatch
    from plughost.runtime.host import Host

    host = Host(env={"PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        for who in ({"role": "public", "scopes": ["public"]}, {"role": None, "scopes": ["public"]},
                    {"role": None, "scopes": None, "agent": "concierge"}):
            got = dispatch(host, {"op": "compaction", "event": "SessionStart", "sessionId": SESSION, "source": "startup",
                                  "accountId": ACCOUNT, **who})
            assert got == {"ok": True, "output": None}, got
    finally:
        host.close()
    logs = (home / "logs" / "server.log").read_text()
    assert "[session-context] op=injected" not in logs
    assert logs.count("[session-context] op=skip") == 3 and "reason=not-admin" in logs


def test_nothing_open_injects_nothing(admin: dict[str, Path]) -> None:
    cfg, cwd, transcript, home = admin["cfg"], admin["cwd"], admin["transcript"], admin["home"]
    run = run_hook(recorded("session_start_compact", transcript, source="startup"), cfg, cwd, **COLD)
    assert run.returncode == 0 and run.stdout == "" and "injected=false" in run.line("hook")
    assert "[session-context] op=skip session=0b5c9a2e source=startup reason=nothing-open" in (
        home / "logs" / "server.log").read_text()


def test_the_warm_path_through_plughost_serve_gives_the_same(admin: dict[str, Path]) -> None:
    """With a real ``plughost serve`` listening, the hook's builtins-only first stage hands SessionStart
    to serve, which answers for the owner and skips a visitor."""
    from serve_helpers import stop_process
    from surfacing_support import start_serve

    cfg, cwd, transcript, home = admin["cfg"], admin["cwd"], admin["transcript"], admin["home"]
    ids = _seed(home)
    proc = start_serve(home, ACCOUNT)
    try:
        run = run_hook(recorded("session_start_compact", transcript, source="startup"), cfg, cwd,
                       PLUGHOST_SURFACE_COLD="0")
        assert run.returncode == 0, run.stderr
        assert "path=warm" in run.line("hook") and "injected=true" in run.line("hook")
        ctx = json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
        assert ids["task"] in ctx and ids["lead"] in ctx
        public = run_hook(recorded("session_start_compact", transcript, source="startup"), cfg, cwd,
                          PLUGHOST_SESSION_ROLE="public", PLUGHOST_SURFACE_COLD="0")
        assert public.stdout == "" and "reason=not-admin" in public.line("hook")
    finally:
        stop_process(proc)
    assert "[session-context] op=injected session=0b5c9a2e source=startup" in (home / "logs" / "server.log").read_text()
