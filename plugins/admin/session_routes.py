"""`POST /api/admin/session` (PIN → signed token) and `GET /api/admin/session` (validate).

The token travels as ``Authorization: Bearer <token>`` or the ``admin_session`` cookie (set
HttpOnly, SameSite=Strict on mint). Wrong PIN and unknown account answer alike (401
``invalid-pin``) so the route does not reveal which accounts exist; five failures for one
account within five minutes lock it for the rest of that window (429). Token rejections carry a
reason code in the response and write no log line.

The route is public, so its cost is bounded for everyone together (:class:`PinGate`): at most
:data:`SCRYPT_SLOTS` scrypt hashes run at once (16 MiB each), at most :data:`MAX_WAITING` more
wait for a slot, and attempts across all accounts are limited to :data:`RATE_PER_S` a second
(burst :data:`BURST`); beyond that the answer is 429 at once, with ``Retry-After``. An account
without a PIN costs no scrypt: the answer waits out the recent scrypt time instead.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from plughost import UserError, log
from plughost.api.http import json_error, parse_json, read_body
from plughost.plugins.admin import sessions

COOKIE = "admin_session"
MAX_FAILURES = 5
WINDOW_S = 300.0
SCRYPT_SLOTS = 2
MAX_WAITING = 8
RATE_PER_S = 10.0
BURST = 20.0
REJECT_CODES = {"missing": "session-missing", "invalid-token": "session-invalid", "expired": "session-expired-age",
                "wrong-account": "session-wrong-account", "revoked": "session-revoked"}


class FailureWindow:
    """Failed PIN attempts per account in a sliding window, and the attempts still being checked.

    :meth:`begin` counts an attempt in flight against the limit the moment it starts, so parallel
    wrong PINs cannot all pass the check before the first of them is recorded: at most
    :data:`MAX_FAILURES` are ever checked in a window, however many arrive at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fails: dict[str, list[float]] = {}
        self._checking: dict[str, int] = {}

    def _recent(self, account: str) -> list[float]:
        now = time.monotonic()
        recent = [t for t in self._fails.get(account, []) if now - t < WINDOW_S]
        self._fails[account] = recent
        return recent

    def begin(self, account: str) -> bool:
        """Reserve one attempt (False: the account is locked, counting the attempts in flight)."""
        with self._lock:
            if len(self._recent(account)) + self._checking.get(account, 0) >= MAX_FAILURES:
                return False
            self._checking[account] = self._checking.get(account, 0) + 1
            return True

    def end(self, account: str, *, failed: bool | None) -> None:
        """The reserved attempt is over: a failure, a success (clears the window) or neither (None)."""
        with self._lock:
            left = self._checking.get(account, 1) - 1
            if left > 0:
                self._checking[account] = left
            else:
                self._checking.pop(account, None)
            if failed:
                self._fails.setdefault(account, []).append(time.monotonic())
            elif failed is False:
                self._fails.pop(account, None)


