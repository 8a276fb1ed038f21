"""The store's write guards (docs/guards.md#write-guards) on a real Neo4j, read back from the database itself.

The same examples as ``tests/security/test_sec_store_writes.py`` (the embedded store): a process
can change only what it can read, and only into something it can still read; ids are per
account; a refused write leaves the database exactly as it was.
"""

from __future__ import annotations

import uuid

import pytest
from graph_support import CASCADE_ROWS

from plughost import Principal
from plughost.ports.graph import Guards, WriteDenied
from plughost.util.errors import AccountMismatch
from tests.backends import needs_neo4j, neo4j_env

pytestmark = needs_neo4j


@pytest.fixture
def accounts():
    tag = uuid.uuid4().hex[:8]
    return f"acct-a-{tag}", f"acct-b-{tag}"


@pytest.fixture
def a(accounts):
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    A, B = accounts
    store = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": A})
    store.upsert_node(["Report"], {"title": "owner", "scope": "admin"},
                      guards=Principal.system(A).guards, node_id="rpt_1")
    store.upsert_node(["Note"], {"title": "a1 note", "scope": "public", "agents": ["a1"]},
                      guards=Principal.system(A).guards, node_id="n1")
    store.upsert_node(["Note"], {"title": "open"}, guards=Principal.system(A).guards, node_id="open")
    b = Neo4jStore(store.driver, env={**neo4j_env(), "ACCOUNT_ID": B}, apply_schema=False)
    b.upsert_node(["Report"], {"title": "b's"}, guards=Principal.system(B).guards, node_id="rpt_b")
    yield store
    store.wipe_account(A)
    store.wipe_account(B)
    store.close()


def rows(store, accounts) -> dict:
    """(account, id) -> (properties without timestamps, labels, edges out), straight from the database."""
    return store.read(lambda tx: {(r["a"], r["id"]): (r["p"], r["l"], r["e"]) for r in tx.run(
        "MATCH (n:GraphNode) WHERE n.accountId IN $accounts OPTIONAL MATCH (n)-[r]->(m) "
        "WITH n, collect(type(r) + '>' + m.id) AS e "
        "RETURN n.accountId AS a, n.id AS id, n {.*, updatedAt: null} AS p, labels(n) AS l, e",
        accounts=list(accounts))})


def test_ids_are_per_account(a, accounts) -> None:
    A, B = accounts
    before = rows(a, accounts)[(B, "rpt_b")]
    assert a.upsert_node(["Report"], {"title": "mine"}, node_id="rpt_b",
                         guards=Guards(A, ("public",))) == "rpt_b"
    after = rows(a, accounts)
    assert after[(B, "rpt_b")] == before
    assert after[(A, "rpt_b")][0]["scope"] == "public"
    assert a.get("rpt_b", guards=Guards(A)).properties["title"] == "mine"


@pytest.mark.parametrize(("scopes", "agent", "node", "props"), [
    (("public",), None, "rpt_1", {"body": "injected"}),  # overwrite a node it cannot read
    (("public",), None, "rpt_1", {"scope": "public"}),  # re-scope it into view
    (None, "a2", "n1", {"agents": ["a2"]}),  # another agent's node
    (("public",), "a1", "n1", {"agents": ["a2"]}),  # re-tag a1 → a2
    (("public",), "a1", "n1", {"agents": ["a1", "a2"]}),  # share into a2's view
    (("public", "shared"), None, "n1", {"scope": None}),  # declassify
    (("public",), None, "n1", {"scope": "admin"}),  # move out of its own view
    (("public",), None, "brand-new", {"scope": "admin"}),  # create outside its view
])
def test_a_write_outside_the_guards_is_refused_and_writes_nothing(a, accounts, scopes, agent, node, props) -> None:
    A, _ = accounts
    before = rows(a, accounts)
    with pytest.raises(WriteDenied) as err:
        a.upsert_many([{"id": "ok-first", "labels": ["Note"], "properties": {"title": "fine"}},
                       {"id": node, "labels": ["Note"], "properties": props}], guards=Guards(A, scopes, agent))
    assert err.value.reason == "account-isolation"
    assert rows(a, accounts) == before  # not even the first, allowed row: one transaction


def test_new_nodes_of_a_narrowed_process_get_its_scope_and_agent(a, accounts) -> None:
    A, _ = accounts
    a.upsert_node(["Note"], {"title": "x"}, node_id="x", guards=Guards(A, ("shared", "public"), "a1"))
    props = rows(a, accounts)[(A, "x")][0]
    assert (props["scope"], props["agents"]) == ("shared", ["a1"])


def test_edges_to_nodes_the_process_cannot_read_are_unknown(a, accounts) -> None:
    A, _ = accounts
    with pytest.raises(Exception, match="not found"):
        a.upsert_many([{"id": "p", "labels": ["Note"], "properties": {},
                        "edges": [{"type": "ABOUT", "to": "rpt_1"}]}], guards=Guards(A, ("public",)))
    assert (A, "p") not in rows(a, accounts)


def test_soft_delete_cascades_only_inside_the_guards(a, accounts) -> None:
    A, _ = accounts
    a.upsert_many(CASCADE_ROWS, guards=Principal.system(A).guards)
    assert a.soft_delete("d", guards=Guards(A, ("public",))) == 3
    got = rows(a, accounts)
    assert got[(A, "s2")][0].get("deletedAt") is None
    assert all(got[(A, n)][0].get("deletedAt") for n in ("d", "s1", "c1"))


def test_a_reingest_over_a_hierarchy_the_process_cannot_read_is_refused(a, accounts) -> None:
    A, _ = accounts
    a.upsert_many([
        {"id": "sec", "labels": ["Section"], "properties": {"body": "secret", "scope": "admin"}},
        {"id": "doc", "labels": ["KnowledgeDocument"], "properties": {"title": "d", "attachmentId": "att",
                                                                      "scope": "public"},
         "edges": [{"type": "HAS_SECTION", "to": "sec"}]},
    ], guards=Principal.system(A).guards)
    before = rows(a, accounts)
    with pytest.raises(WriteDenied):
        a.upsert_many([{"labels": ["KnowledgeDocument"], "properties": {"title": "v2", "attachmentId": "att"}}],
                      guards=Guards(A, ("public",)))
    assert rows(a, accounts) == before


def test_guards_of_another_account_are_refused(a, accounts) -> None:
    """A write's account is its guards' account: a store bound to A refuses B's guards, writing nothing."""
    A, B = accounts
    before = rows(a, accounts)
    with pytest.raises((WriteDenied, AccountMismatch)):
        a.upsert_node(["Note"], {}, node_id="z", guards=Guards(B))
    assert rows(a, accounts) == before
