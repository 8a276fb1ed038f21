"""`plughost graph import FILE.jsonl`: bulk load one node per line, in batched transactions.

Line shape: ``{"id"?: str, "labels": [str], "properties": {...}, "embedding"?: [float],
"edges"?: [{"type": str, "to": str, "properties"?: {...}}]}``. ``id`` (when given) is the node's
id, so re-importing upserts; ``edges[].to`` names a node in the file or already in the store.
Every batch commits on its own, so an interrupted import keeps each committed batch. An
invalid line is reported by its number and skipped; edges whose target appears later in the
file are created once that target is in (and reported by line if it never appears).

The import session (:class:`plughost.api.store.ImportSession`) reads, checks and batches the
file and reports; the store provides the batch write (``import_writer``: staged batches on the
embedded store, :mod:`plughost.plugins.graph.staging`; :class:`.neo4j_store.bulk.Neo4jImport`
on Neo4j). A big file into the embedded store is staged by a worker process instead, which
reads the file itself; the session then only reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from plughost import Guards, log
from plughost.api.store import BadLine, ImportSession, ImportSummary, check_line, parse_line, stamps_of
from plughost.plugins.graph import IMPORT_BATCH
from plughost.plugins.graph.staging import staged_batches, use_worker


def import_jsonl(store: Any, path: Path, *, guards: Guards, batch_size: int | None = None,
                 progress: bool | None = None, stream: TextIO | None = None,
                 worker: bool | None = None) -> ImportSummary:
    """Import ``path`` into ``store`` under ``guards`` (an unnarrowed admin's of the account:
    :meth:`ImportSession.admit <plughost.api.store.ImportSession.admit>`); returns the summary (also logged).

    ``store`` is one of this plugin's backends (``import_writer``): bulk import is beyond the
    ``GraphStore`` port. ``worker`` (the embedded store only): stage the batches in a worker
    process; None decides by file size and ``PLUGHOST_IMPORT_WORKER``
    (:func:`plughost.plugins.graph.staging.use_worker`).
    """
    if batch_size is None:  # the store's own default (Neo4j's is bigger: fewer edges wait for a later batch)
        batch_size = int(getattr(store, "import_batch_size", IMPORT_BATCH))
    session = ImportSession(path, guards=guards, tag="graph-import", batch_size=batch_size, progress=progress,
                            stream=stream)
    dims = getattr(store, "dimensions", None)
    if hasattr(store, "bulk_import") and (use_worker(path) if worker is None else worker):
        _import_by_worker(store, session, dims)
    else:
        with store.import_writer(session.account_id) as writer:
            session.run(writer, dims=dims, check_format=False)  # the store's write validation, line by line
    restore_stamps(store, path, session.account_id)
    return session.done()


STAMPS_BATCH = 5000


def restore_stamps(store: Any, path: Path, account_id: str) -> int:
    """Give the imported nodes of exported lines (``stamps``, :mod:`plughost.plugins.graph.export`) their recorded
    ``createdAt``/``updatedAt``/``deletedAt``: one more pass over the file, reading only the lines
    that carry ``stamps`` and a valid shape (a skipped line's node was never written). Returns the
    nodes updated."""
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


def _import_by_worker(store: Any, session: ImportSession, dims: int | None) -> None:
    """The embedded store's frames as a worker process stages them; the session reports."""
    with store.bulk_import(session.account_id) as bulk:
        batches = staged_batches(session.path, session.account_id, session.batch_size, worker=True,
                                 lookup=not bulk.empty, dims=dims)
        try:
            for data in batches:
                batch = bulk.add(data)
                for lineno, message in batch.skips:
                    session.skip(lineno, message)
                session.wrote(batch.nodes, batch.edges, batch.bytes, lines=batch.lines)
        finally:
            batches.close()
        created, unresolved = bulk.finish()
    session.summary.edges += created
    session.lost(unresolved)
