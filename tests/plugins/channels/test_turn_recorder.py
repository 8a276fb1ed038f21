"""Turn recorder (SPEC 10.6): transcript walk, envelope, skip gates, Stop-hook wiring; never non-zero."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plugins.channels.turn_recorder import SKIP_REASONS, envelope, record_turn, walk
from tests.conftest import REPO, run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "transcript_admin.jsonl"
SESSION = "6c1f7c52-0f1e-4d6a-9d0b-2f7c6a4b9e11"

EXPECTED_TURNS = [
    {"role": "user", "text": "hello, what's our price for a haircut?", "ts": "2026-11-30T01:00:01.000Z"},
    {"role": "assistant", "text": "Let me check the price list.", "ts": "2026-11-30T01:00:02.000Z",
     "toolCalls": [{"tool": "mcp__plugin_memory_memory__memory-search", "input": {"query": "haircut price", "k": 5},
                    "output": '{"rows": [{"name": "Haircut", "price": 25}]}'}]},
    {"role": "assistant", "text": "A haircut is £25.", "ts": "2026-11-30T01:00:06.000Z"},
    {"role": "user", "text": "Set it to £30 and note café hours", "ts": "2026-11-30T01:01:00.000Z"},
    {"role": "assistant", "text": "Updating.", "ts": "2026-11-30T01:01:01.000Z",
     "toolCalls": [{"tool": "mcp__plugin_memory_memory__memory-update",
                    "input": {"id": "svc-1", "properties": {"price": 30}}, "output": "ok"},
                   {"tool": "Bash", "input": {"command": "date"}, "output": None}]},
    {"role": "assistant", "text": "Done: £30.", "ts": "2026-11-30T01:01:03.000Z"},
    {"role": "user", "text": "thanks \ufffd\ufffd", "ts": "2026-11-30T01:02:00.000Z"},
]


def test_walk_fixture_exact() -> None:
    turns, stats = walk(FIXTURE.read_bytes())
    assert turns == EXPECTED_TURNS
    assert stats.malformed == 1


def test_envelope_shape() -> None:
    from datetime import UTC, datetime

    body = envelope(EXPECTED_TURNS, SESSION, "acct-0001", datetime(2026, 11, 30, 1, 2, 3, 456000, tzinfo=UTC))
    assert list(body) == ["turns", "conversationId", "accountId", "occurredAt"]
    assert body["occurredAt"] == "2026-11-30T01:02:03.000Z" and body["conversationId"] == SESSION


def test_thinking_only_and_tool_result_only_make_no_turn() -> None:
    lines = [
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]}},
        {"type": "user", "message": {"role": "user", "content": "   "}},
        {"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "This session is being continued"}},
        {"type": "assistant", "isSidechain": True, "message": {"id": "m9", "role": "assistant",
                                                               "content": [{"type": "text", "text": "subagent"}]}},
    ]
    raw = "\n".join(json.dumps(x) for x in lines).encode()
    assert walk(raw)[0] == []


ADMIN_ENV = {"PLUGHOST_SESSION_ROLE": "admin", "ACCOUNT_ID": "acct-0001"}


def stop_input(path: Path | str | None) -> str:
    return json.dumps({"session_id": SESSION, "transcript_path": str(path) if path else None,
                       "cwd": "/srv/acct", "hook_event_name": "Stop", "stop_hook_active": False})


@pytest.mark.parametrize("reason", SKIP_REASONS)
def test_every_skip_reason_reachable(reason: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    env = dict(ADMIN_ENV)
    data = stop_input(FIXTURE).encode()
    if reason == "role-not-admin":
        env["PLUGHOST_SESSION_ROLE"] = "public"
    elif reason == "is-recorder":
        env["PLUGHOST_SPECIALIST"] = "database-operator"
    elif reason == "empty-stdin":
        data = b"  \n"
    elif reason == "missing-transcript":
        data = stop_input(tmp_path / "gone.jsonl").encode()
    elif reason == "conversation-empty":
        empty = tmp_path / "empty.jsonl"
        empty.write_bytes(b'{"type":"summary","summary":"x"}\nnot json\n')
        data = stop_input(empty).encode()
    assert record_turn(data, env, host=None) == 0
    assert f"[turn-recorder] trigger-skipped reason={reason}" in capfd.readouterr().err


RECORDER_AGENT = """
import json, os, subprocess, sys
data = sys.stdin.read()
with open(os.environ["CAPTURE"], "a") as fh:
    fh.write(json.dumps({"session": os.environ["PLUGHOST_SESSION_ID"], "payload": json.loads(data),
                         "specialist": os.environ.get("PLUGHOST_SPECIALIST"),
                         "role": os.environ.get("PLUGHOST_SESSION_ROLE")}) + "\\n")
