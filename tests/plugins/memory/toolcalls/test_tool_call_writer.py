"""The MCP tool-call audit is written off the reply path (plugins/memory/toolcalls/writer.py): queued,
written in batches by a background thread, and every queued call stored before the process ends.

The process tests own a real ``python -m plughost.cli mcp serve memory`` and speak MCP to it with the
SDK's ``ClientSession`` over its pipes, so the test decides how it ends (SIGTERM, or stdin closed)
and waits for its exit; the store file is the oracle afterwards.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from audit_support import ACCOUNT

from plughost.runtime import hooktable

CALLS = 25


def _stored(home: Path) -> list[str]:
    con = sqlite3.connect(home / "graph.sqlite")
    try:
        return sorted(r[0] for r in con.execute("SELECT json_extract(properties, '$.toolName') FROM nodes "
                                                "WHERE labels LIKE '%ToolCall%'"))
    finally:
        con.close()


async def _served_then_ended(home: Path, calls: int, end: str) -> int:
    """``calls`` memory-search calls over stdio, then end the server by ``end``; its exit status."""
    import mcp_types as types
    from anyio.streams.text import TextReceiveStream
    from mcp.client.session import ClientSession
    from mcp.shared.message import SessionMessage

    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDECODE", "PLUGHOST_STORE") and not k.startswith("NEO4J_")}
    env.update(PLUGHOST_HOME=str(home), ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none", PLUGHOST_AUDIT_MCP="1")
    proc = await anyio.open_process([sys.executable, "-m", "plughost.cli", "mcp", "serve", "memory"], env=env,
                                    stderr=None)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    to_server_send, to_server = anyio.create_memory_object_stream[SessionMessage](0)
    from_server_send, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    async def reader() -> None:
        buffer = ""
        async with from_server_send:
            async for chunk in TextReceiveStream(stdout):
                lines = (buffer + chunk).split("\n")
                buffer = lines.pop()
                for line in lines:
                    if line.strip():
                        await from_server_send.send(SessionMessage(
                            types.jsonrpc_message_adapter.validate_json(line, by_name=False)))

    async def writer() -> None:
        async with to_server:
            async for message in to_server:
                await stdin.send((message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode())

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            async with ClientSession(from_server, to_server_send) as session:
                await session.initialize()
                for i in range(calls):
                    result = await session.call_tool("memory-search", {"query": f"probe {i}"})
                    assert not result.is_error, result
                if end == "sigterm":
                    proc.send_signal(signal.SIGTERM)
                else:
                    await stdin.aclose()
                code = await proc.wait()
            tg.cancel_scope.cancel()
    return code


@pytest.mark.parametrize("end", ["sigterm", "stdin-closed"])
def test_every_call_is_stored_when_the_stdio_server_ends(plughost_home: Path, end: str) -> None:
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    code = anyio.run(_served_then_ended, plughost_home, CALLS, end)
    assert code == 0
    assert _stored(plughost_home) == ["mcp__memory__memory-search"] * CALLS
    log = (plughost_home / "logs" / "server.log").read_text()
    assert "[audit] op=flushed rows=" in log and f"total={CALLS}" in log, log[-2000:]
    if end == "sigterm":
        assert "[mcp] op=stopping plugin=memory signal=SIGTERM" in log


def _called(host: Any, i: int) -> None:
    errors = host.call_each(hooktable.TOOL_CALLED, plugin="memory", tool="memory-search",
                            arguments={"query": f"q{i}"}, result="[]", is_error=False,
                            started_at=f"2026-12-01T00:00:{i:02d}Z", completed_at=f"2026-12-01T00:00:{i:02d}Z")
    assert not errors


def _count(host: Any) -> int:
    from plughost.ports.graph import Guards

    return len(host.store().find(guards=Guards(ACCOUNT), labels=["ToolCall"], limit=1000))


def test_the_hook_queues_and_flush_waits_for_the_rows(make_host, plughost_home: Path) -> None:
    from plughost.plugins.memory.toolcalls import writer as toolcall_writer
    from plughost.ports.graph import Guards
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none", PLUGHOST_AUDIT_MCP="1", CLAUDECODE="")
    for i in range(10):
        _called(host, i)
    toolcall_writer.flush(host)
    assert _count(host) == 10
    conversations = {n.properties["conversationId"] for n in host.store().find(
        guards=Guards(ACCOUNT), labels=["ToolCall"], limit=100)}
    assert len(conversations) == 1  # one new session's calls, batched, hang from one Conversation
    toolcall_writer.stop(host)
    _called(host, 11)  # after the stop: written inline
    assert _count(host) == 11


def test_a_full_queue_writes_inline_and_the_stop_writes_the_rest(make_host, plughost_home: Path) -> None:
    from plughost.plugins.memory.toolcalls import writer as toolcall_writer
    from plughost.plugins.memory.toolcalls.writer import AuditWriter
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none", PLUGHOST_AUDIT_MCP="1", CLAUDECODE="")
    writer = AuditWriter(host, max_queued=2)  # its thread not started yet: nothing drains the queue
    host.state.set(toolcall_writer.STATE_KEY, writer)
    for i in range(5):
        _called(host, i)
    assert (writer.queue.qsize(), writer.inline, _count(host)) == (2, 3, 3)
    writer.thread.start()
    writer.stop()
    assert _count(host) == 5
    host.state.pop(toolcall_writer.STATE_KEY)
