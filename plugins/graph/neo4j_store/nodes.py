"""Neo4j records (and the hit maps the search queries build) → :class:`plughost.ports.graph.Node` / :class:`Hit`."""

from __future__ import annotations

from typing import Any

from plughost import Hit, Node
from plughost.plugins.graph.analysis import INDEX_TEXT
from plughost.plugins.graph.neo4j_store.queries import BASE_LABEL


def node_of(record: Any) -> Node:
    """A node as the port returns it: the hidden ``GraphNode`` label, the vector and the stored
    id, keyword index and analysed text properties left out."""
    props = dict(record["props"])
    props.pop("embedding", None)
    props.pop(INDEX_TEXT, None)
    props.pop("keywordsLower", None)
    props.pop("id", None)
    labels = tuple(label for label in record["labels"] if label != BASE_LABEL)
    return Node(record["id"], labels, props, props.get("accountId", ""), bool(record["hasEmbedding"]))


def cosine_hits(rows: list[Any]) -> list[Hit]:
    """Records (or hit maps) to hits; Neo4j's cosine is (1 + cos) / 2, the port's is the cosine."""
    return [Hit(node_of(r), 2.0 * float(r["score"]) - 1.0) for r in rows]
