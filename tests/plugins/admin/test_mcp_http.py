"""MCP over streamable HTTP at /mcp/<plugin>: several servers in one app, DNS-rebinding protection,
and the MCP conformance suite against a served plugin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from conformance_support import REQUIRES, advertised, run_suite, suite_scenarios
from serve_helpers import FIXTURES, conformance_command, raw_request, start_serve

from plughost.runtime.manifest import from_mapping
from plughost.runtime.types import Tool

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
    from plughost.runtime.hookspecs import hookimpl

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


PROJECT_SERVERS = ("conformance-fixture", "graph", "memory")
"""The fixture serves the tools the tools-call-* scenarios call; graph and memory are the project's own."""


@pytest.mark.external
@pytest.mark.e2e
def test_mcp_conformance_suite(serve_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The suite raw (no baseline) against each server: every scenario that applies to what the
    server advertises passes, the others are skipped, and nothing is advertised that is not served."""
    command = conformance_command()
    assert sorted(suite_scenarios(command)) == sorted(REQUIRES), "the pinned suite's scenarios changed"
    served = start_serve("--open-local", env=serve_env, plugins_dir=FIXTURES / "conformance")  # the documented switch
    try:
        outcomes = []
        for plugin in PROJECT_SERVERS:
            url = f"{served.base}/mcp/{plugin}"
            offer = anyio.run(advertised, url)
            assert offer.capabilities == {"tools"}, (plugin, offer.capabilities)  # no empty prompts/resources
            outcomes.append(run_suite(command, plugin, url, offer, tmp_path))
    finally:
        code, _, _ = served.terminate()
    with capsys.disabled():
        print()
        for outcome in outcomes:
            print(outcome.line())
    for outcome in outcomes:
        assert not outcome.failed, (outcome.server, outcome.failed)
    fixture = outcomes[0]
    assert set(fixture.passed) == {"server-initialize", "ping", "tools-list", "dns-rebinding-protection",
                                   "server-sse-multiple-streams", "tools-call-simple-text", "tools-call-error",
                                   "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
                                   "tools-call-mixed-content"}, fixture
    for outcome in outcomes[1:]:  # the project's servers: the protocol scenarios; no fixture tool, no prompts
        assert set(outcome.passed) == {"server-initialize", "ping", "tools-list", "dns-rebinding-protection",
                                       "server-sse-multiple-streams"}, outcome
    assert code == 0


def test_prompts_and_resources_are_not_offered(make_host) -> None:
    """A server advertises tools alone; prompts/* and resources/* are "method not found" (-32601)."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from plughost.mcp.server import build_server

    server = build_server(_plugin_host(make_host), "alpha")

    async def probe() -> tuple[dict[str, Any], list[int]]:
        async with Client(server) as client:
            caps = client.server_capabilities.model_dump(exclude_none=True)
            codes = []
            for call in (client.list_prompts, client.list_resources, client.list_resource_templates,
                         lambda: client.get_prompt("nope"), lambda: client.read_resource("test://nope")):
                try:
                    await call()
                except MCPError as exc:
                    codes.append(exc.error.code)
            return caps, codes

    caps, codes = anyio.run(probe)
    assert set(caps) == {"tools"} and caps["tools"].get("list_changed") is False, caps
    assert codes == [-32601] * 5


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
