"""The hybrid retrieval pipeline behind ``memory-search`` (docs/retrieval.md).

EXPAND → ROUTE → per query {EMBED → VECTOR, BM25} → FUSE → BOOST → DEDUP → THRESHOLD + SORT +
SLICE → GRAPH EXPAND → FORMAT. Each stage is a small pure module here; :mod:`.pipeline` wires
them to a :class:`plughost.ports.graph.GraphStore`. Nothing in this package imports numpy or mcp.
The names below load on first use, so registering the tool (boot) does not import the pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from plughost.plugins.memory.retrieval.flags import SearchFlags
    from plughost.plugins.memory.retrieval.pipeline import SearchOutcome, SearchRequest, search

__all__ = ["SearchFlags", "SearchOutcome", "SearchRequest", "search"]


def __getattr__(name: str) -> Any:
    if name == "SearchFlags":
        from plughost.plugins.memory.retrieval.flags import SearchFlags

        return SearchFlags
    if name in ("SearchOutcome", "SearchRequest", "search"):
        from plughost.plugins.memory.retrieval import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
