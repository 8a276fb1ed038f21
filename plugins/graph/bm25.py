"""BM25 as FTS5's ``bm25()`` computes it, fed one account's statistics (docs/graph.md#full-text-search).

Both stores rank a search made under an account with that account's own statistics: its number
of indexed documents, their mean length, and each query phrase's document count among its nodes.
The embedded store holding one account asks FTS5 itself (the same statistics); otherwise each
store counts them and scores its guarded candidates here, with FTS5's arithmetic step for step
(``fts5_aux.c``: k1 = 1.2, b = 0.75, ``log((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, the
phrases summed in query order), so the scores are FTS5's to the bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
"""FTS5's IDF for a phrase in half the documents or more (its log is zero or negative)."""


@dataclass(frozen=True)
class TextStats:
    """One account's full-text statistics: indexed documents and their total length in tokens."""

    docs: int
    tokens: int

    @property
    def avgdl(self) -> float:
        return float(self.tokens) / float(self.docs) if self.docs else 0.0


def idf(docs: int, hits: int) -> float:
    """FTS5's IDF of a phrase found in ``hits`` of ``docs`` documents (statistics read a moment
    earlier may count fewer documents than a phrase's hits: that is the floor too, never an error)."""
    ratio = (docs - hits + 0.5) / (hits + 0.5)
    value = math.log(ratio) if ratio > 0.0 else 0.0
    return IDF_FLOOR if value <= 0.0 else value


def scores(freqs: Sequence[Any], lengths: Any, idfs: Sequence[float], avgdl: float) -> Any:
    """Each document's BM25 (the positive of what ``bm25()`` returns): ``freqs[i]`` holds phrase
    ``i``'s count in each document, ``lengths`` each document's length in tokens (numpy arrays,
    or sequences). Element-wise IEEE operations in FTS5's order, phrase after phrase: each
    document's score is the one ``fts5Bm25Function`` computes, to the bit."""
    import numpy as np

    d = np.asarray(lengths, dtype=np.float64)
    total = np.zeros(d.shape, dtype=np.float64)
    norm = K1 * (1 - B + B * d / avgdl)
    for f, w in zip(freqs, idfs, strict=True):
        fd = np.asarray(f, dtype=np.float64)
        total += w * ((fd * (K1 + 1.0)) / (fd + norm))
    return total


def phrase_counts(positions: Mapping[str, Sequence[int]], phrase: Sequence[str]) -> int:
    """How often ``phrase`` (tokens) occurs in a document, given each token's offsets in it."""
    first = positions.get(phrase[0], ())
    if len(phrase) == 1:
        return len(first)
    rest = [set(positions.get(t, ())) for t in phrase[1:]]
    return sum(1 for o in first if all(o + i + 1 in s for i, s in enumerate(rest)))


def text_counts(texts: Sequence[str], phrases: Sequence[Sequence[str]]) -> tuple[list[list[int]], list[int]]:
    """Each phrase's count in each analysed text (terms joined by single spaces, as Neo4j's
    ``ftsText``), and each text's length in terms."""
    terms = [t.split() for t in texts]
    freqs = []
    for phrase in phrases:
        if len(phrase) == 1:
            freqs.append([ts.count(phrase[0]) for ts in terms])
        else:
            freqs.append([phrase_counts(offsets(ts), phrase) if phrase[0] in ts else 0 for ts in terms])
    return freqs, [len(ts) for ts in terms]


def offsets(terms: Iterable[str]) -> dict[str, list[int]]:
    """Each term's offsets in a document given as its terms in order."""
    out: dict[str, list[int]] = {}
    for i, t in enumerate(terms):
        out.setdefault(t, []).append(i)
    return out


def phrase_idfs(freqs: Sequence[Any], stats: TextStats) -> list[float]:
    """Each phrase's IDF over the account: ``freqs[i]`` must hold phrase ``i``'s count in every
    document of the account that holds it (whatever the guards later keep)."""
    import numpy as np

    return [idf(stats.docs, int(np.count_nonzero(np.asarray(f)))) for f in freqs]
