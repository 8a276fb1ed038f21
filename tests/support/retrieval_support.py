"""Retrieval test helpers: a lookup embedder, the account, and row builders for the pure-stage tests (real host types, no store)."""

from __future__ import annotations

from typing import Any

from plughost.plugins.memory.retrieval.rows import Row
from plughost.ports.graph import Hit, Neighbor, Node

ACCOUNT = "acct0001-aaaa"


class LookupEmbedder:
    """A deterministic Embedder for fixed-graph tests: each query text maps to a chosen vector."""

    name = "lookup"

    def __init__(self, table, dimensions=4, fail=False):
        self.table = table
        self.dimensions = dimensions
        self.fail = fail
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        if self.fail:
            raise ConnectionError("embedder down")
        return [list(self.table.get(t, [0.5, 0.5, 0.5, 0.5])) for t in texts]


def node(node_id: str, *labels: str, **props: Any) -> Node:
    return Node(node_id, tuple(labels or ("Concept",)), dict(props), "acct0001")


def hit(node_id: str, score: float, **props: Any) -> Hit:
    return Hit(node(node_id, **props), score)


def row(node_id: str, score: float, *labels: str, **props: Any) -> Row:
    r = Row(node(node_id, *labels, **props))
    r.score = score
    return r


def neighbour(node_id: str, edge: str, direction: str = "out", *labels: str, **props: Any) -> Neighbor:
    return Neighbor(node(node_id, *labels, **props), edge, direction)  # type: ignore[arg-type]
