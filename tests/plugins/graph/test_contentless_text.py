"""Both full-text indexes are contentless (schema.sql): they keep terms, not text, so removing
a node's terms takes its text again, derived from the node row. The oracle is the store file:
after any sequence of writes, each index holds exactly the terms a fresh index of the live rows'
``text_of`` would hold, position for position."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from graph_support import expected_terms, indexed_terms
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plughost import Principal
from plughost.plugins.graph.importer import import_jsonl
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.ports.graph import Guards
from plughost.util.errors import UserError

ACCOUNT = "acc"
PLAIN, STEM = "unicode61 remove_diacritics 2", "porter unicode61 remove_diacritics 2"


def assert_index_matches_rows(store: SqliteStore) -> None:
    con = store.conn
    assert indexed_terms(con, "node_text") == expected_terms(con, PLAIN)
    assert indexed_terms(con, "node_text_stem") == expected_terms(con, STEM)
    total = con.execute("SELECT count(*) FROM nodes").fetchone()[0]
    assert store.integrity_check() == "ok", total
    for table in ("node_text", "node_text_stem"):
        con.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")


words = st.sampled_from(["moving", "moved", "Café", "w5", "INV-2024-0042", "3.12", "naïve", "the", "graph", "x"])
texty = st.one_of(st.lists(words, min_size=0, max_size=6).map(" ".join),
                  st.text(max_size=20), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False, width=32),
                  st.booleans(), st.none(), st.lists(words, max_size=3))
props = st.dictionaries(st.sampled_from(["title", "body", "content", "name", "summary", "index", "colour"]),
                        texty, max_size=4)
ids = st.sampled_from([f"n{i}" for i in range(6)])
labels = st.sampled_from([["Chunk"], ["Section"], ["Person"], ["Chunk", "Section"]])
op = st.one_of(
    st.tuples(st.just("upsert"), ids, labels, props),
    st.tuples(st.just("many"), st.lists(st.tuples(ids, labels, props), min_size=1, max_size=4)),
    st.tuples(st.just("staged"), st.lists(st.tuples(ids, labels, props), min_size=1, max_size=4)),
    st.tuples(st.just("delete"), ids),
    st.tuples(st.just("restore"), ids),
    st.tuples(st.just("purge")),
    st.tuples(st.just("ingest"), st.lists(props, min_size=0, max_size=3)),
    st.tuples(st.just("import"), st.lists(st.tuples(ids, labels, props), min_size=1, max_size=4)),
)


def run(store: SqliteStore, step: tuple[Any, ...], tmp: Path) -> None:
    kind, guards = step[0], Guards(ACCOUNT)
    if kind == "upsert":
        store.upsert_node(step[2], step[3], guards=Principal.system(ACCOUNT).guards, node_id=step[1])
    elif kind == "many":
        store.upsert_many([{"id": i, "labels": lab, "properties": p} for i, lab, p in step[1]],
                          guards=Principal.system(ACCOUNT).guards)
    elif kind == "staged":
        rows = [{"id": i, "labels": lab, "properties": dict(p)} for i, lab, p in step[1]]
        store.write_staged([store.stage_rows(rows, account_id=ACCOUNT)],
                           guards=Principal.system(ACCOUNT).guards)
    elif kind == "delete":
        store.soft_delete(step[1], guards=guards)
    elif kind == "restore":
        store.restore(step[1], guards=guards)
    elif kind == "purge":
        store.purge(older_than_days=0)
    elif kind == "ingest":  # a re-ingest replaces the document's hierarchy (the trigger removes its terms)
        doc = store.upsert_node(["KnowledgeDocument"], {"attachmentId": "att-1", "title": "doc"},
                                guards=Principal.system(ACCOUNT).guards, node_id="doc")
        for k, p in enumerate(step[1]):
            store.upsert_many([{"id": f"doc-s{k}-{len(step[1])}", "labels": ["Section"], "properties": p}],
                              guards=Principal.system(ACCOUNT).guards)
            store.create_edges([(doc, "HAS_SECTION", f"doc-s{k}-{len(step[1])}", None)],
                               guards=Principal.system(ACCOUNT).guards)
    elif kind == "import":
        path = tmp / "rows.jsonl"
        path.write_text("".join(json.dumps({"id": i, "labels": lab, "properties": p}) + "\n" for i, lab, p in step[1]),
                        encoding="utf-8")
        import_jsonl(store, path, guards=Principal.owner(ACCOUNT).guards, progress=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(op, min_size=1, max_size=8))
def test_each_index_holds_exactly_the_live_rows_terms(tmp_path_factory: pytest.TempPathFactory,
                                                      steps: list[tuple[Any, ...]]) -> None:
    tmp = tmp_path_factory.mktemp("fts")
    store = SqliteStore(tmp / "g.sqlite", env={"ACCOUNT_ID": ACCOUNT})
    try:
        for step in steps:
            try:
                run(store, step, tmp)
            except UserError:
                pass  # a refused write writes nothing; the oracle still holds
            assert_index_matches_rows(store)
    finally:
        store.close()


def test_a_connection_without_the_store_cannot_delete_a_node_half_way(tmp_path: Path) -> None:
    """The purge trigger needs ``node_text_of``: a bare connection's delete fails whole, naming it."""
    store = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": ACCOUNT})
    store.upsert_node(["Chunk"], {"content": "kept whole"},
                      guards=Principal.system(ACCOUNT).guards, node_id="k")
    store.close()
    con = sqlite3.connect(tmp_path / "g.sqlite")
    with pytest.raises(sqlite3.OperationalError, match="node_text_of"):
        con.execute("DELETE FROM nodes")
    con.rollback()
    assert con.execute("SELECT count(*) FROM nodes").fetchone()[0] == 1
    con.close()
