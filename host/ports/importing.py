"""One import, whatever the store and the source (``graph import``, ``memory import``, ``memory
import-archive``; docs/graph.md#import).

An :class:`ImportSession` owns what every import does the same way: the importer's checks (an
unnarrowed admin of one account, a JSON-lines file unless the importer reads another format), the write guards the rows are written under
(the account's admin: a new node naming no ``scope`` is stored ``admin``), the line checks
(:func:`plughost.ports.jsonl.check_line`: the format and the reserved labels), batching, the edges
that wait for a later line (:class:`WaitingEdges`), the per-line summary (each rejected line by
number and reason), the progress bar and the ``done`` log line. A backend provides only the
batch write (:class:`BatchWriter`); an importer may wrap an :class:`Enrichment` around it (the
memory import's embedding, indexed form and entities). An importer of another format (a chat or
mail archive) hands :meth:`ImportSession.run` its own batches (``source``) instead of the JSON lines.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TextIO, TypeVar

from plughost.ports.graph import WriteDenied, require_admin
from plughost.ports.jsonl import ImportSummary, JsonLines, check_line, line_id
from plughost.ports.principal import Guards, Principal
from plughost.util.errors import UserError
from plughost.util.gcpause import gc_paused
from plughost.util.jsonio import jsonl_file_problem
from plughost.util.log import log
from plughost.util.progress import Progress

K = TypeVar("K")
E = TypeVar("E")
T = TypeVar("T")

LineCheck = Callable[[dict[str, Any]], "str | None"]
"""An importer's own check of a line that passed :func:`check_line`: the problem, or None."""


class WaitingEdges(Generic[K, E]):
    """Edges waiting for a later line, by target id, in one dict: an id maps to the key its first
    row was written at (once it was), or to the edges waiting for it (a list) until then. One
    dict, so a row or an edge costs one lookup (at 100k+ ids each lookup is a cache miss)."""

    __slots__ = ("where",)

    def __init__(self) -> None:
        self.where: dict[str, K | list[E]] = {}

    def key(self, nid: str) -> K | None:
        """Where ``nid``'s row went, or None while the import has not written it."""
        found = self.where.get(nid)
        return None if found is None or isinstance(found, list) else found

    def arrive(self, nid: str, key: K) -> list[E]:
        """Record where ``nid``'s first row went; returns the edges that waited for it (once)."""
        found = self.where.get(nid)
        if found is None or isinstance(found, list):
            self.where[nid] = key
            return found or []
        return []

    def waiting(self, nid: str) -> list[E]:
        """The edges waiting for ``nid`` (left waiting)."""
        found = self.where.get(nid)
        return found if isinstance(found, list) else []

    def release(self, nid: str) -> list[E]:
        """Take the edges waiting for ``nid`` without recording a key (the store resolves it by id)."""
        found = self.where.get(nid)
        if isinstance(found, list):
            del self.where[nid]
            return found
        return []

    def wait(self, nid: str, edge: E) -> None:
        """``edge`` waits for ``nid``, which the import has not written."""
        found = self.where.get(nid)
        if isinstance(found, list):
            found.append(edge)
        else:
            self.where[nid] = [edge]

    def left(self) -> list[tuple[str, E]]:
        """The edges whose target never came, in the order they started waiting by target; empties."""
        rest = [(nid, e) for nid, found in self.where.items() if isinstance(found, list) for e in found]
        self.where = {}
        return rest

    def __bool__(self) -> bool:
        return any(isinstance(found, list) for found in self.where.values())


@dataclass
class ImportRow:
    """One checked line: its number, its bytes and its object (``row["id"]`` set, unless it is a
    ``KnowledgeDocument`` re-ingest by ``attachmentId``, which the store names)."""

    line: int
    raw: bytes
    row: dict[str, Any]


@dataclass
class ImportBatch:
    """The next batch of checked lines, with the lines rejected since the last one."""

    rows: list[ImportRow]
    skips: list[tuple[int | str, str]] = field(default_factory=list)  # (line number, or where in a source: why)
    done_bytes: int = 0  # how far the source is read: bytes of a file, or the importer's own unit (messages)
    lines: int = 0


class BatchWriter(Protocol):
    """What a backend provides for an import: the batch write (one committed transaction)."""

    def write(self, rows: list[ImportRow], skip: Callable[[int, str], None]) -> tuple[int, int]:
        """Write one batch; returns ``(nodes, edges)`` written. A line the store refuses goes to
        ``skip``; an edge to a line not written yet waits in the writer until its target comes."""
        ...

    def finish(self) -> tuple[int, list[tuple[int, str, str]]]:
        """After the last batch: edges written now, and ``(line, type, target id)`` of those whose
        target neither the file nor the store had."""
        ...


