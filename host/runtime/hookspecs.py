"""Every hook a plughost plugin may implement (docs/architecture.md#hooks).

Each spec is documented with one template: what it is for, **Parameters**, **Combines**
(how results from several plugins are combined), **Fires** (when the host calls it) and
**Example**. `tests/host/test_hooks.py` checks the template and that every hook has a
``test_hook_<name>`` test; `docs/hooks.md` is generated from these docstrings.

Implement a hook with ``@plughost.hookimpl`` (``from plughost import hookimpl``) in the module
named by the plugin's entry point or PLUGIN.md ``python`` field; everything a plugin may use is in
``plughost`` and ``plughost.api`` (docs/plugin-api.md), and ``host`` is a ``plughost.Host``. Hook implementations may accept any subset of the parameters. The
host calls every hook through pluggy, so ``tryfirst``/``trylast`` and ``wrapper=True`` work;
:mod:`plughost.api.hooks` has each hook's handle for ``host.collect`` / ``host.first`` /
``host.call_each``, which says how its answers are combined and their type. A hook name
with no spec here fails its plugin at load, with a did-you-mean.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from collections import Counter
    from collections.abc import Callable

    from plughost.ports.embedding import Embedder
    from plughost.ports.graph import GraphStore, Guards
    from plughost.ports.principal import Principal
    from plughost.runtime.plugin_host import PluginHost as Host  # what plugins get: plughost.Host
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
    from plughost.util.settings import Setting

PROJECT = "plughost"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def plughost_tools(host: Host) -> list[Tool]:
    """The MCP tools this plugin serves: their handlers, and for a plugin without PLUGIN.md their
    declaration too.

    **Parameters:** ``host`` — the loaded host (store, embedder, env guards through it).

    **Combines:** lists from every plugin are flattened; each tool is attributed to the plugin
    that returned it; two tools with one name in one plugin are an error naming both. The host
    joins them once with the declarations (the tool table ``plugins list`` shows). A plugin
    with a PLUGIN.md declares its tools there, each fact once (``tools:``; name, description,
    ``adminAllowlist``, ``eager``, ``inputSchema``), and returns ``Tool(name, handler)``: the
    handler and nothing PLUGIN.md declares. A description, schema or flag the code still gives
    that differs from PLUGIN.md, a placeholder description in PLUGIN.md (empty, or the tool's
    name), and a handler PLUGIN.md does not declare (not served) are that plugin's tool problems
    (``plugins list``, ``manifests check``, ``[mcp] op=tool-problem`` / ``op=undeclared-tool``);
    PLUGIN.md's values are what is served. ``Tool.from_function`` derives a schema from the
    handler's signature: it is the schema only when PLUGIN.md gives none, else a check of it.
    Without a PLUGIN.md (an entry-point plugin alone, a plugin registered in process) the
    returned ``Tool`` objects are the declaration, and their optional fields its one home.

    **Fires:** when a plugin's MCP server is built (``plughost mcp serve``, ``/mcp/<plugin>``)
    and when the tool surface needs handlers; never at import.

    **Example:**
    ``return [Tool("echo", echo)]`` where PLUGIN.md declares ``echo``, or
    ``return [Tool.from_function(echo)]`` where ``def echo(text: str) -> str`` and no PLUGIN.md.
    """


@hookspec
def plughost_boot_gates(host: Host) -> list[Gate]:
    """Self-test gates run by ``plughost boot`` (docs/gates.md).

    **Parameters:** ``host`` — the loaded host.

    **Combines:** flattened across plugins; gate names are unique; gates run in ``order``,
    each isolated (one raising is reported as that gate's failure, the others still run).

    **Fires:** once per ``plughost boot`` / ``plughost serve``, after the tool surface is computed.

    **Example:** ``return [Gate("schema-labels", check=check_labels)]``.
    """


@hookspec
def plughost_routes(host: Host) -> list[Route]:
    """HTTP routes to mount on the host's ASGI app.

    **Parameters:** ``host`` — the loaded host.

    **Combines:** flattened; a (methods, path) pair claimed twice is an error naming both plugins.

    **Fires:** once when ``plughost serve`` assembles the app.

    **Example:** ``return [Route("/healthz", endpoint=health)]``.
    """


@hookspec
def plughost_cli_commands(host: Host) -> list[CliCommand]:
    """Top-level ``plughost`` subcommands a plugin adds (``plughost graph import ...``).

    **Parameters:** ``host`` — the loaded host.

    **Combines:** flattened; names are unique and may not shadow a core command.

    **Fires:** when the CLI is asked for a command that is not a core one (or for ``--help``).

    **Example:** ``return [CliCommand("graph", "graph store tools", configure, run)]``.
    """


@hookspec
def plughost_startup(host: Host) -> None:
    """Open what the plugin needs for a long-running process.

    **Parameters:** ``host`` — the loaded host.

    **Combines:** every implementation runs; one raising is logged against its plugin and the
    others still run, except a ``plughost.FatalError`` (a check meant to refuse boot, e.g. an
    embedder whose dimensions differ from the store's): ``serve`` then stops, exit 1, with one
    line naming the plugin and the reason.

    **Fires:** once when ``plughost serve`` starts, after the gates passed.

    **Example:** ``host.state.set(SCHEDULER, start_scheduler())`` with
    ``SCHEDULER: StateKey[Scheduler] = StateKey("my.scheduler")`` in the plugin's module.
    """


@hookspec
def plughost_shutdown(host: Host) -> None:
    """Release what ``plughost_startup`` opened (stores, threads, clients).

    **Parameters:** ``host`` — the loaded host.

    **Combines:** every implementation runs, in registration order (the reverse of
    ``plughost_startup``, which pluggy calls newest first); one raising is logged against its
    plugin and the others still run.

    **Fires:** once on graceful shutdown (SIGTERM/SIGINT) and at the end of ``Host.close()``.

    **Example:** ``(scheduler := host.state.pop(SCHEDULER)) and scheduler.stop()``.
    """


@hookspec(firstresult=True)
def plughost_store(host: Host) -> GraphStore | None:
    """The graph store (a :class:`plughost.GraphStore`).

    **Parameters:** ``host`` — the loaded host; read configuration from ``host.env``.

    **Combines:** one provider answers. ``PLUGHOST_STORE=<plugin>`` names it; ``sqlite`` or
    ``neo4j`` (the built-in graph plugin's backends) pick the built-in (when it is loaded), even
    when a third-party store is installed; unset, an installed (external) plugin is asked before the built-in,
    whatever the names sort to, and None passes to the next. Two external providers refuse boot
    (gate ``single-provider``) naming both, until ``PLUGHOST_STORE`` names one. Any other value
    is a usage error (exit 2) naming the built-in options and the provider plugins.

    **Fires:** lazily, the first time ``host.store()`` is called; the host caches the answer.

    **Example:** ``return SqliteStore(home / "graph.sqlite")``.
    """


@hookspec(firstresult=True)
def plughost_embedder(host: Host) -> Embedder | None:
    """The text embedder (a :class:`plughost.Embedder`).

    **Parameters:** ``host`` — the loaded host.

    **Combines:** one provider answers, chosen as for ``plughost_store`` with
    ``PLUGHOST_EMBEDDER=<plugin>``; ``local``, ``ollama`` and ``none`` pick the built-in memory
    plugin's embedder (``none``: no embedder, even when a third-party one is installed); any
    other value is a usage error. None means no usable embedder.

    **Fires:** lazily, the first time ``host.embedder()`` is called; cached.

    **Example:** ``return OllamaEmbedder(url, model)`` when ``PLUGHOST_EMBEDDER=ollama``.
    """


@hookspec
def plughost_channel_adapters(host: Host) -> list[ChannelAdapter]:
    """Messaging channels (webchat, Telegram, WhatsApp ...).

    **Parameters:** ``host`` — the loaded host.

    **Combines:** flattened; channel names are unique.

    **Fires:** when ``plughost serve`` assembles the app (their routes are mounted) and when a
    reply must be sent (``plughost channels retry``).

    **Example:** ``return [ChannelAdapter("telegram", routes=(...), send=send_message)]``.
    """


@hookspec(firstresult=True)
def plughost_query_expansions(host: Host, query: str, retrieval_class: str | None) -> list[str] | None:
    """Paraphrases of a search query (``PLUGHOST_GS_EXPANSION``).

    **Parameters:** ``query`` — the user's query; ``retrieval_class`` — entity / temporal /
    event / general / none or None.

    **Combines:** firstresult; None means "no opinion". A raising provider degrades the search
    to the original query.

    **Fires:** once per ``memory-search`` call with expansion on (results cached 1 h).

    **Example:** ``return [query, query.replace("price", "cost")]``.
    """


@hookspec(firstresult=True)
def plughost_rerank(host: Host, query: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Reorder fused search rows (a cross-encoder or an LLM may plug in here).

    **Parameters:** ``query`` — the query; ``rows`` — the best ``PLUGHOST_GS_RERANK_DEPTH`` (30)
    fused rows with ``score`` keys (the rest follow the answer in fused order).

    **Combines:** firstresult; None keeps the order.

    **Fires:** after BOOST and DEDUP, before the slice, on every ``memory-search`` call.

    **Example:** ``return sorted(rows, key=my_score, reverse=True)``.
    """


@hookspec
def plughost_retrieval_boosts(host: Host) -> list[RetrievalBoost]:
    """Extra score bumps for the BOOST stage (``PLUGHOST_GS_BOOSTS``).

    **Parameters:** ``host`` — the loaded host.

    **Combines:** flattened; names unique; bumps add up.

    **Fires:** once per search with boosts on.

    **Example:** ``return [RetrievalBoost("pinned", lambda row: 0.1 if row["props"].get("pinned") else 0)]``.
    """


@hookspec(firstresult=True)
def plughost_screen_message(host: Host, message: dict[str, Any]) -> dict[str, Any] | None:
    """Classify an inbound message (verdict, injection flag, intent, language, complexity).

    **Parameters:** ``message`` — ``{channel, text, sender, role}``.

    **Combines:** firstresult; None or a raise or more than 3 s falls through to the local check.

    **Fires:** once per inbound message, before routing.

    **Example:** ``return {"verdict": "CLEAN", "intent": "question", "lang": "en"}``.
    """


@hookspec(firstresult=True)
def plughost_agent_runner(host: Host) -> AgentRunner | None:
    """The agent runner that turns an agent turn (``plughost.AgentTurn``) into a reply.

    **Parameters:** ``host`` — the loaded host.

    **Combines:** firstresult; the channels plugin answers with its built-in runner chosen by
    ``PLUGHOST_AGENT`` (``memory``, the default; ``claude``; ``command``), and a plugin
    registered after it (any external plugin) is asked first.

    **Fires:** once per host, when ``plughost serve`` starts (the runner warms up) or on the
    first message that needs an agent; the answer is cached.

    **Example:** ``return HttpRunner(url)`` (an object with ``async run(session_id: str, turn: AgentTurn) -> str``;
    a ``run`` still taking the payload dict gets ``turn.as_dict()`` and a DeprecationWarning, until the
    next minor release).
    """


@hookspec(firstresult=True)
def plughost_owner_sessions(host: Host) -> OwnerSessions | None:
    """An owner's agent sessions (``plughost.api.hooks.OwnerSessions``): list, start with a first
    message in a permission mode and model, stop, resume, purge.

    **Parameters:** ``host`` — the loaded host.

    **Combines:** firstresult; the channels plugin answers with the admin conversations its admin
    chat keeps (one agent session each), and a plugin registered after it is asked first.

    **Fires:** when the admin plugin's ``/api/admin/sessions`` routes or the console's sessions page
    are used; the caller has checked the admin session and validated the mode and the model.

    **Example:** ``return SessionManager(host)`` (an object with ``list``, ``async start``, ``stop``,
    ``resume`` and ``purge``, each taking the caller's principal and the user).
    """


@hookspec
def plughost_account_created(host: Host, account_id: str, users: list[dict[str, Any]]) -> None:
    """An account's folder was written (``plughost account create``): seed what it needs in the graph.

    **Parameters:** ``account_id`` — the account; ``users`` — its ``users.json`` entries (entry 0
    is the owner, ``role: owner``; others ``role: admin``), each with ``userId`` and ``name``.

    **Combines:** every implementation runs; one raising is reported against its plugin (the
    command exits 1 naming it) and the others still run. Must be idempotent: the command runs it
    again on ``--force`` or when it completes a stub account.

    **Fires:** once per ``plughost account create``, after the files are written.

    **Example:** the graph plugin upserts ``AdminUser {role: owner}`` + ``UserProfile`` per admin,
    produced by an ``account-bootstrap`` Task.
    """


@hookspec(firstresult=True)
def plughost_active_rules(host: Host, account_id: str) -> dict[str, Any] | None:
    """The account owner's standing rules, injected into every admin turn (docs/memory.md#preferences).

    **Parameters:** ``account_id`` — the account.

    **Combines:** firstresult; returns ``{"rules": [...], "source": "owner"|"no-owner", "owner": id}``.

    **Fires:** once per admin turn, while the payload is composed.

    **Example:** ``return {"rules": [], "source": "no-owner", "owner": None}``.
    """


@hookspec(firstresult=True)
def plughost_visitor_memory(host: Host, account_id: str, visitor_key: str, conversation_id: str) -> list[str] | None:
    """A returning visitor's own memory for their turn's payload (docs/channels.md#visitor-memory).

    **Parameters:** ``account_id`` — the account; ``visitor_key`` — the hash of the token only the
    visitor's browser or number carries (:func:`plughost.api.store.visitor_key`), never the token;
    ``conversation_id`` — the conversation the turn belongs to (not ended yet).

    **Combines:** firstresult; returns lines of what this visitor told us in their earlier, ended
    conversations (bounded), read by that key alone, never another visitor's. The implementation
    first ends the visitor's other conversations and their idle ones (writing their slices). A
    raise injects nothing (``[visitor-memory] op=error``) and never blocks the turn.

    **Fires:** once per non-admin turn that carries a visitor key, while the payload is composed.

    **Example:** ``return ["name: Ana", "I need a cake for 80 guests on 4 March"]``.
    """


@hookspec(firstresult=True)
def plughost_surface_context(host: Host, query: str, guards: Guards, limit: int,
                             exclude: list[str]) -> list[dict[str, Any]] | None:
    """The memory items to surface into a Claude Code prompt (the ``UserPromptSubmit`` hook).

    **Parameters:** ``query`` — the prompt, or the session's previous query folded with a short
    follow-up; ``guards`` — the account, scopes and agent of the prompt's config dir (a public
    session's guards allow ``public`` only); every read must carry them; ``limit`` — items
    wanted; ``exclude`` — ids already surfaced in this session (return others).

    **Combines:** firstresult: the first non-None list wins (a brand's plugin overrides the
    memory plugin's guarded ``memory-search``). Items are ``{id, label, title, text, score,
    source}``; the caller drops repeats, fits them into the character budget and records them.
    A raise surfaces nothing for that prompt (``[surface] op=error``), never blocks it.

    **Fires:** once per prompt worth a search (greetings, acknowledgements, commands and very
    short prompts are skipped first), in ``plughost serve``'s loopback listener or in the hook
    process when no server runs.

    **Example:** ``return [{"id": n.id, "label": "Note", "title": n.title, "text": n.body, "score": 1.0}]``.
    """


@hookspec(firstresult=True)
def plughost_memory_search(host: Host, query: str, principal: Principal, limit: int) -> list[dict[str, Any]] | None:
    """A ranked memory search as ``principal`` would run it, for a plugin that shows results
    (the owner's console shows the owner's view beside a public visitor's).

    **Parameters:** ``query`` — the text searched; ``principal`` — who the search runs as (its
    guards bound every read: a visitor's principal sees ``public`` and its own conversation only);
    ``limit`` — rows wanted (the implementation may cap it).

    **Combines:** firstresult: the first non-None list wins (the memory plugin's hybrid
    ``memory-search`` pipeline, the same stages the tool runs). Rows are ``{id, labels, score,
    properties}``, best first, the properties a reader of that principal may see. A plugin that
    wants results calls ``host.memory_search(query, principal, limit=...)``, which returns them as
    typed ``plughost.MemoryHit`` rows (a malformed row is one error naming the field).

    **Fires:** when a plugin calls ``host.memory_search``; nothing in the host calls it on its own.

    **Example:** ``return [{"id": n.id, "labels": ["Note"], "score": 1.0, "properties": {"text": n.body}}]``.
    """


@hookspec
def plughost_person_erased(host: Host, account_id: str, senders: list[str], holds: Callable[[str], bool],
                           dry_run: bool, tally: Counter[str]) -> None:
    """Remove an erased person from what a plugin keeps outside the graph store (caches, schedules,
    agent transcripts), after ``plughost erase`` removed them from the store.

    **Parameters:**

    - ``account_id`` — the account erased from;
    - ``senders`` — the channel sender ids the erase reached (the visitor asked for, the senders of
      the Conversations and Messages removed);
    - ``holds`` — whether a string holds one of the person's contacts (an email address as a whole
      address, a phone number by its digits), never a sender id or a status word;
    - ``dry_run`` — count, remove nothing;
    - ``tally`` — add ``{what: count}`` of what went (file entries, files), never personal data.

    **Combines:** every implementation runs; one raising does not stop the others, and the erase
    command names it and exits 1 (the store's part is done; a re-run finds nothing there and
    retries the files).

    **Fires:** once per ``plughost erase`` (and the console's erase), after the store's erase.

    **Example:** ``tally["notes-cache"] += drop(lambda line: holds(line) or any(s in line for s in senders))``.
    """


@hookspec
def plughost_collection_sources(host: Host) -> list[CollectionSource]:
    """Kinds of files a folder collection can index (``plughost memory collection add --source``).

    **Parameters:** ``host`` — the loaded host.

    **Combines:** flattened; source names are unique. The memory plugin contributes
    ``markdown`` (frontmatter, title, ``[[wikilinks]]`` and relative links, ``**/*.md``).
    A source's ``parse(text, relpath)`` returns ``{title, body, frontmatter, links, aliases,
    keywords}``; the sync sections ``body`` into Section/Chunk nodes, turns ``links`` into
    ``LINKS_TO`` edges and keeps the collection incremental by content hash whatever the source.

    **Fires:** when a collection is added or synced (CLI, and ``plughost serve``'s watcher).

    **Example:** ``return [CollectionSource("org", ("**/*.org",), parse_org)]``.
    """


@hookspec(firstresult=True)
def plughost_recall_used(host: Host, reply: str, items: dict[str, dict[str, str]],
                         tool_text: str) -> list[str] | None:
    """Which surfaced memory items an assistant reply actually used (recall tracking).

    **Parameters:** ``reply`` — the text of the reply that just finished; ``items`` — the
    session's surfaced items not yet marked used, ``{id: {title, text}}`` as they were shown;
    ``tool_text`` — the reply's tool-call inputs, as JSON text (a ``memory-search`` or a lookup
    naming an id counts as use).

    **Combines:** firstresult: the first non-None list of ids wins (an LLM judge may plug in).
    The built-in answer counts an item used when the reply names its id, quotes its title,
    repeats six words of it in a row or echoes most of its distinctive words. Ids outside
    ``items`` are ignored.

    **Fires:** once per finished reply, from the memory plugin's Claude Code ``Stop`` hook,
    only when the session surfaced something not yet marked.

    **Example:** ``return [i for i in items if judge(reply, items[i]["text"])]``.
    """


@hookspec
def plughost_tool_called(host: Host, plugin: str, tool: str, arguments: dict[str, Any], result: str,
                         is_error: bool, started_at: str, completed_at: str) -> None:
    """One plughost-served MCP tool call has finished (the audit trail outside Claude Code).

    **Parameters:** ``plugin`` / ``tool`` — who served what; ``arguments`` — the call's arguments
    as received (not redacted: an implementation that stores them redacts first); ``result`` —
    the result's text content; ``is_error`` — whether the result is an ``isError`` one;
    ``started_at`` / ``completed_at`` — ISO-8601 UTC.

    **Combines:** notification: every implementation runs; one raising is logged and does not
    change the call's result.

    **Fires:** after every ``tools/call`` a plughost MCP server answered (stdio or ``/mcp/<plugin>``),
    unknown tools aside, off the event loop. The memory plugin's implementation stores a
    ``ToolCall`` node unless the process was started by Claude Code (``CLAUDECODE`` set: its
    ``PostToolUse`` hook records those) or is a public or narrowed one; it only queues the call, and
    a background writer stores it (every queued call is stored by ``plughost_shutdown``).

    **Example:** ``audit.append({"tool": tool, "error": is_error})``.
    """


@hookspec
def plughost_messages_stored(host: Host, account_id: str, message_ids: list[str]) -> None:
    """Conversation Messages were stored without an embedding: make them searchable by meaning.

    **Parameters:** ``account_id`` — the account they belong to; ``message_ids`` — the stored
    ``Message`` nodes' ids (new ones; a re-delivery or an unchanged turn is not repeated).

    **Combines:** notification: every implementation runs; one raising is logged and the write
    stands (the Messages are stored whatever the hook does).

    **Fires:** after the channels pipeline stores an inbound Message or a reply (on the persist
    path, before the 2xx: an implementation must only queue work) and after the turn recorder
    stores an admin turn. The memory plugin's implementation wakes its background embedder
    under ``plughost serve`` and embeds the Messages in place in any other process.

    **Example:** ``queue.put((account_id, message_ids))``.
    """


@hookspec
def plughost_knowledge_changed(host: Host, account_id: str, agents: list[str] | None, reason: str) -> None:
    """What a public agent subscribes to changed outside the plugin that assembles its KNOWLEDGE.md:
    assemble it again (docs/agents.md#knowledge).

    **Parameters:** ``account_id`` — the account; ``agents`` — the agent slugs whose files changed
    (``None``: every agent of the account); ``reason`` — a short word for the log line (``console``).

    **Combines:** notification: every implementation runs; one raising is reported against its
    plugin and the others still run (the caller's own write stands).

    **Fires:** when the owner saves an agent's IDENTITY.md, SOUL.md or KNOWLEDGE.md in the console,
    and from the console's "Assemble again". The memory plugin's implementation reassembles the
    assembled part of each agent's KNOWLEDGE.md from the public documents its keywords match
    (it does so itself after its own public writes and collection syncs).

    **Example:** ``rebuild(host.store(), host.home, account_id, agents, reason=reason)``.
    """


@hookspec
def plughost_settings(host: Host) -> list[Setting]:
    """The ``PLUGHOST_*`` variables this plugin reads, each a :class:`plughost.Setting`
    (name, type, default, one-line doc), declared in the plugin's ``settings.py``.

    **Parameters:** ``host`` — the loaded host.

    **Combines:** flattened with the host's own settings (``plughost settings`` lists them all); a name
    declared twice (by two plugins, or by a plugin and the host) is an error naming both. The
    plugin reads each through its own object (``SEARCH_STEM.read(host.env)``): the typed value,
    the default when unset, a one-line error naming the variable when the value is bad.

    **Fires:** when ``plughost settings`` lists them (and ``docs/configuration.md`` is generated
    from that table), and once per process when a command loads the host, to warn about a
    ``PLUGHOST_*`` variable nobody declares (``[settings] op=unknown``, with a did-you-mean).

    **Example:** ``return [Setting("PLUGHOST_HELLO_GREETING", "str", "hello", "what hello says")]``.
    """
