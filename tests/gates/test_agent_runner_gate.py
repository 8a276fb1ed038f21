"""The channels plugin's ``agent-runner`` gate: a misconfigured runner refuses boot, a missing
executable is said loudly, and a good configuration is one ok line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from channels_support import ACCOUNT, write_account
from cli_support import run_in_process

from plughost.plugins.channels.runner_gate import check_agent_runner
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import GateContext


def check(make_host, **env: str):
    host = make_host()
    return check_agent_runner(GateContext(host=host, env={"PATH": os.environ["PATH"], **env}))


@pytest.mark.parametrize(("env", "says"), [
    ({"PLUGHOST_AGENT": "bogus"}, "PLUGHOST_AGENT: expected one of memory, claude, command (got 'bogus')"),
    ({"PLUGHOST_AGENT_TIMEOUT": "soon"}, "PLUGHOST_AGENT_TIMEOUT: expected a number > 0 (got 'soon')"),
    ({"PLUGHOST_AGENT_TIMEOUT": "-1"}, "PLUGHOST_AGENT_TIMEOUT: expected a number > 0 (got '-1')"),
    ({"PLUGHOST_AGENT": "command"}, "PLUGHOST_AGENT_COMMAND: expected a command line"),
    ({"PLUGHOST_AGENT_COMMAND": "agent 'unclosed"}, "PLUGHOST_AGENT_COMMAND: No closing quotation"),
])
def test_a_configuration_error_fails_the_gate(make_host, env, says) -> None:
    result = check(make_host, **env)
    assert result.status == "fail"
    assert result.lines[0].startswith("[channels] agent-runner FATAL reason=")
    assert says in result.lines[0]


def test_a_missing_executable_warns_and_a_good_one_is_ok(make_host) -> None:
    missing = check(make_host, PLUGHOST_AGENT="claude", PLUGHOST_CLAUDE_BIN="/nonexistent/claude")
    assert missing.status == "warn" and "agent-runner WARN agent=claude" in missing.lines[0]
    assert check(make_host).lines == ["startup-self-test agent-runner=ok inspected=1 agent=memory"]
    ok = check(make_host, PLUGHOST_AGENT_COMMAND=f"{sys.executable} -S agent.py")
    assert ok.status == "ok" and "agent=command" in ok.lines[0]


class ShopRunner:
    name = "shop-agent"

    async def run(self, session_id: str, turn: object) -> str:
        return "hello"


class ShopRunnerPlugin:
    """A brand's own runner: a plugin answering ``plughost_agent_runner`` before the built-in."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer

    @hookimpl
    def plughost_agent_runner(self, host: object) -> object:
        return ShopRunner() if self.answer else None


def test_the_finding_names_the_runner_a_plugin_configured_not_the_built_in(make_host) -> None:
    host = make_host()
    host.register(ShopRunnerPlugin(), "shop-runner")
    env = {"PATH": os.environ["PATH"], "PLUGHOST_AGENT": "claude", "PLUGHOST_CLAUDE_BIN": "/nonexistent/claude"}
    result = check_agent_runner(GateContext(host=host, env=env))
    assert result.status == "ok"  # the built-in claude runner never runs: its missing program is no finding
    assert result.lines == ["startup-self-test agent-runner=ok inspected=1 agent=shop-agent plugin=shop-runner "
                            "unused=channels"]
    two = make_host()
    two.register(ShopRunnerPlugin(), "shop-runner")
    two.register(ShopRunnerPlugin(answer=False), "quiet-runner")  # registered last, asked first: it declines
    result = check_agent_runner(GateContext(host=two, env={"PATH": os.environ["PATH"]}))
    assert result.lines == ["startup-self-test agent-runner=ok inspected=1 agent=shop-agent plugin=shop-runner "
                            "unused=quiet-runner,channels"]
    declining = make_host()
    declining.register(ShopRunnerPlugin(answer=False), "shop-runner")  # it answers None: the built-in runs
    result = check_agent_runner(GateContext(host=declining, env={"PATH": os.environ["PATH"]}))
    assert result.lines == ["startup-self-test agent-runner=ok inspected=1 agent=memory"]


def test_serve_refuses_to_boot_on_a_bogus_agent(plughost_home: Path, tmp_path: Path) -> None:
    write_account(plughost_home)
    env = {**os.environ, "ACCOUNT_ID": ACCOUNT, "PLUGHOST_AGENT": "bogus"}
    proc = run_in_process(["serve", "--host", "127.0.0.1", "--port", "0"], env, cwd=tmp_path)  # refused before serving
    # the settings check refuses it before the gates run: one line naming the variable, exit 2
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == \
        "plughost: PLUGHOST_AGENT: expected one of memory, claude, command (got 'bogus')", proc.stderr
    assert "Traceback" not in proc.stderr
