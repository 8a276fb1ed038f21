"""A running sync: one per collection at a time (a lock file), and when it must stop.

Two processes syncing one collection (``collection sync`` beside ``plughost serve``'s watcher)
would both do the full work; the second waits for the first, then finds its work done. A sync
stops, between two files, when serve shuts down or the collection was removed or re-pointed
meanwhile (``collection remove`` in another process): :class:`StopWhen` re-reads the registry
only when its mtime changed, at most every 0.2 s.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from plughost.plugins.memory.collections import registry


class SyncCancelled(Exception):
    """The sync stopped between two files; ``reason`` says why (``shutdown``, ``removed``, ``re-pointed``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@contextmanager
def sync_lock(home: Path, account_id: str, name: str, *, stop: threading.Event | None = None,
              on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold ``<name>.lock``; when another process holds it, call ``on_wait`` once and wait
    (``SyncCancelled('shutdown')`` when ``stop`` is set meanwhile)."""
    path = registry.lock_path(home, account_id, name)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path, "a") as fh:
        waited = False
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited and on_wait is not None:
                    on_wait()
                waited = True
                if stop is not None:
                    if stop.wait(0.1):
                        raise SyncCancelled("shutdown") from None
                else:
                    time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class StopWhen:
    """Called between files: raises :class:`SyncCancelled` when the sync must stop."""

    CHECK_S = 0.2

    def __init__(self, home: Path, account_id: str, coll: registry.Collection,
                 stop: threading.Event | None = None) -> None:
        self.home, self.account, self.coll, self.stop = home, account_id, coll, stop
        self.path = registry.registry_path(home, account_id)
        self.mtime = self._mtime()
        self.next = time.monotonic() + self.CHECK_S

    def _mtime(self) -> int:
        try:
            return os.stat(self.path).st_mtime_ns
        except OSError:
            return -1

    def __call__(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise SyncCancelled("shutdown")
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + self.CHECK_S
        mtime = self._mtime()
        if mtime == self.mtime:
            return
        self.mtime = mtime
        try:
            now_known = registry.load(self.home, self.account).get(self.coll.name)
        except Exception:  # a registry being rewritten: look again next time
            self.mtime = -2
            return
        if now_known is None:
            raise SyncCancelled("removed")
        if now_known.path != self.coll.path:
            raise SyncCancelled("re-pointed")
