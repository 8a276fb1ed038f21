"""The embedded store's search hits: nodes built lazily equal the ones ``get`` returns, and the BM25
guard window (first ``first_window(k)`` matches, widened fourfold) gives exactly the guarded top-k,
ties included, whatever its size."""

from __future__ import annotations

import pytest

from plughost import Principal
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.plugins.graph.sqlite_store import store as store_module
from plughost.plugins.graph.sqlite_store import vectors as vectors_module
from plughost.plugins.graph.sqlite_store.nodes import LazyNode
from plughost.ports.graph import Guards, Node

ACCOUNT = "acct-hits"


@pytest.fixture
def store(tmp_path):
    s = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": "3"})
    yield s
    s.close()


def test_hits_build_properties_on_first_read_and_equal_get(store) -> None:
    store.upsert_many([{"id": "a", "labels": ["Chunk", "Note"], "properties": {"content": "alpha beta", "n": 1},
                        "embedding": [1.0, 0.0, 0.0], "edges": []},
                       {"id": "b", "labels": ["Chunk"], "properties": {"content": "alpha"},
                        "embedding": [0.9, 0.1, 0.0], "edges": [{"type": "CITES", "to": "a"}]}],
                      guards=Principal.system(ACCOUNT).guards)
    store.soft_delete("b", guards=Guards(ACCOUNT))
    store.restore("b", guards=Guards(ACCOUNT))
    g = Guards(ACCOUNT)
    for hits in (store.fulltext_search("alpha", 5, guards=g), store.vector_search([1.0, 0.0, 0.0], 5, guards=g),
                 store.fulltext_search("alpha", 5, guards=g, stemmed=True)):
        assert {h.node.id for h in hits} == {"a", "b"}
        for hit in hits:
            assert isinstance(hit.node, LazyNode) and hit.node._row is not None  # nothing built yet
            eager = store.get(hit.node.id, guards=g)
            assert type(eager) is Node and hit.node == eager and eager == hit.node
            assert hit.node.properties == eager.properties and hit.node._row is None
            assert hit.node.labels == eager.labels and hit.node.has_embedding and repr(hit.node)
    a = store.fulltext_search("beta", 1, guards=g)[0].node
    assert a.properties["backlinkCount"] == 1 and a.properties["accountId"] == ACCOUNT
    a.properties["n"] = 2  # one dict, kept once built
    assert a.properties["n"] == 2
    a.properties = {"replaced": True}
    assert a.properties == {"replaced": True} and a != store.get("a", guards=g)


def test_bm25_window_gives_the_guarded_top_k_whatever_its_size(store, monkeypatch) -> None:
    rows = []
    for i in range(600):  # many equal scores (same text, same length), and a few narrow rows at the worst ranks
        text = "alpha " * (1 + i % 3) + "filler words here"
        props = {"content": text, "scope": "public" if i % 97 == 5 else "admin"}
        rows.append({"id": f"n{i}", "labels": ["Chunk"], "properties": props})
    store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
    cases = [(Guards(ACCOUNT), 10), (Guards(ACCOUNT), 150), (Guards(ACCOUNT, ("public",)), 4),
             (Guards(ACCOUNT, ("public",)), 50)]
    windowed = [[(h.node.id, h.score) for h in store.fulltext_search("alpha words", k, guards=g, stemmed=s)]
                for g, k in cases for s in (False, True)]
    monkeypatch.setattr(store_module, "first_window", lambda k: 10_000_000)  # one window holding every match: the oracle
    full = [[(h.node.id, h.score) for h in store.fulltext_search("alpha words", k, guards=g, stemmed=s)]
            for g, k in cases for s in (False, True)]
    assert windowed == full
    assert [len(x) for x in full] == [10, 10, 150, 150, 4, 4, 7, 7]


