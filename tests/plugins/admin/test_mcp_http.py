"""MCP over streamable HTTP at /mcp/<plugin>: several servers in one app, DNS-rebinding protection,
and the MCP conformance suite against a served plugin."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from serve_helpers import FIXTURES, conformance_command, raw_request, start_serve

from host.manifest import from_mapping
from host.types import Tool

BASELINE = Path(__file__).resolve().parent / "conformance-baseline.yml"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


class Alpha:
    @staticmethod
    def plughost_tools(host: Any) -> list[Tool]:
        def shout(text: str) -> str:
            """Upper-case the text."""
            return text.upper()

        return [Tool.from_function(shout)]


class Beta:
    @staticmethod
    def plughost_tools(host: Any) -> list[Tool]:
        def count(items: list) -> dict:
            """Count the items."""
            return {"n": len(items)}

        return [Tool.from_function(count)]


def _plugin_host(make_host) -> Any:
    from host.hookspecs import hookimpl

    host = make_host()
    for name, cls in (("alpha", Alpha), ("beta", Beta)):
        plugin = type(name, (), {"plughost_tools": staticmethod(hookimpl(cls.plughost_tools))})
        host.register(plugin, name, from_mapping({"name": name}, None))
    return host


async def _use(url: str, tool: str, args: dict, headers: dict[str, str] | None = None) -> tuple[list[str], Any]:
    from mcp import Client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    async with Client(transport) as client:
        tools = await client.list_tools()
        result = await client.call_tool(tool, args)
        return [t.name for t in tools.tools], result


def test_two_plugins_served_side_by_side(make_host, live_app) -> None:
    server = live_app(_plugin_host(make_host))
    assert {"alpha", "beta"} <= set(server.app.state.runtime.mcp)
    names, result = anyio.run(_use, f"{server.base}/mcp/alpha", "shout", {"text": "hi"}, server.auth)
    assert names == ["shout"] and result.content[0].text == "HI" and not result.is_error
    names, result = anyio.run(_use, f"{server.base}/mcp/beta", "count", {"items": [1, 2, 3]}, server.auth)
    assert names == ["count"] and json.loads(result.content[0].text) == {"n": 3}
    _, bad = anyio.run(_use, f"{server.base}/mcp/beta", "count", {"items": "nope"}, server.auth)
    assert bad.is_error and "parameter 'items'" in bad.content[0].text


def test_dns_rebinding_protection(make_host, live_app) -> None:
    server = live_app(_plugin_host(make_host))
    body = json.dumps(INIT).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **server.auth}
    ok = raw_request(server.port, "/mcp/alpha", method="POST", headers=headers, body=body)
    assert ok.status == 200
    evil_host = raw_request(server.port, "/mcp/alpha", method="POST", headers=headers, body=body,
                            host="evil.example")
    assert evil_host.status in (403, 421)
    evil_origin = raw_request(server.port, "/mcp/alpha", method="POST",
                              headers={**headers, "Origin": "http://evil.example"}, body=body)
    assert evil_origin.status == 403


def test_unknown_plugin_endpoint_is_404_json(make_host, live_app) -> None:
    server = live_app(_plugin_host(make_host))
    response = server.get("/mcp/nope", headers=server.auth)
    assert response.status == 404 and response.json()["error"] == "not-found"


@pytest.mark.external
def test_mcp_conformance_suite(serve_env: dict[str, str], tmp_path: Path) -> None:
    """Against a fixture plugin that really serves the tools the tools-call-* scenarios call (an
    unknown tool is a JSON-RPC error, so a scenario cannot pass against a missing tool)."""
    command = conformance_command()
    served = start_serve("--open-local", env=serve_env, plugins_dir=FIXTURES / "conformance")  # the documented switch
    try:
        url = f"{served.base}/mcp/conformance-fixture"
        result = subprocess.run([*command, "server", "--url", url, "--expected-failures", str(BASELINE),
                                 "-o", str(tmp_path / "results")], capture_output=True, text=True, timeout=240,
                                cwd=tmp_path, env={**os.environ, "PATH": f"{Path(command[0]).parent}:{os.environ['PATH']}"})
    finally:
        code, _, _ = served.terminate()
    summary = result.stdout[result.stdout.find("=== SUMMARY ==="):]
    assert result.returncode == 0, summary + result.stderr[-2000:]
    for scenario in ("server-initialize", "ping", "tools-list", "dns-rebinding-protection",
                     "server-sse-multiple-streams", "tools-call-simple-text", "tools-call-error", "tools-call-image",
                     "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content"):
        assert f"✓ {scenario}:" in summary, scenario
    assert code == 0


def test_an_unknown_tool_is_a_json_rpc_invalid_params_error(make_host, live_app) -> None:
    """MCP: calling a tool the server does not have is a protocol error (-32602), not a tool result."""
    from mcp import Client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
    from mcp.shared.exceptions import MCPError

    server = live_app(_plugin_host(make_host))

    async def call() -> Any:
        transport = streamable_http_client(f"{server.base}/mcp/alpha", http_client=create_mcp_http_client(
            headers=server.auth))
        async with Client(transport) as client:
            try:
                return await client.call_tool("no-such-tool", {})
            except MCPError as exc:
                return exc

    error = anyio.run(call)
    assert isinstance(error, MCPError), error
    assert error.error.code == -32602 and "no-such-tool" in error.error.message
