"""Memory-area fixtures: a fake Ollama on loopback, log capture helpers."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from memory_fakes import FakeOllama


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    fake = FakeOllama().start()
    yield fake
    fake.stop()


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL where nothing listens (an unreachable Ollama)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def server_log(home: Path) -> list[str]:
    path = home / "logs" / "server.log"
    return path.read_text().splitlines() if path.exists() else []


ACCOUNT = "acct-a"


def outcome_lines(home: Path, tool: str | None = None) -> list[str]:
    prefix = "[mcp:memory] " + (f"{tool} " if tool else "")
    return [line for line in server_log(home) if line.startswith(prefix)]


@pytest.fixture
def memory_host(make_host, plughost_home):
    """A loaded host for account ``acct-a`` (embedder from the test env unless overridden)."""

    def build(**env: str):
        env.setdefault("ACCOUNT_ID", ACCOUNT)
        return make_host(**env)

    return build


def call_tool(host, tool: str, args: dict) -> tuple[bool, str]:
    """Call one tool through a real MCP client against the plugin's server (in-process transport)."""
    import anyio
    from mcp import Client

    from host.mcp_server import build_server

    async def go() -> tuple[bool, str]:
        async with Client(build_server(host, "memory")) as client:
            result = await client.call_tool(tool, args)
            text = "".join(getattr(c, "text", "") for c in result.content)
            return bool(result.is_error), text

    return anyio.run(go)
