"""The investigate-before-asking gate (``plugins/memory/surfacing/ask_gate.py``): Claude Code's
PreToolUse input for ``AskUserQuestion`` on stdin, the session's transcript JSONL on disk, the hook
command taken from the installed payload's ``hooks.json`` and run as Claude Code runs it (``sh -c``,
``PATH=/usr/bin:/bin`` only, the plugin root, another cwd). Exit 2 and one stderr line blocks;
exit 0 lets the question through."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.host.manifests.conftest import bundle
from tests.plugins.memory.surfacing.test_consult_gate import (
    CWD,
    SESSION,
    tool_result,
    tool_use,
    transcript,
    user,
)

ACCOUNT = "acct-ask"
SEARCH = "mcp__plugin_memory_memory__memory-search"
QUESTION = {"questions": [{"question": "Which supplier do you mean?", "header": "Supplier",
                           "options": [{"label": "Miller & Co", "description": "flour"},
                                       {"label": "Dairy Farm", "description": "butter"}],
                           "multiSelect": False}]}


def ask(path: Path | str, tool: str = "AskUserQuestion") -> bytes:
    return json.dumps({"session_id": SESSION, "transcript_path": str(path), "cwd": CWD,
                       "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
                       "tool_input": QUESTION}).encode()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, dict[str, str]]:
    """The gate's command as the installed payload's hooks.json names it (the ``AskUserQuestion``
    matcher), its plugin root, and the install's settings env (what Claude Code gives a hook)."""
    import os

    base = tmp_path_factory.mktemp("ask")
    home = base / "home"
    home.mkdir()
    old = os.environ.get("PLUGHOST_HOME")
    os.environ["PLUGHOST_HOME"] = str(home)
    try:
        payload = base / "payload"
        built = bundle("default", payload, premium=None)
        assert built.returncode == 0, built.stderr
        assert run_cli("account", "create", ACCOUNT).returncode == 0
        config = base / "config"
        done = run_cli("install", str(payload), "--config-dir", str(config), "--account", ACCOUNT)
        assert done.returncode == 0, done.stderr
    finally:
        if old is None:
            os.environ.pop("PLUGHOST_HOME", None)
        else:
            os.environ["PLUGHOST_HOME"] = old
    [root] = [p.parents[1] for p in (config / "plugins" / "cache").glob("*/memory/*/hooks/hooks.json")]
    hooks = json.loads((root / "hooks" / "hooks.json").read_text())
    [group] = [g for g in hooks["hooks"]["PreToolUse"] if g["matcher"] == "AskUserQuestion"]
    [command] = group["hooks"]
    assert command["command"].endswith('/hooks/ask-gate.sh"')
    env = {"PATH": "/usr/bin:/bin", "HOME": str(base), "CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PLUGIN_ROOT": str(root),
           **json.loads((config / "settings.json").read_text())["env"]}
    return command["command"], base, env


