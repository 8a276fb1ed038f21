"""The warm path: a loopback listener inside ``plughost serve`` that answers surfacing calls.

The hook process is short-lived; the store, its vector matrix and the embedder are not. So
``plughost serve`` (the memory plugin's startup hook) listens on ``127.0.0.1`` on a free port
and writes ``<PLUGHOST_HOME>/run/surface.json`` (``{host, port, pid}``); a hook reads it, checks
that ``pid`` is alive, sends ``{"challenge": random hex}`` and checks the ``{"proof"}`` reply
(HMAC-SHA256 under the token), and only then sends one JSON line, ``{"token", "request"}``, and
reads one JSON line back: after serve died, whatever listens on its old port learns nothing. The token lives
in ``<PLUGHOST_HOME>/credentials/surface-token`` (0600): a caller that can read it can read the
store file as well, so it proves exactly the access the answer needs. The listener is plain
``socketserver`` on purpose: one round trip, no HTTP framing, no event loop to share.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import socketserver
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost import Principal, StateKey, log
from plughost.api import serving
from plughost.api.util import redact_text
from plughost.plugins.memory.sessions import compaction
from plughost.plugins.memory.sessions.context import session_context
from plughost.plugins.memory.settings import SURFACE_SERVER
from plughost.plugins.memory.surfacing import context, decide
from plughost.plugins.memory.surfacing.core import SurfaceRequest, surface
from plughost.plugins.memory.surfacing.search import surface_items
from plughost.plugins.memory.toolcalls.trail import record

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

MAX_REQUEST = (1 << 20) + (64 << 10)
"""A hook input (at most 1 MiB, ``decide.MAX_STDIN``) with its token and environment."""
STATE_KEY: StateKey[Any] = StateKey("memory.surface-server")


def discovery_path(home: Path) -> Path:
    return home / "run" / "surface.json"


def token_path(home: Path) -> Path:
    return home / "credentials" / "surface-token"


def ensure_token(home: Path) -> str:
    """The install's surfacing token, created exclusively (0600 in a 0700 folder) on first use."""
    path = token_path(home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    token = secrets.token_hex(32)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    return token


PROOF_PREFIX = "plughost-surface-proof:"


def proof(token: str, challenge: str) -> str:
    """HMAC-SHA256 of the hook's challenge under the token: what only the real listener can answer
    (``hook.py`` and ``client.py`` compute the same before sending the token, prompt or env)."""
    return hmac.new(token.encode(), (PROOF_PREFIX + challenge).encode(), "sha256").hexdigest()


def parse_challenge(line: bytes) -> str | None:
    """The ``{"challenge": hex}`` first line of a hook's connection, or None (an old-style request)."""
    if not line.startswith(b'{"challenge"') or len(line) > 200:
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    value = data.get("challenge") if isinstance(data, dict) else None
    return value if isinstance(value, str) and 16 <= len(value) <= 128 else None


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        line = self.rfile.readline(MAX_REQUEST + 1)
        challenge = parse_challenge(line)
        if challenge is not None:  # the hook asks us to prove we hold the token before it sends anything
            try:
                self.wfile.write((json.dumps({"proof": proof(self.server.owner.token, challenge)}) + "\n").encode())
                self.wfile.flush()
            except OSError:
                return
            line = self.rfile.readline(MAX_REQUEST + 1)
        reply = self.server.owner.answer(line)
        try:
            self.wfile.write(reply if isinstance(reply, bytes) else
                             (json.dumps(reply, ensure_ascii=False) + "\n").encode("utf-8"))
        except OSError:
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: SurfaceServer


class SurfaceServer:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.home = Path(host.home)
        self.token = ""
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> SurfaceServer:
        self.token = ensure_token(self.home)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="surface-server", daemon=True)
        self._thread.start()
        host, port = self.address
        path = discovery_path(self.home)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"host": host, "port": port, "pid": os.getpid(), "startedAt": time.time()}),
                       encoding="utf-8")
        os.replace(tmp, path)
        log("surface", "op=listening", address=f"{host}:{port}", discovery=str(path))
        threading.Thread(target=self.warm, name="surface-warm", daemon=True).start()
        return self

    def warm(self) -> None:
        """Load the store's matrix and the embedder before the first prompt needs them."""
        started = time.perf_counter()
        account = self.host.principal.account or ""
        try:
            if account:
                surface_items(self.host, "warm up", Principal.owner(account).guards, 1, ())
            elif (embedder := self.host.embedder()) is not None:
                embedder.embed(["warm up"])
        except Exception as exc:  # warming is an optimisation; the first call pays instead
            log("surface", "op=warm", result="error", detail=f"{type(exc).__name__}: {exc}"[:120])
            return
        log("surface", "op=warm", result="ok", account=account[:8] or None,
            ms=f"{(time.perf_counter() - started) * 1000:.0f}")

    def answer(self, line: bytes) -> dict[str, Any] | bytes:
        if len(line) > MAX_REQUEST:
            return {"ok": False, "error": "too-large", "detail": f"request: more than {MAX_REQUEST} bytes"}
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("expected a JSON object")
        except ValueError as exc:
            return {"ok": False, "error": "bad-request", "detail": f"request: {exc}"[:200]}
        token = data.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
            log("surface", "op=refused", reason="bad-token")
            return {"ok": False, "error": "unauthorized", "detail": "token: missing or wrong"}
        if "hook" in data:
            return answer_hook(self.host, data.get("hook"), data.get("env"))
        request = data.get("request")
        return dispatch(self.host, request if isinstance(request, dict) else {})

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        path = discovery_path(self.home)
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
                path.unlink()
        except (OSError, ValueError):
            pass
        self._server = None
        log("surface", "op=stopped")


