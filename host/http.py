"""Small HTTP helpers shared by the host app and plugin routes (SPEC 13: 4xx JSON `{error, detail}`).

Starlette is imported inside the functions: this module may be imported from a plugin's
``hooks.py`` without putting the web stack on the boot path.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any


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
