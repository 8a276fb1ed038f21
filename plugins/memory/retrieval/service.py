"""``memory-search`` wired to a loaded host: store, embedder, hooks, flags, guards, subscriptions.

Shared by the MCP tool and ``plughost memory search`` so both run the same code path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plughost import Principal
from plughost.api import hooks
from plughost.api.principals import resolve
from plughost.plugins.memory.conversations.service import Conversations
from plughost.plugins.memory.retrieval.flags import SearchFlags
from plughost.plugins.memory.retrieval.keywords import agent_keywords
from plughost.plugins.memory.retrieval.pipeline import SearchOutcome, SearchRequest, search

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host


def run_search(host: Host, request: SearchRequest, env: Mapping[str, str] | None = None,
               principal: Principal | None = None) -> SearchOutcome:
    """One search as ``principal`` (the call's: ``plughost.ports.principal``; ``env`` an environment to
    resolve one from instead, as a test or a command's ``--account`` does)."""
    if principal is None:
        principal = host.principal if env is None else resolve(env)
    env = host.env if env is None else env
    request = request.checked()
    guards = principal.guards
    flags = SearchFlags.from_env(env)

    def expander(query: str, retrieval_class: str | None) -> list[str] | None:
        return host.first(hooks.QUERY_EXPANSIONS, query=query, retrieval_class=retrieval_class)

    def reranker(rows: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        return host.first(hooks.RERANK, query=request.query, rows=rows)

    boosts = [c.item for c in host.collect(hooks.RETRIEVAL_BOOSTS)] if flags.boosts else []
    keywords = agent_keywords(host.home, guards.account_id, guards.agent_slug)
    visible = Conversations(host.store(), None, env, principal).visible()  # narrowed: own conversation only
    return search(
        host.store(), request, guards=guards, embedder=host.embedder(), flags=flags,
        expander=expander if flags.expansion else None,
        # no provider: no reranker, so no call builds the 30 row views a provider would read
        reranker=reranker if host.has_implementations(hooks.RERANK) else None, extra_boosts=boosts,
        keywords=keywords, visible=visible,
    )
