"""Backfill missing embeddings (SPEC 9.3): ``memory-reindex`` and ``plughost memory reindex``.

Batches with a per-node fallback after a batch error; a node that still fails is skipped and
kept in an exclude set so the next fetch never returns it again; the run always finishes with
``[reindex] op=done processed=<n> skipped=<m>``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from host.errors import UserError
from host.log import log
from host.progress import Progress
from plugins.memory.embed_text import embedding_text

DEFAULT_BATCH = 32


@dataclass
class ReindexSummary:
    processed: int = 0
    skipped: int = 0
    skipped_ids: list[str] = field(default_factory=list)
    seconds: float = 0.0


def reindex(store: Any, embedder: Any, *, account_id: str, labels: Sequence[str] | None = None,
            batch_size: int = DEFAULT_BATCH, limit: int | None = None, progress: bool | None = False,
            stream: TextIO | None = None) -> ReindexSummary:
    """Embed every live node of the account that lacks an embedding; returns the counts."""
    if embedder is None:
        raise UserError("reindex: no embedder is usable (PLUGHOST_EMBEDDER=none or the model is not installed)")
    if batch_size < 1:
        raise UserError(f"--batch-size: expected a positive integer, got {batch_size}")
    started = time.perf_counter()
    summary = ReindexSummary()
    exclude: set[str] = set()
    bar = Progress(0, stream or sys.stderr, progress, unit="nodes")
    if bar.enabled:
        bar.total = _pending(store, account_id, labels)

    def skip(node: Any, error: str) -> None:
        exclude.add(node.id)
        summary.skipped += 1
        summary.skipped_ids.append(node.id)
        bar.interrupt()
        log("reindex", "op=skip-error", node=node.id, labels=",".join(node.labels), error=error[:160])

    while limit is None or summary.processed + summary.skipped < limit:
        want = batch_size if limit is None else min(batch_size, limit - summary.processed - summary.skipped)
        nodes = store.missing_embeddings(account_id=account_id, labels=list(labels) if labels else None,
                                         exclude=exclude, limit=want)
        if not nodes:
            break
        todo = []
        for node in nodes:
            text = embedding_text(node.labels, node.properties)
            if text is None:
                skip(node, "no text to embed")
            else:
                todo.append((node, text))
        done: list[tuple[Any, list[float]]] = []
        try:
            vectors = embedder.embed([t for _, t in todo]) if todo else []
            done = list(zip([n for n, _ in todo], vectors, strict=True))
        except Exception as exc:  # the batch failed: find the culprit(s) one node at a time
            log("reindex", "op=batch-error", size=len(todo), error=f"{type(exc).__name__}: {exc}"[:160])
            for node, text in todo:
                try:
                    done.append((node, embedder.embed([text])[0]))
                except Exception as one:
                    skip(node, f"{type(one).__name__}: {one}")
        if done:
            store.set_embeddings([(n.id, v) for n, v in done], account_id=account_id)
            for node, _ in done:
                log("reindex", "op=embedded", node=node.id, labels=",".join(node.labels))
            summary.processed += len(done)
        bar.update(summary.processed + summary.skipped)
    bar.finish()
    summary.seconds = time.perf_counter() - started
    log("reindex", "op=done", processed=summary.processed, skipped=summary.skipped)
    store.clear_index_cache()
    return summary


def _pending(store: Any, account_id: str, labels: Sequence[str] | None) -> int:
    """How many nodes are waiting (for the progress bar); 0 when unknown."""
    try:
        return len(store.missing_embeddings(account_id=account_id, labels=list(labels) if labels else None,
                                            limit=1_000_000))
    except Exception:
        return 0
