"""DEDUP layers, threshold/sort/slice, rerank, the fields projection, the format and its budget."""

from __future__ import annotations

import hashlib

from retrieval_support import neighbour, row

from plughost.plugins.memory.retrieval import dedup, format, project, rank


def ids(rows):
    return [r.id for r in rows]


def test_dedup_node_id_layer_keeps_the_highest_score():
    rows = [row("a", 0.2), row("a", 0.9), row("b", 0.5)]
    out = dedup.dedup(rows, layered=False)
    assert ids(out) == ["a", "b"] and out[0].score == 0.9


def test_baseline_dedup_ignores_slug_and_name():
    rows = [row("a", 0.9, slug="x", name="N"), row("b", 0.5, slug="x", name="N")]
    assert ids(dedup.dedup(rows, layered=False)) == ["a", "b"]


def test_slug_layer():
    rows = [row("a", 0.4, slug="acme"), row("b", 0.8, slug="acme"), row("c", 0.6, slug="other")]
    assert ids(dedup.dedup_layer(rows, dedup.slug_key)) == ["b", "c"]


def test_canonical_name_layer_is_case_insensitive_and_falls_back_to_name():
    rows = [row("a", 0.3, canonicalName="ACME Ltd"), row("b", 0.7, name="acme ltd"),
            row("c", 0.5, canonicalName="Acme ltd ", name="Something else")]
    assert ids(dedup.dedup_layer(rows, dedup.canonical_name_key)) == ["b"]


def test_content_hash_layer_uses_compiled_truth_then_content():
    rows = [row("a", 0.3, compiledTruth="same text"), row("b", 0.6, content="same text"),
            row("c", 0.9, compiledTruth="other", content="same text")]
    assert dedup.content_hash_key(rows[0]) == hashlib.sha256(b"same text").hexdigest()
    assert ids(dedup.dedup_layer(rows, dedup.content_hash_key)) == ["c", "b"]


def test_missing_keys_skip_the_layer_no_false_collision():
    rows = [row("a", 0.9), row("b", 0.8), row("c", 0.7, slug=""), row("d", 0.6, name=None)]
    assert ids(dedup.dedup(rows, layered=True)) == ["a", "b", "c", "d"]


def test_all_four_layers_in_order():
    rows = [row("a", 0.9, slug="s1"), row("a", 0.1), row("b", 0.8, slug="s1"),
            row("c", 0.7, name="Bob"), row("d", 0.6, canonicalName="bob"),
            row("e", 0.5, content="body"), row("f", 0.4, compiledTruth="body")]
    assert ids(dedup.dedup(rows, layered=True)) == ["a", "c", "e"]


def test_threshold_sort_slice_and_ties_by_id():
    rows = [row("b", 0.5), row("a", 0.5), row("c", 0.9), row("d", -0.1)]
    kept = rank.threshold(rows, 0.0)
    assert ids(kept) == ["b", "a", "c"]
    assert ids(rank.sort_and_slice(kept, 2)) == ["c", "a"]


def test_rerank_reorders_ignores_unknown_ids_and_degrades_on_failure():
    rows = [row("a", 0.9), row("b", 0.5)]
    out = rank.rerank(rows, lambda views: [{"id": "zzz"}, {"id": "b", "score": 2.0}, views[0]])
    assert ids(out) == ["b", "a"] and out[0].score == 2.0
    assert rank.rerank(rows, lambda views: 1 / 0) is rows
    assert rank.rerank(rows, lambda views: None) is rows


def test_rerank_depth_sends_the_best_rows_and_keeps_the_rest_after():
    rows = [row(c, s) for c, s in (("a", 0.1), ("b", 0.9), ("c", 0.5), ("d", 0.7))]
    seen = []
    out = rank.rerank(rows, lambda views: seen.extend(v["id"] for v in views) or list(reversed(views)), depth=2)
    assert seen == ["b", "d"] and ids(out) == ["d", "b", "c", "a"]
    assert ids(rank.rerank(rows, lambda views: 1 / 0, depth=2)) == ["b", "d", "c", "a"]


def test_fields_projection_cases():
    def fresh():
        return [row("a", 0.9, name="Ann", slug="ann", phone="1", embedding=[0.1], accountId="x"),
                row("b", 0.5, name="Bo")]

    rows = fresh()
    assert project.project(rows, None) == (4, 0)
    assert rows[0].visible_properties() == {"name": "Ann", "slug": "ann", "phone": "1"}
    rows = fresh()
    assert project.project(rows, ["name", "slug"]) == (3, 1)
    assert rows[0].properties == {"name": "Ann", "slug": "ann"} and rows[1].properties == {"name": "Bo"}
    rows = fresh()
    assert project.project(rows, []) == (0, 4)
    assert rows[0].properties == {} and rows[1].properties == {}
    rows = fresh()
    assert project.project(rows, ["nope", "embedding", "accountId"]) == (0, 4)


def test_related_nodes_are_not_projected():
    r = row("a", 0.9, name="Ann", phone="1")
    r.related = [neighbour("p", "HAS_PRICE", "out", "PriceSpecification", price="9", currency="EUR")]
    project.project([r], ["name"])
    text = format.render_row(r)
    assert "phone" not in text and "{price: 9, currency: EUR}" in text


def test_format_shape():
    r = row("n1", 0.12345, "Service", "Product", name="Haircut", tags=["a", "b"], embedding=[1.0],
            accountId="acct")
    r.related = [neighbour("p1", "HAS_PRICE", "out", "PriceSpecification", price=30),
                 neighbour("b1", "OFFERS", "in", "LocalBusiness", name="Salon")]
    r2 = row("n2", 1.0, "Person", name="Ann")
    project.project([r, r2], None)
    text, compact = format.format_results([r, r2])
    assert not compact
    assert text == (
        "[Service, Product] (id: n1) (score: 0.123)\n"
        "name: Haircut\n"
        'tags: ["a", "b"]\n'
        "Related:\n"
        "  --[HAS_PRICE]--> [PriceSpecification] {price: 30}\n"
        "  <--[OFFERS]-- [LocalBusiness] {name: Salon}\n"
        "---\n"
        "[Person] (id: n2) (score: 1.000)\n"
        "name: Ann"
    )
    assert format.format_results([]) == ("No results.", False)


def _big_rows(n=10, related=40):
    rows = []
    for i in range(n):
        r = row(f"n{i}", 1 - i / 100, name=f"node {i}", body="b" * 500)
        r.related = [neighbour(f"r{i}-{j}", "LINKS", "out", "Chunk", content="x" * 190) for j in range(related)]
        rows.append(r)
    return rows


def test_budget_drops_related_nodes_first_from_the_lowest_ranked_up():
    rows = _big_rows()
    full, compact = format.format_results(rows, budget=10**9)
    assert not compact and len(full) > 80_000
    text, compact = format.format_results(rows, budget=80_000)
    assert compact and len(text) <= 80_000
    assert text.startswith("(compact: related nodes dropped")
    assert all(f"(id: n{i})" in text for i in range(10))           # every result kept
    blocks = text.split("\n---\n")
    assert "Related:" in blocks[0] and "Related:" not in blocks[-1]  # top results keep context longest


def test_budget_leaves_out_trailing_results_only_after_all_related_are_gone():
    rows = _big_rows(n=30, related=1)
    for r in rows:
        r.node.properties["body"] = "b" * 4000
    text, compact = format.format_results(rows, budget=20_000)
    assert compact and len(text) <= 20_000
    assert "Related:" not in text and "more results left out" in text
    assert "(id: n0)" in text
