"""Outbound delivery over HTTP: timeouts, retries with backoff on 429/5xx honouring Retry-After.

The result is a plain dict the pipeline records on the reply Message:
``{ok, status, attempts, reason?, body?}``. A reply that cannot be delivered is recorded as
``deliveryStatus=failed`` with its reason (never lost silently) and can be re-sent with
``plughost channels retry``.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from plughost import Host, StateKey, log
from plughost.plugins.channels.settings import (
    CHANNELS_HTTP_TIMEOUT,
    CHANNELS_MAX_RETRY_DELAY,
    CHANNELS_SEND_ATTEMPTS,
)
from plughost.plugins.channels.wire import JSONMapping, JSONObject

if TYPE_CHECKING:
    import httpx

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_ATTEMPTS = CHANNELS_SEND_ATTEMPTS.default
BASE_DELAY = 0.5
MAX_DELAY = CHANNELS_MAX_RETRY_DELAY.default


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff(attempt: int, base: float = BASE_DELAY, cap: float = MAX_DELAY) -> float:
    """Exponential backoff for attempt 1, 2, 3 ... (0.5 s, 1 s, 2 s ...), capped."""
    return min(cap, base * (2 ** (attempt - 1)))


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def chunks(text: str, limit: int = 4096) -> list[str]:
    """Split a reply into parts of at most ``limit`` UTF-16 code units (the platforms' unit),
    preferring paragraph, line, then word boundaries, never splitting a character."""
    out: list[str] = []
    rest = text
    while utf16_len(rest) > limit:
        # the longest prefix within the limit, in whole code points
        size, units = 0, 0
        for ch in rest:
            step = 2 if ord(ch) > 0xFFFF else 1
            if units + step > limit:
                break
            units += step
            size += 1
        head = rest[:size]
        cut = max(head.rfind("\n\n"), head.rfind("\n"), head.rfind(" "))
        if cut > size // 2:
            size = cut + 1
        part = rest[:size].rstrip()
        if part:
            out.append(part)
        rest = rest[size:].lstrip()
    if rest or not out:
        out.append(rest)
    return out


async def send_parts(parts: list[str], send_one: Callable[[str], Awaitable[JSONObject]]) -> JSONObject:
    """Send the parts in order; the outcome of the first failure (with how many went out), else the last."""
    outcome: JSONObject = {"ok": True, "attempts": 0}
    attempts = 0
    for i, part in enumerate(parts):
        outcome = await send_one(part)
        attempts += int(outcome.get("attempts") or 0)
        if not outcome.get("ok"):
            if i:
                outcome["reason"] = f"{outcome.get('reason')} (part {i + 1} of {len(parts)}; {i} sent)"
            break
    outcome["attempts"] = attempts
    outcome["parts"] = len(parts)
    return outcome


HTTP_CLIENT: StateKey[httpx.AsyncClient] = StateKey("channels.http")


def client(host: Host) -> httpx.AsyncClient:
    """One shared httpx.AsyncClient per host (connection pooling), with explicit timeouts."""
    import httpx

    existing = host.state.get(HTTP_CLIENT)
    if existing is not None and not existing.is_closed:
        return existing
    seconds = CHANNELS_HTTP_TIMEOUT.read(host.env)
    made = httpx.AsyncClient(timeout=httpx.Timeout(seconds, connect=min(seconds, 5.0)))
    return host.state.set(HTTP_CLIENT, made)


async def post_json(host: Host, url: str, payload: JSONMapping, *, channel: str,
                    headers: Mapping[str, str] | None = None, attempts: int | None = None) -> JSONObject:
    """POST JSON with retries. Never raises for HTTP or transport failures: returns the outcome."""
    import httpx

    attempts = attempts or CHANNELS_SEND_ATTEMPTS.read(host.env)
    max_delay = CHANNELS_MAX_RETRY_DELAY.read(host.env)
    http = client(host)
    reason = "unknown"
    status: int | None = None
    for attempt in range(1, attempts + 1):
        wait: float | None = None
        try:
            resp = await http.post(url, json=dict(payload), headers=dict(headers or {}))
            status = resp.status_code
            if 200 <= status < 300:
                try:
                    body = resp.json()
                except ValueError:
                    body = None
                return {"ok": True, "status": status, "attempts": attempt, "body": body}
            reason = f"http-{status}"
            detail = resp.text[:200].replace("\n", " ")
            if status not in RETRY_STATUSES:
                return {"ok": False, "status": status, "attempts": attempt, "reason": f"{reason}: {detail}"}
            wait = retry_after(resp.headers.get("retry-after"))
        except httpx.TimeoutException:
            reason = "timeout"
        except httpx.TransportError as exc:
            reason = f"transport: {type(exc).__name__}"
        if attempt == attempts:
            break
        delay = min(max_delay, wait if wait is not None else backoff(attempt))
        log("channels", "op=send-retry", channel=channel, attempt=attempt, reason=reason, waitS=f"{delay:.2f}")
        await asyncio.sleep(delay)
    return {"ok": False, "status": status, "attempts": attempts, "reason": f"{reason} after {attempts} attempts"}
