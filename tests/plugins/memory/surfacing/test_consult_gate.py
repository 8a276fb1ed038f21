"""The consult-before-send gate (``plugins/memory/surfacing/gate.py``): Claude Code's PreToolUse input
on stdin, its transcript JSONL on disk, the hook command taken from the installed payload's
``hooks.json`` and run as Claude Code runs it (``sh -c``, ``PATH=/usr/bin:/bin`` only, the plugin
root, another cwd). Exit 2 and one stderr line blocks; exit 0 lets the call through."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import run_cli
from tests.host.manifests.conftest import bundle

ACCOUNT = "acct-gate"
SESSION = "6f1d0b5c-9a2e-4b7e-9c3a-2d8e4f6a1b90"
CWD = "/home/dev/shop"
DOC = "/home/dev/shop/memory/users/ada/documents/quote-ada.pdf"


def _rec(kind: str, content: Any, uuid: str, parent: str | None, **extra: Any) -> dict[str, Any]:
    """One transcript record in Claude Code's shape (the fields its JSONL lines carry)."""
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"id": f"msg_{uuid}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                   "content": content, "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD, "sessionId": SESSION,
            "version": "2.0.14", "gitBranch": "", "type": kind, "message": message, "uuid": uuid,
            "timestamp": "2026-12-03T18:00:00.000Z", **extra}


def user(text: str, uuid: str, parent: str | None = None) -> dict[str, Any]:
    return _rec("user", text, uuid, parent)


def tool_use(name: str, tid: str, uuid: str, parent: str, **inp: Any) -> dict[str, Any]:
    return _rec("assistant", [{"type": "tool_use", "id": tid, "name": name, "input": inp}], uuid, parent)


def tool_result(tid: str, uuid: str, parent: str, text: str = "ok") -> dict[str, Any]:
    return _rec("user", [{"tool_use_id": tid, "type": "tool_result", "content": text}], uuid, parent,
                toolUseResult={"stdout": text})


READ = "mcp__plugin_memory_memory__profile-read"


def transcript(tmp: Path, *records: dict[str, Any]) -> Path:
    path = tmp / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def pre_tool_use(path: Path | str, tool: str = "Write", **tool_input: Any) -> bytes:
    return json.dumps({"session_id": SESSION, "transcript_path": str(path), "cwd": CWD,
                       "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
                       "tool_input": tool_input or {"file_path": DOC, "content": "%PDF-1.7"}}).encode()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, dict[str, str]]:
    """The gate's command as the installed payload's hooks.json names it, its plugin root, and the
    install's settings env (what Claude Code gives a hook)."""
    import os

    base = tmp_path_factory.mktemp("gate")
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
    [group] = [g for g in hooks["hooks"]["PreToolUse"] if "consult-gate.sh" in g["hooks"][0]["command"]]
    assert group["matcher"] == "Write|Edit|MultiEdit|SendUserFile|mcp__.*"
    [command] = group["hooks"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(base), "CLAUDE_CONFIG_DIR": str(config), "CLAUDE_PLUGIN_ROOT": str(root),
           **json.loads((config / "settings.json").read_text())["env"]}
    return command["command"], base, env


def run_gate(installed: tuple[str, Path, dict[str, str]], stdin: bytes,
             **env: str) -> subprocess.CompletedProcess[str]:
    command, base, full = installed
    cwd = base / "elsewhere"
    cwd.mkdir(exist_ok=True)
    return subprocess.run(["/bin/sh", "-c", command], input=stdin.decode(), capture_output=True, text=True,
                          env={**full, **env}, cwd=cwd, timeout=60)


def only_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("[consult-gate] "), proc.stderr
    return lines[0]


def test_a_document_without_profile_read_since_the_last_user_message_is_blocked(installed, tmp_path: Path) -> None:
    path = transcript(tmp_path,
                      user("What are Ada's preferences?", "u1"),
                      tool_use(READ, "toolu_1", "a1", "u1"),
                      tool_result("toolu_1", "r1", "a1", '{"activeRules": []}'),
                      user("Now send Ada the quote as a PDF", "u2", "r1"),
                      tool_use("Write", "toolu_2", "a2", "u2", file_path=DOC, content="%PDF"))
    proc = run_gate(installed, pre_tool_use(path))
    assert proc.returncode == 2, proc.stderr
    line = only_line(proc)
    assert line.startswith("[consult-gate] op=block tool=Write reason=no-profile-read detail=")
    assert "profile-read" in line.partition("detail=")[2]
    home = Path(installed[2]["PLUGHOST_HOME"])
    assert "[consult-gate] op=block tool=Write reason=no-profile-read" in (home / "logs" / "server.log").read_text()


