"""The tail of a Claude Code transcript, read safely: a hook input names the path, and serve reads it.

``transcript_path`` comes from a hook's stdin, so it may name anything: ``/dev/zero`` (an endless
read), a FIFO (a read that never returns), a multi-gigabyte or sparse file. Only a regular file
is read (opened ``O_NONBLOCK`` so a FIFO cannot hold the open, then ``fstat``-checked), only its
last ``TAIL_BYTES`` (the last replies are at the end; a partial first line is dropped), within
``TAIL_SECONDS``. Each refusal has a reason the callers log (``[recall] op=skip reason=..``).
"""

from __future__ import annotations

import os
import stat
import time

TAIL_BYTES = 2 << 20
"""At most this much of the transcript's end is read (2 MiB: many replies, never the whole day)."""
TAIL_SECONDS = 2.0
"""A read that takes longer (a stalled network file system) is given up."""
CHUNK = 256 << 10


def read_tail(path: str | None, limit: int = TAIL_BYTES, seconds: float = TAIL_SECONDS) -> tuple[bytes | None, str]:
    """``(the tail, "ok")`` or ``(None, reason)``: missing-transcript, not-a-regular-file, read-timeout."""
    if not path:
        return None, "missing-transcript"
    try:
        fd = os.open(os.path.expanduser(path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None, "missing-transcript"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "not-a-regular-file"
        start = max(0, info.st_size - limit)
        deadline = time.monotonic() + seconds
        chunks: list[bytes] = []
        pos = start
        while pos < info.st_size:
            if time.monotonic() > deadline:
                return None, "read-timeout"
            chunk = os.pread(fd, min(CHUNK, info.st_size - pos), pos)
            if not chunk:
                break
            chunks.append(chunk)
            pos += len(chunk)
    except OSError:
        return None, "missing-transcript"
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if start > 0:  # the first line is cut: whatever precedes the first newline is not a record
        data = data.partition(b"\n")[2]
    return data, "ok"
