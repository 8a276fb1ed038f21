"""The claude runner: the argv, env and stdin it gives the Claude Code CLI per role, one session
per sender resumed across turns and restarts, failures as the polite fallback; checked against a
stand-in `claude` that records what it got and prints the CLI's real JSON result shape, and
against the real CLI for the flags (a missing credential is the expected end)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from channels_support import ACCOUNT, agent_turn, read_jsonl

from plughost import Principal
from plughost.plugins.channels.claude_runner import NATIVE_TOOLS, NO_MCP_SERVERS, ClaudeRunner
from plughost.plugins.channels.runner import RunnerError, session_id_for
from plughost.plugins.channels.runner_choice import get_runner
from tests.conftest import TOOLS

OWNER = Principal.owner(ACCOUNT)

# prints the shape `claude -p --output-format json` really prints (captured from 2.1.x)
STAND_IN = r'''
import json, os, sys, time
argv = sys.argv[1:]
prompt = sys.stdin.read()
store = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "stand-in-sessions")
os.makedirs(store, exist_ok=True)
# one write on an appending descriptor: a test polling the log never reads half a line
fd = os.open(os.environ["STAND_IN_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
os.write(fd, (json.dumps({"argv": argv, "stdin": prompt, "cwd": os.getcwd(),
                          "env": {k: v for k, v in os.environ.items() if k.startswith(("CLAUDE", "PLUGHOST", "ACCOUNT", "ALLOWED", "MCP_"))}}) + "\n").encode())
os.close(fd)
def flag(name):
    return argv[argv.index(name) + 1] if name in argv else None
sid = flag("--resume") or flag("--session-id")
known = os.path.exists(os.path.join(store, sid))
if flag("--resume") and not known:
    print(f"No conversation found with session ID: {sid}", file=sys.stderr); sys.exit(1)
if flag("--session-id") and known:
    print(f"Error: Session ID {sid} is already in use.", file=sys.stderr); sys.exit(1)
open(os.path.join(store, sid), "a").close()
fail = os.environ.get("STAND_IN_FAIL")
text = prompt.rstrip().splitlines()[-1] if prompt.strip() else ""
print(json.dumps({"type": "result", "subtype": "success", "is_error": bool(fail), "api_error_status": None,
                  "duration_ms": 12, "duration_api_ms": 0, "num_turns": 1,
                  "result": fail or ("stand-in: " + text), "stop_reason": "stop_sequence", "session_id": sid,
                  "total_cost_usd": 0, "usage": {"input_tokens": 0, "output_tokens": 0}, "modelUsage": {},
                  "permission_denials": [], "terminal_reason": "completed", "uuid": "0"}))
sys.exit(1 if fail else 0)
'''


@pytest.fixture
def stand_in(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "claude"
    script.write_text(f"#!{sys.executable} -S\n{STAND_IN}")
    script.chmod(0o755)
    return {"PLUGHOST_AGENT": "claude", "PLUGHOST_CLAUDE_BIN": str(script),
            "PLUGHOST_CLAUDE_CONFIG_DIR": str(tmp_path / "config"), "STAND_IN_LOG": str(tmp_path / "calls.jsonl")}


def calls(tmp_path: Path) -> list[dict]:
    return read_jsonl(tmp_path / "calls.jsonl")


def payload(role: str, text: str, sender: str = "s1") -> dict:
    return {"role": role, "text": text, "sender": sender,
            "payload": f"## Context\nuntrusted zone\n{text}", "channel": "webchat"}


def test_public_turn_is_toolless_by_construction(make_host, account, tmp_path: Path, stand_in) -> None:
    host = make_host(**stand_in)
    runner = get_runner(host)
    assert isinstance(runner, ClaudeRunner)
    sid = session_id_for(ACCOUNT, "webchat:s1")
    reply = asyncio.run(runner.run(sid, agent_turn(payload("public", "What are your opening hours?"), OWNER, sid)))
    assert reply == "stand-in: What are your opening hours?"
    call = calls(tmp_path)[0]
    argv = call["argv"]
    assert argv[:3] == ["-p", "--output-format", "json"] and argv[argv.index("--session-id") + 1] == sid
    # no MCP server, no plugin, no built-in tool: nothing to call
    assert "--strict-mcp-config" in argv and argv[argv.index("--mcp-config") + 1] == NO_MCP_SERVERS
    assert json.loads(NO_MCP_SERVERS) == {"mcpServers": {}}
    assert "--safe-mode" in argv and argv[argv.index("--tools") + 1] == ""
    assert set(argv[argv.index("--disallowedTools") + 1].split(",")) == set(NATIVE_TOOLS)
    assert "--allowedTools" not in argv and "--permission-mode" not in argv
    assert call["env"]["CLAUDE_CONFIG_DIR"] == stand_in["PLUGHOST_CLAUDE_CONFIG_DIR"]
    assert call["env"]["PLUGHOST_SESSION_ROLE"] == "public" and call["env"]["ALLOWED_SCOPES"] == "public"
    assert call["env"]["PLUGHOST_SESSION_ID"] == sid and call["env"]["ACCOUNT_ID"] == ACCOUNT
    assert call["stdin"].endswith("What are your opening hours?")  # the composed payload, on stdin
    assert Path(call["cwd"]) == Path(os.environ["PLUGHOST_HOME"]) / "accounts" / ACCOUNT / "agent"


HANDBOOK = {"attachmentId": "hb", "title": "Bike shop handbook", "content": (
    "# Bike shop handbook\n\n## Repairs\n\nWe repair bikes of every brand within two days.\n\n"
    "## Rentals\n\nWe rent city bikes for 15 euros a day; bikes for children are free.\n\n"
    "## Parts\n\nSpare parts for bikes are ordered within a week.\n"), "scope": "public"}  # visitors read it


def test_the_public_prompts_passages_are_distinct(make_host, account, tmp_path: Path, stand_in) -> None:
    """Each Section of the handbook is also its one Chunk, and a note repeats a section's text: the
    three passage slots still hold three different texts."""
    from plughost.runtime.tooltable import call_tool

    host = make_host(**stand_in)
    call_tool(host, "memory", "memory-ingest", HANDBOOK)
    call_tool(host, "memory", "memory-ingest", {**HANDBOOK, "attachmentId": "hb-copy"})  # the same file twice
    call_tool(host, "memory", "memory-write", {"labels": ["Note"], "properties": {
        "name": "Repairs", "description": "We  repair bikes of every brand within two days!", "scope": "public"}})
    runner = get_runner(host)
    asyncio.run(runner.run(session_id_for(ACCOUNT, "webchat:bikes"), agent_turn(payload("public", "Do you repair or rent bikes?"), OWNER, session_id_for(ACCOUNT, "webchat:bikes"))))
    argv = calls(tmp_path)[0]["argv"]
    prompt = argv[argv.index("--append-system-prompt") + 1]
    passages = re.findall(r"^\[(\d)\] (.+)$", prompt, re.M)
    texts = [text for _, text in passages]
    assert [n for n, _ in passages] == ["1", "2", "3"], prompt
    assert len({re.sub(r"\W+", " ", t).lower().strip() for t in texts}) == 3, prompt
    assert sum("repair bikes" in t for t in texts) == 1 and sum("rent city bikes" in t for t in texts) == 1, prompt
    assert "(Source: Bike shop handbook › " in prompt and "_c0000" not in prompt, prompt


def test_distinct_keeps_one_passage_per_part_and_text() -> None:
    from plughost.plugins.channels.memory_runner import Passage, distinct

    section = Passage(("Section",), "s1", 1.0, {"body": "Open at 9.", "attachmentId": "a", "index": "1"})
    chunk = Passage(("Chunk",), "s1_c0", 0.9, {"content": "Open at 9.", "attachmentId": "a", "sectionIndex": "1"})
    copy = Passage(("Note",), "n1", 0.8, {"description": "open   AT 9"})
    inside = Passage(("Chunk",), "s2_c1", 0.7, {"content": "at 9", "attachmentId": "b", "sectionIndex": "0"})
    other = Passage(("Chunk",), "s3_c0", 0.6, {"content": "Closed on Sundays.", "attachmentId": "a",
                                               "sectionIndex": "2"})
    ranked = [(1.0, section), (1.0, chunk), (0.9, copy), (0.8, inside), (0.7, other)]
    assert [p.node_id for _, p in distinct(ranked, 3)] == ["s1", "s3_c0"]
    assert [p.node_id for _, p in distinct(ranked, 1)] == ["s1"]


def test_admin_turn_gets_the_admin_allowlist(make_host, account, tmp_path: Path, stand_in) -> None:
    host = make_host(**stand_in)
    runner = get_runner(host)
    asyncio.run(runner.run(session_id_for(ACCOUNT, "telegram:1"), agent_turn(payload("admin", "list my rules"), OWNER, session_id_for(ACCOUNT, "telegram:1"))))
    argv = calls(tmp_path)[0]["argv"]
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    assert allowed == list(host.surface.admin) and "mcp__plugin_memory_memory__memory-search" in allowed
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert "--strict-mcp-config" not in argv and "--safe-mode" not in argv and "--tools" not in argv
    assert "ALLOWED_SCOPES" not in calls(tmp_path)[0]["env"]


def test_an_admin_turns_cli_connects_its_servers_before_the_first_request(make_host, account, tmp_path: Path,
                                                                          stand_in) -> None:
    """``MCP_CONNECTION_NONBLOCKING=0`` for an admin turn, waiting half the turn's timeout unless the environment
    says how long; a public turn (no server) is left as it was (the real CLI: test_claude_first_tools)."""
    host = make_host(**stand_in, PLUGHOST_AGENT_TIMEOUT="90")
    runner = get_runner(host)
    asyncio.run(runner.run(session_id_for(ACCOUNT, "telegram:1"), agent_turn(payload("admin", "list my rules"), OWNER, session_id_for(ACCOUNT, "telegram:1"))))
    asyncio.run(runner.run(session_id_for(ACCOUNT, "webchat:v1"), agent_turn(payload("public", "hello"), OWNER, session_id_for(ACCOUNT, "webchat:v1"))))
    admin, public = calls(tmp_path)[0]["env"], calls(tmp_path)[1]["env"]
    assert admin["MCP_CONNECTION_NONBLOCKING"] == "0" and admin["MCP_CONNECT_TIMEOUT_MS"] == "45000"
    assert "MCP_CONNECTION_NONBLOCKING" not in public and "MCP_CONNECT_TIMEOUT_MS" not in public
    told = get_runner(make_host(**stand_in, MCP_CONNECT_TIMEOUT_MS="20000"))
    assert told.child_env(agent_turn(payload("admin", "hi"), OWNER, session_id_for(ACCOUNT, "telegram:2")))["MCP_CONNECT_TIMEOUT_MS"] == "20000"


def test_one_session_per_sender_resumed_across_turns_and_restarts(make_host, account, tmp_path: Path,
                                                                  stand_in) -> None:
    a, b = session_id_for(ACCOUNT, "webchat:a"), session_id_for(ACCOUNT, "webchat:b")
    first = get_runner(make_host(**stand_in))
    asyncio.run(first.run(a, agent_turn(payload("public", "one", "a"), OWNER, a)))
    asyncio.run(first.run(a, agent_turn(payload("public", "two", "a"), OWNER, a)))
    asyncio.run(first.run(b, agent_turn(payload("public", "other", "b"), OWNER, b)))
    restarted = get_runner(make_host(**stand_in))  # a new process: what it knows comes from disk
    asyncio.run(restarted.run(a, agent_turn(payload("public", "three", "a"), OWNER, a)))
    flags = [(c["argv"][3], c["argv"][4]) for c in calls(tmp_path)]
    assert flags == [("--session-id", a), ("--resume", a), ("--session-id", b), ("--resume", a)]
    # our record lost, the CLI's kept: "already in use" → resumed, once
    (Path(os.environ["PLUGHOST_HOME"]) / "accounts" / ACCOUNT / "claude-sessions.json").unlink()
    assert asyncio.run(restarted.run(b, agent_turn(payload("public", "again", "b"), OWNER, b))) == "stand-in: again"
    assert [(c["argv"][3], c["argv"][4]) for c in calls(tmp_path)[-2:]] == [("--session-id", b), ("--resume", b)]


def test_cli_error_is_the_polite_fallback_with_its_log_line(make_host, account, tmp_path: Path, stand_in,
                                                            capfd) -> None:
    from plughost.plugins.channels.pipeline import AGENT_UNAVAILABLE, Inbound, gateway

    host = make_host(**stand_in, STAND_IN_FAIL="Not logged in · Please run /login")
    with pytest.raises(RunnerError, match="claude: Not logged in"):
        asyncio.run(get_runner(host).run(session_id_for(ACCOUNT, "x"), agent_turn(payload("public", "hi"), OWNER, session_id_for(ACCOUNT, "x"))))

    async def turn() -> object:
        _mid, _dup, task = await gateway(host).accept(Inbound(channel="webchat", sender="visitor-0001",
                                                              text="hello?", platform_id="v:1",
                                                              target={"session": "visitor-0001"}))
        return await task

    done = asyncio.run(turn())
    assert done.status == "agent-failed" and done.reply == AGENT_UNAVAILABLE
    assert 'op=agent-failed channel=webchat' in capfd.readouterr().err


def test_missing_binary_is_a_clear_reason(make_host, account, tmp_path: Path, stand_in) -> None:
    host = make_host(**{**stand_in, "PLUGHOST_CLAUDE_BIN": str(tmp_path / "no-such-claude")})
    with pytest.raises(RunnerError, match="spawn-failed: .*no-such-claude.*PLUGHOST_CLAUDE_BIN"):
        asyncio.run(get_runner(host).run(session_id_for(ACCOUNT, "x"), agent_turn(payload("public", "hi"), OWNER, session_id_for(ACCOUNT, "x"))))


def test_each_turn_logs_its_tool_surface_and_spawn_inventory(make_host, account, tmp_path: Path, stand_in,
                                                             capfd) -> None:
    """``[tool-surface]`` and ``[pty-spawn-tool-inventory]`` from the argv the CLI really got, against what
    the MCP servers list (the served tools; the Cypher tools withheld on the embedded store are not)."""
    host = make_host(**stand_in)
    runner = get_runner(host)
    sid = session_id_for(ACCOUNT, "telegram:7")
    capfd.readouterr()
    asyncio.run(runner.run(sid, agent_turn(payload("admin", "list my rules"), OWNER, sid)))
    err = capfd.readouterr().err
    argv = calls(tmp_path)[0]["argv"]
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    surface = host.surface
    listed = sorted(n for n, t in surface.all.items() if t.plugin in surface.mcp_servers and n not in surface.withheld)
    eager = [t for t in surface.eager if t in listed]
    [line] = [ln for ln in err.splitlines() if ln.startswith("[tool-surface] ")]
    assert line == (f"[tool-surface] session={sid[:8]} role=admin permission_allowed={len(allowed)} "
                    f"eager_intent={len([t for t in allowed if t in eager])} eager_set_size={len(eager)}")
    [inv] = [ln for ln in err.splitlines() if ln.startswith("[pty-spawn-tool-inventory] ")]
    fields = dict(tok.split("=", 1) for tok in inv.split()[1:])
    assert fields["session"] == sid[:8] and fields["role"] == "admin"
    assert int(fields["argv-tools"]) == len(allowed) and int(fields["mcp-listed-tools"]) == len(listed)
    exposed = fields["exposed"].split(",")
    assert "mcp__plugin_memory_memory__memory-search" in exposed and "mcp__plugin_admin_admin__public-hostname" in exposed
    assert set(exposed) == set(allowed) & set(listed)
    hidden = set(listed) - set(allowed)
    assert fields["not-exposed"] == (",".join(t for t in listed if t in hidden) or "—")
    assert "mcp__plugin_graph_graph__write-cypher" not in inv  # withheld on SQLite: no server lists it
    # a visitor's turn: nothing allowed, no server mounted
    asyncio.run(runner.run(session_id_for(ACCOUNT, "webchat:v"), agent_turn(payload("public", "hours?"), OWNER, session_id_for(ACCOUNT, "webchat:v"))))
    err = capfd.readouterr().err
    assert "[tool-surface] session=" in err and " role=public permission_allowed=0 eager_intent=0 " in err
    [inv] = [ln for ln in err.splitlines() if ln.startswith("[pty-spawn-tool-inventory] ")]
    assert " role=public specialist=— argv-tools=0 mcp-listed-tools=0 exposed=— not-exposed=—" in inv


def real_claude() -> str:
    path = TOOLS / "node_modules" / ".bin" / "claude"
    if not path.exists():
        if os.environ.get("PLUGHOST_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"required external tool missing: {path}")
        pytest.skip(f"Claude Code CLI not installed: {path}")
    return str(path)


@pytest.mark.parametrize("role", ["public", "admin"])
def test_real_cli_accepts_the_flags_and_ends_at_the_credential(make_host, account, tmp_path: Path, role: str) -> None:
    """The argv the runner builds, run by the real CLI as a user's machine would (`env -i`, another cwd)."""
    claude = real_claude()
    host = make_host(PLUGHOST_AGENT="claude", PLUGHOST_CLAUDE_CONFIG_DIR=str(tmp_path / "config"))
    runner = get_runner(host)
    sid = session_id_for(ACCOUNT, f"webchat:{role}")
    argv = runner.argv(sid, role == "admin", resume=False, knowledge="You answer visitors.\n\n[1] We open at 7.")
    argv[0:len(runner.command)] = [claude]
    env = real_cli_env(tmp_path)
    done = subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv], input="hello",
                          capture_output=True, text=True, timeout=120, cwd="/tmp")
    assert "unknown option" not in done.stderr and "error: option" not in done.stderr, done.stderr
    assert "matches no known tool" not in done.stderr, done.stderr  # a warning per turn otherwise
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["type"] == "result" and result["is_error"] is True
    assert "logged in" in result["result"].lower() or "api key" in result["result"].lower(), result
    assert result["session_id"] == sid


