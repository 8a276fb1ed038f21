"""Stdio tee launcher: ``python -m plughost.mcp.tee <plugin> -- <command...>`` (docs/payload.md#tee-launcher).

Starts the plugin's MCP server with stdin/stdout passed through untouched (the child inherits
them: no copying, no buffering, no re-framing) and copies the child's stderr both to our stderr
and to ``<PLUGHOST_HOME>/logs/mcp-<plugin>-stderr-<date>.log``. Exits with the child's code.
"""

from __future__ import annotations

import datetime as _dt
import os
import signal
import subprocess
import sys
import threading

from plughost.util import config


def log_path(plugin: str) -> str:
    logs = config.home() / "logs"
    logs.mkdir(parents=True, exist_ok=True, mode=0o700)
    return str(logs / f"mcp-{plugin}-stderr-{_dt.date.today().isoformat()}.log")


def _pump(src: object, path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # the owner's alone, as server.log
    with os.fdopen(fd, "ab", buffering=0) as sink:
        for chunk in iter(lambda: src.read1(65536), b""):  # type: ignore[attr-defined]
            sink.write(chunk)
            try:
                sys.stderr.buffer.write(chunk)
                sys.stderr.buffer.flush()
            except (OSError, ValueError):
                pass


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m plughost.mcp.tee <plugin> -- <command> [args...]", file=sys.stderr)
        return 2
    plugin, command = argv[0], argv[2:]
    path = log_path(plugin)
    try:
        child = subprocess.Popen(command, stdin=None, stdout=None, stderr=subprocess.PIPE)
    except OSError as exc:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"[mcp-tee] op=spawn-failed plugin={plugin} error={exc}\n")
        print(f"[mcp-tee] op=spawn-failed plugin={plugin} command={command[0]}: {exc}", file=sys.stderr)
        return 127
    pump = threading.Thread(target=_pump, args=(child.stderr, path), daemon=True)
    pump.start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    code = child.wait()
    pump.join(timeout=2)
    return code


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
