"""Helpers for the admin/serve tests: real uvicorn on 127.0.0.1 (random free port), raw HTTP.

``LiveServer`` runs the host's app in-process on a background thread (for tests that register
plugins in the test); ``start_serve`` runs ``plughost serve`` as a real subprocess (signals,
gates, the printed URLs).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "plugins" / "admin" / "fixtures"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def raw_request(port: int, target: str | bytes, method: str = "GET", headers: dict[str, str] | None = None,
                body: bytes = b"", host: str = "127.0.0.1", timeout: float = 10,
                connect: str = "127.0.0.1") -> RawResponse:
    """Send one HTTP/1.1 request byte for byte (no client-side path normalisation) and read the answer."""
    target_b = target if isinstance(target, bytes) else target.encode("latin-1")
    lines = [method.encode() + b" " + target_b + b" HTTP/1.1", f"Host: {host}:{port}".encode(), b"Connection: close"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}".encode("latin-1"))
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}".encode())
    data = b"\r\n".join(lines) + b"\r\n\r\n" + body
    with socket.create_connection((connect, port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    raw = b"".join(chunks)
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    hdrs: dict[str, str] = {}
    for line in header_lines:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if "chunked" in hdrs.get("transfer-encoding", ""):
        out, buf = b"", rest
        while buf:
            size_line, _, buf = buf.partition(b"\r\n")
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            out, buf = out + buf[:size], buf[size + 2:]
        rest = out
    return RawResponse(int(status_line.split(" ")[1]), hdrs, rest)


class LiveServer:
    """The host's app under uvicorn on a thread; ``stop()`` runs the graceful path."""

    def __init__(self, host: Any, bind: str = "127.0.0.1") -> None:
        self.host = host
        self.bind = bind
        self._build(free_port())

    def _build(self, port: int) -> None:
        from plughost.serve import app as host_app

        self.port = port
        self.app = host_app.build_app(self.host, bind=self.bind, port=self.port)
        self.server = host_app.make_server(self.host, bind=self.bind, port=self.port, grace=5.0, app=self.app)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        for _ in range(3):  # a free port can be taken (another worker's server) before uvicorn binds it
            self.thread.start()
            deadline = time.monotonic() + 30
            while not self.server.started and self.thread.is_alive():
                if time.monotonic() > deadline:
                    raise RuntimeError("uvicorn did not start")
                time.sleep(0.02)
            if self.server.started:
                return self
            self._build(free_port())
        raise RuntimeError("uvicorn did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)

    @property
    def auth(self) -> dict[str, str]:
        """The header a client of the MCP and admin routes sends (the account's HTTP token)."""
        return {"Authorization": f"Bearer {self.app.state.door.http_token}"}

    def get(self, target: str, **kw: Any) -> RawResponse:
        return raw_request(self.port, target, **kw)

    def post_json(self, target: str, data: Any, headers: dict[str, str] | None = None) -> RawResponse:
        from plughost.web.http_guard import protected

        hdrs = {"Content-Type": "application/json", **(self.auth if protected(target) else {}), **(headers or {})}
        return raw_request(self.port, target, method="POST", headers=hdrs, body=json.dumps(data).encode())


def non_loopback_address() -> str | None:
    """A local IPv4 address that is not loopback (the route for a public address), if any."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 9))
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def make_account(home: Path, account_id: str = "acct-demo-01") -> str:
    """A consistent account folder; uses the host's account writer when it is installed."""
    try:
        from plughost.runtime.accounts import create_account
    except ImportError:
        folder = home / "accounts" / account_id
        (folder / "specialists" / "agents").mkdir(parents=True, exist_ok=True)
        (folder / "users.json").write_text(json.dumps([{"userId": "owner", "name": "owner", "role": "owner"}]))
        (folder / "account.json").write_text(json.dumps({
            "accountId": account_id, "enabledPlugins": [], "adminPhones": [], "admins": ["owner"],
            "defaultAgent": "admin"}))
    else:
        create_account(account_id, home)
    return account_id


@dataclass
class ServeProcess:
    proc: subprocess.Popen[str]
    port: int
    stdout_lines: list[str]
    stderr_path: Path
    reader: threading.Thread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def finish(self, timeout: float = 30) -> tuple[int, str, str]:
        self.proc.wait(timeout=timeout)
        if self.reader is not None:
            self.reader.join(timeout=5)
        return self.proc.returncode, "".join(self.stdout_lines), self.stderr_path.read_text(errors="replace")

    def terminate(self, sig: int = signal.SIGTERM, timeout: float = 30) -> tuple[int, str, str]:
        self.proc.send_signal(sig)
        return self.finish(timeout)


def stop_process(proc: subprocess.Popen[Any], timeout: float = 30) -> None:
    """SIGTERM a server a test started and wait for it; SIGKILL when it does not stop in ``timeout``."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


STARTED: list[subprocess.Popen[str]] = []
"""Every serve process started by a test; the conftest kills any still running at teardown."""


def start_serve(*args: str, env: dict[str, str] | None = None, plugins_dir: Path | None = None,
                wait: bool = True, timeout: float = 60) -> ServeProcess:
    """`python -m plughost.cli [--plugins-dir D] serve --port 0 ...`; waits for the 'serving on' line.

    stderr goes to a file (the server logs every request line there; a full pipe would stall it).
    """
    full = dict(os.environ)
    full.update(env or {})
    cmd = [sys.executable, "-m", "plughost.cli"]
    if plugins_dir is not None:
        cmd += ["--plugins-dir", str(plugins_dir)]
    cmd += ["serve", "--port", "0", *args]
    home = Path(full.get("PLUGHOST_HOME", "."))
    stderr_path = home / f"serve-stderr-{time.monotonic_ns()}.txt"
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=full, cwd=REPO)
    STARTED.append(proc)
    lines: list[str] = []
    sp = ServeProcess(proc, 0, lines, stderr_path)
    if not wait:
        sp.reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
        sp.reader.start()
        return sp
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line:
            break
        lines.append(line)
        m = re.search(r"serving on http://127\.0\.0\.1:(\d+)", line)
        if m:
            sp.port = int(m.group(1))
            break
    if not sp.port:
        proc.kill()
        proc.wait()
        err_text = stderr_path.read_text(errors='replace')
        raise AssertionError(f"serve did not start: {''.join(lines)}\n{err_text}")
    sp.reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    sp.reader.start()
    return sp


def root_conftest() -> Any:
    """tests/conftest.py as a module (its plain helpers: node_tool, run_cli, which_or_skip)."""
    import importlib.util

    name = "_plughost_root_conftest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "conftest.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def conformance_command() -> list[str]:
    """[node 22, the conformance CLI script] from .tools (skips locally, fails under CI when missing)."""
    node_tool = root_conftest().node_tool
    node = node_tool("node", "bin", "node")
    script = node_tool("@modelcontextprotocol", "conformance", "dist", "index.js")
    return [str(node), str(script)]
