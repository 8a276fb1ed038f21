"""The one strict JSON reader: which documents are unreadable, and the one-line reason why.

Import lines, HTTP bodies, MCP frames and JSON files all parse through :func:`parse_line`, so a
deep nesting, bytes that are not UTF-8 or a lone surrogate escape get the same answer everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

TOO_DEEP = "invalid JSON (nested deeper than the parser's recursion limit)"
LONE_SURROGATE = "not valid Unicode (a \\uD800-\\uDFFF escape without its pair)"


class BadLine(ValueError):
    """A document no caller can take; its message is the one-line reason (no file, no line number)."""


def parse_line(raw: bytes | str, loads: Callable[[Any], Any] = json.loads, *, surrogates: bool = True) -> Any:
    """One JSON document → what ``loads`` makes of it, or :class:`BadLine` with the reason.

    The one place that decides which JSON is unreadable and says why: import lines, HTTP bodies
    (:func:`plughost.web.http.parse_json`), MCP frames (:mod:`plughost.mcp.frames`) and JSON files
    (:func:`plughost.util.jsonio.read_json`). Deep nesting raises RecursionError in the C decoder and a
    lone surrogate escape is valid JSON that no UTF-8 text can carry; both are reasons here.
    ``loads`` may be a faster parser that raises what ``json.loads`` raises; ``surrogates=False``
    when it already raises ``BadLine(LONE_SURROGATE)`` itself, or the caller makes text well formed.
    """
    try:
        value = loads(raw)
    except UnicodeDecodeError:
        raise BadLine("not UTF-8") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        raise BadLine(f"invalid JSON ({exc.msg} at {where})") from None
    except RecursionError:
        raise BadLine(TOO_DEEP) from None
    except BadLine:  # ``loads`` said why itself (a lone surrogate)
        raise
    except ValueError as exc:  # e.g. an integer past the interpreter's digit limit (int_max_str_digits)
        raise BadLine(f"invalid JSON ({str(exc).split(';')[0][:80]})") from None
    if surrogates and has_lone_surrogate(raw, value):
        raise BadLine(LONE_SURROGATE)
    return value


def has_lone_surrogate(raw: bytes | str, value: Any) -> bool:
    """Whether a parsed document holds a lone surrogate: valid JSON, but no UTF-8 text can carry it,
    so SQLite, the Neo4j driver and the logs would all fail on it. Only a ``\\uD8xx``-``\\uDFxx``
    escape (or, in text already decoded, the character itself) can make one, so documents without
    one cost two substring searches."""
    if isinstance(raw, bytes):
        if b"\\ud" not in raw and b"\\uD" not in raw:
            return False
    elif "\\ud" not in raw and "\\uD" not in raw and raw.isascii():
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False
