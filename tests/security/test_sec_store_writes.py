"""The store's write guards (docs/guards.md#write-guards), on the embedded store, read back from the file itself.

A process can change only what it can read, and only into something it can still read; ids are
per account. These are the examples the property suite (``test_sec_write_tools_property``)
generalises.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from graph_support import CASCADE_ROWS

from plughost import Principal
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.ports.graph import Guards, WriteDenied, check_write

A, B = "acct-a", "acct-b"


def rows(db: Path) -> dict[tuple[str, str], tuple[str, str | None, str | None, float | None]]:
    """(account, id) -> (properties, scope, agents, deleted_at), straight from the file."""
    con = sqlite3.connect(db)
    try:
        return {(r[0], r[1]): r[2:] for r in con.execute(
            "SELECT account_id, id, properties, scope, agents, deleted_at FROM nodes")}
    finally:
        con.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "g.sqlite"
    a = SqliteStore(path, env={"ACCOUNT_ID": A})
    a.upsert_node(["Report"], {"title": "owner", "scope": "admin"},
                  guards=Principal.system(A).guards, node_id="rpt_1")
    a.upsert_node(["Note"], {"title": "a1 note", "scope": "public", "agents": ["a1"]},
                  guards=Principal.system(A).guards, node_id="n1")
    a.upsert_node(["Note"], {"title": "open"}, guards=Principal.system(A).guards, node_id="open")
    a.close()
    b = SqliteStore(path, env={"ACCOUNT_ID": B})
    b.upsert_node(["Report"], {"title": "b's"}, guards=Principal.system(B).guards, node_id="rpt_b")
    b.close()
    return path


def test_ids_are_per_account(db: Path) -> None:
    a = SqliteStore(db, env={"ACCOUNT_ID": A})
    before = rows(db)[(B, "rpt_b")]
    # Same answer as for an id nobody uses: the write creates this account's own node.
    assert a.upsert_node(["Report"], {"title": "mine"}, node_id="rpt_b",
                         guards=Guards(A, ("public",))) == "rpt_b"
    assert a.upsert_node(["Report"], {"title": "fresh"}, node_id="never-used",
                         guards=Guards(A, ("public",))) == "never-used"
    after = rows(db)
    assert after[(B, "rpt_b")] == before
    assert after[(A, "rpt_b")][1] == "public"
    assert a.get("rpt_b", guards=Guards(A)).properties["title"] == "mine"
    a.close()


@pytest.mark.parametrize(("guards", "node", "props"), [
    (Guards(A, ("public",)), "rpt_1", {"body": "injected"}),  # overwrite a node it cannot read
    (Guards(A, ("public",)), "rpt_1", {"scope": "public"}),  # re-scope it into view
    (Guards(A, None, "a2"), "n1", {"agents": ["a2"]}),  # another agent's node
    (Guards(A, ("public",), "a1"), "n1", {"agents": ["a2"]}),  # re-tag a1 → a2
    (Guards(A, ("public",), "a1"), "n1", {"agents": ["a1", "a2"]}),  # share into a2's view
    (Guards(A, ("public", "shared")), "n1", {"scope": None}),  # declassify
    (Guards(A, ("public",)), "n1", {"scope": "admin"}),  # move out of its own view
    (Guards(A, ("public",)), "brand-new", {"scope": "admin"}),  # create outside its view
])
def test_a_write_outside_the_guards_is_refused_and_writes_nothing(db: Path, guards: Guards, node: str,
                                                                   props: dict, capfd) -> None:
    a = SqliteStore(db, env={"ACCOUNT_ID": A})
    before = rows(db)
    with pytest.raises(WriteDenied) as err:
        a.upsert_many([{"id": node, "labels": ["Note"], "properties": props}], guards=guards)
    assert err.value.reason == "account-isolation"
    assert f"[graph-write] reject reason=account-isolation node={node} rule=" in capfd.readouterr().err
    assert rows(db) == before
    a.close()


def test_new_nodes_of_a_narrowed_process_get_its_scope_and_agent(db: Path) -> None:
    a = SqliteStore(db, env={"ACCOUNT_ID": A})
    a.upsert_node(["Note"], {"title": "x"}, node_id="x", guards=Guards(A, ("shared", "public"), "a1"))
    _, scope, agents, _ = rows(db)[(A, "x")]
    assert (scope, agents) == ("shared", '["a1"]')
    a.close()


def test_edges_to_nodes_the_process_cannot_read_are_unknown(db: Path) -> None:
    a = SqliteStore(db, env={"ACCOUNT_ID": A})
    with pytest.raises(Exception, match="not found"):
        a.upsert_many([{"id": "p", "labels": ["Note"], "properties": {},
                        "edges": [{"type": "ABOUT", "to": "rpt_1"}]}], guards=Guards(A, ("public",)))
    assert (A, "p") not in rows(db)
    a.close()


def test_soft_delete_cascades_only_inside_the_guards(tmp_path: Path) -> None:
    db = tmp_path / "g.sqlite"
    a = SqliteStore(db, env={"ACCOUNT_ID": A})
    a.upsert_many(CASCADE_ROWS, guards=Principal.system(A).guards)
    assert a.soft_delete("d", guards=Guards(A, ("public",))) == 3
    got = rows(db)
    assert got[(A, "s2")][3] is None and all(got[(A, n)][3] is not None for n in ("d", "s1", "c1"))
    a.close()


def test_check_write_is_the_one_rule() -> None:
    """The store-independent rule, as the Neo4j backend applies it too."""
    g = Guards(A, ("public",), "a1")
    check_write(g, "n", None, {"scope": "public", "agents": ["a1"]})
    check_write(g, "n", {"scope": None, "agents": ["a1", "a2"]}, {"scope": None, "agents": ["a1", "a2"]})
    for before, after in [({"scope": "admin", "agents": ["a1"]}, {"scope": "public", "agents": ["a1"]}),
                          ({"scope": "public", "agents": ["a2"]}, {"scope": "public", "agents": ["a1"]}),
                          (None, {"scope": None, "agents": ["a1"]}),
                          (None, {"scope": "public"})]:
        with pytest.raises(WriteDenied):
            check_write(g, "n", before, after)
    check_write(Guards(A), "n", {"scope": "admin"}, {"scope": None})  # admin: anything
