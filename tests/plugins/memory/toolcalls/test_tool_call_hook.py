"""The audit trail through the real hook command (``sh hooks/surface-prompt.sh`` with a bare env,
another cwd): recorded PostToolUse inputs become ToolCall nodes linked to the session's
Conversation; planted secrets never reach the store or the logs; public sessions write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from audit_support import ACCOUNT, COLD, PLANTED, files_containing, recorded, tool_calls
from surfacing_support import run_hook


def test_recorded_calls_become_linked_redacted_truncated_tool_calls(admin: dict[str, Path]) -> None:
    cfg, cwd, home, transcript = admin["cfg"], admin["cwd"], admin["home"], admin["transcript"]
    bash = json.loads(recorded("post_tool_use_bash", transcript))
    bash["tool_input"]["command"] = f"curl -H 'Authorization: Bearer {PLANTED}' https://api.example.com"
    bash["tool_response"]["stdout"] = "x" * 9000
    run = run_hook(json.dumps(bash).encode(), cfg, cwd, **COLD)
    assert run.returncode == 0 and run.stdout == "", run.stderr
    assert "event=PostToolUse result=ok recorded=true" in run.line("hook")
    mcp = json.loads(recorded("post_tool_use_mcp", transcript))
    mcp["tool_input"]["properties"]["apiToken"] = PLANTED
    mcp["tool_input"]["properties"]["note"] = f"password={PLANTED}"
    assert "recorded=true" in run_hook(json.dumps(mcp).encode(), cfg, cwd, **COLD).line("hook")
    failed = run_hook(recorded("post_tool_use_failure", transcript), cfg, cwd, **COLD)
    assert "recorded=true" in failed.line("hook")
    again = run_hook(recorded("post_tool_use_failure", transcript), cfg, cwd, **COLD)  # a retry: same node
    assert "recorded=true" in again.line("hook")

    calls = {c.properties["toolName"]: c for c in tool_calls(home)}
    assert sorted(calls) == ["Bash", "Read", "mcp__plugin_memory_memory__memory-write"]
    b, m, r = calls["Bash"].properties, calls["mcp__plugin_memory_memory__memory-write"].properties, \
        calls["Read"].properties
    session = "0b5c9a2e-6f1d-4b7e-9c3a-2d8e4f6a1b90"
    assert b["sessionId"] == session and b["conversationId"] == session and b.get("pluginName") is None
    assert b["startedAt"] == "2026-12-01T09:00:01.250Z" and b["completedAt"] >= b["startedAt"]
    assert b["outputTruncated"] is True and len(b["output"]) < 4100 and b["output"].endswith("chars]")
    assert b["isError"] is False and "[redacted]" in b["input"]
    assert m["pluginName"] == "memory" and json.loads(m["input"])["properties"]["apiToken"] == "[redacted]"
    assert json.loads(m["input"])["properties"]["email"] == "ada@example.com"
    assert r["isError"] is True and "File does not exist" in r["output"]

    from plughost.ports.graph import Guards
    from plughost.runtime.host import Host

    host = Host(env={"PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        conv = host.store().get(session, guards=Guards(ACCOUNT))
        assert conv is not None and "Conversation" in conv.labels
        linked = host.store().expand([session], guards=Guards(ACCOUNT))[session]
        assert sorted(n.node.id for n in linked if n.type == "HAS_TOOL_CALL" and n.direction == "out") \
            == sorted(c.id for c in calls.values())
        from plughost.runtime.tooltable import call_tool

        page = call_tool(host, "memory", "tool-calls", {"limit": 2})
        assert len(page["calls"]) == 2 and page["nextCursor"] == "2"
        rest = call_tool(host, "memory", "tool-calls", {"limit": 2, "cursor": page["nextCursor"]})
        assert len(rest["calls"]) == 1 and rest["nextCursor"] is None
        assert [c["toolName"] for c in call_tool(host, "memory", "tool-calls", {"errorsOnly": True})["calls"]] \
            == ["Read"]
        assert call_tool(host, "memory", "tool-calls", {"tool": "Bash", "session": session})["calls"][0]["id"] \
            == calls["Bash"].id
        assert call_tool(host, "memory", "tool-calls", {"since": "2999-01-01T00:00:00Z"})["calls"] == []
    finally:
        host.close()
    assert files_containing(home, PLANTED) == []  # the SQLite file, its WAL, server.log
    assert PLANTED not in run.stderr
    assert "[persist] tool-call persisted tool=Bash" in (home / "logs" / "server.log").read_text()
    assert f"conversation={session[:8]}" in (home / "logs" / "server.log").read_text()


@pytest.mark.parametrize("env", [{"PLUGHOST_SESSION_ROLE": "public"}, {"ALLOWED_SCOPES": "public"},
                                 {"AGENT_SLUG": "shop"}])
def test_a_public_or_narrowed_session_writes_no_tool_call(admin: dict[str, Path], env: dict[str, str]) -> None:
    cfg, cwd, home = admin["cfg"], admin["cwd"], admin["home"]
    run = run_hook(recorded("post_tool_use_bash"), cfg, cwd, **COLD, **env)
    assert run.returncode == 0 and "reason=not-admin" in run.line("hook")
    assert tool_calls(home) == []
