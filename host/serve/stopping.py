"""The serving process's stop, shared by the host and the plugins it serves (docs/channels.md#stopping, docs/http.md#stopping).

A SIGTERM must end ``plughost serve`` in bounded time whatever is queued: requests that start
after it are refused (503 with ``Retry-After``), work already running gets until
:attr:`Stop.deadline` (``PLUGHOST_SHUTDOWN_GRACE`` seconds, default 10) and whatever has not
started is left for the next start. The host begins the stop (:func:`begin`); a plugin that
runs work of its own (the channels' agent turns) reads it through :func:`stop_of` and
registers :meth:`Stop.on_stop` to wind that work down, without the host knowing about it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from plughost.runtime.state import StateKey
from plughost.util import settings

DEFAULT_GRACE = settings.SHUTDOWN_GRACE.default


def shutdown_grace(env: Mapping[str, str]) -> float:
    """``PLUGHOST_SHUTDOWN_GRACE`` in seconds (default 10); a value that is not a number in
    0..3600 is a one-line error naming it."""
    return settings.SHUTDOWN_GRACE.read(env)


class Stop:
    """When the stop began and how long running work may still take; listeners run once, on the loop."""

    def __init__(self) -> None:
        self.began_at: float | None = None  # time.monotonic()
        self.grace = DEFAULT_GRACE
        self.reason = ""
        self._listeners: list[Callable[[], None]] = []
        self._loop: Any = None

    @property
    def is_set(self) -> bool:
        return self.began_at is not None

    @property
    def deadline(self) -> float:
        """``time.monotonic()`` by which running work must be done (infinite before the stop)."""
        return float("inf") if self.began_at is None else self.began_at + self.grace

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def on_stop(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` on the serving loop when the stop begins (soon, if it already has)."""
        self._listeners.append(listener)
        if self.is_set:
            self._schedule(listener)

    def begin(self, grace: float, reason: str, loop: Any = None) -> bool:
        """Start the stop (idempotent: the first call sets the deadline); True the first time."""
        if self.is_set:
            return False
        self.began_at, self.grace, self.reason, self._loop = time.monotonic(), max(0.0, grace), reason, loop
        for listener in list(self._listeners):
            self._schedule(listener)
        return True

    def _schedule(self, listener: Callable[[], None]) -> None:
        if self._loop is not None and not self._loop.is_closed():
            # begin() may run in a signal handler: never touch the loop's state from there directly
            self._loop.call_soon_threadsafe(self._safe, listener)
        else:
            self._safe(listener)

    @staticmethod
    def _safe(listener: Callable[[], None]) -> None:
        with contextlib.suppress(Exception):  # a plugin's listener never breaks the host's stop
            listener()


STOP: StateKey[Stop] = StateKey("host.stop")


def stop_of(host: Any) -> Stop:
    """The host's :class:`Stop` (one per host; never begun outside ``plughost serve``)."""
    return host.state.setdefault(STOP, Stop)
