"""The GraphStore contract, run against every backend (embedded always, Neo4j when NEO4J_URI is set)."""

from __future__ import annotations

import math

import pytest

from plughost import Principal
from plughost.ports.graph import VECTOR_LABELS, GraphStore, Guards
from plughost.util.errors import UserError


def acct(store) -> str:
    return store.test_account


def g(store, scopes=None, agent=None) -> Guards:
    return Guards(acct(store), tuple(scopes) if scopes is not None else None, agent)


DIMS = 384  # the configured index dimensions (Neo4j indexes only vectors of that length)


def vec(*xs: float) -> list[float]:
    """A DIMS-long vector with the given leading components (zero padding keeps cosines)."""
    return [float(x) for x in xs] + [0.0] * (DIMS - len(xs))


def unit(*xs: float) -> list[float]:
    n = math.sqrt(sum(x * x for x in xs))
    return vec(*(x / n for x in xs))


@pytest.fixture
def other(store, tmp_path):
    """A second store object on the same database, for another account."""
    from tests.plugins.graph.conftest import open_store

    account = acct(store) + "-other"
    s = open_store(store.backend, tmp_path, account)
    s.test_account = account
    yield s
    if store.backend == "neo4j":
        s.wipe_account(account)
    s.close()


def test_implements_the_port(store):
    assert isinstance(store, GraphStore)
    assert store.backend in ("sqlite", "neo4j")


def test_upsert_merges_properties_and_unions_labels(store):
    a = acct(store)
    nid = store.upsert_node(["Person"], {"name": "Ada", "age": 36},
                            guards=Principal.system(a).guards, node_id="p1")
    assert nid == "p1"
    store.upsert_node(["Customer"], {"age": None, "email": "ada@example.com"},
                      guards=Principal.system(a).guards, node_id="p1")
    node = store.get("p1", guards=g(store))
    assert set(node.labels) == {"Person", "Customer"}
    assert node.properties["name"] == "Ada" and "age" not in node.properties
    assert node.properties["accountId"] == a and node.account_id == a
    assert node.properties["createdAt"] and node.properties["updatedAt"]
    generated = store.upsert_node(["Task"], {"title": "t"}, guards=Principal.system(a).guards)
    assert generated and store.get(generated, guards=g(store)).properties["title"] == "t"


def test_write_to_foreign_account_is_rejected_and_logged(store, capfd):
    with pytest.raises(UserError, match="accountId"):
        store.upsert_node(["Person"], {"name": "x"}, guards=Principal.system("someone-else").guards)
    with pytest.raises(UserError):
        store.upsert_node(["Person"], {"name": "x", "accountId": "someone-else"},
                          guards=Principal.system(acct(store)).guards)
    err = capfd.readouterr().err
    assert "[graph-write] reject reason=invalid-account-id accountId='someone-else'" in err  # whole, not its 8 first
    assert store.count(guards=g(store)) == 0
    long = "acct-" + "x" * 400 + "\n[graph-write] forged"
    with pytest.raises(ValueError, match="account"):
        Principal.system(long)  # no principal carries such an id; a row may still name one
    with pytest.raises(UserError):
        store.upsert_node(["Person"], {"name": "x", "accountId": long}, guards=Principal.system(acct(store)).guards)
    [line] = [x for x in capfd.readouterr().err.splitlines() if "invalid-account-id" in x]
    assert "accountId=\"'acct-xxxx" in line and "…(+" in line and "forged" not in line and len(line) < 320


def test_bad_input_is_one_clear_error(store):
    a = acct(store)
    with pytest.raises(UserError, match=r"labels\[0\]"):
        store.upsert_node(["bad label"], {}, guards=Principal.system(a).guards)
    with pytest.raises(UserError, match="labels"):
        store.upsert_node([], {}, guards=Principal.system(a).guards)
    with pytest.raises(UserError, match="agents"):
        store.upsert_node(["Person"], {"agents": 3}, guards=Principal.system(a).guards)
    with pytest.raises(UserError, match="embedding"):
        store.upsert_node(["Person"], {}, guards=Principal.system(a).guards, embedding=[float("nan")])
    with pytest.raises(UserError, match="JSON"):
        store.upsert_node(["Person"], {"x": float("inf")}, guards=Principal.system(a).guards)
    with pytest.raises(UserError, match="JSON"):
        store.upsert_node(["Person"], {"x": object()}, guards=Principal.system(a).guards)
    with pytest.raises(UserError, match="type"):
        store.upsert_node(["Person"], {}, guards=Principal.system(a).guards, node_id="x")
        store.create_edge("x", "x", "bad type", guards=Principal.system(a).guards)


