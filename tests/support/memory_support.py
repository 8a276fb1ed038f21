"""A small faithful fake of Ollama's ``POST /api/embed`` on loopback (real HTTP, real JSON).

Configurable per-character delay (optionally changing after N requests), failures for inputs
containing a marker, and the vector size. It records every request with its start/end times
so tests can check POST sizes, cooldown gaps and ``keep_alive``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.conftest import ensure_account


def fake_vector(text: str, dims: int) -> list[float]:
    """Deterministic unit vector for a text (so tests can check input order)."""
    raw: list[float] = []
    counter = 0
    while len(raw) < dims:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        raw.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    raw = raw[:dims]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


@dataclass
class Recorded:
    body: dict[str, Any]
    started: float
    ended: float
    status: int


class VirtualClock:
    """The time the fake's simulated work takes, without the machine's: a test of pacing reads this
    clock (in place of ``time.perf_counter``), so a loaded machine's latency never moves a batch."""

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def perf_counter(self) -> float:
        with self._lock:
            return self.now


@dataclass
class FakeOllama:
    dims: int = 768
    ms_per_char: float = 0.0
    slow_after: int | None = None  # from this request index on (0-based) use slow_ms_per_char
    slow_ms_per_char: float = 0.0
    fail_marker: str | None = None  # any input containing it makes the request fail with HTTP 500
    clock: VirtualClock | None = None  # set: the simulated work advances it instead of sleeping
    requests: list[Recorded] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeOllama:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                started = time.perf_counter()
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/api/embed":
                    self._reply(404, {"error": "not found"})
                    return
                inputs = body.get("input")
                inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
                index = len(fake.requests)
                rate = fake.slow_ms_per_char if fake.slow_after is not None and index >= fake.slow_after \
                    else fake.ms_per_char
                work = rate * sum(len(t) for t in inputs) / 1000
                if fake.clock is not None:
                    fake.clock.advance(work)
                else:
                    time.sleep(work)
                if fake.fail_marker and any(fake.fail_marker in t for t in inputs):
                    fake.requests.append(Recorded(body, started, time.perf_counter(), 500))
                    self._reply(500, {"error": "model runner crashed"})
                    return
                vectors = [fake_vector(t, fake.dims) for t in inputs]
                fake.requests.append(Recorded(body, started, time.perf_counter(), 200))
                self._reply(200, {"model": body.get("model"), "embeddings": vectors,
                                  "total_duration": 1, "load_duration": 0,
                                  "prompt_eval_count": sum(len(t.split()) for t in inputs)})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def sizes(self) -> list[int]:
        return [len(r.body["input"]) if isinstance(r.body["input"], list) else 1 for r in self.requests]


ACCOUNT = "acct-a"
REPO = Path(__file__).resolve().parents[2]


def server_log(home: Path) -> list[str]:
    path = home / "logs" / "server.log"
    return path.read_text().splitlines() if path.exists() else []


def outcome_lines(home: Path, tool: str | None = None) -> list[str]:
    prefix = "[mcp:memory] " + (f"{tool} " if tool else "")
    return [line for line in server_log(home) if line.startswith(prefix)]


def call_tool(host, tool: str, args: dict) -> tuple[bool, str]:
    """Call one tool through a real MCP client against the plugin's server (in-process transport)."""
    import anyio
    from mcp import Client

    from plughost.mcp.server import build_server

    async def go() -> tuple[bool, str]:
        async with Client(build_server(host, "memory")) as client:
            result = await client.call_tool(tool, args)
            text = "".join(getattr(c, "text", "") for c in result.content)
            return bool(result.is_error), text

    return anyio.run(go)


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``plughost ...`` for account ``acct-a``, in this process as a fresh one would run it (cli_support)."""
    from cli_support import run_in_process

    full = dict(os.environ)
    full.update({"ACCOUNT_ID": ACCOUNT, "EMBED_DIMENSIONS": "8", **env})
    ensure_account(full)
    return run_in_process(args, full, cwd=REPO)

