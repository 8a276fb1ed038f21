"""Backfill missing embeddings (docs/memory.md#reindex): ``memory-reindex`` and ``plughost memory reindex``.

Batches with a per-node fallback after a batch error; a node that still fails is skipped and
kept in an exclude set so the next fetch never returns it again; the run always finishes with
``[reindex] op=done processed=<n> skipped=<m>``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from plughost import Embedder, GraphStore, Principal, UserError, log
from plughost.api.store import MESSAGE_LABEL
from plughost.api.util import Progress
from plughost.plugins.memory.embedding import indexed_form
from plughost.plugins.memory.embedding.text import embedding_text
from plughost.plugins.memory.sectioniser import chunk_summary

DEFAULT_BATCH = 32


@dataclass
class ReindexSummary:
    processed: int = 0
    skipped: int = 0
    skipped_ids: list[str] = field(default_factory=list)
    seconds: float = 0.0
    summarised: int = 0


def _embed_batch(embedder: Embedder, todo: list[tuple[Any, str]],
                 skip: Callable[[Any, str], None]) -> list[tuple[Any, list[float]]]:
    """One batch's vectors; when the batch fails, each node alone, so only the culprits are skipped."""
    try:
        vectors = embedder.embed([t for _, t in todo]) if todo else []
        return list(zip([n for n, _ in todo], vectors, strict=True))
    except Exception as exc:
        log("reindex", "op=batch-error", size=len(todo), error=f"{type(exc).__name__}: {exc}"[:160])
    done: list[tuple[Any, list[float]]] = []
    for node, text in todo:
        try:
            done.append((node, embedder.embed([text])[0]))
        except Exception as one:
            skip(node, f"{type(one).__name__}: {one}")
    return done


def reindex(store: GraphStore, embedder: Embedder | None, *, account_id: str, labels: Sequence[str] | None = None,
            batch_size: int = DEFAULT_BATCH, limit: int | None = None, progress: bool | None = False,
            stream: TextIO | None = None, summaries: bool = True,
            stop: threading.Event | None = None) -> ReindexSummary:
    """Embed every live node of the account that lacks an embedding; returns the counts. ``limit``
    caps the nodes one run embeds, the Messages' context pass included (the rest waits for the next
    run). With
    ``summaries`` (not the standing audit's runs: a scan of every Chunk), the Chunks stored before
    chunks had summaries get theirs first (:func:`backfill_chunk_summaries`). ``stop`` (a stopping
    server's) is looked at between two batches: the run ends after the batch in hand,
    ``[reindex] op=stopped``, and the rest waits for the next run."""
    if embedder is None:
        raise UserError("reindex: no embedder is usable (PLUGHOST_EMBEDDER=none or the model is not installed)")
    if batch_size < 1:
        raise UserError(f"--batch-size: expected a positive integer, got {batch_size}")
    started = time.perf_counter()
    summary = ReindexSummary()
    if summaries and (not labels or "Chunk" in labels):
        summary.summarised = backfill_chunk_summaries(store, account_id)
    summary.processed += _contexts_of_pending(store, embedder, account_id, labels, batch_size, stop, limit)
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
        if stop is not None and stop.is_set():
            log("reindex", "op=stopped", processed=summary.processed)
            break
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
        done = _embed_batch(embedder, todo, skip)
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


def backfill_chunk_summaries(store: Any, account_id: str, page: int = 1000) -> int:
    """Give every live Chunk of the account without a ``summary`` its extractive one (the
    sectioniser's, from its ``content``); the embedding is left as it is (a Chunk embeds its
    content). Logs ``[reindex] op=chunk-summaries backfilled=N``; returns N."""
    guards = Principal.owner(account_id).guards
    rows: list[dict[str, Any]] = []
    offset = 0
    while True:
        nodes = store.find(guards=guards, labels=["Chunk"], order_by="id", descending=False, limit=page, offset=offset)
        for node in nodes:
            content = node.properties.get("content")
            if not node.properties.get("summary") and isinstance(content, str) and content.strip():
                rows.append({"id": node.id, "labels": ["Chunk"], "properties": {"summary": chunk_summary(content)}})
        if len(nodes) < page:
            break
        offset += page
    for start in range(0, len(rows), page):
        store.upsert_many(rows[start:start + page], guards=guards)
    log("reindex", "op=chunk-summaries", backfilled=len(rows))
    return len(rows)


