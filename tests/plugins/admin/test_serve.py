"""`plughost serve` as a real process: gates first, URLs, health, hooks, graceful SIGTERM/SIGINT."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import FIXTURES, raw_request, start_serve

from plughost.runtime.manifest import from_mapping
from plughost.runtime.types import ChannelAdapter, Route
from plughost.util.errors import DuplicateNameError
from tests.conftest import REPO


def wait_lines(served, line: str, count: int, timeout: float = 60) -> None:
    """Until the server's stderr holds ``count`` lines starting with ``line`` (a hang guard only)."""
    deadline = time.monotonic() + timeout
    while True:
        text = served.stderr_path.read_text(errors="replace")
        if sum(1 for ln in text.splitlines() if ln.startswith(line)) >= count:
            return
        assert time.monotonic() < deadline, f"fewer than {count} {line!r} lines: {text[-2000:]}"
        time.sleep(0.02)

def test_serve_prints_urls_reports_health_and_stops_on_sigterm(serve_env: dict[str, str],
                                                                plughost_home: Path) -> None:
    served = start_serve(env=serve_env, plugins_dir=FIXTURES / "ok")
    deadline = time.monotonic() + 60  # a hang guard: the reader thread collects the lines after "serving on"
    while "mcp probe:" not in "".join(served.stdout_lines) and time.monotonic() < deadline:
        time.sleep(0.05)
    out = "".join(served.stdout_lines)
    assert f"health:        {served.base}/healthz" in out
    assert f"mcp probe:     {served.base}/mcp/probe" in out
    health = raw_request(served.port, "/healthz")
    assert health.status == 200, health.body
    body = health.json()
    assert body["status"] == "ok"
    assert body["gates"]["ran"] is True and body["gates"]["fatal"] == []
    assert body["store"]["status"] in ("ok", "none") and body["embedder"]["status"] in ("ok", "none")
    assert "probe" in body["plugins"]["loaded"] and "probe" in body["mcp"]
    assert raw_request(served.port, "/probe/slow?ms=1").status == 200
    code, _, err = served.terminate(signal.SIGTERM)
    assert code == 0, err
    log = (plughost_home / "logs" / "server.log").read_text()
    assert "[probe] op=startup" in log and "[probe] op=shutdown" in log
    assert log.index("[probe] op=startup") < log.index("[serve] op=listening") < log.index("[probe] op=shutdown")
    assert "[serve] op=stopping signal=SIGTERM" in err
    assert "[serve] op=stopped signal=SIGTERM" in err
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", served.port), timeout=1).close()


def test_sigint_also_stops_gracefully(serve_env: dict[str, str]) -> None:
    served = start_serve(env=serve_env, plugins_dir=FIXTURES / "ok")
    code, _, err = served.terminate(signal.SIGINT)
    assert code == 0, err
    assert "[serve] op=stopped signal=SIGINT" in err


def test_fatal_gate_refuses_to_serve(serve_env: dict[str, str], cli) -> None:
    refused = cli("--plugins-dir", str(FIXTURES / "fatal"), "serve", "--port", "0", env=serve_env, cwd=REPO)
    code, out, err = refused.returncode, refused.stdout, refused.stderr  # refused before serving: in process
    assert code == 1
    assert "boot-failed reason=probe-always-fails" in err
    assert "serve: refusing to serve: fatal boot gate(s) failed: probe-always-fails" in err
    assert "serving on" not in out


def test_busy_port_is_one_line(serve_env: dict[str, str], cli) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = cli("--plugins-dir", str(FIXTURES / "ok"), "serve", "--port", str(port), env=serve_env)
    assert result.returncode == 2
    assert f"--port: cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_port_is_usage_error(cli) -> None:
    result = cli("serve", "--port", "70000")
    assert result.returncode == 2 and "expected a port number 0-65535" in result.stderr


