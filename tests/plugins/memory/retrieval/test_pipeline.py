"""The orchestrator against the real embedded SQLite store: baseline, flags, guards, logs."""

from __future__ import annotations

import re

import pytest
from retrieval_support import ACCOUNT, LookupEmbedder

from plughost import Principal
from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
from plughost.plugins.memory.retrieval.scores import min_max
from plughost.ports.graph import Guards
from plughost.util.errors import UserError

G = Guards(ACCOUNT)

DOCS = [
    # id, labels, props, vector
    ("n1", ["Service"], {"name": "Haircut", "description": "a short haircut for adults"}, [1, 0, 0, 0]),
    ("n2", ["Service"], {"name": "Colouring", "description": "hair colouring and highlights"}, [0.9, 0.1, 0, 0]),
    ("n3", ["Person"], {"name": "Ann Smith", "description": "stylist who does haircut and colour"}, [0.2, 0.9, 0, 0]),
    ("n4", ["Event"], {"name": "Opening party", "description": "salon opening with free haircut"}, [0, 0, 1, 0]),
    ("n5", ["Concept"], {"name": "Hair care", "description": "washing brushing"}, [0.6, 0.3, 0.3, 0.1]),
    ("n6", ["Review"], {"name": "Great cut", "content": "the haircut was great, haircut haircut"}, [0.7, 0, 0.2, 0.4]),
    ("n7", ["Task"], {"name": "Order shampoo", "description": "buy more shampoo"}, [0, 0, 0, 1]),
]
QVEC = [0.8, 0.2, 0.1, 0.1]


@pytest.fixture
def graph(store):
    for nid, labels, props, vec in DOCS:
        store.upsert_node(labels, props, guards=Principal.system(ACCOUNT).guards, node_id=nid, embedding=vec)
    store.upsert_node(["PriceSpecification"], {"price": 30, "currency": "EUR"},
                      guards=Principal.system(ACCOUNT).guards, node_id="p1")
    store.create_edge("n1", "p1", "HAS_PRICE", guards=Principal.system(ACCOUNT).guards)
    store.create_edge("n6", "n1", "REVIEWS", guards=Principal.system(ACCOUNT).guards)
    return store


def run(store, query="haircut", embedder=None, flags=None, guards=G, **kw):
    req_fields = {k: kw.pop(k) for k in ("limit", "labels", "fields", "expand_hops", "retrieval_class") if k in kw}
    return search(store, SearchRequest(query, **req_fields), guards=guards,
                  embedder=embedder if embedder is not None else LookupEmbedder({query: QVEC}),
                  flags=flags or SearchFlags.baseline(), **kw)


