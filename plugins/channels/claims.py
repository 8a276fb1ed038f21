"""Which process owns an accepted turn, and whether that process is still there.

A process that accepts messages holds an exclusive ``flock`` on
``<home>/accounts/<id>/channels/claims/<token>.lock`` for as long as its gateway is open; every
Message it stores carries ``claimedBy: <token>``. The kernel drops the lock when the process
ends, however it ends (SIGTERM, SIGKILL, a crash), so "is the claim alive" is one non-blocking
``flock`` attempt, with no heartbeat and no pid reuse to worry about. Resumers take
``resume.lock`` while they pick and re-claim turns, so two of them never take the same one.

On a shared store (several ``plughost serve`` on one Neo4j, :func:`plughost.ports.lease.is_shared`)
:class:`LeaseClaims` replaces the files: a turn is a lease ``turn:<message id>`` on the store,
taken before the message is stored, held (renewed) while its turn runs and released when it is
over; a process that dies leaves it to expire, and the next resumer (another server's periodic
sweep, or its own restart) takes it over. Both kinds answer the same calls.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from plughost import StoreUnavailable

if TYPE_CHECKING:  # pragma: no cover
    from plughost.api.serving import Leases

_TOKEN = re.compile(r"^[0-9a-f]{32}$")


def claims_dir(home: Path, account_id: str) -> Path:
    return Path(home) / "accounts" / account_id / "channels" / "claims"


TURN = "turn:"
"""A turn's lease name on a shared store: ``turn:<inbound message id>`` (its reply's delivery too)."""


def turn_lease(message_id: str) -> str:
    return f"{TURN}{message_id}"


class Claims:
    """This process's claim token, held by an open, locked file until :meth:`release`."""

    shared = False

    def __init__(self, home: Path, account_id: str) -> None:
        self.folder = claims_dir(home, account_id)
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.token = uuid.uuid4().hex
        self._fd: int | None = os.open(self.folder / f"{self.token}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def alive(self, token: object) -> bool:
        """Whether the process that claimed ``token`` still holds its lock (ours always does)."""
        if token == self.token and self._fd is not None:
            return True
        if not isinstance(token, str) or not _TOKEN.match(token):
            return False  # no claim (stored before claims existed) or a foreign value: nobody owns it
        path = self.folder / f"{token}.lock"
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()  # its owner is gone: tidy up
        return False

    @contextlib.contextmanager
    def resume_lock(self) -> Iterator[None]:
        """Serialise resumers (a starting server and ``channels retry``) while they pick turns."""
        fd = os.open(self.folder / "resume.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            (self.folder / f"{self.token}.lock").unlink()
        os.close(self._fd)
        self._fd = None

    # the turn calls LeaseClaims answers too (locally the persist lock and the resume lock decide)
    def take_turn(self, message_id: str, exists: Callable[[], bool]) -> bool:
        return True

    def finish_turn(self, message_id: str) -> None:
        return None

    def busy(self, message_ids: Sequence[str]) -> set[str]:
        return set()

    def take_backlog(self, message_id: str) -> bool:
        return True


class LeaseClaims:
    """This process's claims on a shared store: one lease per turn (:func:`turn_lease`)."""

    shared = True

    def __init__(self, leases: Leases) -> None:
        self.leases = leases
        self.token = leases.owner  # what stored Messages carry as ``claimedBy``

    def alive(self, token: object) -> bool:
        return token == self.token  # liveness is per turn here (:meth:`busy`)

    @contextlib.contextmanager
    def resume_lock(self) -> Iterator[None]:
        yield  # each turn's lease is taken atomically: resumers on any machine never take one twice

    def take_turn(self, message_id: str, exists: Callable[[], bool]) -> bool:
        """Take the lease of a message about to be stored. False when it is someone's already: stored
        (a re-delivery, or the other server took it), or ours in flight. While another process holds it
        and the message is not stored yet (it is between its take and its write) wait for either; one
        that died there leaves the lease to expire and this process takes it over."""
        name = turn_lease(message_id)
        if self.leases.holds(name):
            return False
        deadline = time.monotonic() + self.leases.ttl_s + 5
        while True:
            if self.leases.take(name) is not None:
                return True
            if exists():
                return False
            if time.monotonic() > deadline:
                raise StoreUnavailable(f"channels: the lease {name} stays taken and its message is not stored; "
                                       "try again")
            time.sleep(0.05)

    def finish_turn(self, message_id: str) -> None:
        self.leases.release(turn_lease(message_id))

    def busy(self, message_ids: Sequence[str]) -> set[str]:
        """Which of these turns a live process (this one included) holds."""
        held = self.leases.holders([turn_lease(m) for m in message_ids])
        return {m for m in message_ids if turn_lease(m) in held}

    def take_backlog(self, message_id: str) -> bool:
        """Take a stored turn for a resume (a takeover when its holder's lease ran out)."""
        name = turn_lease(message_id)
        return not self.leases.holds(name) and self.leases.take(name) is not None

    def release(self) -> None:
        return None  # what is still held is released when the host closes (plughost.runtime.leases)
