"""The hybrid retrieval pipeline behind ``memory-search`` (docs/retrieval.md).

EXPAND → ROUTE → per query {EMBED → VECTOR, BM25} → FUSE → BOOST → DEDUP → THRESHOLD + SORT +
SLICE → GRAPH EXPAND → FORMAT. Each stage is a small pure module here; :mod:`.pipeline` wires
them to a :class:`plughost.ports.graph.GraphStore`. Nothing in this package imports numpy or mcp.
"""

from plughost.plugins.memory.retrieval.flags import SearchFlags
from plughost.plugins.memory.retrieval.pipeline import SearchOutcome, SearchRequest, search

__all__ = ["SearchFlags", "SearchOutcome", "SearchRequest", "search"]
