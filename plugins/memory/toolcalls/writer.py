"""The MCP tool-call audit is written off the reply path, in batches (plugins/memory/toolcalls/trail.py).

``plughost_tool_called`` fires after each ``tools/call`` a plughost MCP server answered; storing
the ToolCall (redaction, the Conversation look-up, the upsert) cost more than a BM25 search
itself, so the hook only checks the process may record (the same checks as before, read at
call time: the principal, ``PLUGHOST_AUDIT_MCP``, a reader) and enqueues the call. One
background thread per host takes what is queued once the calls pause (:data:`LINGER_S`) or a
batch is full (:data:`BATCH`), prepares each call
(:func:`plughost.plugins.memory.toolcalls.trail.prepare`) and writes the batch through the store in one guarded
upsert per account, under the account's guards as the inline write did.

The queue is bounded (:data:`MAX_QUEUED`). A full queue makes the caller write its row inline:
the audit is an admin's record of what ran, so a burst slows replies down rather than losing
rows (``[audit] op=inline reason=queue-full`` says so). :func:`flush` waits until everything
queued so far is stored (tests, and anyone about to read the audit); the ``plughost_shutdown``
hook (``host.close()``, which ``plughost serve`` and ``plughost mcp serve`` run on SIGTERM and at
the end of stdin) stops the thread after writing every queued call:
``[audit] op=flushed rows=N total=M`` (N queued at the stop, M written by the thread in all).
A call submitted after the stop is written inline.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from plughost import StateKey, log
from plughost.api.store import guarded_upsert_many

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host
    from plughost.plugins.memory.toolcalls.trail import Prepared

MAX_QUEUED = 1024
BATCH = 64
LINGER_S = 0.05
"""The writer waits this long for the next call before writing what it holds: a burst of calls is
written after the burst (in one transaction), not between its calls, where it would compete for
the interpreter and the cores with the next reply."""
STATE_KEY: StateKey[AuditWriter] = StateKey("memory.audit-writer")
_START_LOCK = threading.Lock()


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:160]


def _merged(prepared: list[Prepared]) -> list[dict[str, Any]]:
    """The batch's rows, one per node id: two calls of one new session both name its Conversation."""
    rows: dict[str, dict[str, Any]] = {}
    for item in prepared:
        for row in item.rows:
            have = rows.get(row["id"])
            if have is None:
                rows[row["id"]] = {**row, "properties": dict(row["properties"]),
                                   "edges": list(row.get("edges") or [])}
                continue
            have["properties"].update(row["properties"])
            have["labels"] = list(dict.fromkeys([*have["labels"], *row["labels"]]))
            have["edges"].extend(row.get("edges") or [])
    for row in rows.values():
        if not row["edges"]:
            del row["edges"]
    return list(rows.values())


def write_batch(host: Host, calls: list[dict[str, Any]]) -> int:
    """Prepare and store ``calls`` (keyword arguments of :func:`plughost.plugins.memory.toolcalls.trail.record`); returns
    how many ToolCalls were stored. A batch the store refuses is retried one call at a time, so one
    bad call costs only itself."""
    from plughost.plugins.memory.toolcalls.trail import Prepared, prepare, record

    by_account: dict[str, list[tuple[dict[str, Any], Prepared]]] = {}
    for call in calls:
        try:
            item = prepare(host, **call)
        except Exception as exc:  # noqa: BLE001 - logged; the rest of the batch is written
            log("audit", "op=error", tool=str(call.get("tool_name"))[:80], error=_error(exc))
            continue
        if isinstance(item, Prepared):
            by_account.setdefault(item.guards.account_id, []).append((call, item))
    written = 0
    for pairs in by_account.values():
        items = [item for _, item in pairs]
        try:
            guarded_upsert_many(host.store(), _merged(items), guards=items[0].guards)
        except Exception as exc:  # noqa: BLE001 - retried one call at a time below
            log("audit", "op=batch-failed", rows=len(items), error=_error(exc))
            for call, _ in pairs:
                try:
                    if record(host, **call).get("recorded"):
                        written += 1
                except Exception as one:  # noqa: BLE001
                    log("audit", "op=error", tool=str(call.get("tool_name"))[:80], error=_error(one))
            continue
        for item in items:
            item.logged()
        written += len(items)
    return written


class AuditWriter:
    """A host's background audit writer: a bounded queue and one thread draining it in batches."""

    def __init__(self, host: Host, max_queued: int = MAX_QUEUED) -> None:
        self.host = host
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue(max_queued)
        self.written = 0
        self.inline = 0
        self.stopped = False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)

    def start(self) -> AuditWriter:
        self.thread.start()
        atexit.register(self.stop)  # a host nobody closed still writes what it queued
        return self

    def submit(self, call: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            if not self.stopped:
                try:
                    self.queue.put_nowait(call)
                    return {"recorded": True, "queued": True}
                except queue.Full:
                    self.inline += 1
                    log("audit", "op=inline", reason="queue-full", tool=str(call.get("tool_name"))[:80])
        written = write_batch(self.host, [call])
        return {"recorded": bool(written), "queued": False}

    def _run(self) -> None:
        while True:
            batch: list[dict[str, Any] | None] = [self.queue.get()]
            while len(batch) < BATCH and batch[-1] is not None:
                try:  # calls in quick succession: write once they pause (or a batch is full)
                    batch.append(self.queue.get(timeout=LINGER_S))
                except queue.Empty:
                    break
            calls = [c for c in batch if c is not None]
            try:
                if calls:
                    started = time.perf_counter()
                    done = write_batch(self.host, calls)
                    self.written += done
                    log("audit", "op=written", rows=done, ms=round((time.perf_counter() - started) * 1000))
            finally:
                for _ in batch:
                    self.queue.task_done()
            if None in batch:
                return

    def flush(self) -> None:
        """Return once every call queued before this one is stored."""
        if self.thread.is_alive():
            self.queue.join()

    def stop(self) -> int:
        """Write everything queued, end the thread; returns how many calls were queued at the stop."""
        with self.lock:
            if self.stopped:
                return 0
            self.stopped = True
            pending = self.queue.qsize()
        atexit.unregister(self.stop)
        before = self.written
        self.queue.put(None)  # after every queued call: the thread writes them, then ends
        self.thread.join()
        log("audit", "op=flushed", rows=self.written - before, total=self.written,
            inline=self.inline)
        return pending


def writer(host: Host) -> AuditWriter:
    """The host's writer, started on first use."""
    with _START_LOCK:
        current = host.state.get(STATE_KEY)
        if current is None:
            current = AuditWriter(host).start()
            host.state.set(STATE_KEY, current)
        return current


def submit(host: Host, call: dict[str, Any]) -> dict[str, Any]:
    """Queue one call's ToolCall (the keyword arguments of :func:`plughost.plugins.memory.toolcalls.trail.record`)."""
    return writer(host).submit(call)


def flush(host: Host) -> None:
    """Wait until the host's queued tool calls are stored (nothing queued: returns at once)."""
    current = host.state.get(STATE_KEY)
    if current is not None:
        current.flush()


def stop(host: Host) -> None:
    """``plughost_shutdown``: write every queued call, then end the thread (it stays the host's, stopped:
    a call after the shutdown is written inline)."""
    current = host.state.get(STATE_KEY)
    if current is not None:
        current.stop()