def answer_hook(host: Host, hook: Any, env: Any) -> bytes:
    """The hook's first stage's request (``hook.py``): Claude Code's hook input as it came, and the
    environment merged with the config dir's settings. Everything the hook process would decide is
    decided here, by the same functions (``decide.plan`` / ``decide.outcome``), so the process
    imports nothing but builtins. The reply is two lines: the ``[surface] op=hook`` fields (the
    process adds its ``ms``) and what the hook prints (empty: nothing).
    """
    merged = {str(k): v for k, v in env.items() if isinstance(v, str)} if isinstance(env, dict) else {}
    ctx = context.from_merged(merged)
    parsed = hook if isinstance(hook, dict) else None
    request, fields = decide.plan(parsed, ctx)
    output = None
    if request is not None and parsed is not None:
        output, fields = decide.outcome(parsed, request, dispatch(host, request), "warm")
    text = json.dumps(output, ensure_ascii=False) if output is not None else ""
    line = redact_text(decide.fields_text(fields).replace("\n", " "))  # the hook writes it to server.log
    return (line + "\n" + text + "\n").encode("utf-8")


def dispatch(host: Host, request: dict[str, Any]) -> dict[str, Any]:
    """One request, warm or cold: ``op`` surface (default) or recall (the Stop hook)."""
    op = request.get("op") or "surface"
    if op == "tool-call":
        return _tool_call(host, request)
    if op == "compaction":
        return _compaction(host, request)
    try:
        parsed = SurfaceRequest.from_json(request)
        if op == "recall":
            path = request.get("transcriptPath")
            if not isinstance(path, str) or not path or not parsed.session_id:
                raise ValueError("transcriptPath and sessionId: expected non-empty strings")
        elif op != "surface":
            raise ValueError(f"op: expected surface or recall, got {str(op)[:40]!r}")
    except (ValueError, AttributeError) as exc:
        return {"ok": False, "error": "bad-request", "detail": f"request.{exc}"[:200]}
    try:
        if op == "recall":
            from plughost.plugins.memory.surfacing.recall import mark

            return {"ok": True, **mark(host, parsed.account_id, parsed.session_id, request["transcriptPath"])}
        result = surface(host, parsed)
    except Exception as exc:
        log("surface", "op=error", reason="internal", detail=f"{type(exc).__name__}: {exc}"[:120])
        return {"ok": False, "error": "internal", "detail": type(exc).__name__}
    return {"ok": True, "output": result.output, "reason": result.reason, "items": len(result.items),
            "ms": round(result.stats.get("ms", 0.0), 1)}


