"""`POST /api/admin/log-ingest`: loopback helpers append their lines to `logs/server.log` (SPEC 11).

Loopback only, on both counts: the socket peer must be a loopback address, and when a proxy
header is present (``X-Forwarded-For``, ``Forwarded``, ``X-Real-IP``) every address it names must
be loopback too; a LAN client reaching the route through a local proxy is refused, otherwise it
could forge evidence lines. Body: JSON ``{"line": "..."}`` or ``{"lines": ["...", ...]}``; each
line one physical line (no CR, LF or NUL), at most 8 KiB.

A browser on the operator's machine is a loopback peer too, so a page using DNS rebinding could
otherwise forge lines: the ``Host`` header must name a loopback address (or ``localhost``) and
an ``Origin`` header, when present, must be a loopback origin.
"""

from __future__ import annotations

import json
import re
from typing import Any

from host.http import is_loopback, json_error
from host.log import emit, log

MAX_BODY = 64 * 1024
MAX_LINE = 8 * 1024
MAX_LINES = 200
_FORWARDED_FOR = re.compile(r'for\s*=\s*"?([^;,"]+)"?', re.I)


def forwarded_addresses(headers: Any) -> list[str] | None:
    """Every address named by proxy headers, or None when no proxy header is present."""
    found: list[str] = []
    present = False
    for value in headers.getlist("x-forwarded-for"):
        present = True
        found.extend(part.strip() for part in value.split(","))
    for value in headers.getlist("forwarded"):
        present = True
        matches = _FORWARDED_FOR.findall(value)
        found.extend(m.strip() for m in matches) if matches else found.append(value)
    for value in headers.getlist("x-real-ip"):
        present = True
        found.append(value.strip())
    return found if present else None


def _loopback_name(host: str) -> bool:
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1:name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    return name == "localhost" or is_loopback(name)


def refusal(request: Any) -> str | None:
    """Why this request may not ingest (a reason slug), or None when it may."""
    peer = request.client.host if request.client else None
    if not is_loopback(peer):
        return "non-loopback-peer"
    forwarded = forwarded_addresses(request.headers)
    if forwarded is not None and (not forwarded or not all(is_loopback(a) for a in forwarded)):
        return "non-loopback-forwarded"
    if not _loopback_name(request.headers.get("host", "")):
        return "non-loopback-host"
    origin = request.headers.get("origin")
    if origin is not None:
        scheme, _, rest = origin.partition("://")
        if scheme not in ("http", "https") or not rest or not _loopback_name(rest.split("/", 1)[0]):
            return "cross-origin"
    return None


async def read_body(request: Any, limit: int) -> bytes | None:
    """The body, or None when it exceeds ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def parse_lines(body: bytes) -> list[str]:
    """The lines to append; raises ValueError with a one-line message naming the field."""
    try:
        data = json.loads(body)
    except ValueError:
        raise ValueError("body: expected JSON {\"line\": \"...\"} or {\"lines\": [...]}") from None
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

    reason = refusal(request)
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
