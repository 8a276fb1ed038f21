"""The one helper that emits `[tag] key=value` lines (SPEC 12).

Lines go to stderr and are appended to `<PLUGHOST_HOME>/logs/server.log`. Operators grep
them and tests assert them: the lines named in SPEC.md are contracts.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from host import config

_lock = threading.Lock()
_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:/@,[]()+*#%<>=!?~^|&'")


def fmt_value(value: Any) -> str:
    """Render one value: bare when safe, else double-quoted with escapes."""
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (list, tuple)):
        text = "[" + ",".join(str(v) for v in value) + "]"
    else:
        text = str(value)
    if text and all(ch in _SAFE or ord(ch) > 127 and not ch.isspace() for ch in text):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def format_line(tag: str | None, *tokens: str, **fields: Any) -> str:
    """`[tag] token token key=value ...`; tag None gives an untagged line."""
    parts: list[str] = [f"[{tag}]"] if tag else []
    parts.extend(tokens)
    parts.extend(f"{key}={fmt_value(value)}" for key, value in fields.items())
    return " ".join(parts)


def emit(line: str) -> str:
    """Write an already formatted line to stderr and the server log; return it."""
    with _lock:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if os.environ.get("PLUGHOST_LOG_FILE", "1") != "0":
            try:
                logs = config.home() / "logs"
                logs.mkdir(parents=True, exist_ok=True)
                with open(logs / "server.log", "a", encoding="utf-8") as fh:
                    fh.write(line + "\n")
            except OSError:
                pass
    return line


def log(tag: str | None, *tokens: str, **fields: Any) -> str:
    """Emit one `[tag] ... key=value` line and return it (handy for tests and reports)."""
    return emit(format_line(tag, *tokens, **fields))