def test_sigterm_during_load_every_accepted_request_completes(serve_env: dict[str, str]) -> None:
    """Slow requests in flight and a stream of quick ones: after SIGTERM each accepted one gets its full answer."""
    served = start_serve(env=serve_env, plugins_dir=FIXTURES / "ok")
    results: list[tuple[str, Any]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def slow(i: int) -> None:
        try:
            r = raw_request(served.port, f"/probe/slow?ms=1500&i={i}", timeout=30)
            outcome: Any = (r.status, len(r.body))
        except OSError as exc:
            outcome = exc
        with lock:
            results.append(("slow", outcome))

    def quick() -> None:
        while not stop.is_set():
            try:
                sock = socket.create_connection(("127.0.0.1", served.port), timeout=5)
            except OSError:
                with lock:
                    results.append(("refused", None))
                return  # listener closed: not accepted, fine
            try:
                sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
                             "Connection: close\r\n\r\n".encode())
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
                outcome: Any = data.split(b"\r\n", 1)[0] if data else b"<closed without answer>"
            except OSError as exc:
                outcome = exc
            finally:
                sock.close()
            with lock:
                results.append(("quick", outcome))

    slow_threads = [threading.Thread(target=slow, args=(i,)) for i in range(12)]
    quick_threads = [threading.Thread(target=quick) for _ in range(3)]
    for t in slow_threads + quick_threads:
        t.start()
    wait_lines(served, "[probe] op=slow-start", 12)  # the slow requests are being served now
    served.proc.send_signal(signal.SIGTERM)
    for t in slow_threads:
        t.join(timeout=30)
    stop.set()
    for t in quick_threads:
        t.join(timeout=30)
    code, _, err = served.finish()
    assert code == 0, err[-2000:]
    slow_results = [o for kind, o in results if kind == "slow"]
    assert slow_results == [(200, len("slow-done ") + 2000)] * 12, slow_results
    quick_results = [o for kind, o in results if kind == "quick"]
    assert quick_results, "no quick request was served"
    # a quick request either was never accepted (connection refused/reset before any byte) or was answered:
    # 200 before the signal, 503 (stopping, with Retry-After) if it started after it, before the listener closed
    answered = [o for o in quick_results if isinstance(o, bytes) and o.startswith(b"HTTP/1.1 ")]
    unanswered = [o for o in quick_results if not (isinstance(o, bytes) and o.startswith(b"HTTP/1.1 "))]
    assert all(o.startswith((b"HTTP/1.1 200", b"HTTP/1.1 503")) for o in answered), answered[:5]
    assert not [o for o in unanswered if not isinstance(o, ConnectionError | bytes)], unanswered[:5]
    assert "[serve] op=stopping signal=SIGTERM inflight=" in err


def test_lifespan_runs_hooks_and_closes_the_store(make_host, live_app) -> None:
    from plughost.runtime.hookspecs import hookimpl

    events: list[str] = []

    class Store:
        def vector_indexes(self) -> dict[str, int]:
            return {"Question": 8}

        def close(self) -> None:
            events.append("store-closed")

    class Plugin:
        @hookimpl
        def plughost_store(self, host: Any) -> Any:
            return Store()

        @hookimpl
        def plughost_startup(self, host: Any) -> None:
            events.append("startup")

        @hookimpl
        def plughost_shutdown(self, host: Any) -> None:
            events.append("shutdown")

    host = make_host()
    host.register(Plugin(), "lifecycle", from_mapping({"name": "lifecycle"}, None))
    server = live_app(host)
    health = server.get("/healthz").json()
    assert health["store"] == {"status": "ok", "kind": "Store", "vectorIndexes": 1}
    assert events == ["startup"]
    server.stop()
    assert events == ["startup", "shutdown", "store-closed"]


def test_health_reports_a_failing_store_as_degraded(make_host, live_app) -> None:
    from plughost.runtime.hookspecs import hookimpl

    class Broken:
        def vector_indexes(self) -> dict[str, int]:
            raise RuntimeError("disk gone")

    class Plugin:
        @hookimpl
        def plughost_store(self, host: Any) -> Any:
            return Broken()

    host = make_host()
    host.register(Plugin(), "broken-store", from_mapping({"name": "broken-store"}, None))
    response = live_app(host).get("/healthz")
    assert response.status == 503
    assert response.json()["status"] == "degraded"
    assert response.json()["store"]["detail"] == "RuntimeError: disk gone"


def test_routes_from_plugins_and_channel_adapters(make_host, live_app) -> None:
    from starlette.responses import PlainTextResponse

    from plughost.runtime.hookspecs import hookimpl

    async def hello(request: Any) -> Any:
        return PlainTextResponse("hello")

    class Channel:
        @hookimpl
        def plughost_channel_adapters(self, host: Any) -> list[ChannelAdapter]:
            return [ChannelAdapter("unit-chat", routes=(Route("/unit-chat/ping", endpoint=hello),))]

    host = make_host()
    host.register(Channel(), "chan", from_mapping({"name": "chan"}, None))
    server = live_app(host)
    assert server.get("/unit-chat/ping").body == b"hello"
    assert "chan:GET /unit-chat/ping" in server.app.state.runtime.routes


