"""The embedded store's schema: ``plugins/graph/schema.sql``, applied whole to a new file, its version
in ``PRAGMA user_version``.

There are no migrations before the first release: a file at any other version (an older
development copy, or a file some other program made) is refused with one line naming it and the
version this plughost reads, and left as it was. Migrations start at the first tagged release.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from plughost import UserError

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema.sql"
SCHEMA_VERSION = 7
"""The version ``schema.sql`` creates, and the only one a store opens."""


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


def refusal(path: str | Path, found: int) -> UserError:
    return UserError(f"{path}: schema version {found}, but this plughost reads only version {SCHEMA_VERSION} "
                     "(no migrations before the first release); move the file aside and re-import its data")


ADDED_INDEXES = {
    "nodes_entity_key": "CREATE INDEX IF NOT EXISTS nodes_entity_key ON nodes (json_extract(properties, '$.\"entityKey\"')) "
                        "WHERE json_extract(properties, '$.\"entityKey\"') IS NOT NULL",
    "nodes_visitor_key": "CREATE INDEX IF NOT EXISTS nodes_visitor_key ON nodes (json_extract(properties, '$.\"visitorKey\"')) "
                         "WHERE json_extract(properties, '$.\"visitorKey\"') IS NOT NULL",
    "nodes_slice_token": "CREATE INDEX IF NOT EXISTS nodes_slice_token ON nodes (json_extract(properties, '$.\"sliceToken\"')) "
                         "WHERE json_extract(properties, '$.\"sliceToken\"') IS NOT NULL",
    "nodes_task_id": "CREATE INDEX IF NOT EXISTS nodes_task_id ON nodes (json_extract(properties, '$.\"taskId\"')) "
                         "WHERE json_extract(properties, '$.\"taskId\"') IS NOT NULL",
    "nodes_conversation_id": "CREATE INDEX IF NOT EXISTS nodes_conversation_id ON nodes "
                             "(json_extract(properties, '$.\"conversationId\"')) "
                             "WHERE json_extract(properties, '$.\"conversationId\"') IS NOT NULL",
}
"""Indexes ``schema.sql`` gained at this version after files were made with it: created when a
store opens a file that lacks one (an index changes no stored data, so the version stays). The
entity lookup's, then the keyed lookups of per-visitor memory (a visitor's Messages, their
slices), time on tasks (a Task's timers and adjustments) and a conversation's Messages (the webchat's
re-read on every poll)."""
INDEXED_PROPERTIES = frozenset(re.search(r"\$\.\"(\w+)\"", statement).group(1)  # type: ignore[union-attr]
                               for statement in ADDED_INDEXES.values())
"""The properties an equality lookup finds through an index of their own (``find`` starts there)."""


def ensure_indexes(conn: sqlite3.Connection) -> None:
    have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    for name, statement in ADDED_INDEXES.items():
        if name not in have:
            conn.execute(statement)


def ensure_schema(conn: sqlite3.Connection, path: str | Path) -> None:
    """Give a new (empty) file the schema, in one ``BEGIN IMMEDIATE`` transaction, so two processes
    opening it at once create it exactly once (the second waits on the lock, then sees the version);
    a file at the schema's version opens as it is, and any other file is refused (:func:`refusal`)."""
    found = conn.execute("PRAGMA user_version").fetchone()[0]
    if found == SCHEMA_VERSION:
        ensure_indexes(conn)
        return
    if found != 0:
        raise refusal(path, found)
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        if found == 0 and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
            for statement in split_statements(SCHEMA_FILE.read_text(encoding="utf-8")):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            found = SCHEMA_VERSION
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    if found != SCHEMA_VERSION:  # tables without a version: not a file this store made
        raise refusal(path, found)
