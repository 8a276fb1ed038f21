"""The ``UserPromptSubmit`` hook process: stdin in, ``hookSpecificOutput`` out, never a blocked prompt.

The same process is the ``Stop`` hook (``hook_event_name: Stop``): it asks for the finished
reply to be checked against what the session was shown (recall tracking), and prints nothing.

Run as ``python -S plugins/memory/surfacing/client.py`` (``hooks/surface-prompt.sh``): only the
standard library is imported on the warm path, so a call costs an interpreter start and one
loopback round trip to ``plughost serve``. Without a listening server it loads the host in
process (the cold path, bounded by ``PLUGHOST_SURFACE_COLD_TIMEOUT_MS``; ``PLUGHOST_SURFACE_COLD=0``
turns it off). Whatever happens, the process exits 0: on a failure or timeout it prints nothing,
which lets the prompt through unchanged. Each call logs one ``[surface] op=hook`` line.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

if __package__:
    from plughost.plugins.memory.surfacing import context
    from plughost.plugins.memory.surfacing.decide import MAX_STDIN, fields_text, outcome, plan
    from plughost.plugins.memory.surfacing.hook import WARM_TIMEOUT_MS
    from plughost.plugins.memory.surfacing.hook import alive as pid_alive
else:  # run as a script: the sibling stdlib-only modules, without the host on sys.path
    import context  # type: ignore[no-redef,import-not-found]
    from decide import MAX_STDIN, fields_text, outcome, plan  # type: ignore[no-redef,import-not-found]
    from hook import WARM_TIMEOUT_MS  # type: ignore[no-redef,import-not-found]
    from hook import alive as pid_alive  # type: ignore[no-redef,import-not-found,unused-ignore]

COLD_TIMEOUT_MS = 8000
"""``PLUGHOST_SURFACE_COLD_TIMEOUT_MS``' default, a copy: this stage reads it before the host (and its
settings) is loaded; tests/host/test_settings.py pins the two equal."""
def log_line(home: str | None, env: Mapping[str, str], **fields: Any) -> str:
    line = "[surface] op=hook " + fields_text(fields)
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    if home and env.get("PLUGHOST_LOG_FILE", "1") != "0":
        try:
            os.makedirs(os.path.join(home, "logs"), mode=0o700, exist_ok=True)
            fd = os.open(os.path.join(home, "logs", "server.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError:
            pass
    return line


def say(line: str) -> None:
    """One line on stderr (Claude Code shows a hook's stderr in its debug output and transcript)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _ms(env: Mapping[str, str], name: str, default: int) -> float:
    try:
        return max(50, int(env.get(name, "") or default)) / 1000
    except ValueError:
        return default / 1000


def parse_input(raw: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def verified(line: bytes, token: str, challenge: str) -> bool:
    """Whether the listener's reply proves it holds the token (``server.proof``)."""
    import hmac

    try:
        got = json.loads(line).get("proof")
    except (ValueError, AttributeError):
        return False
    want = hmac.new(token.encode(), ("plughost-surface-proof:" + challenge).encode(), "sha256").hexdigest()
    return isinstance(got, str) and hmac.compare_digest(got, want)


class Unavailable(Exception):
    """No warm server to ask (no discovery file, nothing listening): the cold path may run."""


def ask_warm(home: str, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    try:
        with open(os.path.join(home, "run", "surface.json"), encoding="utf-8") as fh:
            where = json.load(fh)
        with open(os.path.join(home, "credentials", "surface-token"), encoding="utf-8") as fh:
            token = fh.read().strip()
        address = (str(where["host"]), int(where["port"]))
        pid = int(where["pid"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Unavailable(type(exc).__name__) from None
    if not pid_alive(pid):
        raise Unavailable("stale")  # serve died; its port may be anyone's now
    try:
        sock = socket.create_connection(address, timeout=timeout)
    except ConnectionRefusedError:
        raise Unavailable("refused") from None
    with sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        challenge = os.urandom(16).hex()
        sock.sendall((json.dumps({"challenge": challenge}) + "\n").encode())
        if not verified(sock.makefile("rb").readline(400), token, challenge):
            raise Unavailable("unverified")  # not the serve that wrote surface.json: tell it nothing
        sock.sendall((json.dumps({"token": token, "request": request}) + "\n").encode("utf-8"))
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            if chunk.endswith(b"\n"):
                break
    reply = json.loads(b"".join(chunks) or b"null")
    if not isinstance(reply, dict):
        raise ValueError("reply: not a JSON object")
    return reply


def run_cold(request: Mapping[str, Any], env: Mapping[str, str], home: str) -> dict[str, Any]:
    """The host in this process: slower (plugins, store, embedder load) but the same answer."""
    import site

    site.main()  # started with -S: the install's site-packages (pluggy, numpy ...) now
    root = env.get("PLATFORM_ROOT")  # a folder holding the `plughost` package, ahead of site-packages
    if root and os.path.isdir(os.path.join(root, "plughost")) and root not in sys.path:
        sys.path.insert(0, root)
    from plughost import load_host
    from plughost.plugins.memory.surfacing.server import dispatch

    host_env = dict(env)
    host_env["PLUGHOST_HOME"] = home
    os.environ.update(host_env)  # host.log and config read the process env (the settings' env included)
    host = load_host(env=host_env)
    try:
        return dispatch(host, dict(request))
    finally:
        host.close()


def _error_text(exc: BaseException) -> str:
    """The cold path's failure for the log line, redacted (the host is importable once it ran)."""
    text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc).strip() else type(exc).__name__
    try:
        from plughost.api.util import redact_text

        return redact_text(text)[:120]
    except Exception:  # noqa: BLE001 - no host to redact with: the exception's type only
        return type(exc).__name__


def main(raw: bytes, env: Mapping[str, str], out: Any) -> int:
    started = time.perf_counter()
    home: str | None = None

    def done(path: str, **fields: Any) -> int:
        log_line(home, env, path=path, **fields, ms=f"{(time.perf_counter() - started) * 1000:.1f}")
        return 0

    if env.get("PLUGHOST_SURFACE", "1").strip() == "0":
        return done("off")
    env = context.effective_env(env)
    if len(raw) > MAX_STDIN:
        return done("skip", reason="input-too-large", limit=MAX_STDIN)
    hook = parse_input(raw)
    ctx = context.from_merged(env) if hook is not None else None
    request, skipped = plan(hook, ctx)
    if ctx is not None and os.path.isdir(ctx.home):
        home = ctx.home
    if request is None or hook is None or ctx is None:
        if skipped.get("reason") == "no-account":
            say(context.account_unset_line(env))
        return done(**skipped)
    try:
        reply = ask_warm(ctx.home, request, _ms(env, "PLUGHOST_SURFACE_TIMEOUT_MS", WARM_TIMEOUT_MS))
        path = "warm"
    except Unavailable as exc:
        if env.get("PLUGHOST_SURFACE_COLD", "1").strip() == "0":
            return done("none", reason=f"no-server:{exc}")
        box: dict[str, Any] = {}

        def cold() -> None:
            try:
                box["reply"] = run_cold(request, env, ctx.home)
            except BaseException as exc:  # noqa: BLE001 - reported below, never raised
                box["error"] = _error_text(exc)

        worker = threading.Thread(target=cold, daemon=True)
        worker.start()
        worker.join(_ms(env, "PLUGHOST_SURFACE_COLD_TIMEOUT_MS", COLD_TIMEOUT_MS))
        if worker.is_alive():
            return done("cold", result="timeout")
        if "error" in box:
            return done("cold", result="error", detail=box["error"])
        reply, path = box["reply"], "cold"
    except (OSError, ValueError) as exc:  # timeout, reset, garbage: the prompt goes on without memory
        reason = "timeout" if isinstance(exc, (TimeoutError, socket.timeout)) else type(exc).__name__
        return done("warm", result="error", reason=reason)
    output, fields = outcome(hook, request, reply, path)
    if output is not None:
        out.write(json.dumps(output, ensure_ascii=False))
        out.flush()
    return done(**fields)


def entry(raw: bytes | None = None) -> None:
    """The process: ``raw`` is the hook input when the first stage (``hook.py``) already read it."""
    if raw is None:
        try:
            raw = sys.stdin.buffer.read(MAX_STDIN + 1) if not sys.stdin.isatty() else b""
        except (OSError, ValueError):
            raw = b""
    try:
        main(raw, os.environ, sys.stdout)
    except BaseException:  # noqa: BLE001 - a hook must never fail the prompt
        pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)  # a cold thread still running must not hold the prompt


if __name__ == "__main__":
    entry()
