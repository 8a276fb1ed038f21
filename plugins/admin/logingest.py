"""`POST /api/admin/log-ingest`: loopback helpers append their lines to `logs/server.log` (docs/http.md#log-ingest).

Loopback only, on both counts: the socket peer must be a loopback address, and when a proxy
header is present (``X-Forwarded-For``, ``Forwarded``, ``X-Real-IP``) every address it names must
be loopback too; a LAN client reaching the route through a local proxy is refused, otherwise it
could forge evidence lines. Body: JSON ``{"line": "..."}`` or ``{"lines": ["...", ...]}``; each
line one physical line (no CR, LF or NUL), at most 8 KiB. Other characters that could forge a
line for a ``splitlines()`` reader or act on a terminal (VT, FF, NEL, U+2028/9, ESC and the other
controls) and lone surrogates are escaped when the line is written (:func:`plughost.util.log.escape_unsafe`).

A browser on the operator's machine is a loopback peer too, so a page using DNS rebinding could
otherwise forge lines: the ``Host`` header must name a loopback address (or ``localhost``) and
an ``Origin`` header, when present, must be a loopback origin.
"""

from __future__ import annotations

from typing import Any

from plughost import log
from plughost.api.http import json_error, loopback_refusal, parse_json, read_body
from plughost.api.util import emit

MAX_BODY = 64 * 1024
MAX_LINE = 8 * 1024
MAX_LINES = 200


def parse_lines(body: bytes) -> list[str]:
    """The lines to append; raises ValueError with a one-line message naming the field."""
    try:
        data = parse_json(body)
    except ValueError as exc:
        why = str(exc).split(": ", 1)[-1]
        raise ValueError(f"body: expected JSON {{\"line\": \"...\"}} or {{\"lines\": [...]}} ({why})") from None
    if not isinstance(data, dict) or not ({"line", "lines"} & set(data)):
        raise ValueError("body: expected an object with 'line' (string) or 'lines' (list of strings)")
    unknown = sorted(set(data) - {"line", "lines"})
    if unknown:
        raise ValueError(f"body.{unknown[0]}: unknown field (expected 'line' or 'lines')")
    lines = [data["line"]] if "line" in data else data["lines"]
    field = "line" if "line" in data else "lines"
    if not isinstance(lines, list) or not 1 <= len(lines) <= MAX_LINES:
        raise ValueError(f"body.{field}: expected 1 to {MAX_LINES} strings")
    for i, line in enumerate(lines):
        where = field if field == "line" else f"lines[{i}]"
        if not isinstance(line, str) or not line.strip():
            raise ValueError(f"body.{where}: expected a non-empty string")
        if len(line) > MAX_LINE:
            raise ValueError(f"body.{where}: longer than {MAX_LINE} characters")
        if any(ch in line for ch in "\r\n\x00"):
            raise ValueError(f"body.{where}: must be a single line (no CR, LF or NUL)")
    return lines


async def log_ingest(request: Any) -> Any:
    from starlette.responses import JSONResponse

    reason = loopback_refusal(request)
    if reason:
        log("log-ingest", "rejected", reason=reason, peer=request.client.host if request.client else None)
        return json_error(403, "forbidden", "log-ingest accepts loopback requests only")
    body = await read_body(request, MAX_BODY)
    if body is None:
        return json_error(413, "payload-too-large", f"body: larger than {MAX_BODY} bytes")
    try:
        lines = parse_lines(body)
    except ValueError as exc:
        return json_error(400, "bad-request", str(exc))
    for line in lines:
        emit(line)
    return JSONResponse({"ok": True, "appended": len(lines)})
