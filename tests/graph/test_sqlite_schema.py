"""Embedded store file: migrations with a version number, WAL, busy timeout."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from host.errors import UserError
from plugins.graph import migrations
from plugins.graph.sqlite_store import SqliteStore


def test_fresh_file_is_migrated_to_the_latest_version_in_wal_mode(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": "a"})
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"nodes", "edges", "node_text", "node_vectors", "backlinks", "vector_labels"} <= tables
    store.close()
    again = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": "a"})  # reopening changes nothing
    assert again.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST
    again.close()


def test_a_newer_schema_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {migrations.LATEST + 1}")
    con.close()
    with pytest.raises(UserError, match="newer than this plughost supports"):
        SqliteStore(path, env={"ACCOUNT_ID": "a"})


def test_split_statements_keeps_trigger_bodies_whole() -> None:
    stmts = migrations.split_statements(migrations.SCHEMA_FILE.read_text())
    triggers = [s for s in stmts if s.startswith("CREATE TRIGGER")]
    assert len(triggers) == 3 and all(s.rstrip().endswith("END;") for s in triggers)
    with pytest.raises(ValueError, match="incomplete"):
        migrations.split_statements("CREATE TABLE x (a")