def test_profile_read_after_the_last_user_message_passes_tool_results_are_not_user_messages(
        installed, tmp_path: Path) -> None:
    path = transcript(tmp_path,
                      user("Send Ada the quote as a PDF", "u1"),
                      tool_use(READ, "toolu_1", "a1", "u1"),
                      tool_result("toolu_1", "r1", "a1", '{"activeRules": ["Sign as Maya, Bakery"]}'),
                      tool_use("Bash", "toolu_2", "a2", "r1", command="ls"),
                      tool_result("toolu_2", "r2", "a2", "quote.md"),
                      tool_use("Write", "toolu_3", "a3", "r2", file_path=DOC, content="%PDF"))
    proc = run_gate(installed, pre_tool_use(path))
    assert proc.returncode == 0, proc.stderr
    assert only_line(proc).startswith("[consult-gate] op=pass tool=Write reason=consulted ")


def test_meta_and_sidechain_records_are_not_user_messages(installed, tmp_path: Path) -> None:
    path = transcript(tmp_path,
                      user("Send the quote", "u1"),
                      tool_use(READ, "toolu_1", "a1", "u1"),
                      tool_result("toolu_1", "r1", "a1"),
                      {**user("Caveat: the messages below were generated by the user while running local commands",
                              "m1", "r1"), "isMeta": True},
                      {**user("Summarise the prices file", "s1", "m1"), "isSidechain": True})
    proc = run_gate(installed, pre_tool_use(path, "mcp__plugin_mail_mail__email-send", to="ada@example.com",
                                            attachments=[DOC]))
    assert proc.returncode == 0 and "reason=consulted" in only_line(proc), proc.stderr


def test_casual_replies_and_other_tools_are_never_blocked(installed, tmp_path: Path) -> None:
    path = transcript(tmp_path, user("Thanks! Say hi to Ada", "u1"))
    for stdin, reason in [
        (pre_tool_use(path, "mcp__plugin_channels_channels__send-reply", text="Hi Ada!"), "not-a-document"),
        (pre_tool_use(path, "Write", file_path="/home/dev/shop/notes/todo.md", content="x"), "not-a-document"),
        (pre_tool_use(path, "mcp__plugin_memory_memory__memory-search", query="ada"), "not-a-deliverable"),
        (pre_tool_use(path, "Read", file_path=DOC), "not-a-deliverable"),
    ]:
        proc = run_gate(installed, stdin)
        assert proc.returncode == 0, proc.stderr
        assert f"reason={reason}" in only_line(proc)


def test_the_tool_list_is_a_setting(installed, tmp_path: Path) -> None:
    path = transcript(tmp_path, user("Send it", "u1"))
    edit = pre_tool_use(path, "Edit", file_path=DOC, old_string="a", new_string="b")
    proc = run_gate(installed, edit)  # an edit of a delivered document is gated by default too
    assert proc.returncode == 2 and "op=block tool=Edit" in only_line(proc)
    assert "reason=not-a-deliverable" in only_line(run_gate(installed, edit, PLUGHOST_CONSULT_GATE_TOOLS="Write"))
    upper = pre_tool_use(path, "Write", file_path=DOC.replace("/documents/", "/Documents/"), content="x")
    assert run_gate(installed, upper).returncode == 2  # a Documents folder is one too
    around = pre_tool_use(path, "Write", file_path=DOC.replace("/documents/", "/documents/../../tmp/"), content="x")
    assert "reason=not-a-document" in only_line(run_gate(installed, around))  # resolved: not in the folder
    pdf = pre_tool_use(path, "mcp__plugin_browser_browser__browser-pdf-save", outputPath=DOC)
    proc = run_gate(installed, pdf)  # the seed's own deliverable: a PDF saved into documents/
    assert proc.returncode == 2 and "op=block tool=mcp__plugin_browser_browser__browser-pdf-save" in only_line(proc)
    shouted = pre_tool_use(path, "mcp__mail__SEND_Email", attachments=["quote.pdf"])
    assert run_gate(installed, shouted).returncode == 2  # tool names in another case
    proc = run_gate(installed, edit, PLUGHOST_CONSULT_GATE_TOOLS="write,EDIT")  # names ignore case
    assert proc.returncode == 2 and "op=block tool=Edit" in only_line(proc)
    off = run_gate(installed, edit, PLUGHOST_CONSULT_GATE_TOOLS="Write,Edit", PLUGHOST_CONSULT_GATE="0")
    assert off.returncode == 0 and "reason=off" in only_line(off)


