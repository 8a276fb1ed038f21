"""`POST /api/admin/session` (PIN → signed token) and `GET /api/admin/session` (validate).

The token travels as ``Authorization: Bearer <token>`` or the ``admin_session`` cookie (set
HttpOnly, SameSite=Strict on mint). Wrong PIN and unknown account answer alike (401
``invalid-pin``) so the route does not reveal which accounts exist; five failures for one
account within five minutes lock it for the rest of that window (429). Token rejections carry a
reason code in the response and write no log line.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from host.errors import UserError
from host.http import json_error
from host.log import log
from plugins.admin import sessions
from plugins.admin.logingest import read_body

COOKIE = "admin_session"
MAX_FAILURES = 5
WINDOW_S = 300.0
REJECT_CODES = {"missing": "session-missing", "invalid-token": "session-invalid", "expired": "session-expired-age"}


class FailureWindow:
    """Failed PIN attempts per account in a sliding window."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fails: dict[str, list[float]] = {}

    def locked(self, account: str) -> bool:
        now = time.monotonic()
        with self._lock:
            recent = [t for t in self._fails.get(account, []) if now - t < WINDOW_S]
            self._fails[account] = recent
            return len(recent) >= MAX_FAILURES

    def fail(self, account: str) -> None:
        with self._lock:
            self._fails.setdefault(account, []).append(time.monotonic())

    def clear(self, account: str) -> None:
        with self._lock:
            self._fails.pop(account, None)


def token_of(request: Any) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return request.cookies.get(COOKIE) or None


def make_endpoints(home_of: Callable[[], Path]) -> tuple[Any, Any]:
    from starlette.responses import JSONResponse

    failures = FailureWindow()

    async def mint_session(request: Any) -> Any:
        body = await read_body(request, 4096)
        if body is None:
            return json_error(413, "payload-too-large", "body: larger than 4096 bytes")
        try:
            data = json.loads(body or b"null")
        except ValueError:
            return json_error(400, "bad-request", "body: expected JSON {\"accountId\": \"...\", \"pin\": \"...\"}")
        if not isinstance(data, dict):
            return json_error(400, "bad-request", "body: expected a JSON object with accountId and pin")
        try:
            account = sessions.check_account_id(data.get("accountId"))  # type: ignore[arg-type]
            pin = sessions.check_pin(data.get("pin"))
        except UserError as exc:
            field = str(exc).split(":", 1)[0]
            return json_error(400, "bad-request", f"body.{field}:{str(exc).split(':', 1)[1]}")
        if failures.locked(account):
            log("admin-session", "op=locked", accountId=account[:8])
            return json_error(429, "too-many-requests", "too many wrong PINs; try again in a few minutes",
                              headers={"Retry-After": str(int(WINDOW_S))})
        home = home_of()
        user = await anyio.to_thread.run_sync(sessions.verify_pin, home, account, pin)
        if user is None:
            failures.fail(account)
            log("admin-session", "op=pin-rejected", accountId=account[:8])
            return json_error(401, "invalid-pin", "the account or PIN is not right")
        failures.clear(account)
        secret = sessions.load_secret(home)
        now = int(time.time() * 1000)
        token = sessions.mint(secret, account, user, now_ms=now)
        log("admin-session", "op=minted", accountId=account[:8], userId=user)
        response = JSONResponse({"token": token, "accountId": account, "userId": user,
                                 "expiresAt": now + sessions.TTL_MS})
        response.set_cookie(COOKIE, token, max_age=sessions.TTL_MS // 1000, httponly=True, samesite="strict",
                            path="/")
        return response

    async def check_session(request: Any) -> Any:
        secret = sessions.load_secret(home_of())
        session, reason = sessions.validate(secret, token_of(request))
        if session is None:
            code = REJECT_CODES.get(reason, "session-invalid")
            return json_error(401, code, f"admin session rejected: {code}")
        return JSONResponse({"accountId": session.account_id, "userId": session.user_id,
                             "ageMs": session.age_ms(), "expiresAt": session.created_ms + sessions.TTL_MS})

    return mint_session, check_session