def _tool_call(host: Host, request: dict[str, Any]) -> dict[str, Any]:
    """The PostToolUse hook's request: one ToolCall node (plugins/memory/toolcalls/trail.py)."""
    def text(name: str) -> str | None:
        value = request.get(name)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name}: expected a string")
        return value

    try:
        account = text("accountId")
        if not account:
            raise ValueError("accountId: expected a non-empty string")
        fields: dict[str, Any] = {"session_id": text("sessionId") or "", "tool_name": text("toolName") or "",
                  "role": text("role"), "agent": text("agent"), "tool_use_id": text("toolUseId"),
                  "transcript_path": text("transcriptPath"), "runner_session": text("runnerSession")}
    except ValueError as exc:
        return {"ok": False, "error": "bad-request", "detail": f"request.{exc}"[:200]}
    try:
        result = record(host, account_id=account, tool_input=request.get("toolInput"),
                        tool_response=request.get("toolResponse"), scopes=request.get("scopes"),
                        is_error=request.get("isError") if isinstance(request.get("isError"), bool) else None,
                        **fields)
    except Exception as exc:
        log("persist", "tool-call", "failed", reason="internal", detail=type(exc).__name__)
        return {"ok": False, "error": "internal", "detail": type(exc).__name__}
    return {"ok": True, **result}


def _compaction(host: Host, request: dict[str, Any]) -> dict[str, Any]:
    """PreCompact (fallback briefing), SessionStart compact|resume (inject the latest briefing) and
    startup|resume (the owner's open work, :mod:`plughost.plugins.memory.sessions.context`)."""
    account, session = request.get("accountId"), request.get("sessionId")
    if not (isinstance(account, str) and account and isinstance(session, str) and session):
        return {"ok": False, "error": "bad-request", "detail": "request.accountId and sessionId: expected strings"}
    try:
        if request.get("event") == "PreCompact":
            path = request.get("transcriptPath")
            return {"ok": True, **compaction.on_pre_compact(host, account, session, path if isinstance(path, str)
                                                            else None)}
        source = str(request.get("source"))
        answer = compaction.on_session_start(host, account, session, source) if source in ("compact", "resume") \
            else {"output": None}
        briefing: Any = answer.get("output")
        texts = [briefing["hookSpecificOutput"]["additionalContext"]] if briefing else []
        if (context := session_context(host, account, session, source, request)) is not None:
            texts.append(context)
        if not texts:
            return {"ok": True, **answer}
        return {"ok": True, **answer, "output": {"hookSpecificOutput": {
            "hookEventName": "SessionStart", "additionalContext": "\n\n".join(texts)}}}
    except Exception as exc:
        log("compaction", "op=error", reason="internal", detail=type(exc).__name__)
        return {"ok": False, "error": "internal", "detail": type(exc).__name__}


def start(host: Host) -> None:
    """Start the listener once per serving host (``PLUGHOST_SURFACE_SERVER=0`` turns it off).

    Only under ``plughost serve`` (its app put ``plughost.runtime.serving.RUNTIME`` in ``plughost.runtime.state``): ``plughost boot``
    runs the startup hooks too, and a listener that lives for one boot is of no use.
    """
    wanted = SURFACE_SERVER.read(host.env)  # None: only under plughost serve
    if wanted is False or STATE_KEY in host.state:
        return
    if serving.RUNTIME not in host.state and wanted is not True:
        return
    host.state.set(STATE_KEY, SurfaceServer(host).start())


def stop(host: Host) -> None:
    server = host.state.pop(STATE_KEY)
    if server is not None:
        server.stop()
