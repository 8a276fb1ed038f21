"""Hook implementations of the memory plugin.

Kept cheap to import: everything heavy (numpy, onnxruntime, httpx, mcp) is imported inside
the functions that need it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from plughost import Principal, hookimpl, log

if TYPE_CHECKING:  # pragma: no cover
    from plughost import (
        CliCommand,
        CollectionSource,
        Embedder,
        Gate,
        Guards,
        Host,
        RetrievalBoost,
        Setting,
        Tool,
    )


@hookimpl
def plughost_embedder(host: Host) -> Embedder | None:
    """local (default) | ollama | none, from PLUGHOST_EMBEDDER."""
    from plughost.plugins.memory.embedding.provider import select_embedder

    return select_embedder(host.env)


@hookimpl
def plughost_tools(host: Host) -> list[Tool]:
    from plughost.plugins.memory.writes.tools import write_tools

    return write_tools(host)


@hookimpl
def plughost_cli_commands(host: Host) -> list[CliCommand]:
    from plughost.plugins.memory.cli import commands

    return commands()


@hookimpl
def plughost_startup(host: Host) -> None:
    """A store/embedder dimension mismatch is a startup error, not a crash mid-write."""
    from plughost.plugins.memory.embedding.provider import check_dimensions

    check_dimensions(host.store(), host.embedder())


@hookimpl(specname="plughost_tools")
def plughost_tools_reports_and_preferences(host: Host) -> list[Tool]:
    """Reports (docs/memory.md#reports) and preferences (docs/memory.md#preferences), kept apart from the write tools."""
    from plughost.plugins.memory.work.preferences import preference_tools
    from plughost.plugins.memory.work.reports import report_tools

    return [*report_tools(host), *preference_tools(host)]


@hookimpl(specname="plughost_cli_commands")
def plughost_cli_commands_reports(host: Host) -> list[CliCommand]:
    """`plughost report write|latest|list`."""
    from plughost.plugins.memory.work.reports import report_commands

    return report_commands()


@hookimpl(specname="plughost_cli_commands")
def plughost_cli_commands_erase(host: Host) -> list[CliCommand]:
    """`plughost erase` and `plughost export` (plugins/memory/writes/erase.py)."""
    from plughost.plugins.memory.writes.erase import commands

    return commands()


@hookimpl(specname="plughost_tools")
def plughost_tools_search(host: Host) -> list[Tool]:
    """memory-search (docs/retrieval.md): the hybrid retrieval pipeline in plugins/memory/retrieval/."""
    from plughost.plugins.memory.retrieval.tool import search_tool

    return [search_tool(host)]


@hookimpl
def plughost_memory_search(host: Host, query: str, principal: Principal, limit: int) -> list[dict[str, Any]] | None:
    """memory-search's pipeline as ``principal`` (plugins/memory/retrieval/service.py), rows not text."""
    from plughost.plugins.memory.retrieval.pipeline import MAX_LIMIT, SearchRequest
    from plughost.plugins.memory.retrieval.service import run_search

    outcome = run_search(host, SearchRequest(query, max(1, min(limit, MAX_LIMIT)), expand_hops=0), principal=principal)
    return [{"id": r.id, "labels": list(r.node.labels), "score": float(r.score), "properties": r.visible_properties()}
            for r in outcome.rows]


@hookimpl
def plughost_query_expansions(host: Host, query: str, retrieval_class: str | None) -> list[str] | None:
    """The built-in, offline, rule-based expander (an LLM provider registered later wins)."""
    from plughost.plugins.memory.retrieval.expand import rule_based

    return rule_based(query, retrieval_class)


@hookimpl
def plughost_active_rules(host: Host, account_id: str) -> dict[str, Any] | None:
    """The account owner's active standing rules (docs/memory.md#preferences), for the channels plugin."""
    from plughost.plugins.memory.work.preferences import active_rules

    return active_rules(host.store(), Principal.owner(account_id).guards)


@hookimpl
def plughost_visitor_memory(host: Host, account_id: str, visitor_key: str, conversation_id: str) -> list[str] | None:
    """A returning visitor's own slices (plugins/memory/conversations/visitor_memory.py), for the channels plugin."""
    from plughost.plugins.memory.conversations.visitor_memory import recall

    return recall(host, account_id, visitor_key, conversation_id)


@hookimpl(specname="plughost_tools")
def plughost_tools_conversations(host: Host) -> list[Tool]:
    """Conversation search and append (docs/memory.md#conversations)."""
    from plughost.plugins.memory.conversations.service import conversation_tools

    return conversation_tools(host)


@hookimpl(specname="plughost_tools")
def plughost_tools_audit(host: Host) -> list[Tool]:
    """``tool-calls`` (plugins/memory/toolcalls/trail.py) and the task provenance tools (plugins/memory/work/tasks.py)
    and time on tasks (plugins/memory/work/worktime.py) and workflows with step records (plugins/memory/work/workflows.py)."""
    from plughost.plugins.memory.sessions.compaction import compaction_tools
    from plughost.plugins.memory.toolcalls.trail import audit_tools
    from plughost.plugins.memory.work.tasks import task_tools
    from plughost.plugins.memory.work.workflows import workflow_tools
    from plughost.plugins.memory.work.worktime import worktime_tools

    return [*audit_tools(host), *task_tools(host), *worktime_tools(host), *compaction_tools(host),
            *workflow_tools(host)]


@hookimpl
def plughost_tool_called(host: Host, plugin: str, tool: str, arguments: dict[str, Any], result: str,
                         is_error: bool, started_at: str, completed_at: str) -> None:
    """A plughost MCP call outside Claude Code becomes a ToolCall node (plugins/memory/toolcalls/trail.py),
    queued for the background writer (plugins/memory/toolcalls/writer.py)."""
    from plughost.plugins.memory.toolcalls import writer as toolcall_writer
    from plughost.plugins.memory.toolcalls.trail import served_call

    call = served_call(host, plugin=plugin, tool=tool, arguments=arguments, result=result, is_error=is_error,
                       started_at=started_at, completed_at=completed_at)
    if call is not None:
        toolcall_writer.submit(host, call)


@hookimpl
def plughost_surface_context(host: Host, query: str, guards: Guards, limit: int,
                             exclude: list[str]) -> list[dict[str, Any]] | None:
    """Prompt-time surfacing's items: a guarded memory-search (plugins/memory/surfacing/search.py)."""
    from plughost.plugins.memory.surfacing.search import surface_items

    return surface_items(host, query, guards, limit, exclude)


@hookimpl(specname="plughost_startup")
def plughost_startup_surfacing(host: Host) -> None:
    """Under ``plughost serve``: the loopback listener the UserPromptSubmit hook asks first, and the
    watcher that keeps the account's folder collections fresh."""
    from plughost.plugins.memory.collections import watch
    from plughost.plugins.memory.surfacing.server import start

    start(host)
    watch.start(host)


@hookimpl(specname="plughost_startup")
def plughost_startup_embed_queue(host: Host) -> None:
    """Under ``plughost serve``: the background embedder of stored conversation turns."""
    from plughost.plugins.memory.embedding import queue as embed_queue

    embed_queue.start(host)


@hookimpl(specname="plughost_startup")
def plughost_startup_standing_audit(host: Host) -> None:
    """Under ``plughost serve``: the standing audits every ``PLUGHOST_AUDIT_PERIOD`` seconds."""
    from plughost.plugins.memory.upkeep import standing as standing_audit

    standing_audit.start(host)


@hookimpl
def plughost_messages_stored(host: Host, account_id: str, message_ids: list[str]) -> None:
    """Stored Messages get their vector (queued under ``serve``, in place elsewhere) and, with
    ``PLUGHOST_MEMORY_ENTITIES=1``, their entities and facts (the turn recorder's transcripts too)."""
    from plughost.plugins.memory import entities
    from plughost.plugins.memory.embedding import queue as embed_queue

    if message_ids and entities.enabled(host.env):
        try:
            entities.write_stored(host.store(), account_id, message_ids)
        except Exception as exc:  # noqa: BLE001 — stored all the same; reindex --entities extracts them later
            log("memory-entities", "warn", reason="extract-failed", count=len(message_ids), error=type(exc).__name__)
    embed_queue.messages_stored(host, account_id, message_ids)


@hookimpl
def plughost_knowledge_changed(host: Host, account_id: str, agents: list[str] | None, reason: str) -> None:
    """The public agents' KNOWLEDGE.md assembled again (docs/agents.md#knowledge)."""
    from plughost.plugins.memory.knowledge.rebuild import rebuild

    rebuild(host.store(), host.home, account_id, agents, reason=reason)


@hookimpl
def plughost_boot_gates(host: Host) -> list[Gate]:
    from plughost.plugins.memory.surfacing.settings_gate import surface_settings_gate

    return [surface_settings_gate()]


SHUTDOWN_ORDER = ("upkeep.standing", "toolcalls.writer", "embedding.queue", "collections.watch", "surfacing.server")
"""The modules whose ``stop(host)`` ends a thread or listener, in order: the standing audits before the
store closes, every queued tool call written before it closes, then the embed queue, the collections
watcher and the surfacing listener."""


@hookimpl
def plughost_shutdown(host: Host) -> None:
    """Stops what this process started. A module never imported started nothing: only the loaded ones
    are asked, so a one-shot command (``plughost boot --check``) does not import them to stop nothing."""
    for name in SHUTDOWN_ORDER:
        module = sys.modules.get(f"plughost.plugins.memory.{name}")
        if module is not None:
            module.stop(host)


@hookimpl
def plughost_collection_sources(host: Host) -> list[CollectionSource]:
    """Folder collections' built-in source: Markdown notes."""
    from plughost.plugins.memory.collections.markdown import MARKDOWN

    return [MARKDOWN]


@hookimpl
def plughost_recall_used(host: Host, reply: str, items: dict[str, dict[str, str]], tool_text: str) -> list[str]:
    """Recall tracking's built-in judge: ids, titles, six-word runs, distinctive words."""
    from plughost.plugins.memory.surfacing.recall import used_items

    return used_items(reply, items, tool_text)


@hookimpl(specname="plughost_retrieval_boosts")
def plughost_retrieval_boosts_recall(host: Host) -> list[RetrievalBoost]:
    """Pinned items up, snoozed items down, for the process's account (``PLUGHOST_RECALL_RANKING=1``)."""
    from plughost.plugins.memory.surfacing.recall import boost, ranking_enabled

    account = host.principal.account
    if not account or not ranking_enabled(host.env):
        return []
    return [boost(host.home, account)]


@hookimpl
def plughost_settings() -> list[Setting]:
    from plughost.plugins.memory.settings import ALL

    return list(ALL)


__all__ = ["plughost_recall_used", "plughost_retrieval_boosts_recall", "plughost_collection_sources", "plughost_surface_context", "plughost_startup_surfacing", "plughost_shutdown",
           "plughost_embedder", "plughost_tools", "plughost_query_expansions", "plughost_cli_commands",
           "plughost_startup", "plughost_tools_reports_and_preferences", "plughost_cli_commands_reports",
           "plughost_active_rules", "plughost_visitor_memory", "plughost_tools_search", "plughost_tools_conversations",
           "plughost_tools_audit", "plughost_tool_called", "plughost_startup_embed_queue", "plughost_startup_standing_audit", "plughost_messages_stored", "plughost_knowledge_changed",
           "plughost_settings"]
