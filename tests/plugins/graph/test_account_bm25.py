"""Full-text ranking with the searching account's own statistics (docs/graph.md#full-text-search).

Another account's text never changes an account's results or scores (a property test on each
backend); both stores score and order one two-account corpus alike; the embedded store's own
per-account arithmetic equals FTS5's ``bm25()`` to the bit.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plughost.plugins.graph import bm25
from plughost.plugins.graph.bm25 import TextStats
from plughost.ports.graph import Guards
from tests.backends import BACKENDS, neo4j_env

WORDS = ("alpha", "beta", "gamma", "moved", "moving", "hours", "the", "inv-7", "déjà")
QUERIES = ("alpha", "moving hours", "the", "gamma beta the", "inv-7", "deja vu", "moved alpha hours")
EXAMPLES = {"sqlite": 40, "neo4j": 8}

text = st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join)
node = st.tuples(text, st.sampled_from((None, "public", "admin")))
corpus = st.lists(node, min_size=1, max_size=14)


@contextmanager
def two_accounts(backend: str) -> Iterator[tuple[Any, Any, str, str]]:
    """Two store handles on one store (one per account: a store writes only its ACCOUNT_ID's nodes)."""
    a, b = f"acct-a-{uuid.uuid4().hex[:8]}", f"acct-b-{uuid.uuid4().hex[:8]}"
    if backend == "sqlite":
        from plughost.plugins.graph.sqlite_store import SqliteStore

        home = tempfile.mkdtemp()
        stores = [SqliteStore(Path(home) / "graph.sqlite", env={"ACCOUNT_ID": acct}) for acct in (a, b)]
    else:
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        env = neo4j_env()
        stores = [Neo4jStore.from_env({**env, "ACCOUNT_ID": acct}) for acct in (a, b)]
    try:
        yield stores[0], stores[1], a, b
    finally:
        if backend == "neo4j":
            for s, acct in zip(stores, (a, b), strict=True):
                s.wipe_account(acct)
        for s in stores:
            s.close()
        if backend == "sqlite":
            shutil.rmtree(home, ignore_errors=True)


def write(store: Any, account: str, nodes: list[tuple[str, str | None]], base: int = 0) -> None:
    for i, (body, scope) in enumerate(nodes):
        props: dict[str, Any] = {"ref": base + i, "body": body}
        if scope:
            props["scope"] = scope
        store.upsert_node(["Note"], props, guards=Guards(account_id=account))


def results(store: Any, account: str, stemmed: bool = True) -> dict[tuple[str, int, tuple[str, ...] | None], list[Any]]:
    out = {}
    for q in QUERIES:
        for k in (1, 3, 50):
            for scopes in (None, ("public",)):
                g = Guards(account_id=account, allowed_scopes=scopes)
                out[(q, k, scopes)] = [(h.node.properties["ref"], h.score)
                                       for h in store.fulltext_search(q, k, guards=g, stemmed=stemmed)]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_accounts_text_never_moves_results_or_scores(backend: str) -> None:
    if backend == "neo4j":
        neo4j_env()

    @given(mine=corpus, theirs=corpus, stemmed=st.booleans())
    @settings(max_examples=EXAMPLES[backend], deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    def check(mine: list[tuple[str, str | None]], theirs: list[tuple[str, str | None]], stemmed: bool) -> None:
        stemmed = stemmed or backend == "neo4j"  # Neo4j always stems (its one index)
        with two_accounts(backend) as (store_a, store_b, a, b):
            write(store_a, a, mine)
            before = results(store_a, a, stemmed)
            write(store_b, b, theirs, base=1000)
            assert results(store_a, a, stemmed) == before
            write(store_a, a, theirs[:3], base=500)  # A's own text does move A's statistics
            again = results(store_a, a, stemmed)
            write(store_b, b, mine, base=2000)
            assert results(store_a, a, stemmed) == again

    check()


def _corpus(seed: int, n: int) -> list[tuple[str, str | None]]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(40)] + list(WORDS)
    return [(" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 30))), None) for _ in range(n)]


def _ranked(store: Any, account: str) -> list[list[tuple[float, list[int]]]]:
    """Each query's hits as (score, the refs of that score): equal scores come out in each store's
    own key order (the embedded row id, the Neo4j node id)."""
    out = []
    for q in ("w1 w2", "w3", "alpha the moving", "w10 w11 w12 w13", "inv-7 gamma"):
        hits = store.fulltext_search(q, 20, guards=Guards(account_id=account), stemmed=True)
        groups: dict[float, list[int]] = {}
        for h in hits:
            groups.setdefault(h.score, []).append(h.node.properties["ref"])
        out.append([(s, sorted(refs)) for s, refs in groups.items()])
    return out


def test_both_stores_rank_a_two_account_store_alike() -> None:
    env = neo4j_env()  # skips without a server
    del env
    mine, theirs = _corpus(1, 120), _corpus(2, 200)
    ranked = {}
    for backend in ("sqlite", "neo4j"):
        with two_accounts(backend) as (store_a, store_b, a, b):
            write(store_a, a, mine)
            write(store_b, b, theirs, base=1000)
            ranked[backend] = _ranked(store_a, a)
            assert ranked[backend][0], "the corpus holds the query's words"
    assert ranked["sqlite"] == ranked["neo4j"]


def test_per_account_arithmetic_is_fts5s_bm25() -> None:
    """The embedded store alone with one account answers with FTS5's ``bm25()``; with a second
    account it scores with :mod:`bm25`: both, for the same account, agree to the bit (ties in row order)."""
    from plughost.plugins.graph.sqlite_store import SqliteStore

    home = Path(tempfile.mkdtemp())
    try:
        alone = SqliteStore(home / "alone.sqlite", env={"ACCOUNT_ID": "a"})
        shared = SqliteStore(home / "shared.sqlite", env={"ACCOUNT_ID": "a"})
        other = SqliteStore(home / "shared.sqlite", env={"ACCOUNT_ID": "b"})
        mine = _corpus(3, 150)
        write(alone, "a", mine)
        write(shared, "a", mine)
        write(other, "b", _corpus(4, 150), base=1000)
        for stemmed in (False, True):
            assert results(alone, "a", stemmed) == results(shared, "a", stemmed)
        for s in (alone, shared, other):
            s.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_bm25_pieces() -> None:
    assert bm25.idf(10, 9) == bm25.IDF_FLOOR  # in half the documents or more: FTS5's floor
    assert bm25.idf(3, 40) == bm25.IDF_FLOOR  # statistics counted before more documents came: the floor, no error
    assert bm25.phrase_counts(bm25.offsets("a b a b a".split()), ["a", "b"]) == 2
    assert bm25.phrase_counts(bm25.offsets("a b a b a".split()), ["b", "b"]) == 0
    freqs = [[1, 0]]
    idfs = bm25.phrase_idfs(freqs, TextStats(docs=10, tokens=40))
    scored = bm25.scores(freqs, [4, 4], idfs, 4.0)
    assert idfs == [bm25.idf(10, 1)] and scored[1] == 0.0 and scored[0] > 0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_filters_cut_after_the_accounts_ranking(backend: str) -> None:
    """Labels, property filters, ``within`` (a node's edge targets) and soft deletion choose among
    the account's ranking, whatever another account holds."""
    if backend == "neo4j":
        neo4j_env()
    with two_accounts(backend) as (store_a, store_b, a, b):
        g = Guards(account_id=a)
        conv = store_a.upsert_node(["Conversation"], {"title": "chat"}, guards=g)
        rng = random.Random(5)
        made = []
        for i, (body, _) in enumerate(_corpus(6, 60)):
            label = "Message" if i % 3 else "Note"
            nid = store_a.upsert_node([label], {"ref": i, "body": body, "role": "user" if i % 2 else "bot"}, guards=g)
            made.append(nid)
            if label == "Message" and rng.random() < 0.7:
                store_a.create_edge(conv, nid, "HAS_MESSAGE", guards=g)
        store_a.soft_delete(made[4], guards=g)

        def asked() -> list[Any]:
            out = []
            for q in ("w1 w2", "w3 alpha", "the w5"):
                for kw in ({"labels": ["Message"]}, {"where": {"role": "user"}}, {"within": (conv, "HAS_MESSAGE")},
                           {"labels": ["Message"], "where": {"role": "bot"}, "within": (conv, "HAS_MESSAGE")}):
                    out.append([(h.node.properties["ref"], h.score)
                                for h in store_a.fulltext_search(q, 4, guards=g, stemmed=True, **kw)])
            return out

        before = asked()
        assert any(before)
        write(store_b, b, _corpus(7, 80), base=1000)
        assert asked() == before


def test_neo4j_statistics_read_before_another_process_wrote_are_read_again() -> None:
    """Statistics kept from before another process's writes (fewer documents than a search now
    matches) are read again, never a math error: the search equals a fresh store's."""
    env = neo4j_env()  # skips without a server
    import time

    from plughost.plugins.graph.neo4j_store import Neo4jStore

    with two_accounts("neo4j") as (store_a, _store_b, a, _b):
        write(store_a, a, [("w1 w2 alpha", None)] * 12)
        fresh = Neo4jStore.from_env({**env, "ACCOUNT_ID": a})
        try:
            expected = [(h.node.id, h.score) for h in fresh.fulltext_search("w1 alpha", 20, guards=Guards(account_id=a))]
        finally:
            fresh.close()
        store_a._text_stats[a] = (time.monotonic(), store_a._writes, TextStats(docs=1, tokens=3))
        got = [(h.node.id, h.score) for h in store_a.fulltext_search("w1 alpha", 20, guards=Guards(account_id=a))]
        assert got == expected and len(got) == 12


def test_past_the_postings_budget_the_whole_index_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    """A query whose terms occur more often in the whole file than the budget ranks with the whole
    index's statistics (bounded cost), says so once, and still returns only the account's nodes."""
    with two_accounts("sqlite") as (store_a, store_b, a, b):
        write(store_a, a, [("w1 w2 alpha", None), ("w1 beta", None), ("gamma w2", None)])
        write(store_b, b, [("w1 w1 w1 alpha", None)] * 20, base=100)
        exact = [h.node.id for h in store_a.fulltext_search("w1 alpha", 10, guards=Guards(account_id=a))]
        store_a.account_bm25_postings = 0
        capsys.readouterr()
        for _ in range(2):
            bounded = store_a.fulltext_search("w1 alpha", 10, guards=Guards(account_id=a))
        assert sorted(h.node.id for h in bounded) == sorted(exact)  # the account's matches, whatever the order
        assert all(h.node.account_id == a for h in bounded)
        assert capsys.readouterr().err.count("op=whole-index-statistics") == 1