# the recorder's own session ends: Claude Code fires the Stop hook in it too
stop = json.dumps({"session_id": "recorder-session", "transcript_path": os.environ["TRANSCRIPT"]})
subprocess.run([sys.executable, "-m", "host.cli", "record-turn"], input=stop, text=True, check=False)
print("recorded")
"""


def test_cli_dispatches_envelope_through_runner(tmp_path: Path, plughost_home: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(RECORDER_AGENT)
    capture = tmp_path / "capture.jsonl"
    env = {**ADMIN_ENV, "PLUGHOST_AGENT_COMMAND": f"{sys.executable} {agent}", "CAPTURE": str(capture),
           "TRANSCRIPT": str(FIXTURE)}
    proc = run_cli("record-turn", env=env, input=stop_input(FIXTURE))
    assert proc.returncode == 0, proc.stderr
    sent = json.loads(capture.read_text())  # exactly one line: the recorder did not record itself
    assert (sent["specialist"], sent["role"]) == ("database-operator", "admin")
    log = (plughost_home / "logs" / "server.log").read_text()
    assert "[turn-recorder] trigger-skipped reason=is-recorder" in log
    assert sent["payload"]["specialist"] == "database-operator"
    body = json.loads(sent["payload"]["initialMessage"])
    assert body["turns"] == EXPECTED_TURNS and body["conversationId"] == SESSION and body["accountId"] == "acct-0001"
    assert ("[turn-recorder] envelope sessionId=" + SESSION + " turnsCount=7 userTurns=3 assistantTurns=4 "
            "toolCallTurns=2") in proc.stderr
    assert "[turn-recorder] spawn-request sessionId=" + SESSION + " specialist=database-operator" in proc.stderr
    assert "envelope sessionId=" in (plughost_home / "logs" / "server.log").read_text()


@pytest.mark.parametrize("command", ["false", "/nonexistent/agent"])
def test_cli_never_exits_nonzero(command: str) -> None:
    proc = run_cli("record-turn", env={**ADMIN_ENV, "PLUGHOST_AGENT_COMMAND": command}, input=stop_input(FIXTURE))
    assert proc.returncode == 0
    assert "[turn-recorder] spawn-failed" in proc.stderr
    garbage = run_cli("record-turn", env=ADMIN_ENV, input="\x00not json at all")
    assert garbage.returncode == 0 and "trigger-skipped reason=empty-stdin" in garbage.stderr


def test_stop_hook_registration_runs_the_recorder(tmp_path: Path, plughost_home: Path) -> None:
    plugin_root = REPO / "plugins" / "channels"
    spec = json.loads((plugin_root / "hooks" / "hooks.json").read_text())
    command = spec["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert "${CLAUDE_PLUGIN_ROOT}" in command
    env = {**os.environ, **ADMIN_ENV, "CLAUDE_PLUGIN_ROOT": str(plugin_root), "PLUGHOST_PYTHON": sys.executable,
           "PLUGHOST_AGENT_COMMAND": "true"}
    proc = subprocess.run(["sh", "-c", command], input=stop_input(FIXTURE), text=True, env=env,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0
    log = (plughost_home / "logs" / "server.log").read_text()
    assert "[turn-recorder] envelope sessionId=" + SESSION + " turnsCount=7" in log


@pytest.mark.external
def test_hooks_json_accepted_by_claude_code(tmp_path: Path) -> None:
    import shutil

    from tests.conftest import npx_bin

    claude = npx_bin("claude")
    plugin = tmp_path / "channels"
    shutil.copytree(REPO / "plugins" / "channels" / "hooks", plugin / "hooks")
    (plugin / ".claude-plugin").mkdir()
    (plugin / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": "channels", "version": "0.1.0", "description": "channels", "author": {"name": "plughost"}}))
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"),
           "CLAUDE_CODE_TMPDIR": str(tmp_path / "tmp"), "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    ok = subprocess.run([str(claude), "plugin", "validate", str(plugin)], env=env, capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (plugin / "hooks" / "hooks.json").write_text('{"hooks": {"Stop": [{"hooks": [{"type": "bogus"}]}]}}')
    bad = subprocess.run([str(claude), "plugin", "validate", str(plugin)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0  # the validator really reads hooks/hooks.json
