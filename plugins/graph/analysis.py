"""The embedded store's stemmed text analysis, as plain terms another index can hold.

The embedded store ranks stemmed full-text search on ``node_text_stem`` (``schema.sql``): FTS5's
``porter unicode61 remove_diacritics 2`` over one text per node, the text-property union
(:func:`plughost.plugins.graph.common.text_of`), every property weighted alike. The Neo4j store
indexes the same terms: each node carries :data:`INDEX_TEXT`, its union already tokenised,
folded and stemmed here by that very tokenizer (an in-memory FTS5 table read back through
``fts5vocab``), and its full-text index splits on whitespace only. So both stores see the same
terms, stop words kept, digits and hyphens split alike, the same document lengths; a query is
analysed the same way (:func:`query_terms`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from plughost.api.store import TEXT_PROPERTIES
from plughost.plugins.graph.common import fts_terms, text_of

TOKENIZE = "porter unicode61 remove_diacritics 2"
"""``node_text_stem``'s tokenizer (``schema.sql``)."""
PLAIN_TOKENIZE = "unicode61 remove_diacritics 2"
"""``node_text``'s tokenizer (the unstemmed baseline index)."""
INDEX_TEXT = "ftsText"
"""The Neo4j node property holding a node's analysed text (hidden from what the port returns)."""
BATCH = 500
"""Texts analysed per round trip through the in-memory table."""


class _Analyser:
    """One in-memory FTS5 table with the embedded store's stemmed tokenizer (guarded by a lock)."""

    def __init__(self, tokenize: str) -> None:
        self.lock = threading.Lock()
        self.conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.conn.execute(f"CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = '{tokenize}')")
        self.conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")

    def terms(self, texts: Sequence[str]) -> list[list[str]]:
        out: list[list[str]] = [[] for _ in texts]
        with self.lock:
            for start in range(0, len(texts), BATCH):
                part = texts[start:start + BATCH]
                self.conn.execute("BEGIN")
                try:
                    self.conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)",
                                          ((start + i + 1, x) for i, x in enumerate(part) if x))
                    for doc, term in self.conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
                        out[doc - 1].append(term)
                    self.conn.execute("DELETE FROM t")
                finally:
                    self.conn.execute("COMMIT")
        return out


_analysers: dict[str, _Analyser] = {}
_made = threading.Lock()


def analysed(texts: Sequence[str], tokenize: str = TOKENIZE) -> list[list[str]]:
    """Each text's terms in order, as ``node_text_stem`` (or the index of ``tokenize``) indexes them."""
    analyser = _analysers.get(tokenize)
    if analyser is None:
        with _made:
            analyser = _analysers.setdefault(tokenize, _Analyser(tokenize))
    return analyser.terms([str(t) for t in texts])


def index_texts(props: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each node's :data:`INDEX_TEXT`: its text-property union's stemmed terms, space-separated
    (empty when it has no text), the properties in :data:`TEXT_PROPERTIES` order whatever order
    a write or a read gave them (only a phrase across two properties could tell)."""
    return [" ".join(terms) for terms in analysed([text_of({k: p[k] for k in TEXT_PROPERTIES if k in p})
                                                   for p in props])]


def search_keys(texts: Sequence[str], *, stemmed: bool) -> list[tuple[tuple[str, ...], ...]]:
    """For each text, the query the embedded store's full-text search makes of it (its
    :func:`fts_terms`, each a phrase, ORed), as a key: the phrases' tokens (lower-cased; with
    ``stemmed``, folded and stemmed as ``node_text_stem``'s, in one round trip), the phrases
    sorted. Texts with one key are one query, the same matches with the same ``bm25()``: the same
    words in another order and, with ``stemmed``, a word's other number ("masks" for "mask")."""
    terms = [fts_terms(text) for text in texts]
    if not stemmed:
        return [tuple(sorted(tuple(t) for t in found)) for found in terms]
    analysed_terms = iter(analysed([" ".join(t) for found in terms for t in found]))
    return [tuple(sorted(tuple(next(analysed_terms)) for _ in found)) for found in terms]


def query_terms(query: str, tokenize: str = TOKENIZE) -> list[list[str]]:
    """User text as the embedded store searches it (:func:`fts_terms`, each term a phrase of
    tokens), each token folded and stemmed as the index's (or as ``tokenize`` folds it): a term
    that analyses to nothing is dropped."""
    terms = fts_terms(query)
    stems = analysed([" ".join(t) for t in terms], tokenize)
    return [s for s in stems if s]
