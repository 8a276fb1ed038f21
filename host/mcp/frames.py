"""Stdio frames the MCP SDK cannot read get a JSON-RPC error, never silence (docs/http.md#mcp-servers).

The SDK's stdio transport hands a frame it cannot validate (a lone surrogate escape such as
``"\\ud800"``, 20,000-deep nesting, broken JSON) to the session as an exception, which logs it
and answers nothing: the client waits for ever. :class:`CheckedLines` sits between stdin and the
SDK: each line the SDK would refuse is answered here with ``-32700`` (parse error) carrying the
frame's ``id`` when one can be found at the top level (else ``null``, as JSON-RPC 2.0 says), and
is not passed on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from plughost.util.jsonparse import BadLine, parse_line

PARSE_ERROR = -32700
MAX_ID_SCAN = 65536  # an id is looked for in the first 64 KiB of a bad frame


def top_level_id(line: str) -> int | str | None:
    """The value of the top-level ``"id"`` key of a JSON object text, without parsing the rest.

    A small scanner (string state and depth) so a frame too deep for any parser still gets its
    own id back; only an integer or a plain string id is recognised.
    """
    depth, i, n = 0, 0, min(len(line), MAX_ID_SCAN)
    while i < n:
        ch = line[i]
        if ch == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            key = line[i + 1:j]
            i = j + 1
            if depth == 1 and key == "id":
                rest = line[i:i + 256].lstrip()
                if rest.startswith(":"):
                    return _scalar(rest[1:].lstrip())
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        i += 1
    return None


def _scalar(text: str) -> int | str | None:
    if text.startswith('"'):
        end = text.find('"', 1)
        value = text[1:end] if end > 0 else ""
        return value if end > 0 and "\\" not in value else None
    digits = ""
    for ch in text:
        if ch.isascii() and (ch.isdigit() or (ch == "-" and not digits)):
            digits += ch
        else:
            break
    try:
        return int(digits) if digits and len(digits) <= 19 else None
    except ValueError:
        return None


def problem(line: str) -> str | None:
    """Why the SDK would refuse this frame (a one-line reason), or None when it reads it."""
    import mcp_types as types

    if not line.strip():
        return None
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except Exception:
        pass
    try:
        parse_line(line)
    except BadLine as exc:
        return f"frame: {exc}"
    return "frame is not a JSON-RPC 2.0 message"


def error_frame(frame_id: int | str | None, reason: str) -> Any:
    """A ``SessionMessage`` holding the JSON-RPC parse error for a refused frame."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    error = types.JSONRPCError(jsonrpc="2.0", id=frame_id, error=types.ErrorData(code=PARSE_ERROR,
                                                                                 message=f"Parse error: {reason}"))
    return SessionMessage(error)


class CheckedLines:
    """An async line source for ``stdio_server(stdin=...)`` that answers refused frames itself."""

    def __init__(self, source: Any) -> None:
        import anyio

        self.source = source
        self.errors_in, self.errors = anyio.create_memory_object_stream[Any](100)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.source:
            reason = problem(line)
            if reason is None:
                yield line
                continue
            from plughost.util.log import log

            frame_id = top_level_id(line)
            log("mcp", "op=frame-refused", reason=reason, id=frame_id, bytes=len(line))
            await self.errors_in.send(error_frame(frame_id, reason))
        self.errors_in.close()
