"""The MCP server builder, over a real MCP client in-process and over stdio through the tee launcher,
and checked by the MCP Inspector CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from plughost.mcp.server import EAGER_META_KEY, build_server
from plughost.util.errors import UserError
from tests.conftest import npx_bin

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


def _call(server_or_params, method, *args, headers=None):
    from mcp import Client

    if headers is not None:
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

        server_or_params = streamable_http_client(server_or_params, http_client=create_mcp_http_client(headers=headers))

    async def go():
        async with Client(server_or_params) as client:
            return await getattr(client, method)(*args)

    return anyio.run(go)


@pytest.fixture
def sample_host(make_host):
    return make_host(plugins_dir=FIXTURES)


def test_tools_list_marks_eager_tools(sample_host) -> None:
    server = build_server(sample_host, "sample")
    tools = {t.name: t for t in _call(server, "list_tools").tools}
    assert set(tools) == {"echo", "add", "boom"}
    assert tools["echo"].meta == {EAGER_META_KEY: True}
    assert tools["add"].meta in (None, {})
    assert tools["add"].input_schema["required"] == ["a", "b"]
    surface = sample_host.surface
    mine = [n for n in surface.all if n.startswith("mcp__plugin_sample_sample__")]
    assert sorted(mine) == ["mcp__plugin_sample_sample__add", "mcp__plugin_sample_sample__boom",
                            "mcp__plugin_sample_sample__echo"]
    assert [n for n in surface.eager if n in mine] == ["mcp__plugin_sample_sample__echo"]
    assert [n for n in surface.admin if n in mine] == ["mcp__plugin_sample_sample__echo"]
    assert "sample" in surface.mcp_servers


def test_call_ok_bad_argument_and_raising_tool(sample_host) -> None:
    server = build_server(sample_host, "sample")
    ok = _call(server, "call_tool", "add", {"a": 2, "b": 3})
    assert not ok.is_error and json.loads(ok.content[0].text) == {"sum": 5}
    bad = _call(server, "call_tool", "add", {"a": 2, "b": "three"})
    assert bad.is_error and bad.content[0].text == "add: parameter 'b': expected integer (got 'three')"
    missing = _call(server, "call_tool", "add", {"a": 2})
    assert missing.is_error and missing.content[0].text == "add: parameter 'b' is required"
    extra = _call(server, "call_tool", "echo", {"text": "x", "loud": True})
    assert extra.is_error and "parameter 'loud' is not accepted" in extra.content[0].text
    boom = _call(server, "call_tool", "boom", {})
    assert boom.is_error and boom.content[0].text == "boom failed: RuntimeError: kaboom"
    again = _call(server, "call_tool", "echo", {"text": "still alive"})
    assert again.content[0].text == "still alive"


def test_declared_tool_without_handler_is_a_clear_error(tmp_path: Path, make_host) -> None:
    folder = tmp_path / "plugins" / "ghost"
    folder.mkdir(parents=True)
    (folder / "PLUGIN.md").write_text("---\nname: ghost\ntools:\n  - name: haunt\n---\n", encoding="utf-8")
    host = make_host(plugins_dir=tmp_path / "plugins")
    with pytest.raises(UserError, match="tool 'haunt' is declared in PLUGIN.md but no plughost_tools"):
        build_server(host, "ghost")


def test_stdio_server_through_the_tee_launcher(plughost_home: Path) -> None:
    from mcp import StdioServerParameters

    env = dict(os.environ, PLUGHOST_PLUGINS_DIR=str(FIXTURES))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "plughost.mcp.tee", "sample", "--", sys.executable, str(FIXTURES / "sample-plugin" / "mcp" / "__main__.py")],
        env=env,
        cwd=str(REPO),
    )
    result = _call(params, "call_tool", "echo", {"text": "through the tee"})
    assert result.content[0].text == "through the tee"
    logs = list((plughost_home / "logs").glob("mcp-sample-stderr-*.log"))
    assert len(logs) == 1


def test_tee_launcher_copies_stderr_and_passes_stdio(plughost_home: Path) -> None:
    script = "import sys; sys.stderr.write('to-stderr\\n'); sys.stdout.write(sys.stdin.read().upper())"
    out = subprocess.run([sys.executable, "-m", "plughost.mcp.tee", "demo", "--", sys.executable, "-c", script],
                         input=b"ping", capture_output=True, cwd=REPO, timeout=60)
    assert out.returncode == 0 and out.stdout == b"PING" and b"to-stderr" in out.stderr
    (log,) = (plughost_home / "logs").glob("mcp-demo-stderr-*.log")
    assert log.read_bytes() == b"to-stderr\n"


def _inspector(*args: str, plughost_home: Path) -> subprocess.CompletedProcess[str]:
    inspector = npx_bin("mcp-inspector")
    cmd = [str(inspector), "--cli", "-e", f"PLUGHOST_HOME={plughost_home}", sys.executable, "-m", "plughost.cli",
           "--plugins-dir", str(FIXTURES), "mcp", "serve", "sample", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)


@pytest.mark.external
def test_inspector_lists_tools_with_meta(plughost_home: Path) -> None:
    result = _inspector("--method", "tools/list", plughost_home=plughost_home)
    assert result.returncode == 0, result.stderr
    tools = {t["name"]: t for t in json.loads(result.stdout)["tools"]}
    assert tools["echo"]["_meta"] == {"anthropic/alwaysLoad": True}
    assert "_meta" not in tools["add"]


@pytest.mark.external
def test_inspector_bad_argument_is_error_naming_parameter(plughost_home: Path) -> None:
    result = _inspector("--method", "tools/call", "--tool-name", "echo", "--tool-arg", "loud=1",
                        plughost_home=plughost_home)
    assert result.returncode == 5, result.stdout + result.stderr
    assert "parameter" in result.stdout and "isError" in result.stdout


@pytest.mark.external
def test_inspector_strict_passes(plughost_home: Path) -> None:
    result = _inspector("--strict", "--method", "tools/list", plughost_home=plughost_home)
    assert result.returncode == 0, result.stdout + result.stderr


def _serve_http() -> tuple[subprocess.Popen[bytes], int]:
    """``mcp serve sample --http 0`` and the port it bound (its ``op=serve-http`` line says, once bound)."""
    env = dict(os.environ, PLUGHOST_PLUGINS_DIR=str(FIXTURES))
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "mcp", "serve", "sample", "--http", "0"],
                            env=env, cwd=REPO, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # ends when the process does: the global timeout guards a hang
        seen.append(line)
        if m := re.search(r"op=serve-http plugin=sample url=http://127\.0\.0\.1:(\d+)/mcp", line):
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # keep draining
            return proc, int(m.group(1))
    raise AssertionError("".join(seen)[-2000:])


def test_streamable_http_server(plughost_home: Path) -> None:
    proc, port = _serve_http()
    try:
        import httpx

        assert httpx.post(f"http://127.0.0.1:{port}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
                          ).status_code == 401  # the same front door as plughost serve: a token is needed
        token = (plughost_home / "credentials" / "http-token").read_text().strip()
        result = _call(f"http://127.0.0.1:{port}/mcp", "call_tool", "add", {"a": 40, "b": 2},
                       headers={"Authorization": f"Bearer {token}"})
        assert json.loads(result.content[0].text) == {"sum": 42}
        rebound = httpx.post(f"http://127.0.0.1:{port}/mcp", headers={"Host": "evil.example",
                                                                  "Authorization": f"Bearer {token}"},
                             json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert rebound.status_code in (403, 421)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for other in ({"Host": "127.0.0.1:1"}, {"Origin": "http://127.0.0.1:1"}):  # asked for 0: the bound port only
            refused = httpx.post(f"http://127.0.0.1:{port}/mcp", json=ping,
                                 headers={"Authorization": f"Bearer {token}", **other})
            assert refused.status_code in (403, 421), (other, refused.status_code)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.parametrize("port", ["99999", "-5", "x"])
def test_http_port_out_of_range_is_one_line_naming_the_flag(port: str, plughost_home: Path) -> None:
    from tests.conftest import run_cli

    result = run_cli("mcp", "serve", "sample", "--http", port, env={"PLUGHOST_PLUGINS_DIR": str(FIXTURES)})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "--http" in result.stderr and "expected a port number 0-65535" in result.stderr, result.stderr


def test_http_port_in_use_is_one_line_naming_the_flag(plughost_home: Path) -> None:
    import socket

    from tests.conftest import run_cli

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("mcp", "serve", "sample", "--http", str(port), env={"PLUGHOST_PLUGINS_DIR": str(FIXTURES)})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if "--http" in ln]
    assert f"--http: cannot listen on 127.0.0.1:{port}" in line, result.stderr
    assert "uvicorn" not in result.stderr.lower() and "ERROR:" not in result.stderr, result.stderr
