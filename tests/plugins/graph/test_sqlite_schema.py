"""Embedded store file: the one schema with its version number, WAL, busy timeout; a file at another
version is refused with one line (no migrations before the first release)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from plughost import Principal
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.plugins.graph.sqlite_store.schema import SCHEMA_FILE, SCHEMA_VERSION, split_statements
from plughost.ports.graph import Guards
from plughost.util.errors import UserError

OBJECTS = {
    ("table", "nodes"), ("table", "node_labels"), ("table", "node_agents"), ("table", "node_keywords"),
    ("table", "edges"), ("table", "node_vectors"), ("table", "node_text"), ("table", "node_text_stem"),
    ("table", "vector_labels"), ("index", "nodes_account"), ("index", "nodes_deleted"),
    ("index", "nodes_vector_guard"), ("index", "nodes_entity_key"), ("index", "nodes_visitor_key"), ("index", "nodes_slice_token"),
    ("index", "nodes_task_id"), ("index", "nodes_conversation_id"), ("index", "node_labels_node"), ("index", "node_agents_node"),
    ("index", "node_keywords_node"), ("index", "edges_target"), ("index", "node_vectors_seq"),
    ("trigger", "nodes_purge"),
}


def test_fresh_file_gets_the_schema_at_its_version_in_wal_mode(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": "a"})
    assert SCHEMA_VERSION == 7
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"nodes", "edges", "node_text", "node_vectors", "vector_labels"} <= tables
    assert "backlinks" not in tables  # backlinkCount is counted on edges_target when read
    store.close()
    again = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": "a"})  # reopening changes nothing
    assert again.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    again.close()


def test_a_new_file_holds_exactly_the_schemas_objects(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": "acc"})
    try:
        conn = store.conn
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 16384
        shadow = re.compile(r"^node_text(_stem)?_(data|idx|docsize|config)$")  # FTS5's own (contentless: no _content)
        found = {(t, n) for t, n in conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
                 if not shadow.match(n)}
        assert found == OBJECTS
        assert [c[1] for c in conn.execute("PRAGMA table_info(nodes)")] == [
            "rid", "id", "account_id", "labels", "properties", "scope", "agents", "deleted_at", "created_at",
            "updated_at", "dims"]
        # ids are per account: the same id in two accounts is two nodes
        store.upsert_node(["Chunk"], {"content": "a"},
                          guards=Principal.system("acc").guards, node_id="same", embedding=[1.0, 0.0])
        conn.execute("INSERT INTO nodes (id, account_id, labels, properties, created_at, updated_at) "
                     "VALUES ('same', 'other', '[]', '{}', 0, 0)")
        assert store.soft_delete("same", guards=Guards("acc")) == 1
        assert store.purge(older_than_days=0) == 1
        left = conn.execute("SELECT (SELECT count(*) FROM node_vectors), (SELECT count(*) FROM node_text), "
                            "(SELECT count(*) FROM node_text_stem), (SELECT count(*) FROM nodes)").fetchone()
        assert left == (0, 0, 0, 1)  # the purge trigger cleared every side table of the purged node
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        store.close()


def _refusal(path: Path, version: int) -> str:
    return (f"{path}: schema version {version}, but this plughost reads only version {SCHEMA_VERSION} "
            "(no migrations before the first release); move the file aside and re-import its data")


@pytest.mark.parametrize("version", [1, 6, SCHEMA_VERSION + 1])
def test_a_file_at_another_version_is_refused_with_one_line_and_left_alone(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE nodes (rid INTEGER PRIMARY KEY)")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    with pytest.raises(UserError) as err:
        SqliteStore(path, env={"ACCOUNT_ID": "acc"})
    assert str(err.value) == _refusal(path, version)
    assert "\n" not in str(err.value)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == version
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["nodes"]
    conn.close()


def test_a_file_with_tables_but_no_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    with pytest.raises(UserError) as err:
        SqliteStore(path, env={"ACCOUNT_ID": "acc"})
    assert str(err.value) == _refusal(path, 0)
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]
    conn.close()


def test_split_statements_keeps_trigger_bodies_whole() -> None:
    stmts = split_statements(SCHEMA_FILE.read_text())
    triggers = [s for s in stmts if s.startswith("CREATE TRIGGER")]
    assert len(triggers) == 1 and all(s.rstrip().endswith("END;") for s in triggers)
    with pytest.raises(ValueError, match="incomplete"):
        split_statements("CREATE TABLE x (a")


def test_vector_cache_follows_writes_from_this_and_other_processes(tmp_path: Path) -> None:
    """Interleaved writes and searches match a store opened cold on the same file."""
    import random

    from plughost.ports.graph import Guards

    rng = random.Random(3)
    path = tmp_path / "g.sqlite"
    warm = SqliteStore(path, env={"ACCOUNT_ID": "a"})
    other = SqliteStore(path, env={"ACCOUNT_ID": "a"})  # another connection, like another process
    g = Guards("a")
    for step in range(60):
        writer = warm if step % 2 else other
        action = rng.random()
        nid = f"n{rng.randrange(25)}"
        vector = [rng.uniform(-1, 1) for _ in range(8)]
        if action < 0.6:
            writer.upsert_node(["Chunk"], {"content": nid},
                               guards=Principal.system("a").guards, node_id=nid, embedding=vector)
        elif action < 0.75 and writer.get(nid, guards=g):
            writer.set_embedding(nid, vector, account_id="a")
        elif action < 0.85:  # hard delete: the highest rid may be handed out again
            top = writer.conn.execute("SELECT id FROM nodes ORDER BY rid DESC LIMIT 1").fetchone()
            if top:
                writer.soft_delete(top[0], guards=g)
                writer.purge(older_than_days=0)
        elif writer.get(nid, guards=g):
            writer.soft_delete(nid, guards=g)
        query = [rng.uniform(-1, 1) for _ in range(8)]
        cold = SqliteStore(path, env={"ACCOUNT_ID": "a"})
        expected = [(h.node.id, round(h.score, 5)) for h in cold.vector_search(query, 5, guards=g)]
        cold.close()
        assert [(h.node.id, round(h.score, 5)) for h in warm.vector_search(query, 5, guards=g)] == expected
    warm.close()
    other.close()


def test_vector_paths_agree_on_a_larger_graph(tmp_path: Path) -> None:
    """Window (with widening), window falling back to candidates, and candidates: same top-k,
    scored on one thread or in uneven slices on three."""
    import random

    from plughost.ports.graph import Guards

    rng = random.Random(9)
    store = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": "a"})
    rows = []
    for i in range(3000):
        props = {"content": f"n{i}"}
        if rng.random() < 0.5:
            props["scope"] = rng.choice(["public", "admin"])
        if rng.random() < 0.3:
            props["agents"] = ["bot"] if rng.random() < 0.1 else ["other"]  # bot: a selective guard
        rows.append({"id": f"n{i}", "labels": [rng.choice(["Chunk", "Person"])], "properties": props,
                     "embedding": [rng.uniform(-1, 1) for _ in range(16)]})
    store.upsert_many(rows, guards=Principal.system("a").guards)
    for i in range(0, 3000, 7):
        store.soft_delete(f"n{i}", guards=Guards("a"))
    for guards in (Guards("a"), Guards("a", ("public",)), Guards("a", ("public",), "bot"), Guards("a", (), "bot")):
        for labels in (None, ["Person"]):
            query = [rng.uniform(-1, 1) for _ in range(16)]
            results = []
            for window_max in (4096, 64, 0):
                for threads, split_rows in ((1, 16384), (3, 1)):
                    store.vector_window_max, store.vector_threads, store.vector_split_rows = \
                        window_max, threads, split_rows
                    store.vector_threads_set = True  # on threads whatever the machine's load
                    store._candidates.clear()
                    results.append([(h.node.id, round(h.score, 5)) for h in
                                    store.vector_search(query, 25, guards=guards, labels=labels)])
            assert all(r == results[0] for r in results), guards
            assert len(results[0]) == min(25, store.count(guards=guards, labels=labels))
    store.close()


def test_vector_threads_setting_is_checked(tmp_path: Path) -> None:
    from plughost.plugins.graph.sqlite_store import vector_threads

    assert vector_threads({"PLUGHOST_VECTOR_THREADS": "1"}) == 1 and 1 <= vector_threads({}) <= 4
    for bad in ("0", "two", "-1", "1.5"):
        with pytest.raises(UserError, match=f"PLUGHOST_VECTOR_THREADS: expected an integer >= 1 .*'{bad}'"):
            SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": "a", "PLUGHOST_VECTOR_THREADS": bad})


def test_backlink_counts_match_the_edges_after_batches_repeats_and_deletes(tmp_path: Path) -> None:
    """backlinkCount is the number of incoming typed edges (schema v4 counts them when read):
    duplicates and re-merges count once, deletes count down."""
    store = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": "acc"})
    assert store.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'edges_backlink_add'").fetchone()[0] == 0
    rows = [{"id": f"n{i}", "labels": ["Chunk"], "properties": {"content": f"c{i}"},
             "edges": [{"type": "NEXT", "to": f"n{(i + 1) % 5}"}, {"type": "NEXT", "to": f"n{(i + 1) % 5}"},
                       {"type": "ABOUT", "to": "n0"}]} for i in range(5)]
    store.upsert_many(rows, guards=Principal.system("acc").guards)
    store.upsert_many(rows[:2],
                      guards=Principal.system("acc").guards)  # the same edges again: merged, not recounted
    store.create_edges([("n3", "NEXT", "n1", {"w": 1}), ("n3", "NEXT", "n1", None)],
                       guards=Principal.system("acc").guards)
    store.delete_edge("n2", "n0", "ABOUT", guards=Principal.system("acc").guards)

    def counts() -> tuple[dict[str, int], dict[str, int]]:
        kept = {f"n{i}": store.get(f"n{i}", guards=Guards("acc")).properties["backlinkCount"] for i in range(5)}
        real = dict(store.conn.execute("SELECT n.id, count(*) FROM edges e JOIN nodes n ON n.rid = e.target "
                                       "GROUP BY n.id"))
        return {k: v for k, v in kept.items() if v}, real

    kept, real = counts()
    assert kept == real and sum(real.values()) == 5 + 4 + 1
    assert store.conn.execute("SELECT e.properties FROM edges e JOIN nodes s ON s.rid = e.source "
                              "JOIN nodes t ON t.rid = e.target WHERE s.id = 'n3' AND t.id = 'n1'").fetchone()[0] \
        == '{"w": 1}'


@pytest.mark.parametrize("make", ["junk", "directory"])
def test_a_file_that_is_no_store_is_one_line_naming_it(tmp_path: Path, make: str) -> None:
    path = tmp_path / "graph.sqlite"
    if make == "junk":
        path.write_bytes(b"junk that is no SQLite file\n" * 10)
    else:
        path.mkdir()
    with pytest.raises(UserError, match=rf"^{re.escape(str(path))}: cannot open the graph store \(") as caught:
        SqliteStore(path, env={"ACCOUNT_ID": "a1"})
    assert "\n" not in str(caught.value)
    if make == "junk":
        assert path.read_bytes().startswith(b"junk")  # left as it was