def _contexts_of_pending(store: Any, embedder: Any, account_id: str, labels: Sequence[str] | None,
                         batch_size: int, stop: threading.Event | None = None, limit: int | None = None) -> int:
    """Turns the channels or the turn recorder wrote bare get their indexed form (and vector) first,
    at most ``limit`` of them; returns how many turns that embedded."""
    if labels and not indexed_form.is_message(labels) or indexed_form.context_turns() <= 0:
        return 0
    try:
        pending = store.missing_embeddings(account_id=account_id, labels=[MESSAGE_LABEL], limit=1_000_000)
    except Exception:
        return 0
    conversations = {str(n.properties["conversationId"]) for n in pending
                     if n.properties.get("conversationId") and indexed_form.CONTEXT_PROPERTY not in n.properties}
    if not conversations:
        return 0
    return reindex_contexts(store, embedder, account_id=account_id, conversation_ids=sorted(conversations),
                            batch_size=batch_size, stop=stop, limit=limit)


def _pending(store: GraphStore, account_id: str, labels: Sequence[str] | None) -> int:
    """How many nodes are waiting (for the progress bar); 0 when unknown."""
    try:
        return len(store.missing_embeddings(account_id=account_id, labels=list(labels) if labels else None,
                                            limit=1_000_000))
    except Exception:
        return 0


def _messages_by_conversation(store: Any, guards: Any, conversation_ids: Iterable[str] | None) -> dict[str, list[Any]]:
    """The account's Messages (or those of ``conversation_ids``) by conversation, all read before any write."""
    conversations: dict[str, list[Any]] = defaultdict(list)
    if conversation_ids is None:
        offset = 0
        while True:  # read everything before writing: writes reorder the pages
            page = store.find(guards=guards, labels=[MESSAGE_LABEL], limit=1000, offset=offset)
            for node in page:
                conversations[str(node.properties.get("conversationId") or node.id)].append(node)
            if len(page) < 1000:
                break
            offset += len(page)
    else:
        for cid in dict.fromkeys(conversation_ids):
            conversations[cid] = store.find(guards=guards, labels=[MESSAGE_LABEL], where={"conversationId": cid},
                                            limit=1_000_000)
    return conversations


def reindex_contexts(store: Any, embedder: Any, *, account_id: str, conversation_ids: Iterable[str] | None = None,
                     turns: int | None = None, batch_size: int = DEFAULT_BATCH,
                     stop: threading.Event | None = None, limit: int | None = None) -> int:
    """Rebuild the indexed form (``searchContext``) of the account's Messages, and re-embed those it changed.

    ``conversation_ids`` limits the pass (``memory import`` passes the conversations it wrote);
    returns how many Messages changed. Without an embedder only the property (and so BM25) changes.
    With ``stop`` set the pass ends after the batch in hand; ``limit`` changes that many Messages
    at most. What either leaves is still pending: in each conversation the turns that have no
    indexed form yet come last, so a conversation cut short is found again by the next run.
    """
    turns = indexed_form.context_turns() if turns is None else turns
    guards = Principal.owner(account_id).guards
    conversations = _messages_by_conversation(store, guards, conversation_ids)
    changed: list[tuple[Any, str | None]] = []
    for nodes in conversations.values():
        ordered = sorted(nodes, key=lambda n: indexed_form.order_key(n.id, n.properties))
        wanted = indexed_form.contexts([(n.id, n.properties) for n in ordered], turns)
        stale = [(n, wanted[n.id]) for n in ordered if n.properties.get(indexed_form.CONTEXT_PROPERTY) != wanted[n.id]]
        changed += sorted(stale, key=lambda c: indexed_form.CONTEXT_PROPERTY not in c[0].properties)
    todo = len(changed) if limit is None else min(len(changed), max(0, limit))
    done = 0
    for i in range(0, todo, batch_size):
        if stop is not None and stop.is_set():
            break
        part = changed[i:min(i + batch_size, todo)]
        rows = [{"id": n.id, "labels": [MESSAGE_LABEL], "properties": {indexed_form.CONTEXT_PROPERTY: ctx}}
                for n, ctx in part]
        if embedder is not None:
            texts = [embedding_text(n.labels, {**n.properties, indexed_form.CONTEXT_PROPERTY: ctx}) for n, ctx in part]
            try:
                vectors = embedder.embed([t or "" for t in texts])
            except Exception as exc:  # the text still changes; the next reindex --context embeds again
                log("reindex", "op=batch-error", size=len(part), error=f"{type(exc).__name__}: {exc}"[:160])
            else:
                for row, text, vector in zip(rows, texts, vectors, strict=True):
                    if text:
                        row["embedding"] = vector
        store.upsert_many(rows, guards=Principal.system(account_id).guards)
        done += len(part)
    if done < len(changed):
        left = {"stopped" if done < todo else "left": len(changed) - done}
        log("reindex", "op=context", conversations=len(conversations), changed=done, turns=turns, **left)
        return done
    log("reindex", "op=context", conversations=len(conversations), changed=len(changed), turns=turns)
    return len(changed)
