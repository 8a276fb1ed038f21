"""The claude runner's plugin tools are on the model's first request: the real Claude Code CLI,
run by the runner against an installed payload and a loopback stand-in for the Messages API
(fake_messages_api), sends its first ``/v1/messages`` of an admin turn with the plugins' MCP tools
(the CLI connects its servers before that request); a public turn's first request carries no tool.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from channels_support import ACCOUNT, agent_turn
from fake_messages_api import REPLY, FakeMessagesAPI, mcp_tool_names

from plughost.plugins.channels.claude_runner import ClaudeRunner
from plughost.plugins.channels.runner import session_id_for
from plughost.plugins.channels.runner_choice import get_runner
from tests.conftest import npx_bin, run_cli

pytestmark = [pytest.mark.external, pytest.mark.e2e]


def installed(tmp_path: Path) -> Path:
    """A Claude Code config dir with the default brand's payload installed for the account."""
    (tmp_path / "no-premium").mkdir()
    payload, config = tmp_path / "payload", tmp_path / "claude-config"
    built = run_cli("bundle", "default", "--out", str(payload), "--premium-dir", str(tmp_path / "no-premium"))
    assert built.returncode == 0, built.stderr
    done = run_cli("install", str(payload), "--config-dir", str(config), "--account", ACCOUNT)
    assert done.returncode == 0, done.stderr
    return config


def test_an_admin_turns_first_request_carries_the_plugin_tools_and_a_public_ones_none(
        make_host, account, tmp_path: Path) -> None:
    claude = str(npx_bin("claude"))
    config = installed(tmp_path)
    (tmp_path / "home").mkdir()
    with FakeMessagesAPI() as api:
        host = make_host(PLUGHOST_AGENT="claude", PLUGHOST_CLAUDE_BIN=claude, PLUGHOST_CLAUDE_CONFIG_DIR=str(config),
                         HOME=str(tmp_path / "home"), CLAUDE_CODE_TMPDIR=str(tmp_path / "home"),
                         DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                         ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="dummy")
        runner = get_runner(host)
        assert isinstance(runner, ClaudeRunner)
        admin = {"role": "admin", "text": "hello", "sender": "a1", "payload": "hello", "channel": "telegram"}
        assert asyncio.run(runner.run(session_id_for(ACCOUNT, "telegram:a1"), agent_turn(admin, host.principal))) == REPLY
        first = api.bodies()[0]
        offered = set(mcp_tool_names(first))
        assert "mcp__plugin_memory_memory__memory-search" in offered, sorted(t.get("name") for t in first["tools"])
        assert {"mcp__plugin_graph_graph__graph-schema", "mcp__plugin_admin_admin__admin-hostname"} <= offered
        api.clear()
        public = {"role": "public", "text": "hello", "sender": "v1", "payload": "hello", "channel": "webchat"}
        assert asyncio.run(runner.run(session_id_for(ACCOUNT, "webchat:v1"), agent_turn(public, host.principal))) == REPLY
        first = api.bodies()[0]
        assert not first.get("tools"), [t.get("name") for t in first["tools"]]
