"""Every formula of docs/retrieval.md#fusion pinned: min-max, max-merge, 0.7/0.3, RRF k=60, boosts, routing."""

from __future__ import annotations

import math

import pytest
from retrieval_support import hit, row

from plughost.plugins.memory.retrieval import boosts, fuse, route
from plughost.plugins.memory.retrieval.fuse import RankedList
from plughost.plugins.memory.retrieval.scores import min_max
from plughost.plugins.memory.settings import SEARCH_RRF_K
from plughost.runtime.types import RetrievalBoost


def test_min_max_spreads_to_unit_interval():
    assert min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]


def test_min_max_ties_and_single_are_one():
    assert min_max([7.5]) == [1.0]
    assert min_max([3.0, 3.0, 3.0]) == [1.0, 1.0, 1.0]
    assert min_max([]) == []


def test_max_merge_of_a_node_found_by_both_paths_and_twice_per_path():
    lists = [
        RankedList("vector", [hit("a", 0.8), hit("b", 0.6)]),
        RankedList("vector", [hit("a", 0.9)]),                    # a paraphrase finds a again, higher
        RankedList("bm25", [hit("b", 10.0), hit("a", 5.0), hit("c", 0.0)]),
        RankedList("bm25", [hit("a", 2.0)]),                      # single result → 1.0
    ]
    rows = fuse.merge(lists)
    assert rows["a"].vector == 0.9 and rows["a"].bm25 == 1.0
    assert rows["b"].vector == 0.6 and rows["b"].bm25 == 1.0
    assert rows["c"].vector == 0.0 and rows["c"].bm25 == 0.0
    assert list(rows) == ["a", "b", "c"]


def test_a_shared_list_merges_once_and_still_ranks_for_each_query_under_rrf(monkeypatch):
    shared = [hit("b", 10.0), hit("a", 5.0)]
    lists = [RankedList("bm25", shared), RankedList("vector", [hit("a", 0.9)]), RankedList("bm25", shared, "para")]
    once = fuse.merge(lists[:2])
    read: list[str] = []
    real_min_max = fuse.min_max
    monkeypatch.setattr(fuse, "min_max", lambda scores: read.append("x") or real_min_max(scores))
    twice = fuse.merge(lists)
    assert read == ["x"]  # the shared hits normalised and merged once
    assert [(r.id, r.vector, r.bm25) for r in twice.values()] == [(r.id, r.vector, r.bm25) for r in once.values()]
    fuse.rrf(twice, lists, k=60)
    assert twice["b"].score == pytest.approx(2 / 61) and twice["a"].score == pytest.approx(2 / 62 + 1 / 61)


def test_bm25_is_normalised_within_its_result_set_and_vector_is_raw_by_default():
    rows = fuse.merge([RankedList("vector", [hit("a", 0.9), hit("b", 0.8)]),
                       RankedList("bm25", [hit("a", 4.0), hit("b", 2.0), hit("c", 3.0)])])
    assert (rows["a"].vector, rows["b"].vector) == (0.9, 0.8)
    assert (rows["a"].bm25, rows["b"].bm25, rows["c"].bm25) == (1.0, 0.0, 0.5)


def test_normalize_flag_min_maxes_vector_scores_too():
    rows = fuse.merge([RankedList("vector", [hit("a", 0.9), hit("b", 0.8), hit("c", 0.85)])],
                      normalise_vector=True)
    assert rows["a"].vector == 1.0 and rows["b"].vector == 0.0
    assert rows["c"].vector == pytest.approx(0.5)


def test_weighted_sum_is_point7_vector_plus_point3_bm25():
    rows = fuse.merge([RankedList("vector", [hit("a", 0.5), hit("b", 0.9)]),
                       RankedList("bm25", [hit("a", 8.0), hit("c", 4.0)])])
    fuse.weighted(rows)
    assert rows["a"].score == pytest.approx(0.7 * 0.5 + 0.3 * 1.0)
    assert rows["b"].score == pytest.approx(0.7 * 0.9)
    assert rows["c"].score == pytest.approx(0.0)


def test_rrf_sums_one_over_sixty_plus_rank():
    lists = [RankedList("vector", [hit("a", 0.9), hit("b", 0.8)]),
             RankedList("bm25", [hit("b", 3.0), hit("c", 2.0), hit("a", 1.0)])]
    rows = fuse.merge(lists)
    fuse.rrf(rows, lists)
    assert SEARCH_RRF_K.default == 60  # fuse.rrf's k when none is given
    assert rows["a"].score == pytest.approx(1 / 61 + 1 / 63)
    assert rows["b"].score == pytest.approx(1 / 62 + 1 / 61)
    assert rows["c"].score == pytest.approx(1 / 62)


def test_rrf_channel_weights_zero_skips_a_path():
    lists = [RankedList("vector", [hit("a", 0.9)]), RankedList("bm25", [hit("b", 3.0)])]
    rows = fuse.merge(lists)
    fuse.rrf(rows, lists, weights={"vector": 0.0, "bm25": 2.0})
    assert rows["a"].score == 0.0 and rows["b"].score == pytest.approx(2 / 61)


def test_compiled_truth_boost_is_plus_fifteen_percent():
    r = row("a", 0.5, compiledTruth="Alice runs the bakery.")
    plain = row("b", 0.5, compiledTruth=None)
    assert boosts.apply([r, plain]) == 1
    assert r.score == pytest.approx(0.5 * 1.15)
    assert plain.score == 0.5


@pytest.mark.parametrize(("count", "bump"), [(1, 0.05), (10, 0.10), (100, 0.15), (1000, 0.20),
                                             (10_000, 0.25), (100_000, 0.25), (0, 0.0), (None, 0.0),
                                             (3, 0.05 + 0.05 * math.log10(3))])
def test_backlink_bump_curve(count, bump):
    assert boosts.backlink_bump(count) == pytest.approx(bump)


def test_bumps_add_up_with_plugin_boosts_and_a_raising_boost_counts_zero():
    r = row("a", 1.0, compiledTruth="x", backlinkCount=10, pinned=True)
    extra = [RetrievalBoost("pinned", lambda v: 0.1 if v["props"].get("pinned") else 0.0),
             RetrievalBoost("broken", lambda v: 1 / 0)]
    boosts.apply([r], extra)
    assert r.bump == pytest.approx(0.15 + 0.10 + 0.1)
    assert r.score == pytest.approx(1.35)


def test_route_plans():
    off = route.plan("event", enabled=False)
    assert (off.labels, off.vector_weight, off.bm25_weight, off.skip) == (None, 0.7, 0.3, False)
    assert route.plan("entity", enabled=True).labels == ("Person", "Company", "Concept")
    assert route.plan("entity", enabled=True).vector_weight > route.plan("entity", enabled=True).bm25_weight
    temporal = route.plan("temporal", enabled=True)
    assert temporal.labels == ("Event",) and temporal.bm25_weight > temporal.vector_weight
    event = route.plan("event", enabled=True)
    assert event.labels == ("Event",) and not event.use_vector and event.use_bm25
    general = route.plan("general", enabled=True)
    assert general.vector_weight == general.bm25_weight
    assert route.plan("none", enabled=True).skip
    assert route.plan("entity", enabled=True, labels=["Task"]).labels == ("Task",)
    assert route.plan(None, enabled=True).rrf_weights() == {"vector": 1.0, "bm25": 1.0}
    assert general.rrf_weights() == {"vector": 1.0, "bm25": 1.0}