def reference(store, query, vector, limit, k=50):
    """The baseline of docs/retrieval.md#baseline computed independently of the pipeline modules."""
    vec = {h.node.id: h.score for h in store.vector_search(vector, k, guards=G)}
    bm = store.fulltext_search(query, k, guards=G)
    bm_norm = dict(zip([h.node.id for h in bm], min_max([h.score for h in bm]), strict=True))
    ids = set(vec) | set(bm_norm)
    combined = {i: 0.7 * vec.get(i, 0.0) + 0.3 * bm_norm.get(i, 0.0) for i in ids}
    return sorted(combined.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


def test_all_flags_off_equals_the_reference_baseline(graph):
    out = run(graph, limit=5)
    expected = reference(graph, "haircut", QVEC, 5)
    assert [(r.id, pytest.approx(r.score)) for r in out.rows] == expected
    assert out.rows[0].vector > 0 and any(r.bm25 == 1.0 for r in out.rows)


def test_env_flags_default_to_the_shipped_stages_and_zero_gives_the_baseline():
    from plughost.plugins.memory.retrieval.flags import SHIPPED

    shipped = SearchFlags.from_env({})
    assert all(getattr(shipped, k) == v for k, v in SHIPPED.items())
    off = {"PLUGHOST_GS_STEM": "0", "PLUGHOST_GS_STOPWORDS": "0", "PLUGHOST_GS_NORMALIZE": "off",
           "PLUGHOST_GS_VECTOR_WEIGHT": "0.7", "PLUGHOST_GS_CANDIDATES": "50", "PLUGHOST_GS_RRF": "no",
           "PLUGHOST_GS_NEIGHBOURS": "0", "PLUGHOST_GS_NEIGHBOURS_BACK": "0", "PLUGHOST_GS_SESSION": "0",
           "PLUGHOST_GS_SPEAKER": "0", "PLUGHOST_GS_DATES": "0", "PLUGHOST_GS_MESSAGE_WEIGHT": "1",
           "PLUGHOST_GS_FACTS": "0"}
    assert SearchFlags.from_env(off) == SearchFlags.baseline()
    for bad in ({"PLUGHOST_GS_STEM": "maybe"}, {"PLUGHOST_GS_VECTOR_WEIGHT": "1.5"}, {"PLUGHOST_GS_RRF_K": "0"}):
        with pytest.raises(UserError, match=next(iter(bad))):
            SearchFlags.from_env(bad)
    on = SearchFlags.from_env({f"PLUGHOST_GS_{n}": "1" for n in
                               ("EXPANSION", "ROUTE", "RRF", "BOOSTS", "DEDUP", "NORMALIZE")})
    assert all((on.expansion, on.route, on.rrf, on.boosts, on.dedup, on.normalize))


def test_search_flags_defaults_are_the_settings_defaults():
    """One home: ``SearchFlags()``, what the process ships (``from_env`` of an empty environment)
    and the memory plugin's declared settings agree, field by field."""
    from dataclasses import fields

    from plughost.plugins.memory.retrieval.flags import SETTINGS

    assert SearchFlags() == SearchFlags.from_env({})
    assert {f.name for f in fields(SearchFlags)} == set(SETTINGS)
    for field in fields(SearchFlags):
        assert field.default == SETTINGS[field.name].default, field.name
    assert SearchFlags().stem is True and SearchFlags.baseline().stem is False


def test_hybrid_log_line(graph, capsys):
    out = run(graph, limit=3)
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("[graph-search:hybrid]")][-1]
    assert re.fullmatch(
        r"\[graph-search:hybrid\] accountId=acct0001 retrievalClass=— expansions=0 vector=\d+ bm25=\d+ "
        r"fused=\d+ boosted=0 deduped=\d+ final=3 mode=weighted ms=\d+\.\d", line), line
    assert out.stats["final"] == 3 and out.stats["vector"] == 7  # every embedded node of the account


def test_output_format_and_graph_expansion(graph):
    out = run(graph, limit=10)
    text = out.text
    assert "[Service] (id: n1) (score: " in text
    assert "  --[HAS_PRICE]--> [PriceSpecification] {" in text and "price: 30" in text
    assert "  <--[REVIEWS]-- [Review] {" in text
    assert "accountId" not in text and "embedding" not in text
    flat = run(graph, limit=10, expand_hops=0)
    assert "Related:" not in flat.text and all(not r.related for r in flat.rows)


def test_fields_projection_logs_counts(graph, capsys):
    out = run(graph, limit=2, fields=["name", "nope"])
    assert all(set(r.properties) == {"name"} for r in out.rows)
    err = capsys.readouterr().err
    assert re.search(r"\[memory-search\] accountId=acct0001 fields=\[name,nope\] returnedProps=2 droppedProps=\d+", err)
    run(graph, limit=2)
    assert "[memory-search]" not in capsys.readouterr().err


def test_no_embedder_is_bm25_only_and_a_failing_embedder_degrades(graph, capsys):
    out = search(graph, SearchRequest("haircut"), guards=G, embedder=None)
    assert out.stats["vector"] == 0 and out.rows and all(r.vector == 0 for r in out.rows)
    broken = LookupEmbedder({}, fail=True)
    out = run(graph, embedder=broken)
    assert out.stats["vector"] == 0 and out.rows
    assert "[graph-search:hybrid] warn reason=embed-failed" in capsys.readouterr().err


def test_rrf_flag(graph, capsys):
    out = run(graph, flags=SearchFlags.baseline(rrf=True), limit=3)
    assert "mode=rrf" in capsys.readouterr().err
    assert all(r.score <= 2 / 61 + 1e-12 for r in out.rows)


def test_normalize_flag_changes_only_the_vector_term(graph):
    base = {r.id: r for r in run(graph, limit=8).rows}
    norm = {r.id: r for r in run(graph, limit=8, flags=SearchFlags.baseline(normalize=True)).rows}
    assert max(r.vector for r in norm.values()) == 1.0
    assert {i: r.bm25 for i, r in base.items()} == {i: norm[i].bm25 for i in base if i in norm}


