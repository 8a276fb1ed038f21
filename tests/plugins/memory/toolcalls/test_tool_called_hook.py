"""``plughost_tool_called``: plughost MCP calls outside Claude Code are audited, through a real
``plughost mcp serve memory`` over stdio and an MCP client; the store file is the oracle."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest
from audit_support import ACCOUNT, PLANTED

from plughost.runtime import hooktable
from plughost.runtime.hookspecs import hookimpl


def served_calls(home: Path, script: list[tuple[str, dict]], **env: str) -> list[bool]:
    from mcp import Client, StdioServerParameters

    full = {k: v for k, v in os.environ.items() if k != "CLAUDECODE"}
    full.update(PLUGHOST_HOME=str(home), ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none", PLUGHOST_AUDIT_MCP="1")
    full.update(env)
    params = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"], env=full)

    async def go() -> list[bool]:
        async with Client(params) as client:
            return [bool((await client.call_tool(tool, args)).is_error) for tool, args in script]

    return anyio.run(go)


def stored(home: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(home / "graph.sqlite")
    try:
        return sorted(con.execute("SELECT json_extract(properties, '$.toolName'), json_extract(properties, "
                                  "'$.sessionId') FROM nodes WHERE labels LIKE '%ToolCall%'"))
    finally:
        con.close()


def test_hook_plughost_tool_called(plughost_home: Path) -> None:
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    errors = served_calls(plughost_home, [("tool-calls", {"limit": 1}), ("tool-calls", {"cursor": "nope"}),
                                         ("memory-search", {"query": f"api_key={PLANTED}"})])
    assert errors == [False, True, False]
    calls = stored(plughost_home)
    assert [c[0] for c in calls] == ["mcp__memory__memory-search", "mcp__memory__tool-calls",
                                     "mcp__memory__tool-calls"]
    assert all(c[1].startswith("mcp-memory-20") for c in calls)  # one conversation per day
    assert PLANTED not in (plughost_home / "graph.sqlite").read_bytes().decode("latin-1")
    assert "[persist] tool-call persisted tool=mcp__memory__tool-calls" in (plughost_home / "logs" / "server.log").read_text()


@pytest.mark.parametrize("env", [{"CLAUDECODE": "1"}, {"PLUGHOST_AUDIT_MCP": "0"}, {"ALLOWED_SCOPES": "public"},
                                 {"SESSION_ID": "s-pub"},
                                 {"PLUGHOST_SESSION_ROLE": "public", "PLUGHOST_SESSION_ID": "r-1"},
                                 {"PLUGHOST_GRAPH_READ_ONLY": "1"}])
def test_claude_code_public_narrowed_and_reader_processes_record_nothing(plughost_home: Path, env: dict[str, str]) -> None:
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    served_calls(plughost_home, [("memory-search", {"query": "anything"})], **env)
    assert stored(plughost_home) == []


def test_a_raising_implementation_never_changes_the_result(make_host) -> None:
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none")

    class Boom:
        @hookimpl
        def plughost_tool_called(self, tool: str) -> None:
            raise RuntimeError(f"audit down for {tool}")

    with host.temporary_plugin(Boom(), "boom"):
        errors = host.call_each(hooktable.TOOL_CALLED, plugin="memory", tool="x", arguments={}, result="",
                                is_error=False, started_at="2026-12-01T00:00:00Z", completed_at="2026-12-01T00:00:01Z")
    assert [e.reason for e in errors if e.plugin == "boom"] == ["RuntimeError: audit down for x"]