def run_gate(installed: tuple[str, Path, dict[str, str]], stdin: bytes, **env: str) -> subprocess.CompletedProcess[str]:
    """``env -i PATH=/usr/bin:/bin`` plus what Claude Code hands a hook, from another directory."""
    command, base, full = installed
    cwd = base / "elsewhere"
    cwd.mkdir(exist_ok=True)
    return subprocess.run(["/usr/bin/env", "-i", *[f"{k}={v}" for k, v in {**full, **env}.items()],
                           "/bin/sh", "-c", command], input=stdin.decode(), capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def only_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("[ask-gate] "), proc.stderr
    return lines[0]


def test_a_question_before_any_look_up_in_this_turn_is_blocked(installed, tmp_path: Path) -> None:
    path = transcript(tmp_path,
                      user("What did Miller charge last month?", "u1"),
                      tool_use(SEARCH, "toolu_1", "a1", "u1", query="Miller invoice"),
                      tool_result("toolu_1", "r1", "a1", "[]"),
                      user("Order more from the supplier", "u2", "r1"),  # a new turn: the earlier search is old
                      tool_use("AskUserQuestion", "toolu_2", "a2", "u2", **QUESTION))
    proc = run_gate(installed, ask(path))
    assert proc.returncode == 2, proc.stderr
    line = only_line(proc)
    assert line.startswith("[ask-gate] op=block tool=AskUserQuestion reason=no-investigation detail=")
    assert "investigate before asking" in line and "memory-search" in line
    home = Path(installed[2]["PLUGHOST_HOME"])
    assert "[ask-gate] op=block tool=AskUserQuestion reason=no-investigation" in \
        (home / "logs" / "server.log").read_text()


@pytest.mark.parametrize("tool", [SEARCH, "Read", "Grep", "mcp__plugin_graph_graph__graph-read"])
def test_a_look_up_since_the_owners_message_lets_the_question_through(installed, tmp_path: Path, tool: str) -> None:
    path = transcript(tmp_path,
                      user("Order more from the supplier", "u1"),
                      tool_use(tool, "toolu_1", "a1", "u1", query="supplier"),
                      tool_result("toolu_1", "r1", "a1", "two suppliers"),
                      tool_use("AskUserQuestion", "toolu_2", "a2", "r1", **QUESTION))
    proc = run_gate(installed, ask(path))
    assert proc.returncode == 0, proc.stderr
    assert only_line(proc).startswith("[ask-gate] op=pass tool=AskUserQuestion reason=investigated ")


def test_writing_tools_are_not_investigation_and_the_list_is_a_setting(installed, tmp_path: Path) -> None:
    path = transcript(tmp_path,
                      user("Order more from the supplier", "u1"),
                      tool_use("Bash", "toolu_1", "a1", "u1", command="rm -rf build"),
                      tool_result("toolu_1", "r1", "a1"),
                      tool_use("AskUserQuestion", "toolu_2", "a2", "r1", **QUESTION))
    assert run_gate(installed, ask(path)).returncode == 2
    proc = run_gate(installed, ask(path), PLUGHOST_ASK_GATE_TOOLS="bash,Read")  # names ignore case
    assert proc.returncode == 0 and "reason=investigated" in only_line(proc)
    off = run_gate(installed, ask(path), PLUGHOST_ASK_GATE="0")
    assert off.returncode == 0 and "reason=off" in only_line(off)


def test_only_the_owners_sessions_and_only_the_question_tool_are_gated(installed, tmp_path: Path) -> None:
    path = transcript(tmp_path, user("Order more", "u1"))
    for extra in ({"PLUGHOST_SESSION_ROLE": "public", "ALLOWED_SCOPES": "public"},  # a visitor's session
                  {"AGENT_SLUG": "baker"},  # an agent's
                  {"ALLOWED_SCOPES": "public"}):  # a narrowed one
        proc = run_gate(installed, ask(path), **extra)
        assert proc.returncode == 0 and "reason=not-owner" in only_line(proc), (extra, proc.stderr)
    other = run_gate(installed, ask(path, "Write"))
    assert other.returncode == 0 and "reason=not-a-question" in only_line(other)


@pytest.mark.parametrize("case", ["missing", "no-user", "not-json", "empty", "meta-and-sidechain"])
def test_anything_unreadable_passes(installed, tmp_path: Path, case: str) -> None:
    target: Path | str = tmp_path / "nope.jsonl"
    stdin = None
    if case == "no-user":
        target = transcript(tmp_path, tool_use("AskUserQuestion", "toolu_1", "a1", "u0", **QUESTION))
    elif case == "meta-and-sidechain":  # neither is a typed message: nothing the owner said is found
        target = transcript(tmp_path, {**user("Caveat: local command output", "m1"), "isMeta": True},
                            {**user("Summarise the prices", "s1", "m1"), "isSidechain": True})
    elif case == "not-json":
        stdin = b"{this is not json"
    elif case == "empty":
        stdin = b""
    proc = run_gate(installed, stdin if stdin is not None else ask(target))
    assert proc.returncode == 0, proc.stderr
    assert only_line(proc).startswith("[ask-gate] op=pass ")


def test_decide_in_process_matches_the_documented_rule() -> None:
    from plughost.plugins.memory.surfacing import ask_gate

    def lines(*records: dict[str, Any]) -> bytes:
        return b"".join(json.dumps(r).encode() + b"\n" for r in records)

    typed, looked = user("Order more", "u1"), tool_use("Glob", "t1", "a1", "u1", pattern="*.md")
    assert ask_gate.investigated(lines(typed), {}) == "not-investigated"
    assert ask_gate.investigated(lines(typed, looked), {}) == "investigated"
    assert ask_gate.investigated(lines(looked, typed), {}) == "not-investigated"
    assert ask_gate.investigated(b"", {}) == "no-user-message"