def test_boosts_flag_uses_compiled_truth_backlinks_and_plugin_boosts(graph, capsys):
    graph.upsert_node(["Concept"], {"compiledTruth": "hair care means washing"},
                      guards=Principal.system(ACCOUNT).guards, node_id="n5")
    base = {r.id: r.score for r in run(graph, limit=8).rows}
    from plughost.runtime.types import RetrievalBoost
    boosted = run(graph, limit=8, flags=SearchFlags.baseline(boosts=True),
                  extra_boosts=[RetrievalBoost("tasks", lambda v: 0.5 if "Task" in v["labels"] else 0.0)])
    got = {r.id: r.score for r in boosted.rows}
    assert got["n5"] == pytest.approx(base["n5"] * 1.15)
    assert got["n1"] == pytest.approx(base["n1"] * 1.05)       # one backlink (REVIEWS)
    assert got["n3"] == pytest.approx(base["n3"])
    if "n7" in base:
        assert got["n7"] == pytest.approx(base["n7"] * 1.5)
    assert boosted.stats["boosted"] >= 2
    assert re.search(r"boosted=[1-9]", capsys.readouterr().err)


def test_dedup_flag_collapses_same_slug(graph):
    graph.upsert_node(["Service"], {"slug": "haircut"}, guards=Principal.system(ACCOUNT).guards, node_id="n1")
    graph.upsert_node(["Review"], {"slug": "haircut"}, guards=Principal.system(ACCOUNT).guards, node_id="n6")
    plain = [r.id for r in run(graph, limit=8).rows]
    layered = run(graph, limit=8, flags=SearchFlags.baseline(dedup=True))
    assert "n1" in plain and "n6" in plain
    ids = [r.id for r in layered.rows]
    assert ("n1" in ids) != ("n6" in ids)
    assert layered.stats["deduped"] == layered.stats["fused"] - 1


def test_route_flag(graph):
    embedder = LookupEmbedder({"haircut": QVEC})
    none = run(graph, retrieval_class="none", flags=SearchFlags.baseline(route=True), embedder=embedder)
    assert none.rows == [] and none.text == "No results." and not embedder.calls
    event = run(graph, retrieval_class="event", flags=SearchFlags.baseline(route=True), embedder=embedder)
    assert [r.id for r in event.rows] == ["n4"] and event.stats["vector"] == 0 and not embedder.calls
    entity = run(graph, retrieval_class="entity", flags=SearchFlags.baseline(route=True))
    assert {lab for r in entity.rows for lab in r.node.labels} <= {"Person", "Company", "Concept"}
    off = run(graph, retrieval_class="event")  # routing off: the class changes nothing
    assert len(off.rows) > 1


def test_expansion_flag_unions_paraphrases_and_degrades(graph, capsys):
    from plughost.plugins.memory.retrieval.expand import ExpansionCache

    embedder = LookupEmbedder({})
    out = run(graph, query="salon party", embedder=embedder, flags=SearchFlags.baseline(expansion=True),
              expander=lambda q, c: ["shampoo", "stylist", "colouring"], cache=ExpansionCache())
    ids = {r.id for r in out.rows}
    assert {"n4", "n7", "n3", "n2"} <= ids
    assert embedder.calls == [["salon party", "shampoo", "stylist", "colouring"]]
    assert "expansions=3" in capsys.readouterr().err

    def broken(q, c):
        raise RuntimeError("no llm")

    out = run(graph, query="salon party", flags=SearchFlags.baseline(expansion=True), expander=broken,
              cache=ExpansionCache())
    assert out.queries == ["salon party"] and out.stats["expansions"] == 0


def test_expansion_searches_each_bm25_text_once(graph, monkeypatch):
    """Paraphrases the store reads as one BM25 query are searched once: the same words after the
    stop words go, and on the embedded store the same stems; each still counts as a list, and the
    fusion merges the shared list once (the same rows and scores as merging it each time)."""
    from plughost.plugins.memory.retrieval import fuse
    from plughost.plugins.memory.retrieval.expand import ExpansionCache

    flags = SearchFlags.from_env({"PLUGHOST_GS_EXPANSION": "1"})
    calls = []
    real_bm25 = graph.fulltext_search
    monkeypatch.setattr(graph, "fulltext_search", lambda text, k, **kw: calls.append(text) or real_bm25(text, k, **kw))
    paraphrases = ["the salon party", "salon parties", "shampoo"]
    out = run(graph, query="salon party", embedder=LookupEmbedder({}), flags=flags,
              expander=lambda q, c: paraphrases, cache=ExpansionCache())
    assert calls == ["salon party", "shampoo"]  # "the salon party" strips to the first, "salon parties" stems to it
    assert out.stats["bm25"] == 3 * len(real_bm25("salon party", 200, guards=G, stemmed=True)) + len(
        real_bm25("shampoo", 200, guards=G, stemmed=True))
    assert {"n4", "n7"} <= {r.id for r in out.rows}

    merged: list[list[int]] = []
    real_merge = fuse.merge
    monkeypatch.setattr(fuse, "merge", lambda lists, **kw: merged.append(
        [id(x.hits) for x in lists if x.channel == "bm25"]) or real_merge(lists, **kw))
    monkeypatch.setattr(graph, "fulltext_search_many", None)  # a store without it: the same words only
    calls.clear()
    again = run(graph, query="salon party", embedder=LookupEmbedder({}), flags=flags,
                expander=lambda q, c: paraphrases, cache=ExpansionCache())
    assert calls == ["salon party", "salon parties", "shampoo"] and len(merged[0]) == 4 == len(set(merged[0])) + 1
    assert [(r.id, r.score) for r in again.rows] == [(r.id, r.score) for r in out.rows]


