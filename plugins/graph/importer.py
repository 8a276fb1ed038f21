"""`plughost graph import FILE.jsonl`: bulk load one node per line, in batched transactions.

Line shape: ``{"id"?: str, "labels": [str], "properties": {...}, "embedding"?: [float],
"edges"?: [{"type": str, "to": str, "properties"?: {...}}]}``. ``id`` (when given) is the node's
id, so re-importing upserts; ``edges[].to`` names a node in the file or already in the store.
Every batch commits on its own, so an interrupted import keeps each committed batch. An
invalid line is reported by its number and skipped; edges whose target appears later in the
file are created once that target is in (and reported by line if it never appears).

A store with ``bulk_import`` (the embedded one) takes staged batches
(:mod:`plughost.plugins.graph.staging`), built in a worker process for big files; any other store (Neo4j)
gets validated rows batch by batch through its ``import_session`` (one object per import, which
may hold edges to later lines until their targets arrive).
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO, TypeVar

from plughost import UserError, log
from plughost.api.store import ImportSummary, JsonLines, line_id, line_text
from plughost.api.util import Progress, gc_paused
from plughost.plugins.graph import IMPORT_BATCH
from plughost.plugins.graph.common import Prepared, prepare_row
from plughost.plugins.graph.staging import staged_batches, use_worker

T = TypeVar("T")


def import_jsonl(store: Any, path: Path, *, account_id: str, batch_size: int | None = None,
                 progress: bool | None = None, stream: TextIO | None = None,
                 worker: bool | None = None) -> ImportSummary:
    """Import ``path`` into ``store`` for ``account_id``; returns the summary (also logged).

    ``store`` is one of this plugin's backends (``SqliteStore.bulk_import`` or
    ``Neo4jStore.import_session``): bulk import is beyond the ``GraphStore`` port.

    ``worker`` (staged stores only): build the batches in a worker process; None decides by
    file size and ``PLUGHOST_IMPORT_WORKER`` (:func:`plughost.plugins.graph.staging.use_worker`).
    """
    if batch_size is None:  # the store's own default (Neo4j's is bigger: fewer edges wait for a later batch)
        batch_size = int(getattr(store, "import_batch_size", IMPORT_BATCH))
    if batch_size < 1:
        raise UserError(f"--batch-size: expected a positive integer, got {batch_size}")
    stream = stream or sys.stderr
    summary = ImportSummary(str(path))

    def skip(lineno: int, message: str) -> None:
        summary.skipped += 1
        summary.errors.append(f"line {lineno}: {message}")
        bar.interrupt()
        log("graph-import", "skip", line=lineno, reason=message)

    if hasattr(store, "bulk_import"):
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
        bar = Progress(size, stream, progress, unit="nodes")
        started = time.perf_counter()
        _import_staged(store, path, account_id, batch_size, use_worker(path) if worker is None else worker,
                       summary, skip, bar)
        restore_stamps(store, path, account_id)
        return _done(summary, path, bar, started)
    reader = JsonLines(path, lambda lineno, message: skipped.append((lineno, message)))
    skipped: list[tuple[int, str]] = []  # the reader thread's skips, reported as their batch is written
    bar = Progress(reader.size, stream, progress, unit="nodes")
    started = time.perf_counter()
    session = store.import_session(account_id)
    dims = getattr(store, "dimensions", None)

    def batches() -> Iterator[tuple[list[Prepared], list[tuple[int, int, str, str, Any]], list[int],
                                    list[tuple[int, str]], int]]:
        items: list[Prepared] = []
        edges: list[tuple[int, int, str, str, Any]] = []
        lines_of: list[int] = []
        with reader:
            for lineno, row in reader:
                try:
                    item, row_edges = prepare_row(row, account_id, "node", parsed=True, dims=dims, strict=True)
                except UserError as exc:
                    skipped.append((lineno, str(exc)))
                    continue
                if item.id is None and not ("KnowledgeDocument" in item.labels
                                            and item.properties.get("attachmentId")):
                    item.id = line_id(lineno, line_text(row))  # a re-run lands on the same row
                index = len(items)
                items.append(item)
                lines_of.append(lineno)
                if row_edges:
                    edges.extend([(index, j, t, to, p) for j, (t, to, p) in enumerate(row_edges)])
                if len(items) >= batch_size:
                    yield items, edges, lines_of, _take(skipped), reader.done_bytes
                    items, edges, lines_of = [], [], []
        yield items, edges, lines_of, _take(skipped), reader.done_bytes

    with gc_paused():
        for items, edges, lines_of, skips, done_bytes in read_ahead(batches()):
            for lineno, message in skips:
                skip(lineno, message)
            if items:
                summary.edges += session.add(items, edges, lines_of)
                summary.batches += 1
                summary.nodes += len(items)
            bar.update(done_bytes, summary.nodes)
        summary.lines = reader.lines
        created, unresolved = session.finish()
    summary.edges += created
    for lineno, etype, to in unresolved:
        skip(lineno, f"edge {etype} -> '{to}': target node not found in the file or the store")
    summary.skipped -= len(unresolved)  # the node itself was imported; only its edge was dropped
    restore_stamps(store, path, account_id)
    return _done(summary, path, bar, started)


STAMPS_BATCH = 5000


def restore_stamps(store: Any, path: Path, account_id: str) -> int:
    """Give the imported nodes of exported lines (``stamps``, :mod:`plughost.plugins.graph.export`) their recorded
    ``createdAt``/``updatedAt``/``deletedAt``: one more pass over the file, reading only the lines
    that carry ``stamps`` and a valid shape (a skipped line's node was never written). Returns the
    nodes updated."""
    from plughost.api.store import BadLine, check_line, parse_line, stamps_of

    done, batch = 0, []
    with open(path, "rb") as fh:
        for raw in fh:
            if b'"stamps"' not in raw:
                continue
            try:
                row = parse_line(raw)
            except BadLine:
                continue
            if not isinstance(row, dict) or not isinstance(row.get("id"), str) or row.get("stamps") is None \
                    or check_line(row) is not None:
                continue
            batch.append((row["id"], *stamps_of(row["stamps"])))
            if len(batch) >= STAMPS_BATCH:
                done += store.restore_stamps(batch, account_id=account_id)
                batch = []
    if batch:
        done += store.restore_stamps(batch, account_id=account_id)
    if done:
        log("graph-import", "stamps", nodes=done)
    return done


def _take(pending: list[Any]) -> list[Any]:
    taken = pending[:]
    del pending[:len(taken)]
    return taken


def read_ahead(produce: Iterator[T], depth: int = 1) -> Iterator[T]:
    """``produce`` run on a thread up to ``depth`` items ahead: the next batch is read and
    validated while the store writes this one (waiting on the database releases the GIL).
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

    thread = threading.Thread(target=run, name="graph-import-reader", daemon=True)
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


def _import_staged(store: Any, path: Path, account_id: str, batch_size: int, worker: bool,
                   summary: ImportSummary, skip: Any, bar: Progress) -> None:
    with store.bulk_import(account_id) as bulk:
        batches = staged_batches(path, account_id, batch_size, worker=worker, lookup=not bulk.empty,
                                 dims=getattr(store, "dimensions", None))
        try:
            for data in batches:
                batch = bulk.add(data)
                for lineno, message in batch.skips:
                    skip(lineno, message)
                if batch.nodes:
                    summary.batches += 1
                summary.nodes += batch.nodes
                summary.edges += batch.edges
                summary.lines = batch.lines
                bar.update(batch.bytes, summary.nodes)
        finally:
            batches.close()
        created, unresolved = bulk.finish()
    summary.edges += created
    for lineno, etype, to in unresolved:
        skip(lineno, f"edge {etype} -> '{to}': target node not found in the file or the store")
    summary.skipped -= len(unresolved)  # the node itself was imported; only its edge was dropped


def _done(summary: ImportSummary, path: Path, bar: Progress, started: float) -> ImportSummary:
    bar.finish()
    summary.seconds = time.perf_counter() - started
    log("graph-import", "done", file=path.name, nodes=summary.nodes, edges=summary.edges,
        skipped=summary.skipped, errors=len(summary.errors), batches=summary.batches,
        seconds=f"{summary.seconds:.2f}", rate=f"{summary.rate:.0f}")
    return summary
