"""The memory write tools served over MCP (docs/memory.md#writes, docs/memory.md#reindex); schemas live in PLUGIN.md.

Each handler builds a :class:`MemoryWriter` over the host's store and embedder and runs the
operation through :func:`run_with_outcome`, which logs the one outcome line per call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plughost import StateKey, Tool
from plughost.plugins.memory.writes.outcome import Call, WriteRejected, run_with_outcome

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

WRITER: StateKey[Any] = StateKey("memory.writer")


def writer(host: Host) -> Any:
    """The writer for this host; checks embedder/store dimensions once (a mismatch is a startup error)."""
    cached = host.state.get(WRITER)
    if cached is None:
        from plughost.plugins.memory.embedding.provider import check_dimensions
        from plughost.plugins.memory.writes.writer import MemoryWriter

        store, embedder = host.store(), host.embedder()
        check_dimensions(store, embedder)
        cached = host.state.set(WRITER, MemoryWriter(store, embedder, host.env))
    return cached


def _run(host: Host, tool: str, op: str, args: dict[str, Any]) -> Any:
    return run_with_outcome(Call(tool, host.env), lambda c: perform(host, c, op, args))


def perform(host: Host, c: Call, op: str, args: dict[str, Any]) -> Any:
    """One write operation (``write``, ``update``, ``delete``, ``restore``, ``ingest``) as the tools and
    the ``plughost memory`` commands run it: a public node written, changed, deleted or restored
    rebuilds the public agents' KNOWLEDGE.md (docs/agents.md#knowledge)."""
    from plughost.plugins.memory.knowledge.rebuild import after_write  # with the writer, off the boot path

    w = writer(host)
    before = _scope(w, args.get("id")) if op in ("update", "delete", "restore") else None
    out = getattr(w, op)(c, **args)
    after_write(w.store, host.home, w.account_id, [before, _scope(w, c.element_id)], reason=c.tool)
    return out


def _scope(w: Any, node_id: object) -> object:
    if not isinstance(node_id, str):
        return None
    node = w.store.get(node_id, guards=w.guards(), include_deleted=True)
    return node.properties.get("scope") if node is not None else None


def reindex_op(host: Host, call: Call, labels: list[str] | None = None, batchSize: int = 32,  # noqa: N803
               limit: int | None = None) -> dict[str, Any]:
    principal = host.principal
    account = principal.require_account("the id of the account reindex embeds (an account under "
                                        "PLUGHOST_HOME/accounts/)")
    call.labels = labels or ()
    w = writer(host)
    if not principal.is_admin:  # it embeds every node of the account missing a vector, seen or not
        raise WriteRejected("account-isolation", f"memory-reindex: admin only; this process is narrowed "
                            f"({principal.describe()})")
    if labels:
        w.check_labels(labels)
    if w.embedder is None:
        raise WriteRejected("gate-blocked", "no embedder is usable (PLUGHOST_EMBEDDER=none or the local model "
                            "is not installed); nothing to reindex with")
    from plughost.plugins.memory.embedding.reindex import reindex

    summary = reindex(w.store, w.embedder, account_id=account, labels=labels, batch_size=batchSize, limit=limit)
    return {"processed": summary.processed, "skipped": summary.skipped, "skippedIds": summary.skipped_ids[:50],
            "chunkSummaries": summary.summarised, "seconds": round(summary.seconds, 3)}


def write_tools(host: Host) -> list[Tool]:
    def memory_write(**args: Any) -> Any:
        return _run(host, "memory-write", "write", args)

    def memory_update(**args: Any) -> Any:
        return _run(host, "memory-update", "update", args)

    def memory_delete(**args: Any) -> Any:
        return _run(host, "memory-delete", "delete", args)

    def memory_restore(**args: Any) -> Any:
        return _run(host, "memory-restore", "restore", args)

    def memory_ingest(**args: Any) -> Any:
        return _run(host, "memory-ingest", "ingest", args)

    def memory_reindex(**args: Any) -> Any:
        call = Call("memory-reindex", host.env)
        return run_with_outcome(call, lambda c: reindex_op(host, c, **args))

    handlers = {"memory-write": memory_write, "memory-update": memory_update, "memory-delete": memory_delete,
                "memory-restore": memory_restore, "memory-ingest": memory_ingest, "memory-reindex": memory_reindex}
    return [Tool(name, fn) for name, fn in handlers.items()]
