"""What a collection's last sync wrote, per file: sqlite, so a killed sync leaves it consistent.

A note's row is committed only after the store committed the note, so after a crash the state
is at most behind the store, never ahead: the next sync rewrites those notes in place (their
ids are stable), it never duplicates or loses one. ``syncing`` in ``meta`` marks a sync that did
not finish, so the next one checks the store for notes the state does not know yet.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS notes (
  relpath TEXT PRIMARY KEY, note_id TEXT NOT NULL, doc_id TEXT NOT NULL, hash TEXT NOT NULL,
  size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, title TEXT NOT NULL, aliases TEXT NOT NULL,
  links TEXT NOT NULL, edges TEXT NOT NULL, ctime_ns INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS gone (relpath TEXT PRIMARY KEY, doc_id TEXT NOT NULL);
"""
"""``gone``: notes soft-deleted because their file vanished; a file back at that path revives its document."""


@dataclass
class NoteState:
    relpath: str
    note_id: str
    doc_id: str
    hash: str
    size: int
    mtime_ns: int
    title: str
    aliases: list[str]
    links: list[tuple[str, str]]
    edges: list[str]
    ctime_ns: int = 0
    """The inode's change time: a rewrite that restores size and mtime (``rsync -a``, ``cp -p``,
    ``tar x``, ``touch -r``) still changes it, so an unchanged stat means unchanged content."""

    def row(self) -> tuple[Any, ...]:
        return (self.relpath, self.note_id, self.doc_id, self.hash, self.size, self.mtime_ns, self.title,
                json.dumps(self.aliases), json.dumps(self.links), json.dumps(self.edges), self.ctime_ns)

    def same_stat(self, stat: Any) -> bool:
        """Whether ``stat`` is the file this state recorded (then it is not read again)."""
        return (self.size == stat.st_size and self.mtime_ns == stat.st_mtime_ns
                and self.ctime_ns == stat.st_ctime_ns)


class State:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # used by the sync's writer thread while the main thread parses (never both at once)
        self.conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(SCHEMA)
        if "ctime_ns" not in {r[1] for r in self.conn.execute("PRAGMA table_info(notes)")}:
            # a state from before: its files are hashed once at the next sync, then recorded
            self.conn.execute("ALTER TABLE notes ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0")
        self._notes: dict[str, NoteState] | None = None  # what this object read and wrote since

    def notes(self) -> dict[str, NoteState]:
        """Every note's state: read once, then kept in step with this object's own writes (a
        sync reads it at its start and again to resolve links; the second read is free)."""
        if self._notes is None:
            out = {}
            for r in self.conn.execute("SELECT relpath, note_id, doc_id, hash, size, mtime_ns, title, aliases, links, "
                                       "edges, ctime_ns FROM notes"):
                out[r[0]] = NoteState(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]),
                                      [tuple(x) for x in json.loads(r[8])], json.loads(r[9]), r[10])
            self._notes = out
        return dict(self._notes)

    def put(self, notes: Iterable[NoteState]) -> None:
        notes = list(notes)
        with self.transaction():
            self.conn.executemany("INSERT OR REPLACE INTO notes (relpath, note_id, doc_id, hash, size, mtime_ns, "
                                  "title, aliases, links, edges, ctime_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                                  [n.row() for n in notes])
        if self._notes is not None:
            self._notes.update((n.relpath, n) for n in notes)

    def drop(self, relpaths: Iterable[str]) -> None:
        relpaths = list(relpaths)
        with self.transaction():
            self.conn.executemany("DELETE FROM notes WHERE relpath = ?", [(r,) for r in relpaths])
        if self._notes is not None:
            for r in relpaths:
                self._notes.pop(r, None)

    def gone(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT relpath FROM gone")}

    def bury(self, notes: Iterable[NoteState]) -> None:
        with self.transaction():
            self.conn.executemany("INSERT OR REPLACE INTO gone VALUES (?, ?)", [(n.relpath, n.doc_id) for n in notes])

    def set_edges(self, items: Iterable[tuple[str, list[str]]]) -> None:
        items = list(items)
        with self.transaction():
            self.conn.executemany("UPDATE notes SET edges = ? WHERE relpath = ?",
                                  [(json.dumps(e), r) for r, e in items])
        if self._notes is not None:
            for r, e in items:
                if r in self._notes:
                    self._notes[r].edges = list(e)

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str | None) -> None:
        if value is None:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def transaction(self) -> Any:
        conn = self.conn

        class _Tx:
            def __enter__(self) -> None:
                conn.execute("BEGIN IMMEDIATE")

            def __exit__(self, kind: Any, *_: Any) -> None:
                conn.execute("COMMIT" if kind is None else "ROLLBACK")

        return _Tx()

    def close(self) -> None:
        self.conn.close()

    def __iter__(self) -> Iterator[NoteState]:
        return iter(self.notes().values())