class Enrichment(Protocol):
    """What an importer adds around the batch write (the memory import's embedding, indexed form, entities)."""

    def before(self, rows: list[ImportRow], session: ImportSession) -> None:
        """Change the batch's rows before they are written (vectors, derived properties)."""
        ...

    def after(self, rows: list[ImportRow], session: ImportSession) -> None:
        """Write what follows from the batch once it is in (entities)."""
        ...

    def finish(self, session: ImportSession) -> None:
        """After every batch and edge."""
        ...


def is_reingest(row: dict[str, Any]) -> bool:
    """An id-less ``KnowledgeDocument`` naming an ``attachmentId``: the store finds or names its node."""
    props = row.get("properties")
    return "KnowledgeDocument" in row["labels"] and isinstance(props, dict) and bool(props.get("attachmentId"))


class ImportSession:
    """One import of ``path`` under ``guards`` (see the module docstring): an unnarrowed admin's of
    the account imported into (:meth:`admit` returns them). An owner's or an admin session's guards
    store a new node naming no ``scope`` as ``admin``; the system's (:meth:`Principal.system`) as written.

    ``tag`` names the log lines (``[graph-import] skip line=...``); ``unit`` what the progress bar
    counts, ``total`` how much of it the source holds (default: the file's size in bytes, as
    :attr:`ImportBatch.done_bytes` counts). :meth:`run` drives a :class:`BatchWriter`; an importer whose backend reads the file
    itself (the embedded store's staging worker) reports through :meth:`skip`, :meth:`lost`,
    :meth:`wrote` and :meth:`done`.
    """

    def __init__(self, path: Path, *, guards: Guards, tag: str, batch_size: int, progress: bool | None = None,
                 stream: TextIO | None = None, unit: str = "nodes", total: int | None = None) -> None:
        if guards.narrowed:  # an import writes its rows without per-row guards
            raise WriteDenied(f"{tag}: refused for narrowed guards (scopes or an agent); an import is an "
                            "unnarrowed admin's of the account")
        if batch_size < 1:
            raise UserError(f"--batch-size: expected a positive integer, got {batch_size}")
        try:
            size = path.stat().st_size if total is None else total
        except OSError as exc:
            raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
        self.path, self.guards, self.tag, self.batch_size = path, guards, tag, batch_size
        self.summary = ImportSummary(str(path))
        self.bar = Progress(size, stream or sys.stderr, progress, unit=unit)
        self.started = time.perf_counter()

    @property
    def account_id(self) -> str:
        """The account imported into: the guards'."""
        return self.guards.account_id

    @staticmethod
    def admit(principal: Principal, path: Path, what: str, *,
              file_problem: Callable[[Path], str | None] | None = jsonl_file_problem) -> Guards:
        """The importer's checks, in one place: an account, an unnarrowed admin (an import writes
        rows without per-row guards), a JSON-lines file (``file_problem``: an importer's own check
        of the path, or None when its reader reports the path). Returns the guards the import writes under."""
        principal.require_account("the id of the account to import into")
        require_admin(principal, what)
        problem = file_problem(path) if file_problem is not None else None
        if problem:
            raise UserError(problem)
        return principal.guards

    # ------------------------------------------------------------------ the summary
    def skip(self, lineno: int | str, reason: str) -> None:
        """Report one rejected line (a number), or item of another source (where it is: ``file:12``)."""
        self.summary.skipped += 1
        self.bar.interrupt()
        if isinstance(lineno, str):
            self.summary.errors.append(f"{lineno}: {reason}")
            log(self.tag, "skip", where=lineno, reason=reason)
            return
        self.summary.errors.append(f"line {lineno}: {reason}")
        log(self.tag, "skip", line=lineno, reason=reason)

    def lost(self, lost: list[tuple[int, str, str]]) -> None:
        """Report the edges whose target neither the file nor the store had (their nodes were imported)."""
        for lineno, etype, to in lost:
            self.skip(lineno, f"edge {etype} -> '{to}': target node not found in the file or the store")
            self.summary.skipped -= 1  # the node itself was imported; only its edge was dropped

    def wrote(self, nodes: int, edges: int, done_bytes: int, *, lines: int | None = None) -> None:
        """One batch written: the counts and the progress bar."""
        if nodes:
            self.summary.batches += 1
        self.summary.nodes += nodes
        self.summary.edges += edges
        if lines is not None:
            self.summary.lines = lines
        self.bar.update(done_bytes, self.summary.nodes)

    def done(self, **extra: Any) -> ImportSummary:
        """Finish the bar and log the ``done`` line (``extra``: the importer's own counts)."""
        s = self.summary
        self.bar.finish()
        s.seconds = time.perf_counter() - self.started
        log(self.tag, "done", file=self.path.name, nodes=s.nodes, edges=s.edges, skipped=s.skipped,
            errors=len(s.errors), batches=s.batches, **extra, seconds=f"{s.seconds:.2f}", rate=f"{s.rate:.0f}")
        return s

    # ------------------------------------------------------------------ batching
    def batches(self, dims: int | None = None, check: LineCheck | None = None, *,
                check_format: bool = True) -> Iterator[ImportBatch]:
        """The file as batches of ``batch_size`` checked lines (:func:`check_line`, then ``check``);
        an id-less line gets an id from its content and number, so a re-run lands on its rows.
        ``check_format=False``: the writer applies the store's own write validation to each line
        (the same rules, its messages naming the field more closely); only objects pass here."""
        pending: list[tuple[int | str, str]] = []
        reader = JsonLines(self.path, lambda lineno, reason: pending.append((lineno, reason)), raw=True)
        rows: list[ImportRow] = []
        with reader:
            for lineno, row, raw in reader:
                problem = ((check_line(row, dims) if check_format or not isinstance(row, dict) else None)
                           or (check(row) if check is not None else None))
                if problem:
                    pending.append((lineno, problem))
                    continue
                if not row.get("id") and isinstance(row.get("labels"), list) and not is_reingest(row):
                    row["id"] = line_id(lineno, raw)
                rows.append(ImportRow(lineno, raw, row))
                if len(rows) >= self.batch_size:
                    yield ImportBatch(rows, _take(pending), reader.done_bytes, reader.lines)
                    rows = []
            yield ImportBatch(rows, _take(pending), reader.done_bytes, reader.lines)

    def run(self, writer: BatchWriter, enrich: Enrichment | None = None, *, dims: int | None = None,
            check: LineCheck | None = None, check_format: bool = True,
            source: Iterable[ImportBatch] | None = None) -> ImportSummary:
        """Read, check and write the file batch by batch (the next batch is read while this one
        is written), then the edges still waiting; returns the summary (not yet logged: :meth:`done`).
        ``source``: an importer's own batches (rows it built from another format, and where it
        skipped), written the same way instead of the file's JSON lines."""
        batches = self.batches(dims, check, check_format=check_format) if source is None else iter(source)
        with gc_paused():
            for batch in read_ahead(batches):
                skips = batch.skips  # the reader's and the writer's, reported in line order
                if batch.rows:
                    if enrich is not None:
                        enrich.before(batch.rows, self)
                    nodes, edges = writer.write(batch.rows, _appender(skips))
                    if enrich is not None:
                        enrich.after(batch.rows, self)
                else:
                    nodes = edges = 0
                for lineno, reason in sorted(skips, key=_skip_order):
                    self.skip(lineno, reason)
                self.wrote(nodes, edges, batch.done_bytes, lines=batch.lines)
            created, lost = writer.finish()
        self.summary.edges += created
        self.lost(lost)
        if enrich is not None:
            enrich.finish(self)
        return self.summary


