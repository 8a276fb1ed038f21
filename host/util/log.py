"""The one helper that emits `[tag] key=value` lines (docs/logs.md).

Lines go to stderr and are appended to `<PLUGHOST_HOME>/logs/server.log`; each line appended there
gets its write time in the sidecar `logs/server.log.times` (:data:`TIMES_NAME`), never in the line
itself, so every reader of the lines stays as it was (docs/logs.md#times). Operators grep
them and tests assert them: the lines docs/logs.md names are contracts. Every value (and every
line handed to :func:`emit` as it is) passes :func:`plughost.util.redact.redact_text` first, and a field
whose name says secret (``password=``, ``token=``) is written ``[redacted]``: this is the one
choke point for server.log and, through stderr, run.log.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from plughost.util import config, settings
from plughost.util.redact import MARKER, redact_text, secret_name

_lock = threading.Lock()
# what str.splitlines() breaks on, the other C0/C1 controls (ESC starts ANSI sequences), DEL
_UNSAFE = {*range(0x00, 0x09), *range(0x0A, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029}
_ESCAPES = {0x0A: "\\n", 0x0D: "\\r"}


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if code in _ESCAPES:
        return _ESCAPES[code]
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate cannot be written as UTF-8
        return f"\\u{code:04x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_unsafe(text: str) -> str:
    """``text`` with every character that could forge a line or act on a terminal escaped.

    Line breaks for ``splitlines()`` readers (CR, LF, VT, FF, FS/GS/RS, NEL U+0085, U+2028,
    U+2029), ESC and the other C0/C1 controls become ``\\xNN`` / ``\\uNNNN``; lone surrogates
    too. Tabs stay. Fast path: a line with none of them is returned as is.
    """
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape_char(ch) if ord(ch) in _UNSAFE or 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)


_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:/@,[]()+*#%<>=!?~^|&'")


def bounded_repr(value: Any, limit: int = 200) -> str:
    """``repr(value)`` for a log field, cut at ``limit`` characters with ``…(+N chars)``: an offending
    value (an account id a write named) logged whole enough to recognise, never a flood."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}…(+{len(text) - limit} chars)"


def fmt_value(value: Any) -> str:
    """Render one value, redacted: bare when safe, else double-quoted with escapes."""
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (list, tuple)):
        text = redact_text("[" + ",".join(str(v) for v in value) + "]")
    else:
        text = redact_text(str(value))
    if text and all(ch in _SAFE or ord(ch) > 127 and not ch.isspace() and ord(ch) not in _UNSAFE
                    and not 0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        return text
    escaped = escape_unsafe(text.replace("\\", "\\\\").replace('"', '\\"'))
    return f'"{escaped}"'


def format_line(tag: str | None, *tokens: str, **fields: Any) -> str:
    """`[tag] token token key=value ...`; tag None gives an untagged line."""
    parts: list[str] = [f"[{tag}]"] if tag else []
    parts.extend(redact_text(str(t)) for t in tokens)
    parts.extend(f"{key}={fmt_value(MARKER if secret_name(key) and value not in (None, '') else value)}"
                 for key, value in fields.items())
    return " ".join(parts)


def emit(line: str) -> str:
    """Write one line to stderr and the server log; return it as written.

    Whatever the caller passed (an ingested line included), the written line is one physical
    line of well-formed text with no secret in clear: :func:`redact_text` and
    :func:`escape_unsafe` apply to it.
    """
    return _write(redact_text(line))


PRIVATE_FILE, PRIVATE_DIR = 0o600, 0o700
"""Logs and the store hold every account's private memory: the owner's alone, not every local user's."""


def private_append(path: Path, binary: bool = False) -> IO[Any]:
    """``path`` opened for appending, created owner-only (and its folder) when new."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
    return os.fdopen(fd, "ab", buffering=0) if binary else os.fdopen(fd, "a", encoding="utf-8")


TIMES_NAME = "server.log.times"
"""The sidecar beside server.log: one ``<offset> <length> <ISO-8601 UTC>`` entry per line written.

``offset`` is the byte offset where the line starts in server.log and ``length`` its byte length
with its newline, so a reader trusts an entry only where the line it names is still there
(docs/logs.md#times)."""


def utc_stamp(when: float | None = None) -> str:
    """``2026-12-05T14:31:57Z``: ISO-8601, UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def _append_to_file(line: str) -> None:
    folder = config.home() / "logs"
    data = (line + "\n").encode("utf-8", "replace")
    stamp = utc_stamp()
    with private_append(folder / "server.log", binary=True) as fh:
        written = fh.write(data) or 0
        end = fh.tell()  # O_APPEND: just past this line, whoever else appends
    if written != len(data):
        return
    with private_append(folder / TIMES_NAME, binary=True) as fh:
        fh.write(f"{end - written} {written} {stamp}\n".encode("ascii"))


def _write(line: str) -> str:
    line = escape_unsafe(line)
    with _lock:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if settings.LOG_FILE.read_or_default():  # the log writer never fails on a setting
            try:
                _append_to_file(line)
            except OSError:
                pass
    return line


def log(tag: str | None, *tokens: str, **fields: Any) -> str:
    """Emit one `[tag] ... key=value` line and return it (handy for tests and reports)."""
    return _write(format_line(tag, *tokens, **fields))  # format_line redacted each value
