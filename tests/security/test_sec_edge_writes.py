"""Edge writes under the guards (docs/guards.md#write-guards), on each backend, read back from the store itself.

``create_edge`` / ``create_edges`` / ``delete_edge`` from a narrowed process (ALLOWED_SCOPES,
AGENT_SLUG) touch only edges whose two ends it can read, in its own account; anything else is
``account-isolation`` with nothing written and a ``[graph-write] reject … rule=edge`` line, and
an end that is absent answers exactly as one that is hidden (no existence oracle). The property
suite (``test_sec_write_tools_property``) runs the same operations at random.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plughost import Principal
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.ports.graph import Guards, WriteDenied
from plughost.util.errors import AccountMismatch
from tests.backends import BACKENDS, neo4j_env

A, B = "acct-edge-a", "acct-edge-b"
PUBLIC = Guards(A, ("public",))
AGENT = Guards(A, None, "a1")


def _store(backend: str, path: Path, account: str) -> Any:
    if backend == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        return Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": account})
    return SqliteStore(path, env={"ACCOUNT_ID": account})


def edges(store: Any, path: Path) -> set[tuple[str, str, str, str]]:
    """(account, source id, type, target id) of every edge of both accounts, from the file / database."""
    if store.backend == "neo4j":
        q = ("MATCH (a:GraphNode)-[r]->(b:GraphNode) WHERE a.accountId IN $accts "
             "RETURN a.accountId AS acct, a.id AS s, type(r) AS t, b.id AS d")
        return {(r["acct"], r["s"], r["t"], r["d"]) for r in store.read(lambda tx: list(tx.run(q, accts=[A, B])))}
    con = sqlite3.connect(path)
    try:
        return set(con.execute("SELECT a.account_id, a.id, e.type, b.id FROM edges e JOIN nodes a ON a.rid = e.source "
                               "JOIN nodes b ON b.rid = e.target"))
    finally:
        con.close()


@pytest.fixture(params=BACKENDS)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    path = tmp_path / "g.sqlite"
    b = _store(request.param, path, B)
    if b.backend == "neo4j":
        b.wipe_account(A)
        b.wipe_account(B)
    b.upsert_many([{"id": "theirs", "labels": ["Note"], "properties": {"name": "b", "scope": "public"}},
                   {"id": "pub", "labels": ["Note"], "properties": {"name": "b pub", "scope": "public"}}],
                  guards=Principal.system(B).guards)
    b.create_edge("pub", "theirs", "ABOUT", guards=Principal.system(B).guards)
    b.close()
    a = _store(request.param, path, A)
    a.upsert_many([
        {"id": "pub", "labels": ["Note"], "properties": {"name": "p", "scope": "public", "agents": ["a1"]}},
        {"id": "pub2", "labels": ["Note"], "properties": {"name": "p2", "scope": "public", "agents": ["a1"]}},
        {"id": "secret", "labels": ["Note"], "properties": {"name": "s", "scope": "admin", "agents": ["a1"]}},
        {"id": "other-agent", "labels": ["Note"], "properties": {"name": "o", "scope": "public", "agents": ["a2"]}},
        {"id": "gone", "labels": ["Note"], "properties": {"name": "g", "scope": "public", "agents": ["a1"]}},
    ], guards=Principal.system(A).guards)
    for target in ("secret", "other-agent", "gone", "pub2"):
        a.create_edge("pub", target, "ABOUT", guards=Principal.system(A).guards)
    a.soft_delete("gone", guards=Guards(A))
    yield a, path
    if a.backend == "neo4j":
        a.wipe_account(A)
        a.wipe_account(B)
    a.close()


HIDDEN_ENDS = ["secret", "other-agent", "gone", "theirs", "never-used"]


@pytest.mark.parametrize("guards", [PUBLIC, AGENT], ids=["scopes", "agent"])
@pytest.mark.parametrize("end", HIDDEN_ENDS)
def test_an_edge_to_or_from_a_node_the_process_cannot_read_is_refused(world: tuple[Any, Path], guards: Guards,
                                                                       end: str, capfd: pytest.CaptureFixture) -> None:
    store, path = world
    if (guards is AGENT and end == "secret") or (guards is PUBLIC and end == "other-agent"):
        pytest.skip("readable to these guards")
    before = edges(store, path)
    messages = []
    for op in (lambda: store.create_edge("pub", end, "LINKS", guards=guards),
               lambda: store.create_edge(end, "pub", "LINKS", guards=guards),
               lambda: store.create_edges([("pub", "LINKS", "pub2", None), (end, "LINKS", "pub", None)],
                                          guards=guards),
               lambda: store.delete_edge("pub", end, "ABOUT", guards=guards),
               lambda: store.delete_edge(end, "pub", "ABOUT", guards=guards)):
        with pytest.raises(WriteDenied) as err:
            op()
        assert err.value.reason == "account-isolation"
        messages.append(str(err.value).replace(end, "ID"))
        assert edges(store, path) == before, "a refused edge write changed the store"
    err_text = capfd.readouterr().err
    assert "[graph-write] reject reason=account-isolation edge=LINKS source=pub target=" in err_text
    assert "rule=edge" in err_text
    # The same answer whether the end is hidden, soft-deleted, another account's or never used.
    with pytest.raises(WriteDenied) as fresh:
        store.create_edge("pub", "fresh-id", "LINKS", guards=guards)
    assert str(fresh.value).replace("fresh-id", "ID") == messages[0]


@pytest.mark.parametrize("guards", [PUBLIC, AGENT], ids=["scopes", "agent"])
def test_edges_between_readable_nodes_are_written_and_removed(world: tuple[Any, Path], guards: Guards) -> None:
    store, path = world
    store.create_edge("pub", "pub2", "LINKS", guards=guards)
    assert store.create_edges([("pub2", "LINKS", "pub", None)], guards=guards) == []
    assert {(A, "pub", "LINKS", "pub2"), (A, "pub2", "LINKS", "pub")} <= edges(store, path)
    assert store.delete_edge("pub", "pub2", "ABOUT", guards=guards) == 1
    assert store.delete_edge("pub", "pub2", "ABOUT", guards=guards) == 0
    assert (A, "pub", "ABOUT", "pub2") not in edges(store, path)
    assert (B, "pub", "ABOUT", "theirs") in edges(store, path), "another account's edge of the same ids stays"


def test_guards_of_another_account_are_refused(world: tuple[Any, Path]) -> None:
    """A write's account is its guards' account (none is named beside them): a store bound to
    account A refuses account B's guards before anything is read."""
    store, path = world
    before = edges(store, path)
    for op in (lambda: store.create_edge("pub", "pub2", "LINKS", guards=Guards(B, ("public",))),
               lambda: store.delete_edge("pub", "pub2", "ABOUT", guards=Guards(B))):
        with pytest.raises((WriteDenied, AccountMismatch)):
            op()
    assert edges(store, path) == before


def test_an_admin_process_keeps_its_account_wide_reach(world: tuple[Any, Path]) -> None:
    """Admin guards (nothing narrowed) link and unlink any node of the account, soft-deleted ones too
    (the importers and collection sync rely on it); unknown ends are still reported, not refused."""
    store, path = world
    admin = Guards(A)
    store.create_edge("secret", "gone", "LINKS", guards=admin)
    assert store.create_edges([("secret", "LINKS", "never-used", None)], guards=admin) == [0]
    assert store.delete_edge("pub", "gone", "ABOUT", guards=admin) == 1
    got = edges(store, path)
    assert (A, "secret", "LINKS", "gone") in got and (A, "pub", "ABOUT", "gone") not in got
