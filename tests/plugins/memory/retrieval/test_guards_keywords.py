"""Guard layers reach every store call of a search: vector, BM25, keyword subscriptions, expansion."""

from __future__ import annotations

import pytest
from retrieval_support import ACCOUNT, LookupEmbedder

from plughost import Principal
from plughost.plugins.memory.retrieval import SearchRequest, search
from plughost.ports.graph import Guards

V = [1.0, 0.0, 0.0, 0.0]


@pytest.fixture
def graph(store, other_store):
    def put(nid, labels, **props):
        store.upsert_node(labels, props, guards=Principal.system(ACCOUNT).guards, node_id=nid, embedding=V)

    put("pub", ["Service"], name="Pricing plan public", scope="public", agents=["sales"])
    put("adm", ["Service"], name="Pricing plan admin", scope="admin", agents=["sales"])
    put("other-agent", ["Service"], name="Pricing plan support", scope="public", agents=["support"])
    put("untagged", ["Service"], name="Pricing plan untagged", scope="public")
    put("gone", ["Service"], name="Pricing plan deleted", scope="public", agents=["sales"])
    put("kw-tag", ["Concept"], name="Tariffs", keywords=["Pricing"], scope="shared", agents=["support"])
    put("kw-admin", ["Concept"], name="Secret tariffs", keywords=["pricing"], scope="admin")
    put("kw-text", ["Concept"], name="Discount rules", description="vat details", scope="public")
    store.upsert_node(["PriceSpecification"], {"price": 1, "scope": "admin"},
                      guards=Principal.system(ACCOUNT).guards, node_id="rel-admin")
    store.upsert_node(["PriceSpecification"], {"price": 2, "agents": ["support"]},
                      guards=Principal.system(ACCOUNT).guards,
                      node_id="rel-support")
    store.upsert_node(["PriceSpecification"], {"price": 3},
                      guards=Principal.system(ACCOUNT).guards, node_id="rel-open")
    for rel in ("rel-admin", "rel-support", "rel-open"):
        store.create_edge("pub", rel, "HAS_PRICE", guards=Principal.system(ACCOUNT).guards)
    store.soft_delete("gone", guards=Guards(ACCOUNT))
    other_store.upsert_node(["Service"], {"name": "Pricing plan foreign"},
                            guards=Principal.system("acct0002-bbbb").guards,
                            node_id="foreign", embedding=V)
    return store


def ids(out):
    return {r.id for r in out.rows}


def emb():
    return LookupEmbedder({"pricing plan": V, "pricing": V})


def test_admin_sees_every_live_node_of_its_account_only(graph):
    out = search(graph, SearchRequest("pricing plan", limit=50), guards=Guards(ACCOUNT), embedder=emb())
    assert {"pub", "adm", "other-agent", "untagged"} <= ids(out)
    assert "gone" not in ids(out) and "foreign" not in ids(out)


def test_public_agent_scope_and_agent_tag_filters_on_both_paths(graph):
    g = Guards(ACCOUNT, ("public", "shared"), "sales")
    out = search(graph, SearchRequest("pricing plan", limit=50), guards=g, embedder=emb())
    assert ids(out) == {"pub"}
    related = {nb.node.id for nb in out.rows[0].related}
    assert related == {"rel-open"}  # admin-scoped and other-agent related nodes filtered (layer 4)
    bm25_only = search(graph, SearchRequest("pricing plan", limit=50), guards=g, embedder=None)
    assert ids(bm25_only) == {"pub"}


def test_keyword_subscriptions_drop_the_agent_filter_but_keep_scope(graph):
    g = Guards(ACCOUNT, ("public", "shared"), "sales")
    out = search(graph, SearchRequest("zzz unrelated", limit=50), guards=g, embedder=None,
                 keywords=["pricing", "vat"])
    got = ids(out)
    assert "kw-tag" in got                      # tagged for another agent, reached by the keyword tag
    assert "kw-text" in got                     # BM25 on the keyword text
    assert {"other-agent", "untagged", "pub"} <= got  # BM25 on "pricing" without the agent filter
    assert "kw-admin" not in got and "adm" not in got  # the scope filter still applies
    assert "gone" not in got and "foreign" not in got
    tag_row = next(r for r in out.rows if r.id == "kw-tag")
    assert tag_row.bm25 == 1.0 and tag_row.score == pytest.approx(0.3)


def test_keyword_match_merges_with_direct_hits_by_max(graph):
    g = Guards(ACCOUNT)
    direct = {r.id: r for r in search(graph, SearchRequest("tariffs", limit=50), guards=g).rows}
    merged = {r.id: r for r in search(graph, SearchRequest("tariffs", limit=50), guards=g, keywords=["pricing"]).rows}
    assert direct["kw-tag"].bm25 == merged["kw-tag"].bm25 == 1.0
    assert merged["kw-admin"].bm25 == 1.0 and "kw-admin" in merged
