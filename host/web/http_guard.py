"""The host app's front door: body limits on every route, a credential on MCP and admin routes.

Body limits (docs/http.md#limits): a request whose ``Content-Length`` passes the route's limit is answered
413 before the route runs; a body without a length is counted as it is read and cut at the
limit. ``/mcp/*`` may carry :data:`MCP_MAX_BODY` bytes, every other route
:data:`DEFAULT_MAX_BODY` (``PLUGHOST_HTTP_MAX_BODY`` overrides the default); routes may be
stricter themselves.

Credentials (docs/http.md#credentials): ``/mcp/<plugin>`` and every ``/api/admin/*`` route except the PIN
exchange (``/api/admin/session``) require ``Authorization: Bearer <token>`` (the admin routes also
take the ``admin_session`` cookie): the serving account's HTTP token
(:func:`plughost.util.credentials.http_token`) or an admin session token minted for that same account.
Both are compared in constant time; a refusal is 401 ``{error: "unauthorized"}`` and writes no
log line (a probe is not worth one). Public routes (webchat, webhooks, sites, healthz) stay
open. The development switch (``plughost serve --open-local`` or ``PLUGHOST_OPEN_LOCAL=1``)
opens them without a credential, and only for requests that are loopback on every count (socket
peer, ``Host``, ``Origin``, proxy headers), so a tunnel on the same machine does not open them;
``serve`` refuses a non-loopback ``--host`` while it is on.

Principal (docs/roles.md#a-credential-never-widens-the-guards): the serving process's :class:`plughost.ports.graph.Principal` is built once, when the
app is, and every request carries it (``scope["state"]["principal"]``, read with
:func:`request_principal`): a credential opens the door, it never widens the guards, and no route
re-reads the environment for them. There is no narrowed credential: a narrowed server (its
``ALLOWED_SCOPES`` / ``AGENT_SLUG``) is a narrowed caller for every request it serves.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException

from plughost.ports.graph import Principal
from plughost.util import credentials, settings
from plughost.web.http import MAX_DIGITS, json_error, loopback_refusal, same_origin

DEFAULT_MAX_BODY = settings.HTTP_MAX_BODY.default
MCP_MAX_BODY = 4 * 1024 * 1024
OPEN_PATHS = ("/api/admin/session",)  # the PIN exchange: how a credential is obtained in the first place
COOKIE = "admin_session"


def protected(path: str) -> bool:
    """MCP over HTTP and the admin API need a credential; everything else is a public route."""
    if path.startswith("/mcp/") or path == "/mcp":
        return True
    return (path.startswith("/api/admin/") or path == "/api/admin") and path not in OPEN_PATHS


@dataclass
class Door:
    """What the guard needs to know about the serving process."""

    home: Path
    account_id: str | None
    open_local: bool = False
    default_max_body: int = DEFAULT_MAX_BODY
    principal: Principal | None = None
    body_timeout: float = settings.HTTP_BODY_TIMEOUT.default  # seconds for a whole request body

    def limit(self, path: str) -> int:
        return MCP_MAX_BODY if path.startswith("/mcp") else self.default_max_body

    def __post_init__(self) -> None:
        self._token: str | None = None
        self._secret: bytes | None = None

    @property
    def http_token(self) -> str:
        if self._token is None:
            self._token = credentials.http_token(self.home, self.account_id)
        return self._token

    def token_ok(self, given: str | None) -> bool:
        if not given or len(given) > 4096:
            return False
        if given.startswith("pht_"):
            return credentials.token_matches(self.http_token, given)
        if not self.account_id:
            return False  # an admin session is bound to an account; a server without one takes none
        if self._secret is None:
            self._secret = credentials.load_secret(self.home)
        session, _reason = credentials.validate(self._secret, given)
        return session is not None and session.account_id == self.account_id


def request_principal(request: Any) -> Principal | None:
    """The principal the request runs as (the serving process's, set by :class:`GuardMiddleware`)."""
    return (request.scope.get("state") or {}).get("principal")


def _bearer(request: Any, cookie_ok: bool) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return request.cookies.get(COOKIE) if cookie_ok else None


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"body: larger than {limit} bytes")


class BodyTooSlow(HTTPException):
    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"body: not received within {seconds:g} s", headers={"Connection": "close"})


class GuardMiddleware:
    """ASGI middleware applying :class:`Door` to every HTTP request."""

    def __init__(self, app: Any, door: Door) -> None:
        self.app = app
        self.door = door

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.requests import Request

        path = str(scope.get("path", ""))
        scope.setdefault("state", {})["principal"] = self.door.principal
        request = Request(scope)
        if protected(path):
            refused = self._refusal(request, path)
            if refused is not None:
                await json_error(401, "unauthorized", refused,
                                 headers={"WWW-Authenticate": 'Bearer realm="plughost"'})(scope, receive, send)
                return
        limit = self.door.limit(path)
        declared = request.headers.get("content-length", "")
        if declared and (not declared.isascii() or not declared.isdigit() or len(declared) > MAX_DIGITS):
            await json_error(400, "bad-request", "Content-Length: expected a byte count")(scope, receive, send)
            return
        if declared and int(declared) > limit:
            await json_error(413, "payload-too-large", f"body: larger than {limit} bytes",
                             headers={"Connection": "close"})(scope, receive, send)
            return
        seen = 0
        body_done = False
        timeout = self.door.body_timeout
        loop = asyncio.get_running_loop()
        body_deadline = loop.time() + timeout

        async def counted() -> Any:
            nonlocal seen, body_done
            if body_done:  # the body is in: what the app waits for now is the disconnect, untimed
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, body_deadline - loop.time()))
            except TimeoutError:
                raise BodyTooSlow(timeout) from None
            if message.get("type") == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
                body_done = not message.get("more_body", False)
            else:
                body_done = True
            return message

        await self.app(scope, counted, send)

    def _refusal(self, request: Any, path: str) -> str | None:
        """Why this request may not reach a protected route (one line), or None."""
        if self.door.token_ok(_bearer(request, cookie_ok=not path.startswith("/mcp"))):
            return None
        if self.door.open_local and loopback_refusal(request) is None and same_origin(request):
            return None
        if self.door.open_local:
            return (f"{path}: open for loopback requests from this server's own pages only; "
                    "send Authorization: Bearer <token>")
        return (f"{path}: send Authorization: Bearer <token> (the account's HTTP token, "
                "`plughost admin http-token`, or an admin session token)")
