"""The ``memory-search`` MCP tool (docs/retrieval.md): its handler. PLUGIN.md declares it (description,
``inputSchema``: the limit's maximum is :data:`~plughost.plugins.memory.retrieval.pipeline.MAX_LIMIT`, the
``retrievalClass`` values :data:`~plughost.plugins.memory.retrieval.route.RETRIEVAL_CLASSES`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plughost import Tool

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host


def search_tool(host: Host) -> Tool:
    """The tool with its handler bound to ``host``. The pipeline loads on the first call, not with the
    tool surface (``plughost boot --check`` lists the tool and never searches)."""

    def memory_search(query: str, limit: int = 10, labels: list[str] | None = None,
                      fields: list[str] | None = None, expandHops: int = 1,  # noqa: N803
                      retrievalClass: str | None = None) -> str:  # noqa: N803
        from plughost.plugins.memory.retrieval.pipeline import SearchRequest
        from plughost.plugins.memory.retrieval.service import run_search

        request = SearchRequest(query, limit, labels, fields, expandHops, retrievalClass)
        return run_search(host, request).text

    return Tool("memory-search", memory_search)