def test_bad_parameters_are_one_line_user_errors(graph):
    from plughost.util.errors import UserError

    for kwargs, needle in [({"query": " "}, "'query'"), ({"query": "x", "limit": 0}, "'limit'"),
                           ({"query": "x", "expand_hops": 2}, "'expandHops'"),
                           ({"query": "x", "retrieval_class": "bogus"}, "'retrievalClass'"),
                           ({"query": "x", "labels": ["bad label"]}, "'labels'")]:
        with pytest.raises(UserError, match=needle):
            search(graph, SearchRequest(**kwargs), guards=G)


def test_paths_flag_runs_one_path_alone(graph):
    from plughost.util.errors import UserError

    vec = run(graph, flags=SearchFlags.baseline(paths="vector"), limit=8)
    assert vec.stats["bm25"] == 0 and all(r.bm25 == 0 for r in vec.rows)
    bm = run(graph, flags=SearchFlags.baseline(paths="bm25"), limit=8)
    assert bm.stats["vector"] == 0 and all(r.vector == 0 for r in bm.rows)
    assert SearchFlags.from_env({"PLUGHOST_GS_PATHS": "vector"}).paths == "vector"
    with pytest.raises(UserError, match="PLUGHOST_GS_PATHS: expected one of hybrid, vector, bm25"):
        SearchFlags.from_env({"PLUGHOST_GS_PATHS": "both"})


def test_fusion_weights_are_the_spec_constants_unless_set():
    from plughost.plugins.memory.retrieval import route
    from plughost.plugins.memory.retrieval.pipeline import weights

    plan = route.plan(None, enabled=False)
    assert weights(plan, SearchFlags.baseline()) == (0.7, 0.3)  # the constants themselves, not 1 - 0.7
    assert weights(plan, SearchFlags.baseline(vector_weight=0.4)) == (0.4, 0.6)
    assert weights(route.plan("temporal", enabled=True), SearchFlags.baseline(vector_weight=0.4)) == (0.3, 0.7)


def test_baseline_flags_match_the_baseline_bit_for_bit(graph):
    exact = reference(graph, "haircut", QVEC, 5)
    out = run(graph, limit=5, flags=SearchFlags.baseline())
    assert [(r.id, r.score) for r in out.rows] == [(i, s) for i, s in exact]


def test_the_conversation_stages_leave_a_pool_without_turns_as_it_was(graph):
    """The stages REALTALK made defaults (speaker, session, dates, backward neighbours, the Message
    weight) touch Messages and Conversations only: documents and entities rank exactly as before."""
    before = SearchFlags(neighbours=0.3, neighbours_back=0.0, session=0.0, speaker=0.0, dates=0.0, message_weight=1.0)
    for query in ("haircut", "What did Ann Smith do on 29 Dec 2023?"):
        old = run(graph, query, flags=before, limit=7, expand_hops=0)
        new = run(graph, query, flags=SearchFlags(), limit=7, expand_hops=0)
        assert [(r.id, r.score) for r in new.rows] == [(r.id, r.score) for r in old.rows]


@pytest.mark.parametrize("flags", [SearchFlags(), SearchFlags.baseline()], ids=["shipped", "baseline"])
@pytest.mark.parametrize("limit", [1, 3, 7])
def test_the_rows_come_best_first_whatever_the_pool_order(graph, flags, limit):
    """The cut keeps the best ``limit`` rows of the whole pool, best first, ties by id."""
    rows = run(graph, flags=flags, limit=limit).rows
    wide = run(graph, flags=flags, limit=50).rows
    assert [(r.id, r.score) for r in rows] == sorted(((r.id, r.score) for r in wide), key=lambda t: (-t[1], t[0]))[:limit]
