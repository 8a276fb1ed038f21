"""Typed per-host state: slots keyed by objects, not strings.

A plugin keeps what it opened for this host (a client, a gateway, a cache) under a
:class:`StateKey` defined in its own module, so no other plugin can name it by accident and
a type checker knows what comes back. What the host itself publishes for plugins to read (the
serving runtime, the boot gates' summary, the specialist strip-list) has its keys here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.boot import BootReport

T = TypeVar("T")


class StateKey(Generic[T]):
    """One typed slot of :class:`PluginState`; its ``name`` is only for reading a repr."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


class PluginState:
    """What plugins keep on one host, by :class:`StateKey`."""

    def __init__(self) -> None:
        self._values: dict[StateKey[Any], Any] = {}
        self._guard = threading.Lock()
        self._making: dict[StateKey[Any], threading.RLock] = {}

    def get(self, key: StateKey[T]) -> T | None:
        return self._values.get(key)

    def set(self, key: StateKey[T], value: T) -> T:
        self._values[key] = value
        return value

    def setdefault(self, key: StateKey[T], make: Callable[[], T]) -> T:
        """The slot's value, made (once, whichever threads ask at the same time) by ``make`` when it is
        empty: a second maker would be a second owner of what the slot holds (its leases, say)."""
        if key in self._values:
            return self._values[key]
        with self._guard:
            lock = self._making.setdefault(key, threading.RLock())
        with lock:
            if key not in self._values:
                self._values[key] = make()
            return self._values[key]

    def pop(self, key: StateKey[T]) -> T | None:
        return self._values.pop(key, None)

    def __contains__(self, key: StateKey[Any]) -> bool:
        return key in self._values


class ServingRuntime(Protocol):
    """What plugins may read of the serving app's runtime (``host/serve/app.py`` ``Runtime``), so this
    layer names no serving code."""

    mcp: dict[str, Any]
    started_at: float


RUNTIME: StateKey[ServingRuntime] = StateKey("runtime")
"""The serving app's runtime (``plughost serve``): routes, MCP servers, in-flight requests."""
GATES: StateKey[dict[str, Any]] = StateKey("gates")
"""The boot gates' summary as ``serve`` ran them (``/healthz`` reports it)."""
BOOT_REPORT: StateKey[BootReport] = StateKey("boot-report")
"""The last :func:`plughost.runtime.boot.run_gates` report."""
STRIP_LIST: StateKey[dict[str, dict[str, list[str]]]] = StateKey("specialist-strip-list")
"""specialist → plugin → tool names a spawn must drop, as boot computed it."""
