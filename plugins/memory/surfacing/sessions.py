"""What each session was shown and which of it the replies used (recall tracking reads these).

One JSON-lines file per (account, session) under ``<PLUGHOST_HOME>/surfacing/<account>/``:
``{"at", "query", "base", "items": [ids]}`` per surfacing and ``{"at", "used": [ids]}`` per
reply marked by the Stop hook. Appends are single ``write`` calls under ``flock`` so the warm
server, a cold hook and the Stop hook can share a file; a torn or foreign line is skipped.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def session_key(session_id: str) -> str:
    """A file name for a session id: itself when safe, else a hash (ids come from stdin)."""
    return session_id if _SAFE.match(session_id) else "h-" + hashlib.sha256(session_id.encode()).hexdigest()[:40]


def account_dir(home: Path, account_id: str) -> Path:
    return home / "surfacing" / account_id


def session_path(home: Path, account_id: str, session_id: str) -> Path:
    return account_dir(home, account_id) / f"{session_key(session_id)}.jsonl"


@dataclass
class SessionState:
    """The folded view of one session file."""

    surfaced: list[str] = field(default_factory=list)  # in order, each id once
    used: set[str] = field(default_factory=set)
    shown: dict[str, dict[str, str]] = field(default_factory=dict)  # id -> the title and text shown
    previous: str | None = None
    turns: int = 0

    @property
    def surfaced_set(self) -> set[str]:
        return set(self.surfaced)


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except OSError:
        return
    for line in raw.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            yield rec


def load(path: Path) -> SessionState:
    state = SessionState()
    seen: set[str] = set()
    for rec in read_records(path):
        items = rec.get("items")
        if isinstance(items, list):
            state.turns += 1
            for i in items:
                if isinstance(i, str) and i not in seen:
                    seen.add(i)
                    state.surfaced.append(i)
            if isinstance(rec.get("shown"), dict):
                state.shown.update({k: v for k, v in rec["shown"].items() if isinstance(v, dict)})
            if isinstance(rec.get("base"), str) and rec["base"]:
                state.previous = rec["base"]
        used = rec.get("used")
        if isinstance(used, list):
            state.used.update(u for u in used if isinstance(u, str))
    return state


def append(path: Path, record: dict[str, Any]) -> None:
    """One locked append (creates the folder, 0700, on first use)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    line = (json.dumps({"at": round(time.time(), 3), **record}, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
    finally:
        os.close(fd)


def session_files(home: Path, account_id: str) -> list[Path]:
    folder = account_dir(home, account_id)
    try:
        return sorted(p for p in folder.iterdir() if p.suffix == ".jsonl")
    except OSError:
        return []