def real_cli_env(tmp_path: Path) -> dict[str, str]:
    node_dir = str(Path(shutil.which("node") or TOOLS / "node_modules" / ".bin" / "node").parent)
    (tmp_path / "config").mkdir(exist_ok=True)
    return {"PATH": f"{node_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "config"),
            "CLAUDE_CODE_TMPDIR": str(tmp_path), "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def init_message(argv: list[str], env: dict[str, str]) -> tuple[dict, str]:
    """The real CLI's ``init`` message (``stream-json``: it lists the tools the session has) and its stderr."""
    i = argv.index("--output-format")
    argv = [*argv[:i], "--output-format", "stream-json", "--verbose", *argv[i + 2:]]
    done = subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv], input="hello",
                          capture_output=True, text=True, timeout=120, cwd="/tmp")
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message.get("type") == "system" and message.get("subtype") == "init":
            return message, done.stderr
    raise AssertionError(f"no init message: {done.stdout[-500:]} {done.stderr[-500:]}")


def test_the_deny_list_is_the_real_clis_own_tools(make_host, account, tmp_path: Path) -> None:
    """Every denied name is one the pinned CLI knows (no "matches no known tool" warning), every tool it
    has by default is denied, and the public turn's session has no tool at all."""
    claude = real_claude()
    env = real_cli_env(tmp_path)
    default, _ = init_message([claude, "-p", "--output-format", "json"], env)
    assert set(default["tools"]) and set(default["tools"]) <= set(NATIVE_TOOLS), set(default["tools"]) - set(NATIVE_TOOLS)
    _, typo = init_message([claude, "-p", "--output-format", "json", "--disallowedTools", "NoSuchTool,Bash"], env)
    assert 'deny rule "NoSuchTool" matches no known tool' in typo and '"Bash"' not in typo  # the CLI's own check
    runner = get_runner(make_host(PLUGHOST_AGENT="claude", PLUGHOST_CLAUDE_CONFIG_DIR=env["CLAUDE_CONFIG_DIR"]))
    argv = runner.argv(session_id_for(ACCOUNT, "webchat:deny"), False, resume=False)
    argv[0:len(runner.command)] = [claude]
    public, stderr = init_message(argv, env)
    assert "matches no known tool" not in stderr, stderr
    assert public["tools"] == [] and public["mcp_servers"] == []


@pytest.mark.parametrize(("served", "child"), [("shared", ""), ("public,shared", "public"), ("", "")])
def test_a_narrowed_servers_public_turn_is_never_wider_than_it(make_host, account, tmp_path: Path, stand_in,
                                                               served: str, child: str) -> None:
    """A public turn's agent runs with ALLOWED_SCOPES=public, narrowed by the serving process's own:
    a server narrowed to ``shared`` hands its visitor's agent no scope at all, never ``public``."""
    host = make_host(**stand_in, ALLOWED_SCOPES=served)
    sid = session_id_for(ACCOUNT, "webchat:s2")  # the turn's principal: the serving process's, narrowed to a visitor
    asyncio.run(get_runner(host).run(sid, agent_turn(payload("public", "hi"), host.principal, sid)))
    assert calls(tmp_path)[0]["env"]["ALLOWED_SCOPES"] == child
