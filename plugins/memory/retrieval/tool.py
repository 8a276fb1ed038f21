"""The ``memory-search`` MCP tool (docs/retrieval.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from host.runtime.types import Tool
from plugins.memory.retrieval.pipeline import MAX_LIMIT, SearchRequest
from plugins.memory.retrieval.route import RETRIEVAL_CLASSES

if TYPE_CHECKING:  # pragma: no cover
    from host.runtime.host import Host

DESCRIPTION = (
    "Search memory: hybrid vector + BM25 retrieval over the knowledge graph, with 1-hop related "
    "nodes. Returns labels, id, score and properties per result."
)

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["query"],
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "What to look for, in natural language or exact terms."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 10,
                  "description": "How many results to return."},
        "labels": {"type": "array", "items": {"type": "string"},
                   "description": "Only nodes carrying one of these labels."},
        "fields": {"type": "array", "items": {"type": "string"},
                   "description": "Return only these property keys per result ([] for none)."},
        "expandHops": {"type": "integer", "enum": [0, 1], "default": 1,
                       "description": "1 attaches related nodes; 0 gives compact results."},
        "retrievalClass": {"type": "string", "enum": list(RETRIEVAL_CLASSES),
                           "description": "Routing hint: entity, temporal, event, general or none."},
    },
}


def search_tool(host: Host) -> Tool:
    """The tool with its handler bound to ``host``."""

    def memory_search(query: str, limit: int = 10, labels: list[str] | None = None,
                      fields: list[str] | None = None, expandHops: int = 1,  # noqa: N803
                      retrievalClass: str | None = None) -> str:  # noqa: N803
        from plugins.memory.retrieval.service import run_search

        request = SearchRequest(query, limit, labels, fields, expandHops, retrievalClass)
        return run_search(host, request).text

    return Tool("memory-search", DESCRIPTION, memory_search, SEARCH_SCHEMA, admin_allowlist=True)
