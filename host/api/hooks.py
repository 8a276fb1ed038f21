"""Calling other plugins through the host: the typed hook handles a plugin passes to
``host.collect`` / ``host.first`` / ``host.call_each`` / ``host.has_implementations``
(docs/hooks.md), and the types those calls return; ``run_agent`` hands one turn to the agent runner. For any
plugin that asks other plugins for something."""

from plughost.runtime.calls import Collected, Contribution
from plughost.runtime.hooktable import (
    ACCOUNT_CREATED,
    ACTIVE_RULES,
    AGENT_RUNNER,
    BOOT_GATES,
    CHANNEL_ADAPTERS,
    CLI_COMMANDS,
    COLLECTION_SOURCES,
    EMBEDDER,
    KNOWLEDGE_CHANGED,
    MEMORY_SEARCH,
    MESSAGES_STORED,
    OWNER_SESSIONS,
    PERSON_ERASED,
    QUERY_EXPANSIONS,
    RECALL_USED,
    RERANK,
    RETRIEVAL_BOOSTS,
    ROUTES,
    SCREEN_MESSAGE,
    SETTINGS,
    SHUTDOWN,
    STARTUP,
    STORE,
    SURFACE_CONTEXT,
    TOOL_CALLED,
    TOOLS,
    VISITOR_MEMORY,
    EachHook,
    ListHook,
    OneHook,
    ProviderHook,
)
from plughost.runtime.types import PERMISSION_MODES, OwnerSessions, run_agent

__all__ = [
    "ACCOUNT_CREATED", "ACTIVE_RULES", "AGENT_RUNNER", "BOOT_GATES", "CHANNEL_ADAPTERS", "CLI_COMMANDS",
    "COLLECTION_SOURCES", "EMBEDDER", "KNOWLEDGE_CHANGED", "MEMORY_SEARCH", "MESSAGES_STORED", "OWNER_SESSIONS", "PERSON_ERASED", "QUERY_EXPANSIONS",
    "RECALL_USED", "RERANK", "RETRIEVAL_BOOSTS", "ROUTES", "SCREEN_MESSAGE", "SETTINGS", "SHUTDOWN", "STARTUP",
    "STORE", "SURFACE_CONTEXT", "TOOL_CALLED", "TOOLS", "VISITOR_MEMORY",
    "ListHook", "EachHook", "OneHook", "ProviderHook", "Contribution", "Collected",
    "run_agent", "OwnerSessions", "PERMISSION_MODES",
]
