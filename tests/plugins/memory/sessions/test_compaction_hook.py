"""Compaction briefings through the real hook command: PreCompact stores a fallback from a recorded
transcript, SessionStart(compact) injects it; an agent's session-compact briefing wins and is injected
on resume; startup, public sessions inject nothing."""

from __future__ import annotations

import json
from pathlib import Path

from audit_support import ACCOUNT, COLD, recorded
from surfacing_support import run_hook

SESSION = "0b5c9a2e-6f1d-4b7e-9c3a-2d8e4f6a1b90"


def test_fallback_then_agent_briefing_captured_and_injected(admin: dict[str, Path]) -> None:
    cfg, cwd, transcript, plughost_home = admin["cfg"], admin["cwd"], admin["transcript"], admin["home"]

    pre = run_hook(recorded("pre_compact", transcript), cfg, cwd, **COLD)
    assert pre.returncode == 0 and pre.stdout == "" and "stored=true" in pre.line("hook"), pre.stderr
    start = run_hook(recorded("session_start_compact", transcript), cfg, cwd, **COLD)
    out = json.loads(start.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert "List the project folder" in out["additionalContext"] and "tools used: Bash" in out["additionalContext"]
    assert "Falcon budget notes" in out["additionalContext"] and "(fallback," in out["additionalContext"]

    from plughost.runtime.host import Host
    from plughost.runtime.tooltable import call_tool

    host = Host(env={"PLUGHOST_HOME": str(plughost_home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        got = call_tool(host, "memory", "session-compact", {"asked": "Audit the Falcon budget", "conversationId":
                        SESSION, "decisions": ["keep the March deadline"], "aboutPerson": "prefers short replies"})
        assert got["conversationId"] == SESSION
    finally:
        host.close()
    pre2 = run_hook(recorded("pre_compact", transcript), cfg, cwd, **COLD)
    assert "stored=false" in pre2.line("hook")
    resumed = run_hook(recorded("session_start_compact", transcript, source="resume"), cfg, cwd, **COLD)
    ctx = json.loads(resumed.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Audit the Falcon budget" in ctx and "- keep the March deadline" in ctx and "(agent," in ctx
    startup = run_hook(recorded("session_start_compact", transcript, source="startup"), cfg, cwd, **COLD)
    assert startup.stdout == "" and "injected=false" in startup.line("hook")  # nothing open, no briefing on startup
    public = run_hook(recorded("session_start_compact", transcript), cfg, cwd, PLUGHOST_SESSION_ROLE="public", **COLD)
    assert public.stdout == "" and "reason=not-admin" in public.line("hook")
    logs = (plughost_home / "logs" / "server.log").read_text()
    for op in ("op=fallback", "op=captured", "op=injected"):
        assert f"[compaction] {op} conversation={SESSION[:8]}" in logs