def _appender(skips: list[tuple[int | str, str]]) -> Callable[[int, str], None]:
    return lambda lineno, reason: skips.append((lineno, reason))


def _skip_order(skip: tuple[int | str, str]) -> int:
    """Line numbers in order; a source's own places (``file:12``) after them, as they came (a stable sort)."""
    return skip[0] if isinstance(skip[0], int) else 1 << 62


def _take(pending: list[T]) -> list[T]:
    taken = pending[:]
    del pending[:len(taken)]
    return taken


def read_ahead(produce: Iterator[T], depth: int = 1) -> Iterator[T]:
    """``produce`` run on a thread up to ``depth`` items ahead: the next batch is read and
    checked while the store writes this one (waiting on the database releases the GIL).
    Closing this generator early stops the thread after the item it is building."""
    ready: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(entry: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                ready.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in produce:
                if not put((True, item)):
                    return
            put((True, end))
        except BaseException as exc:  # noqa: BLE001 - raised again in the consumer
            put((False, exc))

    thread = threading.Thread(target=run, name="import-reader", daemon=True)
    thread.start()
    try:
        while True:
            ok, item = ready.get()
            if not ok:
                raise item
            if item is end:
                return
            yield item
    finally:
        stop.set()
        thread.join()
        close = getattr(produce, "close", None)
        if close is not None:  # the thread has ended: the generator (and its file) can be closed here
            close()
