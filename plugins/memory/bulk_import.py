"""`plughost memory import FILE.jsonl`: the graph import plus an enrichment step (embedding, indexed form, entities).

The import session (:class:`plughost.api.store.ImportSession`) reads, checks and batches the file,
keeps the edges that wait for a later line and reports each rejected line by number; the store
writes each batch (its ``import_writer``, as ``plughost graph import`` does). Lines are checked by
the one line validator (:func:`plughost.api.store.check_line`), with memory's camelCase property
names on top. :class:`Enrichment` adds, around each batch write: vectors for the nodes of
vector-indexed labels without an ``embedding`` (a failed embed stores the batch without vectors
and warns; ``plughost memory reindex`` backfills them), and the entities of its turns once they
are in (``PLUGHOST_MEMORY_ENTITIES``). Message nodes get their indexed form (``searchContext``
from the turns before them, :mod:`plughost.plugins.memory.embedding.indexed_form`) once every node is
written, and are embedded with it then.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TextIO

from plughost import Embedder, GraphStore, Guards, UserError, log
from plughost.api.store import ImportRow, ImportSession, ImportSummary
from plughost.plugins.memory import entities
from plughost.plugins.memory.embedding import indexed_form
from plughost.plugins.memory.embedding.reindex import reindex_contexts
from plughost.plugins.memory.embedding.text import embedding_text, is_vector_label
from plughost.plugins.memory.writes.writer import PROPERTY_NAME

DEFAULT_BATCH = 500


def import_jsonl(store: GraphStore, embedder: Embedder | None, path: Path, *, guards: Guards, batch_size: int = DEFAULT_BATCH,
                 progress: bool | None = None, stream: TextIO | None = None) -> ImportSummary:
    """Import ``path`` into ``store`` under ``guards`` (an unnarrowed admin's of the account) with
    :class:`Enrichment`; returns the summary (also logged)."""
    session = ImportSession(path, guards=guards, tag="memory-import", batch_size=batch_size, progress=progress,
                            stream=stream)
    open_writer = getattr(store, "import_writer", None)
    if open_writer is None:
        raise UserError(f"memory import: the graph store {type(store).__name__} has no bulk import")
    enrich = Enrichment(store, embedder)
    with open_writer(session.account_id) as writer:
        session.run(writer, enrich, dims=getattr(store, "dimensions", None), check=_camel_case)
    s = session.summary
    extra: dict[str, Any] = {"embedded": s.embedded, "embedFailed": s.embed_failed,
                             "embedSeconds": f"{s.embed_seconds:.2f}"}
    if enrich.extract_entities:
        extra["entitySeconds"] = f"{enrich.entity_seconds:.2f}"
    return session.done(**extra)


class Enrichment:
    """What ``memory import`` adds to the graph import (:class:`plughost.api.store.Enrichment`)."""

    def __init__(self, store: GraphStore, embedder: Embedder | None) -> None:
        self.store, self.embedder = store, embedder
        self.turns = indexed_form.context_turns()
        self.extract_entities = entities.enabled()
        self.entity_seconds = 0.0
        self.speakers: dict[str, None] = {}  # every speaker seen so far: a capitalised first word that is one is a name
        self.conversations: dict[str, None] = {}  # Messages get their indexed form (and vectors) after the nodes

    def before(self, rows: list[ImportRow], session: ImportSession) -> None:
        """The batch's vectors (Messages of a conversation wait for :meth:`finish`)."""
        todo = []
        for r in rows:
            row = r.row
            row["properties"] = row.get("properties") or {}
            if self._later(row):
                continue
            reason, text = self._not_embedded(row)
            if reason is None:
                todo.append((row, text))
            else:
                session.summary.not_embedded[reason] = session.summary.not_embedded.get(reason, 0) + 1
        if self.embedder is not None and todo:
            self._embed(todo, session)

    def _later(self, row: dict[str, Any]) -> bool:
        """A Message of a conversation: its indexed form and vector come once every node is in."""
        if not (self.turns and indexed_form.is_message(row["labels"])):
            return False
        conv = row["properties"].get("conversationId")
        if conv:
            self.conversations[str(conv)] = None
            return True
        row["properties"] = indexed_form.with_context(row["properties"], [], self.turns)  # its header alone
        return False

    def _not_embedded(self, row: dict[str, Any]) -> tuple[str | None, str]:
        """Why ``row`` gets no vector here (None: it does), and the text to embed."""
        if row.get("embedding") is not None:
            return "own-embedding", ""
        if not is_vector_label(row["labels"]):
            return "label:" + ",".join(row["labels"]), ""
        text = embedding_text(row["labels"], row["properties"])
        if not text:
            return "no-text", ""
        return ("embedding-off" if self.embedder is None else None), text

    def _embed(self, todo: list[tuple[dict[str, Any], str]], session: ImportSession) -> None:
        assert self.embedder is not None
        summary = session.summary
        t0 = time.perf_counter()
        try:
            vectors = self.embedder.embed([t for _, t in todo])
        except Exception as exc:
            summary.embed_failed += len(todo)
            session.bar.interrupt()
            log("graph-write", "warn", reason="embed-failed", nodes=len(todo),
                error=f"{type(exc).__name__}: {exc}"[:160])
            return
        finally:
            summary.embed_seconds += time.perf_counter() - t0
        for (row, _), vector in zip(todo, vectors, strict=True):
            row["embedding"] = vector
        summary.embedded += len(todo)

    def after(self, rows: list[ImportRow], session: ImportSession) -> None:
        """The batch's turns' entities and facts (``PLUGHOST_MEMORY_ENTITIES``), once the turns are in."""
        if not self.extract_entities:
            return
        turns = [r.row for r in rows if r.row.get("id") and entities.extractable(r.row["labels"], r.row["properties"])]
        if not turns:
            return
        for row in turns:
            name = entities.graph.speaker_of(row["properties"])
            if name:
                self.speakers[name] = None
        t0 = time.perf_counter()
        entities.write(self.store, [(row["id"], row["properties"]) for row in turns],
                       guards=session.guards, known=list(self.speakers))
        self.entity_seconds += time.perf_counter() - t0

    def finish(self, session: ImportSession) -> None:
        """The Messages' indexed form, and their vectors with it."""
        if not self.conversations:
            return
        t0 = time.perf_counter()
        changed = reindex_contexts(self.store, self.embedder, account_id=session.account_id,
                                   conversation_ids=self.conversations, turns=self.turns)
        session.summary.embedded += changed if self.embedder is not None else 0
        session.summary.embed_seconds += time.perf_counter() - t0


def _camel_case(row: dict[str, Any]) -> str | None:
    for key in row.get("properties") or {}:
        if key != "accountId" and not PROPERTY_NAME.match(key):
            return f"properties.{key[:40]}: property names are camelCase ([a-z][A-Za-z0-9]*, at most 64 characters)"
    return None