def test_duplicate_route_names_both_plugins(make_host) -> None:
    from plughost.runtime.hookspecs import hookimpl
    from plughost.serve.app import build_app

    class Clash:
        @hookimpl
        def plughost_channel_adapters(self, host: Any) -> list[ChannelAdapter]:
            return [ChannelAdapter("x", routes=(Route("/healthz", endpoint=lambda r: None),))]

    host = make_host()
    host.register(Clash(), "clash", from_mapping({"name": "clash"}, None))
    with pytest.raises(DuplicateNameError, match="'GET /healthz' is provided twice: by plugin 'admin' and by plugin 'clash'"):
        build_app(host)


def test_unexpected_error_is_json_500(make_host, live_app) -> None:
    from plughost.runtime.hookspecs import hookimpl

    async def boom(request: Any) -> Any:
        raise RuntimeError("kaput")

    class Plugin:
        @hookimpl
        def plughost_routes(self, host: Any) -> list[Route]:
            return [Route("/boom", endpoint=boom)]

    host = make_host()
    host.register(Plugin(), "boom", from_mapping({"name": "boom"}, None))
    response = live_app(host).get("/boom")
    assert response.status == 500
    assert response.json() == {"error": "internal", "detail": "RuntimeError while serving /boom"}


def test_sigterm_ends_open_mcp_event_streams(serve_env: dict[str, str]) -> None:
    """An MCP client holding a GET event stream open does not keep the server from stopping,
    and the stream is ended cleanly (its session terminated), not cut mid-response."""
    import json

    served = start_serve("--grace", "60", "--open-local", env=serve_env, plugins_dir=FIXTURES / "ok")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    first = raw_request(served.port, "/mcp/probe", method="POST", headers=headers, body=json.dumps(init).encode())
    session = first.headers["mcp-session-id"]
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    raw_request(served.port, "/mcp/probe", method="POST", headers={**headers, "Mcp-Session-Id": session}, body=note)
    stream = socket.create_connection(("127.0.0.1", served.port), timeout=60)
    stream.sendall((f"GET /mcp/probe HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\nAccept: text/event-stream\r\n"
                    f"Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n").encode())
    head = stream.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    code, _, err = served.terminate(signal.SIGTERM, timeout=60)
    assert code == 0, err[-2000:]
    assert "graceful shutdown exceeded" not in err
    assert "returned without completing response" not in err
    while stream.recv(65536):
        pass  # the server ended the stream: recv returns b"" instead of blocking
    stream.close()


def test_sigterm_lets_an_in_flight_mcp_tool_call_finish(serve_env: dict[str, str]) -> None:
    import anyio
    from mcp import Client

    served = start_serve(env={**serve_env, "PLUGHOST_OPEN_LOCAL": "1"}, plugins_dir=FIXTURES / "ok")
    outcome: dict[str, Any] = {}
    connected = threading.Event()

    async def call() -> None:
        async with Client(f"{served.base}/mcp/probe") as client:
            await client.list_tools()  # the client validates results against the listed tools
            connected.set()
            try:
                result = await client.call_tool("nap", {"ms": 1500})
            except BaseException as exc:
                outcome["call-exc"] = repr(exc)
                raise
            outcome["text"] = result.content[0].text
            outcome["error"] = result.is_error

    def run() -> None:
        try:
            anyio.run(call)
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome.setdefault("exc", repr(exc))

    thread = threading.Thread(target=run)
    thread.start()
    assert connected.wait(30)
    wait_lines(served, "[probe] op=nap-start", 1)  # the nap call is in flight
    served.proc.send_signal(signal.SIGTERM)
    thread.join(timeout=60)
    code, _, err = served.finish()
    assert outcome.get("text") == "napped 1500" and outcome.get("error") is False, (outcome, err[-1500:])
    assert code == 0


