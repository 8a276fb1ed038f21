"""Turn recorder (docs/channels.md#turn-recorder): transcript walk, envelope, skip gates, Stop-hook wiring; never non-zero."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plughost.plugins.channels.turn_recorder import SKIP_REASONS, record_turn, walk
from tests.conftest import REPO, ensure_account, run_cli

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


def stop_input(path: Path | str | None, session: str | None = SESSION) -> str:
    """What Claude Code writes on a Stop hook's stdin."""
    return json.dumps({"session_id": session, "transcript_path": str(path) if path else None,
                       "cwd": "/srv/acct", "permission_mode": "default", "hook_event_name": "Stop",
                       "stop_hook_active": False})


@pytest.mark.parametrize("reason", SKIP_REASONS)
def test_every_skip_reason_reachable(reason: str, tmp_path: Path, plughost_home: Path,
                                     capfd: pytest.CaptureFixture[str]) -> None:
    env = {**ADMIN_ENV, "PLUGHOST_HOME": str(plughost_home)}
    ensure_account(env)
    data = stop_input(FIXTURE).encode()
    if reason == "role-not-admin":
        env["PLUGHOST_SESSION_ROLE"] = "public"
    elif reason == "no-account":
        env.pop("ACCOUNT_ID")
    elif reason == "unknown-account":
        env["ACCOUNT_ID"] = "acct-elsewhere"
    elif reason == "empty-stdin":
        data = b"  \n"
    elif reason == "no-session":
        data = stop_input(FIXTURE, session=None).encode()
    elif reason == "missing-transcript":
        data = stop_input(tmp_path / "gone.jsonl").encode()
    elif reason == "conversation-empty":
        empty = tmp_path / "empty.jsonl"
        empty.write_bytes(b'{"type":"summary","summary":"x"}\nnot json\n')
        data = stop_input(empty).encode()
    assert record_turn(data, env, host=None) == 0
    assert f"[turn-recorder] trigger-skipped reason={reason}" in capfd.readouterr().err
    assert not (plughost_home / "accounts" / "acct-elsewhere").exists()


def recorded(home: Path) -> tuple[list, list]:
    """(the session's Conversations, its Messages by turn), read back by a fresh host."""
    from plughost.ports.graph import Guards
    from plughost.runtime.host import Host

    host = Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": "acct-0001"}).load()
    try:
        store = host.store()
        convs = store.find(guards=Guards("acct-0001"), labels=["Conversation"], limit=100)
        msgs = store.find(guards=Guards("acct-0001"), labels=["Message"], where={"conversationId": SESSION},
                          limit=100)
        linked = store.expand([SESSION], guards=Guards("acct-0001"), limit=100).get(SESSION, [])
        assert sorted(nb.node.id for nb in linked if nb.type == "HAS_MESSAGE") == sorted(m.id for m in msgs)
        return convs, sorted(msgs, key=lambda m: m.properties["turnIndex"])
    finally:
        host.close()


def run_stop_hook(transcript: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The channels plugin's registered Stop hook command, as Claude Code runs it."""
    plugin_root = REPO / "plugins" / "channels"
    spec = json.loads((plugin_root / "hooks" / "hooks.json").read_text())
    command = spec["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert "${CLAUDE_PLUGIN_ROOT}" in command
    full = {**os.environ, **ADMIN_ENV, "CLAUDE_PLUGIN_ROOT": str(plugin_root), "PLUGHOST_PYTHON": sys.executable,
            **(env or {})}
    return subprocess.run(["sh", "-c", command], input=stop_input(transcript), text=True, env=full,
                          capture_output=True, timeout=60)


def test_stop_hook_records_the_turns_in_the_store(tmp_path: Path, plughost_home: Path) -> None:
    ensure_account({**ADMIN_ENV, "PLUGHOST_HOME": str(plughost_home)})
    proc = run_stop_hook(FIXTURE)
    assert proc.returncode == 0, proc.stderr
    log = (plughost_home / "logs" / "server.log").read_text()
    assert ("[turn-recorder] walked sessionId=" + SESSION + " turnsCount=7 userTurns=3 assistantTurns=4 "
            "toolCallTurns=2") in log
    assert "[turn-recorder] recorded sessionId=" + SESSION + f" conversation={SESSION} created=1 new=7 changed=0 " \
        "unchanged=0" in log
    convs, msgs = recorded(plughost_home)
    assert [(c.id, c.properties["sessionId"], c.properties["scope"]) for c in convs] == [(SESSION, SESSION, "admin")]
    assert [(m.properties["role"], m.properties["text"], m.properties["sentAt"]) for m in msgs] == [
        (t["role"], t["text"], t["ts"]) for t in EXPECTED_TURNS]
    assert all(m.properties["scope"] == "admin" and m.properties["channel"] == "claude-code" for m in msgs)
    calls = json.loads(msgs[4].properties["toolCalls"])
    assert calls == [{"tool": "mcp__plugin_memory_memory__memory-update",
                      "input": '{"id": "svc-1", "properties": {"price": 30}}', "output": "ok"},
                     {"tool": "Bash", "input": '{"command": "date"}', "output": None}]
    assert "toolCalls" not in msgs[0].properties

    again = run_stop_hook(FIXTURE)  # the next Stop walks the same transcript: nothing doubles
    assert again.returncode == 0
    assert "created=0 new=0 changed=0 unchanged=7" in (plughost_home / "logs" / "server.log").read_text()
    assert [m.id for m in recorded(plughost_home)[1]] == [m.id for m in msgs]

    longer = tmp_path / "longer.jsonl"
    secret = "sk-ant-api03-" + "x7Q" * 30
    extra = [{"type": "user", "uuid": "u20", "timestamp": "2026-11-30T01:03:00.000Z",
              "message": {"role": "user", "content": f"store my key ANTHROPIC_API_KEY={secret} please"}},
             {"type": "assistant", "uuid": "a20", "timestamp": "2026-11-30T01:03:01.000Z",
              "message": {"id": "msg_20", "role": "assistant", "content": [
                  {"type": "tool_use", "id": "toolu_20", "name": "Bash", "input": {"command": f"echo {secret}"}}]}}]
    longer.write_bytes(FIXTURE.read_bytes() + b"".join(json.dumps(r).encode() + b"\n" for r in extra))
    assert run_stop_hook(longer).returncode == 0
    assert "created=0 new=2 changed=0 unchanged=7" in (plughost_home / "logs" / "server.log").read_text()
    msgs = recorded(plughost_home)[1]
    assert len(msgs) == 9 and msgs[8].properties["text"] == "(tools: Bash)"
    assert secret not in (plughost_home / "graph.sqlite").read_bytes().decode("latin-1")
    assert "[redacted]" in msgs[7].properties["text"] and "[redacted]" in msgs[8].properties["toolCalls"]


def test_cli_never_exits_nonzero(plughost_home: Path) -> None:
    ensure_account({**ADMIN_ENV, "PLUGHOST_HOME": str(plughost_home)})
    (plughost_home / "graph.sqlite").write_bytes(b"not a database at all" * 100)
    broken = run_cli("record-turn", env=ADMIN_ENV, input=stop_input(FIXTURE))
    assert broken.returncode == 0 and "[turn-recorder] record-failed" in broken.stderr
    assert "Traceback" not in broken.stderr
    garbage = run_cli("record-turn", env=ADMIN_ENV, input="\x00not json at all")
    assert garbage.returncode == 0 and "trigger-skipped reason=empty-stdin" in garbage.stderr


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