def test_a_visitors_session_is_not_gated(installed, tmp_path: Path) -> None:
    path = transcript(tmp_path, user("Send me the quote", "u1"))
    proc = run_gate(installed, pre_tool_use(path), PLUGHOST_SESSION_ROLE="public", ALLOWED_SCOPES="public")
    assert proc.returncode == 0 and "reason=not-owner" in only_line(proc)


@pytest.mark.parametrize("case", ["missing", "directory", "fifo", "garbage", "no-user", "not-json", "empty"])
def test_anything_unreadable_passes(installed, tmp_path: Path, case: str) -> None:
    import os

    target: Path | str = tmp_path / "nope.jsonl"
    stdin = None
    if case == "directory":
        target = tmp_path
    elif case == "fifo":
        target = tmp_path / "t.fifo"
        os.mkfifo(target)
    elif case == "garbage":
        target = tmp_path / "g.jsonl"
        target.write_bytes(b"\xff\xfe{not json\n\x00\x01\n")
    elif case == "no-user":
        target = transcript(tmp_path, tool_use("Write", "toolu_1", "a1", "u0", file_path=DOC))
    elif case == "not-json":
        stdin = b"{this is not json"
    elif case == "empty":
        stdin = b""
    proc = run_gate(installed, stdin if stdin is not None else pre_tool_use(target))
    assert proc.returncode == 0, proc.stderr
    assert only_line(proc).startswith("[consult-gate] op=pass ")


def test_only_the_transcripts_tail_is_read(installed, tmp_path: Path) -> None:
    """A profile-read further back than the tail bound does not count, and the read stays bounded."""
    from plughost.plugins.memory.surfacing import gate

    filler = [tool_result(f"toolu_f{i}", f"f{i}", "a1", "x" * 1000) for i in range(gate.TAIL_BYTES // 1000 + 50)]
    path = transcript(tmp_path, user("Send the quote", "u1"), tool_use(READ, "toolu_1", "a1", "u1"), *filler)
    proc = run_gate(installed, pre_tool_use(path))
    assert proc.returncode == 0 and "reason=no-user-message" in only_line(proc)


def test_defaults_match_the_settings_registry() -> None:
    from plughost.plugins.memory import settings
    from plughost.plugins.memory.surfacing import gate
    from plughost.plugins.memory.transcript_tail import TAIL_BYTES

    assert settings.CONSULT_GATE_TOOLS.default == gate.DEFAULT_TOOLS
    assert settings.CONSULT_GATE.default is True
    assert gate.TAIL_BYTES == TAIL_BYTES


def test_glob() -> None:
    from plughost.plugins.memory.surfacing.gate import glob

    assert glob("mcp__*__*send*", "mcp__plugin_mail_mail__email-send")
    assert glob("Write", "Write") and not glob("Write", "WriteX")
    assert not glob("mcp__*__*send*", "mcp__plugin_memory_memory__memory-search")
    assert glob("a*a", "aa") and not glob("ab*ba", "aba")


KINDS = ("typed", "tool-result", "profile-read", "other-tool", "meta", "sidechain", "garbage")


def _line(kind: str, n: int) -> bytes:
    if kind == "garbage":
        return b'{"type": "user", "message": {"content": "torn'
    rec = {"typed": lambda: user(f"message {n}", f"u{n}"),
           "tool-result": lambda: tool_result(f"t{n}", f"u{n}", "p"),
           "profile-read": lambda: tool_use(READ, f"t{n}", f"u{n}", "p"),
           "other-tool": lambda: tool_use("Bash", f"t{n}", f"u{n}", "p", command="ls"),
           "meta": lambda: {**user("caveat", f"u{n}"), "isMeta": True},
           "sidechain": lambda: {**user("subagent prompt", f"u{n}"), "isSidechain": True}}[kind]()
    return json.dumps(rec).encode()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(KINDS), max_size=30))
def test_the_gate_blocks_exactly_when_no_profile_read_follows_the_last_typed_message(kinds: list[str]) -> None:
    """Against a model of the rule: walk back to the last typed user message; a profile-read after it passes."""
    from plughost.plugins.memory.surfacing import gate

    data = b"\n".join(_line(k, i) for i, k in enumerate(kinds)) + b"\n"
    want = "no-user-message"
    for kind in reversed(kinds):
        if kind == "profile-read":
            want = "consulted"
            break
        if kind == "typed":
            want = "not-consulted"
            break
    assert gate.consulted(data) == want
    env = {"ACCOUNT_ID": ACCOUNT, "HOME": "/nonexistent", "CLAUDE_CONFIG_DIR": "/nonexistent"}
    import tempfile

    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as fh:
        fh.write(data)
        fh.flush()
        op, _, reason = gate.decide(pre_tool_use(fh.name), env, env)
    assert (op, reason) == (("block", "no-profile-read") if want == "not-consulted" else ("pass", want))