def test_a_store_that_does_not_answer_is_503_without_a_traceback(make_host, live_app, caplog) -> None:
    """A database down mid-serve: one ``[http] op=error`` line and a quick 503, not a 500 and a
    traceback in the log (the catch-all handler's path re-raises into the server's logger)."""
    from plughost.runtime.hookspecs import hookimpl
    from plughost.util.errors import StoreUnavailable

    async def down(request: Any) -> Any:
        raise StoreUnavailable("graph store: Neo4j does not answer (connection refused)")

    class Plugin:
        @hookimpl
        def plughost_routes(self, host: Any) -> list[Route]:
            return [Route("/down", endpoint=down)]

    host = make_host()
    host.register(Plugin(), "down", from_mapping({"name": "down"}, None))
    with caplog.at_level("DEBUG"):
        response = live_app(host).get("/down")
    assert response.status == 503
    assert response.json() == {"error": "store-unavailable",
                               "detail": "graph store: Neo4j does not answer (connection refused)"}
    assert not [r for r in caplog.records if r.exc_info or "Exception in ASGI" in r.getMessage()]


def test_health_asks_a_store_that_can_ping(make_host, live_app) -> None:
    """Discovery is cached; a network store's ``ping()`` says whether the server still answers."""
    from plughost.runtime.hookspecs import hookimpl
    from plughost.util.errors import StoreUnavailable

    class Gone:
        def ping(self) -> None:
            raise StoreUnavailable("graph store: Neo4j does not answer")

        def vector_indexes(self) -> dict[str, int]:
            return {"Chunk": 384}

    class Plugin:
        @hookimpl
        def plughost_store(self, host: Any) -> Any:
            return Gone()

    host = make_host()
    host.register(Plugin(), "gone-store", from_mapping({"name": "gone-store"}, None))
    response = live_app(host).get("/healthz")
    assert response.status == 503 and response.json()["status"] == "degraded"
    assert "does not answer" in response.json()["store"]["detail"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the first bind's exit
def test_a_live_test_server_takes_another_port_when_its_free_one_was_taken(make_host, monkeypatch) -> None:
    """The suite's LiveServer picks a free port, which another worker's server can take before uvicorn
    binds it: it starts again on another port instead of failing the test that asked for it."""
    import serve_helpers

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    free = serve_helpers.free_port
    monkeypatch.setattr(serve_helpers, "free_port", lambda: next(ports, None) or free())
    server = serve_helpers.LiveServer(make_host()).start()
    try:
        assert server.port != taken.getsockname()[1]
        assert raw_request(server.port, "/healthz").status == 200
    finally:
        server.stop()
        taken.close()


def test_port_zero_is_picked_at_the_bind_not_before(serve_env: dict[str, str], tmp_path: Path) -> None:
    """``--port 0``: the system picks the port when uvicorn binds it. A port probed first and bound
    later can be taken in between (another process's server or outgoing connection): here the probe
    is made to answer a port that is already taken, and the server still starts, on another one."""
    import os
    import subprocess
    import sys

    import httpx

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        wrapper = tmp_path / "serve_after_a_lost_probe.py"
        wrapper.write_text(
            "import sys\n"
            "from plughost.cli import listen\n"
            "from plughost.cli.main import main\n"
            "probe = listen.check_port\n"
            f"listen.check_port = lambda *a, **k: (probe(*a, **k), {busy})[1]\n"
            "sys.exit(main(['serve', '--port', '0']))\n")
        proc = subprocess.Popen([sys.executable, str(wrapper)], env={**os.environ, **serve_env}, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            assert proc.stdout is not None
            while "serving on" not in line and proc.poll() is None:
                line = proc.stdout.readline()
            assert "serving on http://127.0.0.1:" in line, proc.communicate(timeout=60)[1][-2000:]
            port = int(line.rsplit(":", 1)[1])
            assert port != busy and raw_request(port, "/healthz").status == 200
            # the MCP endpoints' DNS-rebinding checks allow the bound port only, once it is known
            token = (Path(serve_env["PLUGHOST_HOME"]) / "accounts" / serve_env["ACCOUNT_ID"] / "credentials"
                     / "http-token").read_text().strip()
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}

            def mcp_status(**headers: str) -> int:
                return httpx.post(f"http://127.0.0.1:{port}/mcp/memory", json=init, timeout=30, headers={
                    "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
                    **headers}).status_code

            assert mcp_status() == 200
            assert mcp_status(Host="127.0.0.1:1") == 421
            assert mcp_status(Origin="http://127.0.0.1:1") == 403
            assert mcp_status(Host="127.0.0.1") == 421 and mcp_status(Origin="http://localhost") == 403  # port 80
            assert mcp_status(Origin=f"http://127.0.0.1:{port}") == 200
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
    assert proc.returncode == 0
