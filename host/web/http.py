"""Small HTTP helpers shared by the host app and plugin routes (docs/http.md#errors: 4xx JSON `{error, detail}`).

Starlette is imported inside the functions: this module may be imported from a plugin's
``hookimpls.py`` without putting the web stack on the boot path.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from plughost.util.jsonparse import BadLine, parse_line

_FORWARDED_FOR = re.compile(r'for\s*=\s*"?([^;,"]+)"?', re.I)


def json_error(status: int, error: str, detail: str, headers: Mapping[str, str] | None = None) -> Any:
    """A JSON error response: ``{"error": <slug>, "detail": <one line>}``."""
    from starlette.responses import JSONResponse

    return JSONResponse({"error": error, "detail": detail}, status_code=status, headers=dict(headers or {}))


def is_loopback(address: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and IPv4-mapped loopback; False for anything unparseable."""
    if not address:
        return False
    text = address.strip()
    if text.startswith("[") and "]" in text:  # "[::1]:port" / "[::1]"
        text = text[1:text.index("]")]
    elif text.count(":") == 1:  # "127.0.0.1:port"
        text = text.split(":", 1)[0]
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


MAX_DIGITS = 18
"""Integer parameters (cursors, waits, ids) longer than this are refused before ``int()`` sees them."""


def int_param(text: str | None, *, default: int = 0, maximum: int | None = None) -> int | None:
    """A non-negative ASCII-decimal integer, or None when ``text`` is not one.

    ``str.isdigit`` is true for ``"²"`` and other Unicode digits ``int()`` refuses, and a
    5,000-digit number costs quadratic time to convert: only ``[0-9]{1,18}`` is read.
    """
    if text is None or text == "":
        return default
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_DIGITS:
        return None
    value = int(text)
    return min(value, maximum) if maximum is not None else value


async def read_body(request: Any, limit: int) -> bytes | None:
    """The request body, or None as soon as it passes ``limit`` bytes (never buffered past it)."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and len(declared) <= MAX_DIGITS and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(raw: bytes | str, what: str = "body") -> Any:
    """A request body as JSON, or ValueError with one line naming ``what`` and the reason.

    :func:`plughost.util.jsonparse.parse_line` decides what is unreadable (deep nesting included); a lone
    surrogate escape is left to the caller (``plughost.util.log`` and the stores make text well formed).
    """
    try:
        return parse_line(raw or b"null", surrogates=False)
    except BadLine as exc:
        raise ValueError(f"{what}: {exc}") from None


async def read_json_object(request: Any, limit: int, shape: str) -> tuple[dict[str, Any] | None, Any]:
    """A route's JSON-object body: ``(body, None)``, or ``(None, response)`` with the 413 past
    ``limit`` bytes or the 400 naming ``shape`` (what the route expects, e.g. ``{text}``)."""
    raw = await read_body(request, limit)
    if raw is None:
        return None, json_error(413, "payload-too-large", f"body: larger than {limit} bytes")
    try:
        body = parse_json(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return None, json_error(400, "invalid-body", f"body: expected a JSON object {shape}")
    return body, None


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


def loopback_refusal(request: Any) -> str | None:
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


def same_origin(request: Any) -> bool:
    """No ``Origin``, or this server's own: the ``Origin``'s host and port are the request's ``Host``
    (a page on another site, or on another local port, is not this server)."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    scheme, _, rest = origin.partition("://")  # read by hand: a URL parser raises on a bracket left open
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0].lower()
    return scheme.lower() in ("http", "https") and bool(netloc) and netloc == request.headers.get("host", "").strip().lower()


def cookie_post_refusal(request: Any, *, json_body: bool = True) -> Any | None:
    """The 403 refusing a POST a foreign page could make with the browser's cookie, else None.

    A caller sending ``Authorization: Bearer`` is not a browser riding a cookie and passes. A
    cookie caller's ``Origin``, when sent, must name this host; and a JSON route's body must be
    ``application/json`` (a type no page may send cross-site without the browser asking first)."""
    if request.method != "POST":
        return None
    if request.headers.get("authorization", "")[:7].lower() == "bearer ":
        return None
    if not same_origin(request):
        origin = request.headers.get("origin", "")
        return json_error(403, "cross-origin", f"Origin: {origin[:80]!r} is not this server; "
                                               "a cookie-carried admin session is refused from another site")
    if json_body:
        ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            return json_error(403, "cross-origin", f"content-type: expected application/json with an admin "
                                                   f"session cookie, got {ctype[:60] or 'none'!r}")
    return None