def test_texts_the_index_reads_as_one_query_are_searched_once(store, monkeypatch) -> None:
    """``fulltext_search_many``: each text's hits are the ones ``fulltext_search`` gives it; texts
    with the same words (stemmed: the same stems) share one call and one list."""
    store.upsert_many([{"id": f"n{i}", "labels": ["Chunk"], "properties": {"content": text}}
                       for i, text in enumerate(["opening hours", "the opening party", "hours and hour",
                                                 "party parties", "closing time"])],
                      guards=Principal.system(ACCOUNT).guards)
    g = Guards(ACCOUNT)
    texts = ["opening hours", "hours opening", "opening hour", "party", "closing"]
    calls: list[str] = []
    real = store.fulltext_search
    monkeypatch.setattr(store, "fulltext_search", lambda text, k, **kw: calls.append(text) or real(text, k, **kw))
    for stemmed, searched in ((True, ["opening hours", "party", "closing"]),
                              (False, ["opening hours", "opening hour", "party", "closing"])):
        calls.clear()
        many = store.fulltext_search_many(texts, 10, guards=g, stemmed=stemmed)
        assert calls == searched
        assert many[0] is many[1] and (many[0] is many[2]) is stemmed
        for text, hits in zip(texts, many, strict=True):
            alone = real(text, 10, guards=g, stemmed=stemmed)
            assert [(h.node.id, h.score) for h in hits] == [(h.node.id, h.score) for h in alone]
    calls.clear()
    assert store.fulltext_search_many(["opening"], 10, guards=g, stemmed=True)[0] and calls == ["opening"]


def test_busy_cores_score_the_same_slices_in_turn_with_the_same_bits(store, monkeypatch) -> None:
    import numpy as np

    from plughost.plugins.graph.sqlite_store import vectors

    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((5003, 384)).astype(np.float32)
    store.vector_threads, store.vector_split_rows, store.vector_split = 3, 1, True
    for q in rng.standard_normal((5, 384)).astype(np.float32):
        monkeypatch.setattr(vectors, "cores_busy", lambda: False)
        threaded = store._scores(matrix, q)
        monkeypatch.setattr(vectors, "cores_busy", lambda: True)
        in_turn = store._scores(matrix, q)
        store.vector_threads_set = True  # an explicit PLUGHOST_VECTOR_THREADS keeps its threads
        assert store._pool is not None and np.array_equal(store._scores(matrix, q), threaded)
        store.vector_threads_set = False
        assert in_turn.tobytes() == threaded.tobytes()
    assert isinstance(vectors.cores_busy(), bool)
    store.vector_split = False  # a threaded BLAS: one matmul (a slice's edge rows may round apart)
    assert np.allclose(store._scores(matrix, q), threaded, rtol=0, atol=1e-5)