class PinGate:
    """The global bound on PIN work: a token bucket over all attempts and a few scrypt slots."""

    def __init__(self, rate: float = RATE_PER_S, burst: float = BURST, slots: int = SCRYPT_SLOTS,
                 waiting: int = MAX_WAITING) -> None:
        self.rate, self.burst, self.max_waiting = rate, burst, waiting
        self.tokens = burst
        self.stamp = time.monotonic()
        self.slots = asyncio.Semaphore(slots)
        self.waiting = 0
        self.scrypt_s = 0.05  # a running estimate of one scrypt, for the unknown-account wait
        self.throttled = 0
        self.logged_at = -1.0

    def note_throttled(self) -> None:
        """One ``op=throttled`` line per second at most, with the count since the last one (a flood is one line)."""
        self.throttled += 1
        now = time.monotonic()
        if now - self.logged_at >= 1.0:
            log("admin-session", "op=throttled", reason="global-pin-limit", count=self.throttled)
            self.throttled, self.logged_at = 0, now

    def admit(self) -> bool:
        """Take one attempt from the bucket; False when the server is at its limit."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1 or self.waiting >= self.max_waiting:
            return False
        self.tokens -= 1
        return True

    async def verify(self, home: Path, account: str, pin: str) -> str | None:
        if not await anyio.to_thread.run_sync(sessions.has_pin, home, account):
            await asyncio.sleep(self.scrypt_s)  # no hashing, and no faster answer either
            return None
        self.waiting += 1
        try:
            await self.slots.acquire()
        finally:
            self.waiting -= 1
        try:
            started = time.perf_counter()
            user = await anyio.to_thread.run_sync(sessions.verify_pin, home, account, pin)
            self.scrypt_s = min(1.0, 0.8 * self.scrypt_s + 0.2 * (time.perf_counter() - started))
            return user
        finally:
            self.slots.release()


def token_of(request: Any) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return request.cookies.get(COOKIE) or None


class PinLogin:
    """PIN → signed session token under the per-account lockout and the server-wide gate (shared by the
    JSON route and the console's login form)."""

    def __init__(self, home_of: Callable[[], Path], account_of: Callable[[], str | None] = lambda: None) -> None:
        self.home_of, self.account_of = home_of, account_of
        self.failures = FailureWindow()
        self.gate = PinGate()

    async def attempt(self, account: str, pin: str) -> tuple[str | None, str | None, Any]:
        """``(token, user, None)`` or ``(None, None, error response)``."""
        serving = self.account_of()
        failures, gate = self.failures, self.gate
        if not failures.begin(account):
            log("admin-session", "op=locked", accountId=account[:8])
            return None, None, json_error(429, "too-many-requests", "too many wrong PINs; try again in a few minutes",
                                          headers={"Retry-After": str(int(WINDOW_S))})
        outcome: bool | None = None
        try:
            if not gate.admit():
                gate.note_throttled()
                return None, None, json_error(429, "too-many-requests",
                                              "too many PIN attempts on this server; try again shortly",
                                              headers={"Retry-After": "1"})
            home = self.home_of()
            if serving and account != serving:
                await asyncio.sleep(gate.scrypt_s)  # another account's PIN is no business of this server
                user = None
            else:
                user = await gate.verify(home, account, pin)
            outcome = user is None
        finally:
            failures.end(account, failed=outcome)
        if user is None:
            log("admin-session", "op=pin-rejected", accountId=account[:8])
            return None, None, json_error(401, "invalid-pin", "the account or PIN is not right")
        secret = sessions.load_secret(home)
        token = sessions.mint(secret, account, user, now_ms=int(time.time() * 1000))
        log("admin-session", "op=minted", accountId=account[:8], userId=user)
        return token, user, None


def set_cookie(response: Any, token: str) -> None:
    response.set_cookie(COOKIE, token, max_age=sessions.TTL_MS // 1000, httponly=True, samesite="strict", path="/")


def make_endpoints(home_of: Callable[[], Path], account_of: Callable[[], str | None] = lambda: None,
                   login: PinLogin | None = None) -> tuple[Any, Any]:
    """The mint and check endpoints; a server serving an account mints and accepts that account's tokens only."""
    from starlette.responses import JSONResponse

    pins = login or PinLogin(home_of, account_of)

    async def mint_session(request: Any) -> Any:
        body = await read_body(request, 4096)
        if body is None:
            return json_error(413, "payload-too-large", "body: larger than 4096 bytes")
        try:
            data = parse_json(body)
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
        token, user, refused = await pins.attempt(account, pin)
        if token is None:
            return refused
        now = int(time.time() * 1000)
        response = JSONResponse({"token": token, "accountId": account, "userId": user,
                                 "expiresAt": now + sessions.TTL_MS})
        set_cookie(response, token)
        return response

    async def check_session(request: Any) -> Any:
        session, reason = sessions.check_session(home_of(), token_of(request))
        serving = account_of()
        if session is not None and serving and session.account_id != serving:
            session, reason = None, "wrong-account"
        if session is None:
            code = REJECT_CODES.get(reason, "session-invalid")
            return json_error(401, code, f"admin session rejected: {code}")
        return JSONResponse({"accountId": session.account_id, "userId": session.user_id,
                             "ageMs": session.age_ms(), "expiresAt": session.created_ms + sessions.TTL_MS})

    return mint_session, check_session
