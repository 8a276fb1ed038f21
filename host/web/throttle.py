"""Token buckets for the public routes (docs/channels.md#flood-limits): a flood is answered 429 before it costs a
store write or an agent turn.

A route names its buckets by a ``PLUGHOST_RATE_<NAME>`` :class:`~plughost.util.settings.Setting` it
declares (:func:`limiter`; the buckets are called ``<name>``, lower case) and takes one token per
request from each key it cares about (the client's address, a webchat visitor); an empty bucket
is 429 ``{error: "too-many-requests", detail}`` with ``Retry-After`` (:func:`too_many`). A rate is
``PER_MINUTE/BURST`` (``0`` turns one off; a bad value is one ``[http] op=bad-setting`` line and
the setting's default applies); the defaults are far above what a person does. At most :data:`MAX_KEYS` keys are remembered per bucket set, least recently seen
forgotten first, so a spray of addresses costs bounded memory. Generic on purpose: the host
knows no plugin, plugins import this.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plughost.runtime.state import StateKey
from plughost.util.log import log
from plughost.util.settings import Setting
from plughost.web.http import is_loopback, json_error

MAX_KEYS = 20_000


@dataclass(frozen=True)
class Rate:
    """``per_minute`` tokens a minute, at most ``burst`` saved up."""

    per_minute: float
    burst: float

    @property
    def per_s(self) -> float:
        return self.per_minute / 60.0

    def __str__(self) -> str:
        return f"{self.per_minute:g}/{self.burst:g}"


def parse_rate(raw: str) -> Rate | None:
    """``PER_MINUTE/BURST`` (``30/20``; ``30`` alone is ``30/30``), ``0`` (off: None); ValueError when neither."""
    if raw.strip() == "0":
        return None
    per, _, burst = raw.strip().partition("/")
    rate = Rate(float(per), float(burst or per))
    if not (0 < rate.per_minute <= 1e7 and 1 <= rate.burst <= 1e7):
        raise ValueError(raw)
    return rate


def bucket_name(setting: Setting[str]) -> str:
    """``PLUGHOST_RATE_WEBCHAT_VISITOR`` → ``webchat-visitor``."""
    return setting.name.removeprefix("PLUGHOST_RATE_").lower().replace("_", "-")


def rate_setting(env: Mapping[str, str], setting: Setting[str]) -> Rate | None:
    """A ``PLUGHOST_RATE_<NAME>`` setting's rate: as set, None when off (``0``), else its default."""
    default = parse_rate(setting.default)
    try:
        return parse_rate(setting.read(env))
    except ValueError:
        log("http", "op=bad-setting", name=setting.name, value=(setting.raw(env) or "")[:40], default=str(default))
        return default


class Buckets:
    """Token buckets by key, one :class:`Rate` for all; thread-safe, bounded in keys."""

    def __init__(self, name: str, rate: Rate, max_keys: int = MAX_KEYS) -> None:
        self.name, self.rate, self.max_keys = name, rate, max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, stamp)
        self._lock = threading.Lock()
        self._refused = 0
        self._logged_at = -1.0

    def take(self, key: str, now: float | None = None) -> float:
        """Take a token for ``key``: 0.0 when admitted, else the seconds until the next token."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, stamp = self._buckets.pop(key, (self.rate.burst, now))
            tokens = min(self.rate.burst, tokens + (now - stamp) * self.rate.per_s)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / self.rate.per_s
            self._buckets[key] = (tokens - 1 if wait == 0.0 else tokens, now)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            if wait:
                self._note_refused(now)
        return wait

    def _note_refused(self, now: float) -> None:
        """One ``[http] op=throttled`` line a second at most, with the count since the last (a flood is one line)."""
        self._refused += 1
        if now - self._logged_at >= 1.0:
            log("http", "op=throttled", limit=self.name, rate=str(self.rate), count=self._refused)
            self._refused, self._logged_at = 0, now


def too_many(wait: float, detail: str) -> Any:
    """429 ``{error: "too-many-requests", detail}`` with ``Retry-After`` (whole seconds, at least 1)."""
    return json_error(429, "too-many-requests", detail, headers={"Retry-After": str(max(1, math.ceil(wait)))})


def client_address(request: Any) -> str:
    """The address a client's requests are counted under: the socket peer, or, when the peer is a
    proxy on this machine (loopback), the last ``X-Forwarded-For`` entry: the one that proxy
    appended. No other proxy header is believed (a client could add ``X-Real-IP`` or ``Forwarded``
    beside the proxy's and pick its own bucket); a proxy that sends none puts its clients in one
    bucket, which fails closed. A remote peer's headers are never believed."""
    peer = request.client.host if request.client else ""
    if is_loopback(peer):
        values = request.headers.getlist("x-forwarded-for")
        last = values[-1].split(",")[-1].strip() if values else ""
        if last and len(last) <= 64:
            return last
    return peer or "unknown"


_LIMITERS: StateKey[dict[str, Buckets | None]] = StateKey("plughost.web.throttle")


def limiter(host: Any, setting: Setting[str]) -> Buckets | None:
    """The host's buckets of a ``PLUGHOST_RATE_<NAME>`` setting, None when turned off."""
    table = host.state.setdefault(_LIMITERS, dict)
    name = bucket_name(setting)
    if name not in table:
        rate = rate_setting(host.env, setting)
        table[name] = Buckets(name, rate) if rate is not None else None
    return table[name]


def check(host: Any, setting: Setting[str], key: str, detail: str) -> Any | None:
    """A 429 response when ``key`` is over the ``setting``'s limit, else None (the token is taken)."""
    buckets = limiter(host, setting)
    if buckets is None:
        return None
    wait = buckets.take(key)
    return too_many(wait, detail) if wait else None


def per_address(host: Any, setting: Setting[str], endpoint: Any, detail: str) -> Any:
    """``endpoint`` behind the ``setting``'s limit keyed on the client's address (429 before it runs)."""

    async def limited(request: Any) -> Any:
        refused = check(host, setting, client_address(request), detail)
        return refused if refused is not None else await endpoint(request)

    limited.__name__ = getattr(endpoint, "__name__", bucket_name(setting))
    limited.__doc__ = endpoint.__doc__
    return limited