def test_the_store_splits_the_matmul_only_over_a_one_thread_blas() -> None:
    from plughost.plugins.graph.sqlite_store.vectors import blas_one_thread

    assert blas_one_thread({"OPENBLAS_NUM_THREADS": "1"}) and blas_one_thread({"OMP_NUM_THREADS": " 1 "})
    assert not blas_one_thread({}) and not blas_one_thread({"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "1"})
    assert blas_one_thread({"MKL_NUM_THREADS": "1"})


@pytest.mark.parametrize("path", ["bm25", "vector", "vector-candidates", "keyword"])
def test_a_write_between_the_guard_and_the_read_never_shows_what_the_guards_refuse(store, tmp_path, monkeypatch,
                                                                                    path) -> None:
    """The guarded statement and the read of its rows see one state of the file: another process
    that narrows a node in between cannot have its new (refused) properties shown. BM25 and the
    vector window read the rows in the guarded statement itself: there is no in between."""
    store.upsert_many([{"id": "x", "labels": ["Chunk"], "embedding": [1.0, 0.0, 0.0],
                        "properties": {"content": "opening hours", "scope": "public", "keywords": ["hours"]}}],
                      guards=Principal.system(ACCOUNT).guards)
    writer = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": "3"})
    real = store._rows_by_rid
    one_statement = path in ("bm25", "vector")

    def narrowed_meanwhile(rids):
        assert not one_statement, "the rows are read apart from the statement that guarded them"
        writer.upsert_node(["Chunk"], {"content": "opening hours: the safe code is 4711", "scope": "admin"},
                           guards=Principal.system(ACCOUNT).guards, node_id="x")
        return real(rids)

    if path == "vector-candidates":
        store.vector_window_max = 0  # the guarded candidate set, then the hits' rows by rid
    monkeypatch.setattr(store, "_rows_by_rid", narrowed_meanwhile)
    public = Guards(ACCOUNT, ("public",))
    search = {"bm25": lambda: store.fulltext_search("opening hours", 5, guards=public),
              "vector": lambda: store.vector_search([1.0, 0.0, 0.0], 5, guards=public),
              "vector-candidates": lambda: store.vector_search([1.0, 0.0, 0.0], 5, guards=public),
              "keyword": lambda: store.keyword_search("hours", 5, guards=public)}[path]
    hits = search()
    assert [(h.node.id, h.node.properties["scope"], h.node.properties["content"]) for h in hits] == [
        ("x", "public", "opening hours")]
    if one_statement:  # the same write, now between two calls
        writer.upsert_node(["Chunk"], {"content": "opening hours: the safe code is 4711", "scope": "admin"},
                           guards=Principal.system(ACCOUNT).guards, node_id="x")
    monkeypatch.setattr(store, "_rows_by_rid", real)
    assert search() == []  # the next call sees the write, and the guards refuse the node
    writer.close()


def _vector_corpus(store, n: int = 3000, dims: int = 3):
    import numpy as np

    rng = np.random.default_rng(11)
    vecs = rng.standard_normal((n, dims)).astype(np.float32)
    rows = []
    for i in range(n):
        props = {"content": f"row {i}", "scope": ("public", "admin", "shared")[i % 3]}
        if i % 7 == 0:
            props["agents"] = ["scout"]
        rows.append({"id": f"v{i}", "labels": ["Chunk" if i % 2 else "Note"], "properties": props,
                     "embedding": vecs[i].tolist()})
    store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
    for i in range(0, n, 13):
        store.soft_delete(f"v{i}", guards=Guards(ACCOUNT))
    return vecs, rng.standard_normal((6, dims)).astype(np.float32)


GUARD_CASES = [(Guards(ACCOUNT), None), (Guards(ACCOUNT, ("public",)), None), (Guards(ACCOUNT, ("shared",), "scout"), None),
               (Guards(ACCOUNT, ("public", "shared")), ["Chunk"]), (Guards(ACCOUNT, ()), None)]


def test_vector_window_rows_are_the_guarded_top_k_of_an_exact_oracle(store) -> None:
    """The window's hits (rows read in its guarded statement) equal the candidate path's and a
    numpy top-k over what the guards allow (account, scope, agent, deletedAt, labels)."""
    import numpy as np

    vecs, queries = _vector_corpus(store)
    for g, labels in GUARD_CASES:
        allowed = {n.id for n in store.find(guards=g, labels=labels, limit=10_000)}
        for q in queries:
            store._candidates.clear()
            window = [(h.node.id, h.score) for h in store.vector_search(q.tolist(), 25, guards=g, labels=labels)]
            store.vector_window_max = 0  # the full guarded candidate set: the other path
            cands = [(h.node.id, h.score) for h in store.vector_search(q.tolist(), 25, guards=g, labels=labels)]
            store.vector_window_max = vectors_module.VECTOR_WINDOW_MAX
            unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
            scores = unit @ (q / np.linalg.norm(q))
            oracle = sorted((s, f"v{i}") for i, s in enumerate(scores.tolist()) if f"v{i}" in allowed)[::-1][:25]
            assert [i for i, _ in window] == [i for i, _ in cands] == [i for _, i in oracle]
            assert [s for _, s in window] == pytest.approx([s for s, _ in oracle], abs=1e-5)
            assert all(store.get(i, guards=g) is not None for i, _ in window)



def test_several_queries_score_by_blocks_what_each_scores_alone(store, monkeypatch) -> None:
    """A question and its paraphrases in one pass (``vector_search_many``): each query's scores are
    the ones it gets alone, on one thread, on slices in turn or on threads, and its hits are the
    guarded top-k ``vector_search`` gives it (the first windows guarded together, a query whose
    window held too few widened alone)."""
    import numpy as np

    from plughost.plugins.graph.sqlite_store import vectors

    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((5003, 384)).astype(np.float32)  # ten blocks and a ragged one
    queries = rng.standard_normal((4, 384)).astype(np.float32)
    alone = np.stack([matrix @ q for q in queries])
    assert np.allclose(store._column_scores(matrix, queries), alone, rtol=0, atol=1e-5)
    store.vector_threads, store.vector_split_rows, store.vector_split = 3, 1, True
    monkeypatch.setattr(vectors, "cores_busy", lambda: False)
    threaded = store._column_scores(matrix, queries)
    monkeypatch.setattr(vectors, "cores_busy", lambda: True)
    assert store._column_scores(matrix, queries).tobytes() == threaded.tobytes()
    assert np.allclose(threaded, alone, rtol=0, atol=1e-5)

    vecs, qs = _vector_corpus(store)
    statements: list[str] = []
    for g, labels in GUARD_CASES:
        statements.clear()
        store.conn.set_trace_callback(statements.append)
        many = store.vector_search_many([q.tolist() for q in qs], 25, guards=g, labels=labels)
        store.conn.set_trace_callback(None)
        if g == Guards(ACCOUNT):  # every first window holds k guarded rows: one statement guards and reads them
            assert len([x for x in statements if "json_each" in x]) == 1
        for q, hits in zip(qs, many, strict=True):
            one = store.vector_search(q.tolist(), 25, guards=g, labels=labels)
            assert [h.node.id for h in hits] == [h.node.id for h in one]
            assert [h.score for h in hits] == pytest.approx([h.score for h in one], abs=1e-5)


def test_paraphrases_near_the_first_query_take_their_top_k_among_its_nearest_rows(store) -> None:
    """``near_first``: the first query is searched over every row; each later one gets its exact
    guarded top-k among the first's ``near_first`` best rows (fewer hits when the guards pass fewer)."""
    import numpy as np

    vecs, qs = _vector_corpus(store)
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    near_first = 400
    for g, labels in GUARD_CASES:
        allowed = {n.id for n in store.find(guards=g, labels=labels, limit=10_000)}
        for q, other in zip(qs, qs[1:], strict=False):
            store._candidates.clear()
            first, second = store.vector_search_many([q.tolist(), other.tolist()], 25, guards=g, labels=labels,
                                                     near_first=near_first)
            exact = store.vector_search(q.tolist(), 25, guards=g, labels=labels)
            assert [h.node.id for h in first] == [h.node.id for h in exact]
            near = {f"v{i}" for i in np.argsort(-(unit @ (q / np.linalg.norm(q))), kind="stable")[:near_first]}
            scores = unit @ (other / np.linalg.norm(other))
            oracle = sorted((s, f"v{i}") for i, s in enumerate(scores.tolist())
                            if f"v{i}" in allowed and f"v{i}" in near)[::-1][:25]
            assert [h.node.id for h in second] == [i for _, i in oracle]
            assert [h.score for h in second] == pytest.approx([s for s, _ in oracle], abs=1e-5)


def _two_public_notes(store) -> None:
    store.upsert_many([{"id": f"p{i}", "labels": ["Note"], "properties": {"content": f"harbour lights {i}",
                                                                          "scope": "public"},
                        "embedding": [1.0, 0.1 * i, 0.0]} for i in range(3)],
                      guards=Principal.system(ACCOUNT).guards)


def test_a_window_reads_properties_after_the_search_and_only_those_asked(store) -> None:
    _two_public_notes(store)
    g = Guards(ACCOUNT, ("public",))
    for hits in (store.fulltext_search("harbour", 5, guards=g), store.vector_search([1.0, 0.0, 0.0], 5, guards=g)):
        assert len(hits) == 3 and all(h.node.deferred() is not None for h in hits)
        first, *rest = [h.node for h in hits]
        Node.read_all([first])  # the survivors only: the others stay unread
        assert first.deferred() is None and all(n.deferred() is not None for n in rest)
        assert first.properties["content"].startswith("harbour lights") and first.properties["scope"] == "public"
        rest[0].properties  # noqa: B018  (a stage reading one: the rest of the statement is read with it)
        assert all(n.deferred() is None and not n.withdrawn for n in rest)
        assert [n.properties == store.get(n.id, guards=g).properties for n in (first, *rest)] == [True] * 3


def test_a_node_narrowed_or_deleted_after_the_search_is_withdrawn_not_read(store) -> None:
    """The properties are read under the guards that found the node: a write in between (another
    process narrowing a note to admin and writing a secret into it) is never read by the public caller."""
    _two_public_notes(store)
    g = Guards(ACCOUNT, ("public",))
    hits = {h.node.id: h.node for h in store.fulltext_search("harbour", 5, guards=g)}
    owner = Principal.owner(ACCOUNT).guards
    store.upsert_node(["Note"], {"scope": "admin", "content": "harbour lights: the safe code is 4471"},
                      guards=owner, node_id="p0")
    store.soft_delete("p1", guards=owner)
    Node.read_all(hits.values())
    assert hits["p0"].withdrawn and hits["p0"].properties == {} and hits["p1"].withdrawn
    assert not hits["p2"].withdrawn and hits["p2"].properties["content"] == "harbour lights 2"


def test_find_and_count_by_label_keep_to_the_account_and_the_living(store, tmp_path) -> None:
    other = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": "acct-other"})
    try:
        other.upsert_node(["Fact"], {"predicate": "city", "value": "Oslo"}, guards=Principal.system("acct-other").guards)
    finally:
        other.close()
    mine = Principal.system(ACCOUNT).guards
    for i in range(3):
        store.upsert_node(["Fact"], {"predicate": "city", "value": f"v{i}"}, guards=mine, node_id=f"f{i}")
    store.upsert_node(["Note"], {"predicate": "city"}, guards=mine, node_id="n0")
    store.soft_delete("f2", guards=Guards(ACCOUNT))
    g = Guards(ACCOUNT)
    assert sorted(n.id for n in store.find(guards=g, labels=["Fact"], where={"predicate": "city"})) == ["f0", "f1"]
    assert store.count(guards=g, labels=["Fact"]) == 2 and store.count(guards=g, labels=["Fact", "Note"]) == 3


def test_find_by_label_and_property_starts_from_the_label_or_an_indexed_property(store) -> None:
    """A property filter beside a label reads the label's rows, not every row of the account (a
    current-facts lookup read each document's properties first); an indexed property still leads."""
    plans = []
    store.conn.set_trace_callback(lambda sql: plans.append(sql) if sql.lstrip().startswith("SELECT") else None)
    try:
        store.find(guards=Guards(ACCOUNT), labels=["Fact"], where={"predicate": "city"})
        store.find(guards=Guards(ACCOUNT), labels=["Message"], where={"conversationId": "c1"})
    finally:
        store.conn.set_trace_callback(None)
    fact, message = (" ".join(str(r[3]) for r in store.conn.execute("EXPLAIN QUERY PLAN " + sql.replace("?", "NULL")))
                     for sql in plans[-2:])
    assert "LIST SUBQUERY" in fact and "nodes_conversation_id" in message, (fact, message)


def test_a_row_id_taken_by_a_new_node_after_the_search_is_not_the_hit(store) -> None:
    """SQLite hands a hard-deleted newest row's id to the next node: the deferred read matches the
    node's id too, so the hit is withdrawn, never shown with the newcomer's properties."""
    _two_public_notes(store)
    g = Guards(ACCOUNT, ("public",))
    hits = {h.node.id: h.node for h in store.fulltext_search("harbour", 5, guards=g)}
    owner = Principal.owner(ACCOUNT).guards
    store.delete_nodes(["p2"], guards=owner)
    store.upsert_node(["Note"], {"scope": "public", "content": "an unrelated note: payroll"}, guards=owner,
                      node_id="other")
    assert store.get("other", guards=g) is not None
    Node.read_all(hits.values())
    assert hits["p2"].withdrawn and hits["p2"].properties == {}
    assert hits["p1"].properties["content"] == "harbour lights 1"


def test_unread_hits_copy_and_pickle_with_their_properties_and_say_so_once_the_store_closed(tmp_path) -> None:
    import copy
    import pickle

    from plughost import StoreUnavailable

    s = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT})
    _two_public_notes(s)
    first, second, third = (h.node for h in s.fulltext_search("harbour", 5, guards=Guards(ACCOUNT)))
    copied = copy.copy(first)
    assert copied.properties == first.properties and copied.deferred() is None
    assert pickle.loads(pickle.dumps(second)).properties == second.properties
    unread = s.vector_search([1.0, 0.0, 0.0], 1, guards=Guards(ACCOUNT))[0].node
    s.close()
    assert third.properties["content"].startswith("harbour")  # read with the first: one read per search
    with pytest.raises(StoreUnavailable, match="closed before these search hits' properties were read"):
        unread.properties  # noqa: B018
