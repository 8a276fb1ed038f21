"""`plughost memory import FILE.jsonl`: the graph import's line format, embedded as it imports.

One node per line: ``{"id"?, "labels": [...], "properties": {...}, "embedding"?: [...],
"edges"?: [{"type", "to", "properties"?}]}``. Nodes of vector-indexed labels without an
``embedding`` are embedded batch by batch (a failed embed stores the batch without vectors and
warns; ``plughost memory reindex`` backfills them). Each batch commits on its own; an invalid
line is reported by its number and skipped without losing the others; edges are created
batch by batch as soon as both ends are in (an edge to a later line waits for it), so a target
may appear later in the file. An id-less line gets an id from its content and line number, so
re-running an interrupted import lands on the rows it wrote. Lines are checked by the one line
validator (:func:`plughost.ports.jsonl.check_line`), with memory's camelCase property names on top. Rows
are written as the account's admin, so a new node whose line names no ``scope`` is stored
``admin`` (a re-imported one keeps its scope), as in the graph import. Message nodes get their indexed form
(``searchContext`` from the turns before them, :mod:`plughost.plugins.memory.embedding.indexed_form`)
once every node is written, and are embedded with it then.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from plughost import Embedder, GraphStore, Guards, UserError, log
from plughost.api.store import ImportSummary, JsonLines, check_line, line_id, line_text
from plughost.api.util import Progress
from plughost.plugins.memory import entities
from plughost.plugins.memory.embedding import indexed_form
from plughost.plugins.memory.embedding.reindex import reindex_contexts
from plughost.plugins.memory.embedding.text import embedding_text, is_vector_label

DEFAULT_BATCH = 500


def import_jsonl(store: GraphStore, embedder: Embedder | None, path: Path, *, account_id: str, batch_size: int = DEFAULT_BATCH,
                 progress: bool | None = None, stream: TextIO | None = None) -> ImportSummary:
    if batch_size < 1:
        raise UserError(f"--batch-size: expected a positive integer, got {batch_size}")
    stream = stream or sys.stderr
    summary = ImportSummary(str(path))
    batch: list[tuple[int, dict[str, Any]]] = []
    edges: list[tuple[str, str, str, Any, int]] = []  # (source, type, target, properties, line), waiting
    seen: set[str] = set()  # ids of the file's lines written so far
    tried: set[int] = set()  # id() of waiting edges already looked up in the store once
    dims = getattr(store, "dimensions", None)
    owner = Guards(account_id)  # an admin's write: a new node naming no scope is stored admin (write_defaults)

    def skip(lineno: int, message: str) -> None:
        summary.skipped += 1
        summary.errors.append(f"line {lineno}: {message}")
        bar.interrupt()
        log("memory-import", "skip", line=lineno, reason=message)

    reader = JsonLines(path, skip)
    bar = Progress(reader.size, stream, progress, unit="bytes")
    started = time.perf_counter()

    turns = indexed_form.context_turns()
    extract_entities = entities.enabled()
    entity_seconds = [0.0]
    speakers: dict[str, None] = {}  # every speaker seen so far: a capitalised first word that is one is a name
    conversations: dict[str, None] = {}  # Messages get their indexed form (and vectors) after the nodes

    def embed(rows: list[tuple[int, dict[str, Any]]]) -> None:
        later = set()
        for i, (_, row) in enumerate(rows):
            if turns and indexed_form.is_message(row["labels"]):
                conv = row["properties"].get("conversationId")
                if conv:
                    conversations[str(conv)] = None
                    later.add(i)
                else:  # a turn of no conversation: its context is the header alone
                    row["properties"] = indexed_form.with_context(row["properties"], [], turns)
        todo = []
        for i, (_, row) in enumerate(rows):
            if i in later:
                continue
            if row.get("embedding") is not None:
                reason = "own-embedding"
            elif not is_vector_label(row["labels"]):
                reason = "label:" + ",".join(row["labels"])
            elif not (text := embedding_text(row["labels"], row["properties"])):
                reason = "no-text"
            elif embedder is None:
                reason = "embedding-off"
            else:
                todo.append((row, text))
                continue
            summary.not_embedded[reason] = summary.not_embedded.get(reason, 0) + 1
        if embedder is None:
            return
        if not todo:
            return
        t0 = time.perf_counter()
        try:
            vectors = embedder.embed([t for _, t in todo])
        except Exception as exc:
            summary.embed_failed += len(todo)
            bar.interrupt()
            log("graph-write", "warn", reason="embed-failed", nodes=len(todo),
                error=f"{type(exc).__name__}: {exc}"[:160])
            return
        finally:
            summary.embed_seconds += time.perf_counter() - t0
        for (row, _), vector in zip(todo, vectors, strict=True):
            row["embedding"] = vector
        summary.embedded += len(todo)

    def flush() -> None:
        if not batch:
            return
        embed(batch)
        rows = [row for _, row in batch]
        try:
            store.upsert_many(rows, account_id=account_id, guards=owner)
            summary.nodes += len(rows)
        except UserError:
            for lineno, row in batch:  # find the offending line(s); the rest still land
                try:
                    store.upsert_many([row], account_id=account_id, guards=owner)
                    summary.nodes += 1
                except UserError as exc:
                    skip(lineno, str(exc))
        summary.batches += 1
        seen.update(row["id"] for _, row in batch)
        if extract_entities:
            write_entities([row for _, row in batch if entities.extractable(row["labels"], row["properties"])])
        batch.clear()
        bar.update(reader.done_bytes)
        write_edges()

    def write_entities(rows: list[dict[str, Any]]) -> None:
        """The batch's turns' entities and facts (``PLUGHOST_MEMORY_ENTITIES``), once the turns are in."""
        if not rows:
            return
        for row in rows:
            name = entities.graph.speaker_of(row["properties"])
            if name:
                speakers[name] = None
        t0 = time.perf_counter()
        entities.write(store, account_id, [(row["id"], row["properties"]) for row in rows], guards=owner,
                       known=list(speakers))
        entity_seconds[0] += time.perf_counter() - t0

    def write_edges() -> None:
        """The waiting edges whose target the file has had, or that the store may have (once each)."""
        nonlocal edges
        ready = [e for e in edges if e[2] in seen or id(e) not in tried]
        if not ready:
            return
        missing = set(store.create_edges([(s, t, d, p) for s, t, d, p, _ in ready], account_id=account_id))
        summary.edges += len(ready) - len(missing)
        waiting = [ready[i] for i in sorted(missing)]
        tried.update(id(e) for e in waiting)
        keep = {id(e) for e in ready}
        edges = [e for e in edges if id(e) not in keep] + waiting

    with reader:
        for lineno, row in reader:
            problem = check_line(row, dims) or _camel_case(row)
            if problem:
                skip(lineno, problem)
                continue
            node_id = row.get("id") or line_id(lineno, line_text(row))
            edges.extend((node_id, e["type"], e["to"], e.get("properties"), lineno) for e in row.get("edges", []))
            batch.append((lineno, {"id": node_id, "labels": row["labels"],
                                   "properties": row.get("properties") or {},
                                   **({"embedding": row["embedding"]} if row.get("embedding") else {})}))
            if len(batch) >= batch_size:
                flush()
        flush()
    summary.lines = reader.lines
    _create_edges(store, edges, account_id, summary, skip)
    if conversations:
        t0 = time.perf_counter()
        changed = reindex_contexts(store, embedder, account_id=account_id, conversation_ids=conversations, turns=turns)
        summary.embedded += changed if embedder is not None else 0
        summary.embed_seconds += time.perf_counter() - t0
    bar.finish()
    summary.seconds = time.perf_counter() - started
    log("memory-import", "done", file=path.name, nodes=summary.nodes, edges=summary.edges,
        skipped=summary.skipped, embedded=summary.embedded, embedFailed=summary.embed_failed,
        batches=summary.batches, seconds=f"{summary.seconds:.2f}", embedSeconds=f"{summary.embed_seconds:.2f}",
        rate=f"{summary.rate:.0f}", **({"entitySeconds": f"{entity_seconds[0]:.2f}"} if extract_entities else {}))
    return summary


def _camel_case(row: dict[str, Any]) -> str | None:
    from plughost.plugins.memory.writes.writer import PROPERTY_NAME

    for key in row.get("properties") or {}:
        if key != "accountId" and not PROPERTY_NAME.match(key):
            return f"properties.{key[:40]}: property names are camelCase ([a-z][A-Za-z0-9]*, at most 64 characters)"
    return None


def _create_edges(store: GraphStore, edges: list[tuple[str, str, str, Any, int]], account_id: str,
                  summary: ImportSummary, skip: Any) -> None:
    for start in range(0, len(edges), 5000):
        part = edges[start:start + 5000]
        missing = set(store.create_edges([(s, t, d, p) for s, t, d, p, _ in part], account_id=account_id))
        summary.edges += len(part) - len(missing)
        for pos in sorted(missing):
            _, etype, to, _, lineno = part[pos]
            skip(lineno, f"edge {etype} -> '{to}': target node not found in the file or the store")
            summary.skipped -= 1  # the node itself was imported; only its edge was dropped
