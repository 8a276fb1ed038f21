"""The stemmed shadow index (PLUGHOST_GS_STEM) and stop words (PLUGHOST_GS_STOPWORDS) on the real store."""

from __future__ import annotations

import sqlite3

import pytest
from retrieval_support import ACCOUNT

from plughost import Principal
from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
from plughost.plugins.memory.retrieval.keyterms import strip_stop_words
from plughost.ports.graph import Guards

G = Guards(ACCOUNT)
DOCS = {
    "m1": "We are moving to Porto at the end of March",
    "m2": "Invoice INV-2024-0042 was paid on Friday",
    "m3": "Invoice INV-2024-0043 is still open",
    "m4": "the w5 bracket ships with Python 3.12",
    "m5": "the w6 bracket ships with Python 3.13",
    "m6": "my orchid finally flowered on the balcony",
}


@pytest.fixture
def docs(store):
    for nid, text in DOCS.items():
        store.upsert_node(["Message"], {"text": text}, guards=Principal.system(ACCOUNT).guards, node_id=nid)
    return store


def ids(store, query, stemmed):
    return [h.node.id for h in store.fulltext_search(query, 10, guards=G, stemmed=stemmed)]


def test_stemmed_index_folds_word_forms_the_plain_one_does_not(docs):
    assert ids(docs, "moved", stemmed=False) == []
    assert ids(docs, "moved", stemmed=True) == ["m1"]
    assert ids(docs, "flowers", stemmed=True) == ["m6"]


@pytest.mark.parametrize("stemmed", [False, True])
@pytest.mark.parametrize("query, expected", [
    ("INV-2024-0042", ["m2"]), ("w5", ["m4"]), ("3.12", ["m4"]), ("inv-2024-0043", ["m3"]), ("3.13", ["m5"]),
])
def test_exact_identifiers_match_exactly_on_both_indexes(docs, query, expected, stemmed):
    assert ids(docs, query, stemmed) == expected


def test_stop_words_go_identifiers_and_all_stop_queries_stay():
    assert strip_stop_words("What did Maya say about the w5 order INV-2024-0042?") == "Maya w5 order INV-2024-0042?"
    assert strip_stop_words("Which Python is it on, 3.12?") == "Python 3.12?"
    assert strip_stop_words("what is it") == "what is it"


def test_pipeline_flags_rank_on_the_stemmed_index_without_question_words(docs):
    request = SearchRequest("When is Maya moving?", limit=3, expand_hops=0)
    plain = search(docs, request, guards=G, flags=SearchFlags.baseline(), emit_log=False)
    stemmed = search(docs, request, guards=G, flags=SearchFlags.baseline(stem=True, stopwords=True), emit_log=False)
    assert [r.id for r in stemmed.rows] == ["m1"]
    assert "m1" in [r.id for r in plain.rows]
    exact = search(docs, SearchRequest("what about INV-2024-0042", limit=3, expand_hops=0), guards=G,
                   flags=SearchFlags.baseline(stem=True, stopwords=True), emit_log=False)
    assert [r.id for r in exact.rows] == ["m2"]


def test_both_indexes_follow_updates_and_hard_deletes(docs):
    docs.upsert_node(["Message"], {"text": "now relocating to Oslo instead"},
                     guards=Principal.system(ACCOUNT).guards, node_id="m1")
    assert ids(docs, "moving", stemmed=True) == [] and ids(docs, "relocated", stemmed=True) == ["m1"]
    docs.soft_delete("m1", guards=G)
    assert docs.purge(older_than_days=-1, account_id=ACCOUNT) >= 1
    conn = sqlite3.connect(docs.path)
    rows = conn.execute("SELECT (SELECT count(*) FROM node_text), (SELECT count(*) FROM node_text_stem)").fetchone()
    conn.close()
    assert rows == (len(DOCS) - 1, len(DOCS) - 1)
