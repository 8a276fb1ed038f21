"""Leases on the store (docs/channels.md#several-servers-on-one-store): who does a piece of work when
more than one ``plughost serve`` shares one store.

A lease is a name (``turn:<message id>``, ``audit:<account>``), an owner (one id per process:
host, pid and a random part) and an expiry. :meth:`LeaseStore.take_lease` grants it atomically
when nobody holds it, when its holder's expiry has passed (a *takeover*), or when the caller
already holds it; the store's own clock decides expiry, so two machines' clocks never disagree
about it. :class:`Leases` is one process's side: its owner id, the leases it holds, a thread that
renews them every third of their time to live while the work runs, and the
``[lease] op=take|renew|takeover|release|lost`` lines.

:func:`is_shared` is the one place that decides whether a store is shared between machines (the
Neo4j store) or one machine's by construction (the embedded store, whose callers keep their
local ``flock`` claims).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from plughost.util.log import log


@dataclass(frozen=True)
class Lease:
    """A lease as the store holds it; ``previous`` is the owner whose expired lease this grant took over."""

    name: str
    owner: str
    expires_ms: int
    previous: str | None = None


@runtime_checkable
class LeaseStore(Protocol):
    """The lease part of the store port (both stores implement it)."""

    shared: bool
    """True when other machines may use the same store (callers then coordinate through leases)."""

    def take_lease(self, name: str, owner: str, ttl_s: float) -> Lease | None:
        """Grant ``name`` to ``owner`` for ``ttl_s`` seconds when it is free, expired or already
        ``owner``'s, in one transaction; None while another owner holds it."""
        ...

    def renew_leases(self, names: Sequence[str], owner: str, ttl_s: float) -> list[str]:
        """Push the expiry of those of ``names`` that ``owner`` still holds; returns them."""
        ...

    def release_leases(self, names: Sequence[str], owner: str) -> int:
        """Drop those of ``names`` that ``owner`` holds; how many were dropped."""
        ...

    def lease_holders(self, names: Sequence[str]) -> dict[str, Lease]:
        """The unexpired leases among ``names``."""
        ...


def is_shared(store: Any) -> bool:
    """Whether ``store`` is shared between processes on several machines (the one place that decides)."""
    return bool(getattr(store, "shared", False)) and isinstance(store, LeaseStore)


def new_owner() -> str:
    """One owner id per process: ``<host>-<pid>-<random>``."""
    import secrets
    import socket

    host = "".join(c if c.isalnum() or c in "-." else "-" for c in socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(4)}"


class Leases:
    """One process's leases on one store: take, hold (renewed by a thread), release."""

    def __init__(self, store: LeaseStore, ttl_s: float, owner: str | None = None) -> None:
        self.store, self.ttl_s = store, float(ttl_s)
        self.owner = owner or new_owner()
        self._held: dict[str, float] = {}  # name → its time to live, renewed while held
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.taken_over = 0
        log("lease", "op=owner", owner=self.owner, backend=getattr(store, "backend", "?"), ttlS=f"{self.ttl_s:g}")

    # -------------------------------------------------------------------- taking and dropping
    def take(self, name: str, *, ttl_s: float | None = None, hold: bool = True) -> Lease | None:
        """Take ``name`` (None while another live owner holds it); ``hold`` keeps renewing it until
        :meth:`release` or :meth:`keep`."""
        ttl = self.ttl_s if ttl_s is None else float(ttl_s)
        grant = self.store.take_lease(name, self.owner, ttl)
        if grant is None:
            return None
        if grant.previous and grant.previous != self.owner:
            self.taken_over += 1
            log("lease", "op=takeover", name=name, owner=self.owner, previous=grant.previous)
        else:
            log("lease", "op=take", name=name, owner=self.owner)
        if hold:
            with self._lock:
                self._held[name] = ttl
            self._ensure_thread()
        return grant

    def holds(self, name: str) -> bool:
        with self._lock:
            return name in self._held

    def keep(self, name: str) -> None:
        """Stop renewing ``name`` but leave it in the store until it expires (a period's marker)."""
        with self._lock:
            self._held.pop(name, None)

    def release(self, *names: str) -> int:
        with self._lock:
            mine = [n for n in names if self._held.pop(n, None) is not None]
        if not mine:
            return 0
        dropped = self.store.release_leases(mine, self.owner)
        for name in mine:
            log("lease", "op=release", name=name, owner=self.owner)
        return dropped

    def holders(self, names: Sequence[str]) -> Mapping[str, Lease]:
        return self.store.lease_holders(list(names)) if names else {}

    def holder(self, name: str) -> Lease | None:
        return self.holders([name]).get(name)

    # -------------------------------------------------------------------- renewal
    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._renew_loop, name="lease-renew", daemon=True)
            self._thread.start()

    def renew_now(self) -> list[str]:
        """Renew every held lease once (the thread does this every third of the shortest time to live)."""
        with self._lock:
            held = dict(self._held)
        kept: list[str] = []
        for ttl in sorted(set(held.values())):
            names = [n for n, t in held.items() if t == ttl]
            try:
                kept += self.store.renew_leases(names, self.owner, ttl)
            except Exception as exc:  # a store that did not answer: the next pass tries again
                log("lease", "op=renew-failed", owner=self.owner, error=type(exc).__name__)
                return kept
            for lost in sorted(set(names) - set(kept)):
                with self._lock:
                    if self._held.pop(lost, None) is None:
                        continue  # released while this pass ran
                log("lease", "op=lost", name=lost, owner=self.owner)
        if kept:
            log("lease", "op=renew", name=kept[0], count=len(kept), owner=self.owner)
        return kept

    def _renew_loop(self) -> None:
        while True:
            with self._lock:
                ttls = list(self._held.values())
            if self._stop.wait(max(0.2, min(ttls or [self.ttl_s]) / 3)):
                return
            self.renew_now()

    def close(self) -> None:
        """Stop renewing and release every lease still held (a stopping process hands its work on at once)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)
        with self._lock:
            names = list(self._held)
        try:
            self.release(*names)
        except Exception as exc:  # the store is gone: the leases expire on their own
            log("lease", "op=release-failed", owner=self.owner, count=len(names), error=type(exc).__name__)