def test_edges_backlinks_and_expansion_directions(store):
    a = acct(store)
    for nid in ("hub", "x", "y"):
        store.upsert_node(["Concept"], {"name": nid}, guards=Principal.system(a).guards, node_id=nid)
    store.create_edge("x", "hub", "MENTIONS", {"w": 1}, guards=Principal.system(a).guards)
    store.create_edge("y", "hub", "MENTIONS", guards=Principal.system(a).guards)
    store.create_edge("x", "hub", "MENTIONS", guards=Principal.system(a).guards)  # MERGE: no second edge
    store.create_edge("hub", "y", "RELATED_TO", guards=Principal.system(a).guards)
    assert store.get("hub", guards=g(store)).properties["backlinkCount"] == 2
    assert store.get("y", guards=g(store)).properties["backlinkCount"] == 1
    around = store.expand(["hub"], guards=g(store))["hub"]
    seen = sorted((n.direction, n.type, n.node.id) for n in around)
    assert seen == [("in", "MENTIONS", "x"), ("in", "MENTIONS", "y"), ("out", "RELATED_TO", "y")]
    assert [n.properties for n in around if n.node.id == "x"] == [{"w": 1}]
    with pytest.raises(UserError, match="not found"):
        store.create_edge("x", "nowhere", "MENTIONS", guards=Principal.system(a).guards)


def test_expansion_cap_is_twenty(store):
    a = acct(store)
    store.upsert_many([{"id": "c", "labels": ["Concept"], "properties": {"name": "c"}}]
                      + [{"id": f"n{i}", "labels": ["Concept"], "properties": {"name": f"n{i}"},
                          "edges": [{"type": "ABOUT", "to": "c"}]} for i in range(30)], guards=Principal.system(a).guards)
    assert len(store.expand(["c"], guards=g(store))["c"]) == 20
    assert len(store.expand(["c"], guards=g(store), limit=5)["c"]) == 5
    assert store.get("c", guards=g(store)).properties["backlinkCount"] == 30


def test_expansion_applies_layer_four(store, other):
    a = acct(store)
    store.upsert_node(["Service"], {"name": "root", "scope": "public", "agents": ["bot"]},
                      guards=Principal.system(a).guards, node_id="root")
    rows = {
        "untagged": {"name": "untagged"},  # passes: untagged related nodes are structural
        "tagged-bot": {"name": "tb", "agents": ["bot"]},
        "tagged-other": {"name": "to", "agents": ["other"]},  # fails: another agent's
        "admin": {"name": "adm", "scope": "admin"},  # fails: scope
        "gone": {"name": "gone"},  # fails: soft-deleted
    }
    for nid, props in rows.items():
        store.upsert_node(["PriceSpecification"], props, guards=Principal.system(a).guards, node_id=nid)
        store.create_edge("root", nid, "HAS_PRICE", guards=Principal.system(a).guards)
    store.soft_delete("gone", guards=g(store))
    related = store.expand(["root"], guards=g(store, ["public"], "bot"))["root"]
    assert sorted(n.node.id for n in related) == ["tagged-bot", "untagged"]
    admin_view = store.expand(["root"], guards=g(store))["root"]
    assert sorted(n.node.id for n in admin_view) == ["admin", "tagged-bot", "tagged-other", "untagged"]
    # another account sees nothing, even by id
    assert other.expand(["root"], guards=g(other))["root"] == []
    assert other.get("root", guards=g(other)) is None


def test_primary_reads_apply_scope_and_agent_layers(store):
    a = acct(store)
    store.upsert_node(["Question"], {"name": "pub bot", "scope": "public", "agents": ["bot"], "keywords": ["faq"]},
                      guards=Principal.system(a).guards, node_id="q1", embedding=unit(1, 0, 0))
    store.upsert_node(["Question"], {"name": "pub untagged", "scope": "public", "keywords": ["faq"]},
                      guards=Principal.system(a).guards, node_id="q2", embedding=unit(1, 0.1, 0))
    store.upsert_node(["Question"], {"name": "admin bot", "scope": "admin", "agents": ["bot"], "keywords": ["faq"]},
                      guards=Principal.system(a).guards, node_id="q3", embedding=unit(1, 0.2, 0))
    store.upsert_node(["Question"], {"name": "noscope bot", "agents": ["bot"], "keywords": ["faq"]},
                      guards=Principal.system(a).guards, node_id="q4", embedding=unit(1, 0.3, 0))
    public_bot = g(store, ["public"], "bot")
    for hits in (store.vector_search(unit(1, 0, 0), 10, guards=public_bot),
                 store.fulltext_search("bot untagged", 10, guards=public_bot),
                 store.keyword_search("FAQ", 10, guards=public_bot)):
        assert sorted(h.node.id for h in hits) == ["q1", "q4"]
    assert store.get("q2", guards=public_bot) is None  # untagged: invisible to an agent
    assert store.get("q3", guards=public_bot) is None  # admin scope
    assert store.count(guards=g(store)) == 4
    assert store.count(guards=g(store, [])) == 1  # empty scope list: only unscoped nodes
    assert sorted(n.id for n in store.find(guards=g(store, ["admin"]), labels=["Question"])) == ["q3", "q4"]


