"""Which process owns an accepted turn, and whether that process is still there.

A process that accepts messages holds an exclusive ``flock`` on
``<home>/accounts/<id>/channels/claims/<token>.lock`` for as long as its gateway is open; every
Message it stores carries ``claimedBy: <token>``. The kernel drops the lock when the process
ends, however it ends (SIGTERM, SIGKILL, a crash), so "is the claim alive" is one non-blocking
``flock`` attempt, with no heartbeat and no pid reuse to worry about. Resumers take
``resume.lock`` while they pick and re-claim turns, so two of them never take the same one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

_TOKEN = re.compile(r"^[0-9a-f]{32}$")


def claims_dir(home: Path, account_id: str) -> Path:
    return Path(home) / "accounts" / account_id / "channels" / "claims"


class Claims:
    """This process's claim token, held by an open, locked file until :meth:`release`."""

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
