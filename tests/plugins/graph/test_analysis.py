"""The analysed text the Neo4j store indexes is the embedded store's stemmed index's terms: the
same tokens (digits and hyphens split, diacritics folded, stop words kept), the same stems, the
same count; and the migration check's rank correlation."""

from __future__ import annotations

from pathlib import Path

from plughost import Principal
from plughost.plugins.graph.analysis import index_texts, query_terms, search_keys
from plughost.plugins.graph.migrate import by_score, rank_correlation, ranked_pairs, top_overlap
from plughost.plugins.graph.sqlite_store import SqliteStore

PROPS = [{"title": "Gluten-free Breads", "body": "We're OPENING at 8:30; café hours 3.12, INV-2024-0042.",
          "keywords": ["bakery's", "cakes"], "rank": 3},
         {"name": "The baker", "description": None, "other": "not indexed"},
         {"rank": 1}]


def test_the_analysed_text_is_the_stemmed_index_s_terms(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": "acct"})
    g = Principal.system("acct").guards
    for i, props in enumerate(PROPS):
        store.upsert_node(["Thing"], props, guards=g, node_id=f"n{i}")
    store.conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, node_text_stem, 'row')")
    stored = {term: docs for term, docs in store.conn.execute("SELECT term, doc FROM temp.v")}
    store.close()
    texts = index_texts(PROPS)
    assert texts[0] == "gluten free bread we re open at 8 30 cafe hour 3 12 inv 2024 0042 bakeri s cake"
    assert texts[1] == "the baker" and texts[2] == ""
    assert set(" ".join(texts).split()) == set(stored)  # no term more, no term less


def test_a_query_is_analysed_as_the_embedded_store_searches_it() -> None:
    assert query_terms("Gluten-free breads for the events!") == [["gluten", "free"], ["bread"], ["for"], ["the"],
                                                                  ["event"]]
    assert query_terms("  ,, ") == []


def test_texts_with_one_search_key_are_one_query() -> None:
    """The same words in any order are one key; stemmed, a word's other number too; a word in both
    numbers is another query (two phrases, FTS5 sums both), and so is a word left out."""
    texts = ["mask deliveries", "Deliveries, mask", "masks delivery", "mask masks deliveries", "mask",
             "INV-2024 mask", "inv 2024 mask"]
    plain, stemmed = search_keys(texts, stemmed=False), search_keys(texts, stemmed=True)
    assert plain[0] == plain[1] != plain[2] and plain[5] != plain[6]  # "INV-2024" is one phrase of two tokens
    assert stemmed[0] == stemmed[1] == stemmed[2] == (("deliveri",), ("mask",))
    assert stemmed[3] == (("deliveri",), ("mask",), ("mask",))
    assert len({stemmed[0], stemmed[3], stemmed[4], stemmed[5], stemmed[6]}) == 5
    assert search_keys(["mask mask deliveries"], stemmed=True) == [stemmed[0]]  # one phrase per distinct word
    assert search_keys([], stemmed=True) == [] and search_keys(["  ,, "], stemmed=True) == [()]


def test_rank_correlation_of_the_shared_ids() -> None:
    assert rank_correlation(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert rank_correlation(["a", "b", "c"], ["c", "b", "a"]) == -1.0
    assert rank_correlation(["a", "b", "c", "d"], ["b", "a", "c", "x"]) == 1 / 3  # 3 shared: 2 of 3 pairs agree
    assert rank_correlation(["a"], ["b"]) == 1.0  # nothing to order
    assert top_overlap(["a", "b"], ["b", "c"]) == 0.5


def test_equal_scores_are_compared_in_node_id_order() -> None:
    from plughost import Hit, Node

    def hits(*pairs: tuple[str, float]) -> list[Hit]:
        return [Hit(Node(nid, ("Thing",), {}, "acct", False), score) for nid, score in pairs]

    embedded = hits(("n9", 4.2), ("n2", 4.0), ("n10", 4.0), ("n1", 3.1))
    neo4j = hits(("n9", 1.9), ("n10", 1.8), ("n2", 1.8), ("n1", 1.4))  # the same ranking, ties the other way
    assert by_score(embedded) == by_score(neo4j) == ["n9", "n10", "n2", "n1"]


def test_only_untied_pairs_of_long_enough_lists_are_ranked() -> None:
    ids = ["a", "b", "c", "d", "e"]
    here = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0}
    assert ranked_pairs(ids, ids, here, dict(here)) == 1.0
    swapped = {**here, "d": 0.99, "e": 1.0}  # within 5%: a tie there, the pair is not ranked
    assert ranked_pairs(ids, ["a", "b", "c", "e", "d"], here, swapped) == 1.0
    reversed_ = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 5.0}
    assert ranked_pairs(ids, ids[::-1], here, reversed_) == -1.0
    assert ranked_pairs(ids[:4], ids[:4], here, here) is None  # four shared hits: too short to rank
    flat = dict.fromkeys(ids, 1.0)
    assert ranked_pairs(ids, ids, here, flat) is None  # every pair tied on one side


def test_a_hit_tied_with_the_fifth_counts_as_in_the_top_five() -> None:
    here, there = ["a", "b", "c", "d", "e"], ["a", "b", "c", "d", "f", "e"]
    assert top_overlap(here, there) == 0.8
    assert top_overlap(here, there, scores={"a": 9, "b": 8, "c": 7, "d": 6, "f": 2.0, "e": 1.98}) == 1.0
    assert top_overlap(here, there, scores={"a": 9, "b": 8, "c": 7, "d": 6, "f": 2.0, "e": 1.0}) == 0.8
