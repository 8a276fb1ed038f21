"""`/sites/<...>`: static publishing from `<PLUGHOST_HOME>/sites/` with URL = disk mirroring (docs/http.md#sites).

The checks work on the raw request path, not Starlette's decoded one, so an encoded ``..``
(``%2e%2e``, ``%252e``, ``%5c``) is seen for what it is. Every segment must match
:data:`SAFE_SEGMENT` (no dot-leading names, so ``.``, ``..`` and hidden files are out; no
backslash, colon, NUL or ``%`` after one decoding), then the resolved real path must stay under
the real sites root, which rejects symlinks that escape it. A directory is redirected to its
trailing-slash form (query kept) and then served through its ``index.html``; nothing else is
invented. Log lines: ``[sites] serve|redirect-trailing-slash|not-found|path-traversal-rejected|
symlink-escape-rejected``.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

from plughost import log
from plughost.api.http import json_error

PREFIX = "/sites"
SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9_~+@=,(-][A-Za-z0-9._~+@=,() -]{0,254}$")
HTML_CSP = ("default-src 'self' https: data:; style-src 'self' https:{hashes}; script-src 'none'; "
            "object-src 'none'; base-uri 'self'; frame-ancestors 'self'")
STYLE_ELEMENT = re.compile(rb"<style\b[^>]*>(.*?)</style\s*>", re.IGNORECASE | re.DOTALL)
HASHED_HTML_LIMIT = 2 * 1024 * 1024  # a page's inline styles are hashed up to this size
ASSET_CACHE = "public, max-age=3600"
EXTRA_TYPES = {
    ".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json", ".svg": "image/svg+xml", ".webp": "image/webp", ".avif": "image/avif",
    ".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf", ".otf": "font/otf",
    ".ico": "image/x-icon", ".txt": "text/plain; charset=utf-8", ".pdf": "application/pdf",
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".mp4": "video/mp4", ".webm": "video/webm", ".xml": "application/xml",
}
NOSNIFF = {"X-Content-Type-Options": "nosniff"}


class Rejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def split_raw_path(raw_path: bytes) -> tuple[list[str], bool]:
    """Safe segments under ``/sites`` and whether the path ends with a slash; raises Rejected."""
    if b"?" in raw_path:
        raw_path = raw_path.split(b"?", 1)[0]
    if not (raw_path == PREFIX.encode() or raw_path.startswith(PREFIX.encode() + b"/")):
        raise Rejected("outside-prefix")
    rest = raw_path[len(PREFIX):]
    if b"\\" in rest or b"\x00" in rest:
        raise Rejected("unsafe-character")
    decoded = unquote_to_bytes(rest)
    if b"%" in decoded or b"\\" in decoded or b"\x00" in decoded:
        raise Rejected("encoded-unsafe-sequence")  # double encoding, encoded backslash or NUL
    try:
        text = decoded.decode("utf-8")
    except UnicodeDecodeError:
        raise Rejected("invalid-utf8") from None
    trailing = text.endswith("/")
    parts = text.split("/")[1:]  # text starts with "/" (or is empty for "/sites")
    if parts and parts[-1] == "":
        parts = parts[:-1]
    for seg in parts:
        if not SAFE_SEGMENT.match(seg) or seg != seg.strip():
            raise Rejected("unsafe-segment")
    return parts, trailing


def _within(root: str, target: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def style_hashes(page: bytes) -> list[str]:
    """The CSP sources (``'sha256-...'``) of a page's inline ``<style>`` elements, in order, each once.

    A browser hashes an element's text after its HTML parser turned CR LF and CR into LF, so the
    same is done here; nothing else (a ``style`` element's text is raw, no character references).
    """
    out: list[str] = []
    for match in STYLE_ELEMENT.finditer(page):
        text = match.group(1).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        source = "'sha256-" + base64.b64encode(hashlib.sha256(text).digest()).decode("ascii") + "'"
        if source not in out:
            out.append(source)
    return out


def html_csp(path: Path) -> str:
    """The page's policy: no scripts, styles from files plus exactly the page's own inline ``<style>``s."""
    try:
        with path.open("rb") as fh:
            page = fh.read(HASHED_HTML_LIMIT)
    except OSError:
        page = b""
    return HTML_CSP.format(hashes="".join(f" {h}" for h in style_hashes(page)))


def _headers_for(path: Path) -> dict[str, str]:
    headers = dict(NOSNIFF)
    if path.suffix.lower() in (".html", ".htm"):
        headers["Content-Security-Policy"] = html_csp(path)
        headers["Cache-Control"] = "no-cache"
    else:
        headers["Cache-Control"] = ASSET_CACHE
    return headers


def _media_type(path: Path) -> str:
    return EXTRA_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def _not_found(url_path: str) -> Any:
    log("sites", "not-found", path=url_path)
    return json_error(404, "not-found", f"no file at {url_path}", headers=NOSNIFF)


def sites_root(home: Path) -> Path:
    return home / "sites"


def make_endpoint(home_of: Any) -> Any:
    """The ``/sites`` endpoint; ``home_of()`` returns the data root (read per request, so tests may move it)."""
    from starlette.responses import FileResponse, RedirectResponse

    async def sites(request: Any) -> Any:
        raw_path: bytes = request.scope.get("raw_path") or request.scope["path"].encode("utf-8")
        url_path = raw_path.split(b"?", 1)[0].decode("latin-1")
        try:
            parts, trailing = split_raw_path(raw_path)
        except Rejected as exc:
            log("sites", "path-traversal-rejected", reason=exc.reason, path=url_path[:200])
            return json_error(403, "forbidden", f"unsafe path: {exc.reason}", headers=NOSNIFF)
        root = sites_root(home_of())
        real_root = os.path.realpath(root)
        target = os.path.realpath(os.path.join(real_root, *parts))
        if not _within(real_root, target):
            log("sites", "symlink-escape-rejected", path=url_path[:200])
            return json_error(403, "forbidden", "path resolves outside the sites root", headers=NOSNIFF)
        if os.path.isdir(target):
            if not trailing:
                query = request.scope.get("query_string", b"").decode("latin-1")
                location = url_path + "/" + (f"?{query}" if query else "")
                log("sites", "redirect-trailing-slash", path=url_path[:200])
                return RedirectResponse(location, status_code=301, headers=NOSNIFF)
            index = os.path.realpath(os.path.join(target, "index.html"))
            if not _within(real_root, index):
                log("sites", "symlink-escape-rejected", path=url_path[:200] + "index.html")
                return json_error(403, "forbidden", "index.html resolves outside the sites root", headers=NOSNIFF)
            if not os.path.isfile(index):
                return _not_found(url_path)
            target = index
        elif not os.path.isfile(target) or trailing:
            return _not_found(url_path)
        path = Path(target)
        log("sites", "serve", path=url_path[:200])
        return FileResponse(path, media_type=_media_type(path), headers=_headers_for(path))

    return sites
