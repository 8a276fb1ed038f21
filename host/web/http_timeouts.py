"""How long a client may take to send a request: the head, then the body (docs/http.md#slow-clients).

uvicorn (0.55 here) bounds an idle keep-alive connection (``timeout_keep_alive``), the size of a
request head (h11's 16 KiB incomplete-event limit) and the connections it serves at once
(``limit_concurrency``), but not the time a request head may take: a client that sends one
header byte every few seconds holds its connection open for ever. :func:`protocol_class` is
uvicorn's h11 protocol with that one deadline added: a connection that has not sent a whole
request head within ``PLUGHOST_HTTP_HEADER_TIMEOUT`` seconds (default 5) of opening, or of its
last response, is closed. The body has its own deadline in :class:`plughost.web.http_guard.GuardMiddleware`
(``PLUGHOST_HTTP_BODY_TIMEOUT``, default 30 s for the whole body: 408 after it).
"""

from __future__ import annotations

import time
from typing import Any

from plughost.util import settings
from plughost.util.log import log

DEFAULT_HEADER_TIMEOUT = settings.HTTP_HEADER_TIMEOUT.default
DEFAULT_BODY_TIMEOUT = settings.HTTP_BODY_TIMEOUT.default
DEFAULT_MAX_CONNECTIONS = settings.HTTP_MAX_CONNECTIONS.default


class _Closed:
    """Counts connections closed for a slow head; one ``[http] op=header-timeout`` line a second at most."""

    count = 0
    logged_at = -1.0

    @classmethod
    def note(cls, timeout: float) -> None:
        cls.count += 1
        now = time.monotonic()
        if now - cls.logged_at >= 1.0:
            log("http", "op=header-timeout", closed=cls.count, seconds=f"{timeout:g}")
            cls.count, cls.logged_at = 0, now


def protocol_class(header_timeout: float) -> type:
    """uvicorn's h11 protocol, closing connections whose request head is not in within ``header_timeout``."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadlineProtocol(H11Protocol):
        _head_timer: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request's head gets the same time

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self._head_timer = self.loop.call_later(header_timeout, self._head_late)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            waiting_for_head = self.cycle is None or self.cycle.response_complete
            if waiting_for_head and not self.transport.is_closing():
                self.transport.close()
                _Closed.note(header_timeout)

    return HeaderDeadlineProtocol
