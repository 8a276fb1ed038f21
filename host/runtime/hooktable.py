"""The typed hook table: every hook of :mod:`plughost.runtime.hookspecs` with how it is called and what it returns.

A hook's *kind* says how the host combines answers, and its type parameter says what callers get
back, so ``host.collect(hooktable.TOOLS)`` is a list of ``Contribution[Tool]`` to a type checker
and ``host.provide(hooktable.STORE)`` a :class:`plughost.ports.graph.GraphStore`:

- :class:`ListHook` — every implementation returns a list of ``kind``; flattened, type-checked,
  attributed to the plugin that returned each item; duplicate keys are an error naming both.
- :class:`EachHook` — a notification: every implementation runs, failures are isolated.
- :class:`OneHook` — firstresult: the first non-None answer wins, in pluggy's order.
- :class:`ProviderHook` — a single-provider capability: one plugin answers, chosen by a
  deterministic rule (an external plugin beats a built-in; the operator may name one).

Every call goes through pluggy's own loop, so ``wrapper=True``, ``tryfirst`` and ``trylast``
work and ``add_hookcall_monitoring`` sees each call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from plughost.ports.embedding import Embedder
from plughost.ports.graph import GraphStore
from plughost.runtime.types import (
    AgentRunner,
    ChannelAdapter,
    CliCommand,
    CollectionSource,
    Gate,
    OwnerSessions,
    RetrievalBoost,
    Route,
    Tool,
)
from plughost.util import settings
from plughost.util.settings import Setting

T = TypeVar("T")


@dataclass(frozen=True)
class ListHook(Generic[T]):
    """A hook whose implementations each return a list of ``kind`` (or one ``kind``, or None)."""

    name: str
    kind: type[T]
    unique: Literal["global", "plugin"] = "global"  # "plugin": a key may repeat across plugins


@dataclass(frozen=True)
class EachHook:
    """A notification hook: every implementation runs; one raising does not stop the others."""

    name: str
    reverse: bool = False  # run in registration order (shutdown mirrors startup)


@dataclass(frozen=True)
class OneHook(Generic[T]):
    """A firstresult hook: the first non-None answer, or None when no plugin has an opinion."""

    name: str


@dataclass(frozen=True)
class ProviderHook(Generic[T]):
    """A capability with one provider. ``setting`` is the operator's choice: a provider plugin's
    name, or one of ``builtin_options`` (the built-in provider's own settings, which pick it)."""

    name: str
    setting: Setting[str | None]
    what: str
    builtin_options: tuple[str, ...] = ()

    @property
    def env(self) -> str:
        """The variable that names the choice."""
        return self.setting.name


TOOLS = ListHook("plughost_tools", Tool, unique="plugin")
BOOT_GATES = ListHook("plughost_boot_gates", Gate)
ROUTES = ListHook("plughost_routes", Route)
CLI_COMMANDS = ListHook("plughost_cli_commands", CliCommand)
CHANNEL_ADAPTERS = ListHook("plughost_channel_adapters", ChannelAdapter)
RETRIEVAL_BOOSTS = ListHook("plughost_retrieval_boosts", RetrievalBoost)
SETTINGS = ListHook("plughost_settings", Setting)
STARTUP = EachHook("plughost_startup")
SHUTDOWN = EachHook("plughost_shutdown", reverse=True)
ACCOUNT_CREATED = EachHook("plughost_account_created")
STORE: ProviderHook[GraphStore] = ProviderHook("plughost_store", settings.STORE, what="graph store",
                                               builtin_options=("sqlite", "neo4j"))
EMBEDDER: ProviderHook[Embedder] = ProviderHook("plughost_embedder", settings.EMBEDDER, what="embedder",
                                                builtin_options=("local", "ollama", "none"))
PROVIDERS = (STORE, EMBEDDER)
QUERY_EXPANSIONS: OneHook[list[str]] = OneHook("plughost_query_expansions")
RERANK: OneHook[list[dict[str, Any]]] = OneHook("plughost_rerank")
SCREEN_MESSAGE: OneHook[dict[str, Any]] = OneHook("plughost_screen_message")
AGENT_RUNNER: OneHook[AgentRunner] = OneHook("plughost_agent_runner")
OWNER_SESSIONS: OneHook[OwnerSessions] = OneHook("plughost_owner_sessions")
ACTIVE_RULES: OneHook[dict[str, Any]] = OneHook("plughost_active_rules")
SURFACE_CONTEXT: OneHook[list[dict[str, Any]]] = OneHook("plughost_surface_context")
VISITOR_MEMORY: OneHook[list[str]] = OneHook("plughost_visitor_memory")
MEMORY_SEARCH: OneHook[list[dict[str, Any]]] = OneHook("plughost_memory_search")
COLLECTION_SOURCES = ListHook("plughost_collection_sources", CollectionSource)
RECALL_USED: OneHook[list[str]] = OneHook("plughost_recall_used")
TOOL_CALLED = EachHook("plughost_tool_called")
MESSAGES_STORED = EachHook("plughost_messages_stored")
PERSON_ERASED = EachHook("plughost_person_erased")
KNOWLEDGE_CHANGED = EachHook("plughost_knowledge_changed")

AnyHook = ListHook[Any] | EachHook | OneHook[Any] | ProviderHook[Any]

TABLE: dict[str, AnyHook] = {
    h.name: h
    for h in (TOOLS, BOOT_GATES, ROUTES, CLI_COMMANDS, CHANNEL_ADAPTERS, RETRIEVAL_BOOSTS, STARTUP, SHUTDOWN,
              ACCOUNT_CREATED,
              STORE, EMBEDDER, QUERY_EXPANSIONS, RERANK, SCREEN_MESSAGE, AGENT_RUNNER, OWNER_SESSIONS, ACTIVE_RULES,
              SURFACE_CONTEXT, VISITOR_MEMORY, MEMORY_SEARCH, COLLECTION_SOURCES, RECALL_USED, TOOL_CALLED,
              MESSAGES_STORED, PERSON_ERASED, KNOWLEDGE_CHANGED, SETTINGS)
}
"""Every hook by name; a test pins it to the specs in :mod:`plughost.runtime.hookspecs`."""
