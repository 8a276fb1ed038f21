"""The embedded store's schema starts at one file (version 6; the unreleased versions 1-5 were
squashed into it) and each later version is one more file: a new file gets them all in one step,
a pre-release file is refused with one line and left as it was."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from host.util.errors import UserError
from plugins.graph import migrations
from plugins.graph.sqlite_store import SqliteStore

OBJECTS = {
    ("table", "nodes"), ("table", "node_labels"), ("table", "node_agents"), ("table", "node_keywords"),
    ("table", "edges"), ("table", "node_vectors"), ("table", "node_text"), ("table", "node_text_stem"),
    ("table", "vector_labels"), ("index", "nodes_account"), ("index", "nodes_deleted"),
    ("index", "nodes_vector_guard"), ("index", "node_labels_node"), ("index", "node_agents_node"),
    ("index", "node_keywords_node"), ("index", "edges_target"), ("index", "node_vectors_seq"),
    ("trigger", "nodes_purge"),
}


def test_a_new_file_gets_the_current_schema_in_one_step(tmp_path: Path) -> None:
    assert migrations.SCHEMA_FILES == (migrations.SCHEMA_FILE, migrations.HERE / "schema_7.sql")
    assert (migrations.BASE, migrations.LATEST) == (6, 7)
    store = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": "acc"})
    try:
        conn = store.conn
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 16384
        shadow = re.compile(r"^node_text(_stem)?_(data|idx|docsize|config)$")  # FTS5's own (contentless: no _content)
        found = {(t, n) for t, n in conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
                 if not shadow.match(n)}
        assert found == OBJECTS
        assert [c[1] for c in conn.execute("PRAGMA table_info(nodes)")] == [
            "rid", "id", "account_id", "labels", "properties", "scope", "agents", "deleted_at", "created_at",
            "updated_at", "dims"]
        # ids are per account: the same id in two accounts is two nodes
        store.upsert_node(["Chunk"], {"content": "a"}, account_id="acc", node_id="same", embedding=[1.0, 0.0])
        conn.execute("INSERT INTO nodes (id, account_id, labels, properties, created_at, updated_at) "
                     "VALUES ('same', 'other', '[]', '{}', 0, 0)")
        assert store.soft_delete("same", guards=store_guards()) == 1
        assert store.purge(older_than_days=0) == 1
        left = conn.execute("SELECT (SELECT count(*) FROM node_vectors), (SELECT count(*) FROM node_text), "
                            "(SELECT count(*) FROM node_text_stem), (SELECT count(*) FROM nodes)").fetchone()
        assert left == (0, 0, 0, 1)  # the purge trigger cleared every side table of the purged node
        assert store.integrity_check() == "ok"
    finally:
        store.close()


def store_guards():
    from host.ports.graph import Guards

    return Guards("acc")


@pytest.mark.parametrize("version", [1, 5])
def test_a_pre_release_file_is_refused_and_left_alone(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE nodes (rid INTEGER PRIMARY KEY)")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    with pytest.raises(UserError) as err:
        SqliteStore(path, env={"ACCOUNT_ID": "acc"})
    assert str(err.value) == (f"{path}: schema version {version} is a pre-release schema this plughost no longer "
                              "upgrades (it starts at 6); move the file aside and re-import its data")
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == version
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["nodes"]
    conn.close()