def test_guards_from_env_narrow_never_widen():
    from plughost.ports.principal import resolve

    env = {"ACCOUNT_ID": "a1", "ALLOWED_SCOPES": "public,shared", "AGENT_SLUG": "bot"}
    assert resolve(env).guards == Guards("a1", ("public", "shared"), "bot")
    assert resolve(env).guards.narrow(["public", "admin"]).allowed_scopes == ("public",)
    with pytest.raises(UserError, match="AGENT_SLUG"):
        resolve(env).guards.narrow(agent="other")
    assert resolve({"ACCOUNT_ID": "a1"}).guards.narrow(["admin"]).allowed_scopes == ("admin",)
    with pytest.raises(UserError, match="ACCOUNT_ID"):
        resolve({}).guards  # noqa: B018


def test_vector_search_is_exact_and_returns_k_after_guards(store):
    a = acct(store)
    rows = []
    for i in range(40):
        angle = i * 0.05
        rows.append({"id": f"v{i}", "labels": ["Chunk"], "embedding": vec(math.cos(angle), math.sin(angle)),
                     "properties": {"content": f"chunk {i}", "scope": "admin" if i % 2 else "public"}})
    store.upsert_many(rows, guards=Principal.system(a).guards)
    hits = store.vector_search(vec(1.0), 5, guards=g(store))
    assert [h.node.id for h in hits] == ["v0", "v1", "v2", "v3", "v4"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert all(hits[i].score >= hits[i + 1].score for i in range(len(hits) - 1))
    public = store.vector_search(vec(1.0), 5, guards=g(store, ["public"]))
    assert [h.node.id for h in public] == ["v0", "v2", "v4", "v6", "v8"]  # still k rows after the guard
    assert "embedding" not in hits[0].node.properties
    assert len(store.vector_search(vec(1.0), 100, guards=g(store, ["public"]))) == 20
    assert store.vector_search(vec(1.0), 5, guards=g(store), labels=["Person"]) == []
    # a write invalidates the matrix cache
    store.set_embedding("v39", vec(1.0), account_id=a)
    assert store.vector_search(vec(1.0), 1, guards=g(store))[0].node.id in ("v0", "v39")
    store.soft_delete("v0", guards=g(store))
    assert store.vector_search(vec(1.0), 1, guards=g(store))[0].node.id == "v39"


@pytest.mark.parametrize("term,expected", [
    ("INV-2024-0042", "invoice"), ("inv-2024-0042", "invoice"), ("w5", "tyre"), ("3.12", "python"),
    ("W5 tyres", "tyre"), ("0042", "invoice"),
])
def test_bm25_finds_codes_with_digits_and_punctuation(store, term, expected):
    a = acct(store)
    store.upsert_many([
        {"id": "invoice", "labels": ["DigitalDocument"], "properties": {"title": "Invoice INV-2024-0042 for March"}},
        {"id": "other-invoice", "labels": ["DigitalDocument"], "properties": {"title": "Invoice INV-2024-0043"}},
        {"id": "tyre", "labels": ["Service"], "properties": {"name": "w5 tyre fitting", "description": "all sizes"}},
        {"id": "python", "labels": ["CreativeWork"], "properties": {"body": "Upgrading to Python 3.12 is easy"}},
        {"id": "noise", "labels": ["CreativeWork"], "properties": {"body": "Python 3 and 12 monkeys"}},
    ], guards=Principal.system(a).guards)
    hits = store.fulltext_search(term, 5, guards=g(store))
    assert hits and hits[0].node.id == expected
    assert hits[0].score > 0


@pytest.mark.parametrize("query", [
    '"', "'", "(", ")", "*", "AND", "OR NOT", "NEAR(a b)", "a:b", "^x", "~", "+-&&||!{}[]\\/", "title:x*",
    '"unbalanced', "\x00", "", "   ", "🙂", "col:* OR", "-", "a AND (", "a OR OR b",
])
def test_special_characters_never_raise(store, query):
    store.upsert_node(["Concept"], {"name": "AND OR NOT near"}, guards=Principal.system(acct(store)).guards)
    store.fulltext_search(query, 5, guards=g(store))
    store.keyword_search(query, 5, guards=g(store))


def test_soft_delete_cascades_and_restore_and_purge(store):
    a = acct(store)
    store.upsert_node(["KnowledgeDocument"], {"title": "Handbook", "attachmentId": "att-1"},
                      guards=Principal.system(a).guards, node_id="doc")
    store.upsert_node(["Section"], {"title": "Intro"}, guards=Principal.system(a).guards, node_id="sec")
    store.upsert_node(["Chunk"], {"content": "hello handbook"},
                      guards=Principal.system(a).guards, node_id="ch")
    store.upsert_node(["Person"], {"name": "author"}, guards=Principal.system(a).guards, node_id="author")
    store.create_edge("doc", "sec", "HAS_SECTION", guards=Principal.system(a).guards)
    store.create_edge("sec", "ch", "HAS_CHUNK", guards=Principal.system(a).guards)
    store.create_edge("doc", "author", "AUTHORED_BY", guards=Principal.system(a).guards)
    assert store.soft_delete("doc", guards=g(store)) == 3
    assert store.get("ch", guards=g(store)) is None
    assert store.get("ch", guards=g(store), include_deleted=True).deleted
    assert store.get("author", guards=g(store)) is not None  # not part of the hierarchy
    assert store.fulltext_search("handbook", 5, guards=g(store)) == []
    assert store.restore("doc", guards=g(store)) == 3
    assert [h.node.id for h in store.fulltext_search("hello", 5, guards=g(store))] == ["ch"]
    store.soft_delete("sec", guards=g(store))  # a section takes its chunks
    assert store.get("ch", guards=g(store)) is None and store.get("doc", guards=g(store)) is not None
    assert store.purge() == 0  # inside the 7-day grace period
    assert store.purge(older_than_days=0) == 2
    assert store.get("ch", guards=g(store), include_deleted=True) is None
    assert store.expand(["doc"], guards=g(store))["doc"][0].node.id == "author"


def test_reingest_same_attachment_replaces_the_hierarchy(store):
    a = acct(store)
    doc = store.upsert_node(["KnowledgeDocument"], {"title": "v1", "attachmentId": "att-9"},
                            guards=Principal.system(a).guards)
    sec = store.upsert_node(["Section"], {"title": "old section"}, guards=Principal.system(a).guards)
    store.create_edge(doc, sec, "HAS_SECTION", guards=Principal.system(a).guards)
    store.soft_delete(doc, guards=g(store))
    again = store.upsert_node(["KnowledgeDocument"], {"title": "v2", "attachmentId": "att-9"},
                              guards=Principal.system(a).guards)
    assert again == doc
    node = store.get(doc, guards=g(store))
    assert node is not None and node.properties["title"] == "v2"  # deletedAt cleared
    assert store.get(sec, guards=g(store), include_deleted=True) is None  # old hierarchy gone
    assert store.expand([doc], guards=g(store))[doc] == []


def test_missing_embeddings_and_index_discovery(store):
    a = acct(store)
    store.upsert_node(["Person"], {"name": "with"},
                      guards=Principal.system(a).guards, node_id="w", embedding=vec(0.1, 0.2, 0.3))
    store.upsert_node(["Person"], {"name": "without"}, guards=Principal.system(a).guards, node_id="wo")
    store.upsert_node(["Organization"], {"name": "not indexed"},
                      guards=Principal.system(a).guards, node_id="org")
    assert [n.id for n in store.missing_embeddings(account_id=a)] == ["wo"]
    assert store.missing_embeddings(account_id=a, exclude=["wo"]) == []
    indexes = store.vector_indexes()
    assert set(indexes) == set(VECTOR_LABELS)


def test_find_filters_orders_and_paginates(store):
    a = acct(store)
    store.upsert_many([{"id": f"m{i}", "labels": ["Message"], "properties": {"body": f"m{i}", "rank": i,
                                                                           "channel": "web" if i < 3 else "tg"}}
                       for i in range(5)], guards=Principal.system(a).guards)
    found = store.find(guards=g(store), labels=["Message"], where={"channel": "web"}, order_by="rank", descending=True)
    assert [n.id for n in found] == ["m2", "m1", "m0"]
    page = store.find(guards=g(store), labels=["Message"], order_by="rank", descending=False, limit=2, offset=1)
    assert [n.id for n in page] == ["m1", "m2"]
    with pytest.raises(UserError, match="property"):
        store.find(guards=g(store), where={"bad key": 1})


def test_lists_of_mixed_types_or_with_nulls_are_written_and_imported(store, tmp_path):
    """Neo4j stores only arrays of one scalar type: such a list is kept as JSON text there (as a
    nested map is), never a failed batch; the embedded store keeps it as it is."""
    import json

    from plughost.plugins.graph.importer import import_jsonl

    a = acct(store)
    odd = {"xs": [1, "a"], "ys": [1, None], "zs": [None], "bs": [True, 1], "ok": [1, 2], "fs": [1, 2.5]}
    store.upsert_node(["Person"], {"name": "mixed one", **odd},
                      guards=Principal.system(a).guards, node_id="m1")
    lines = [{"id": f"m{i}", "labels": ["Person"], "properties": {"name": f"mixed {i}", **odd},
              "edges": [{"type": "KNOWS", "to": "m1", "properties": {"w": [1, "a"]}}]} for i in range(2, 6)]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    summary = import_jsonl(store, path, guards=Principal.owner(a).guards, progress=False)
    assert (summary.nodes, summary.edges, summary.skipped) == (4, 4, 0)
    for nid in ("m1", "m2", "m5"):
        node = store.get(nid, guards=g(store))
        assert node is not None and node.properties["ok"] == [1, 2]
        kept = {k: node.properties[k] for k in odd if k != "ok"}
        assert kept == {k: v for k, v in odd.items() if k != "ok"} or store.backend == "neo4j"
        if store.backend == "neo4j":
            assert {k: json.loads(v) if isinstance(v, str) else v for k, v in kept.items()} == \
                {k: v for k, v in odd.items() if k != "ok"}


def test_a_term_every_node_holds_gives_k_rows_in_one_order(store):
    """All matches tie: the window still stops at k (on Neo4j a tie-break by id widened it to
    every match, 20,000 of them out of memory), and the order is the same on every call."""
    a = acct(store)
    rows = [{"id": f"t{i:04d}", "labels": ["Person"], "properties": {"name": f"tied node {i}",
             "scope": "public" if i % 1000 == 7 else "admin"}} for i in range(3000)]
    store.upsert_many(rows, guards=Principal.system(a).guards)
    first = [h.node.id for h in store.fulltext_search("tied", 10, guards=g(store))]
    assert len(first) == 10 and [h.node.id for h in store.fulltext_search("tied", 10, guards=g(store))] == first
    public = Guards(a, allowed_scopes=("public",))
    assert sorted(h.node.id for h in store.fulltext_search("tied", 10, guards=public)) == ["t0007", "t1007", "t2007"]


def test_bm25_finds_a_brands_own_label(store):
    """Full-text search covers every label, not only those docs/graph.md#labels names (Neo4j indexed 29)."""
    a = acct(store)
    store.upsert_node(["Widget"], {"name": "zanzibar gizmo"}, guards=Principal.system(a).guards, node_id="w1")
    store.upsert_node(["Person"], {"name": "zanzibar person"},
                      guards=Principal.system(a).guards, node_id="p1")
    assert sorted(h.node.id for h in store.fulltext_search("zanzibar", 5, guards=g(store))) == ["p1", "w1"]
    assert [h.node.id for h in store.fulltext_search("gizmo", 5, guards=g(store), labels=["Widget"])] == ["w1"]
    assert store.fulltext_search("gizmo", 5, guards=g(store), labels=["Person"]) == []


def test_upsert_many_rejects_the_whole_batch_on_a_bad_row(store):
    a = acct(store)
    with pytest.raises(UserError, match=r"rows\[1\]"):
        store.upsert_many([{"labels": ["Person"], "properties": {}}, {"labels": "Person"}],
                          guards=Principal.system(a).guards)
    with pytest.raises(UserError, match=r"rows\[0\]\.edges\[0\]\.to"):
        store.upsert_many([{"labels": ["Person"], "edges": [{"type": "KNOWS", "to": "ghost"}]}],
                          guards=Principal.system(a).guards)
    assert store.count(guards=g(store)) == 0


@pytest.mark.parametrize("edge,message", [
    ({"type": ["X"], "to": "a"}, "type"), ({"type": "X", "to": 3}, "to"), ({"type": "X"}, "to"),
    ({"type": "X", "to": "a", "weight": 1}, "unknown key 'weight'"), ("X->a", "expected an object"),
    ({"type": "X", "to": "a", "properties": [1]}, "properties"),
])
def test_bad_edges_name_the_row_and_edge(store, edge, message):
    with pytest.raises(UserError, match=r"rows\[0\]\.edges\[0\]") as info:
        store.upsert_many([{"labels": ["Person"], "edges": [edge]}],
                          guards=Principal.system(acct(store)).guards)
    assert message in str(info.value)


def test_ids_are_per_account(store, other):
    """Two accounts may hold the same id; neither can touch, see or learn of the other's node."""
    a, b = acct(store), acct(other)
    store.upsert_node(["Person"], {"name": "mine"}, guards=Principal.system(a).guards, node_id="same")
    other.upsert_node(["Person"], {"name": "theirs"},
                      guards=Principal.system(b).guards, node_id="same")  # no error, no oracle
    other.upsert_many([{"id": "same", "labels": ["Task"], "properties": {"title": "t"}}],
                      guards=Principal.system(b).guards)
    assert store.get("same", guards=g(store)).properties["name"] == "mine"
    assert set(store.get("same", guards=g(store)).labels) == {"Person"}
    assert other.get("same", guards=g(other)).properties["name"] == "theirs"
    store.soft_delete("same", guards=g(store))
    assert other.get("same", guards=g(other)) is not None
    other.create_edge("same", "same", "SELF", guards=Principal.system(b).guards)
    assert store.expand(["same"], guards=g(store))["same"] == []


def test_sparse_tenant_and_selective_agent_still_get_k(store, other):
    """A tenant with 4 vectors beside 1,500 closer ones of another account, and an agent tagging
    3 of 600 nodes: the guards run before the cut, so both get exactly min(k, eligible)."""
    a, b = acct(store), acct(other)
    crowd = [{"id": f"c{i}", "labels": ["Chunk"], "embedding": vec(1.0, 0.001 * i),
              "properties": {"content": "crowd"}} for i in range(1500)]
    other.upsert_many(crowd, guards=Principal.system(b).guards)
    mine = [{"id": f"m{i}", "labels": ["Chunk"], "embedding": vec(0.2, 1.0, 0.1 * i),
             "properties": {"content": "mine"}} for i in range(4)]
    store.upsert_many(mine + [{"id": f"pub{i}", "labels": ["Chunk"], "embedding": vec(1.0, 0.002 * i),
                               "properties": {"content": "public", "scope": "public",
                                              "agents": ["bot"] if i % 200 == 7 else ["other"]}}
                              for i in range(600)], guards=Principal.system(a).guards)
    hits = store.vector_search(vec(1.0), 10, guards=g(store, ["internal"]))  # only unscoped: the 4 of mine
    assert sorted(h.node.id for h in hits) == ["m0", "m1", "m2", "m3"]
    bot = store.vector_search(vec(1.0), 2, guards=g(store, ["public"], "bot"))
    assert [h.node.id for h in bot] == ["pub7", "pub207"]
    assert len(store.vector_search(vec(1.0), 10, guards=g(store, ["public"], "bot"))) == 3
    text = store.fulltext_search("public", 5, guards=g(store, ["public"], "bot"))
    assert len(text) == 3 and all(h.node.properties["agents"] == ["bot"] for h in text)


@pytest.mark.parametrize("backend", ["sqlite", "neo4j"])
def test_every_port_method_takes_the_ports_parameters(backend: str) -> None:
    """``isinstance`` against a Protocol only sees method names; this checks each store method
    accepts every parameter of the port's (a store without ``where``/``within`` on its searches
    once satisfied ``isinstance`` and failed at the caller). Neither store needs to be running."""
    import inspect

    if backend == "sqlite":
        from plughost.plugins.graph.sqlite_store import SqliteStore as cls
    else:
        from plughost.plugins.graph.neo4j_store import Neo4jStore as cls
    for name, port_fn in inspect.getmembers(GraphStore, inspect.isfunction):
        if name.startswith("_"):
            continue
        wanted = [p for p in inspect.signature(port_fn).parameters if p != "self"]
        have = inspect.signature(getattr(cls, name)).parameters
        assert all(p in have for p in wanted), (cls.__name__, name, [p for p in wanted if p not in have])
