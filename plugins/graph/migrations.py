"""Embedded store schema migrations, numbered; the version lives in ``PRAGMA user_version``.

Each migration runs inside one ``BEGIN IMMEDIATE`` transaction, so two processes opening a
fresh file at once apply it exactly once (the second waits on the lock, then sees the version).
Append new migrations to :data:`SCHEMA_FILES`; never edit a shipped one.

``schema.sql`` is the schema at :data:`BASE` (6); a new file gets it and then each later file.
Versions 1-5 were never released and were squashed into it, so a file still at one of them (a
development copy) is refused with one line rather than upgraded.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from host.util.errors import UserError
from host.util.log import log

HERE = Path(__file__).resolve().parent
SCHEMA_FILE = HERE / "schema.sql"
BASE = 6
"""The version ``schema.sql`` creates."""
SCHEMA_FILES = (SCHEMA_FILE, HERE / "schema_7.sql")
"""One file per version from :data:`BASE` on, applied in order (``schema.sql`` is version ``BASE``;
``schema_7.sql`` makes both full-text indexes contentless)."""


def split_statements(script: str) -> list[str]:
    """Split an SQL script into complete statements (trigger bodies stay whole)."""
    statements: list[str] = []
    buf: list[str] = []
    for line in script.splitlines():
        if not buf and (not line.strip() or line.strip().startswith("--")):
            continue
        buf.append(line)
        text = "\n".join(buf)
        if sqlite3.complete_statement(text):
            statements.append(text.strip())
            buf = []
    if "".join(buf).strip():
        raise ValueError(f"incomplete SQL statement at the end of the script: {' '.join(buf)[:80]}")
    return statements


def _statements(path: Path) -> Any:
    return lambda: split_statements(path.read_text(encoding="utf-8"))


MIGRATIONS: list[tuple[int, Any]] = [(version, _statements(path)) for version, path in enumerate(SCHEMA_FILES, BASE)]
"""(version, callable returning its statements), in order."""

LATEST = MIGRATIONS[-1][0]


UPGRADE_WAIT_S = 600.0
"""How long a process waits for another one's upgrade of the same file (it holds the write lock
while it re-indexes; the busy timeout alone would give up after 15 s)."""


def _begin_upgrade(conn: sqlite3.Connection, path: str | Path, current: int) -> None:
    """``BEGIN IMMEDIATE``, waiting for another writer (say, another process upgrading the file)
    up to :data:`UPGRADE_WAIT_S`, then one clear line instead of SQLite's 'database is locked'."""
    deadline, said = time.monotonic() + UPGRADE_WAIT_S, False
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise UserError(f"{path}: another process has held the write lock for over {UPGRADE_WAIT_S:.0f} s "
                                f"while this one waits to upgrade the schema from version {current}; stop the "
                                "other process or wait for it, then retry") from None
            if not said:
                log("graph", op="migrate-wait", file=str(path), reason="locked")
                said = True


def migrate(conn: sqlite3.Connection, path: str | Path = "graph.sqlite") -> int:
    """Bring the database to :data:`LATEST`; returns the version found before migrating."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current == LATEST:
        return current
    if current > LATEST:
        raise UserError(f"{path}: schema version {current} is newer than this plughost supports ({LATEST})")
    if 0 < current < BASE:
        raise UserError(f"{path}: schema version {current} is a pre-release schema this plughost no longer "
                        f"upgrades (it starts at {BASE}); move the file aside and re-import its data")
    _begin_upgrade(conn, path, current)
    try:
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        found = found or BASE - 1  # a new file: schema.sql brings it to BASE
        for version, statements in MIGRATIONS:
            if version <= found:
                continue
            started = time.perf_counter()
            for statement in statements():
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {int(version)}")
            if version > BASE:  # an upgrade of a file in use (it may re-index every node): say so
                log("graph", op="migrate", file=str(path), to=version,
                    nodes=conn.execute("SELECT count(*) FROM nodes").fetchone()[0],
                    ms=round((time.perf_counter() - started) * 1000))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return current
