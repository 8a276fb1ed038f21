"""Sync one folder collection into the graph, incrementally by content hash.

Every matching file costs a stat; one whose size or nanosecond mtime changed is read and hashed
(``PLUGHOST_COLLECTIONS_REHASH=1`` hashes every file); only new and changed content is parsed,
sectioned (the ``memory-ingest`` sectioniser) and embedded, in batches, with embedding on a
worker thread so the next batch is parsed while the current one is embedded. A file whose
content moved to a new path is a rename: the note keeps its id (and its links), is re-sectioned
and keeps its stored vectors. A vanished file is soft-deleted (restorable like any document).
``[[wikilinks]]`` and relative Markdown links become ``LINKS_TO`` edges between the documents;
they are re-resolved whenever the set of notes changed, and only the difference is written.
A section short enough to be a single chunk gets no Chunk node: it would repeat the section's
text (two search hits for one passage, twice the indexing).

Ids are stable: the note id is a hash of the collection and the path it was first seen at, the
document id is ``memory-ingest``'s id for the attachment ``collection:<name>:<note id>``. With
the store committed before the sync state, a killed sync is repaired by the next one: it
rewrites what the state had not recorded, in place.
"""

from __future__ import annotations

import fnmatch
import gc
import hashlib
import itertools
import json
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from plughost import Guards, UserError, log
from plughost.api.util import gc_paused
from plughost.plugins.memory import sectioniser
from plughost.plugins.memory.collections.registry import Collection, state_path
from plughost.plugins.memory.collections.running import StopWhen, SyncCancelled, sync_lock
from plughost.plugins.memory.collections.state import NoteState, State
from plughost.plugins.memory.embedding.text import embedding_text
from plughost.plugins.memory.knowledge.rebuild import after_write
from plughost.plugins.memory.settings import COLLECTIONS_REHASH, COLLECTIONS_WORKERS

if TYPE_CHECKING:  # pragma: no cover
    from plughost import CollectionSource

JUNK_DIRS = frozenset({
    "node_modules", "__pycache__", "venv", "build", "dist", "out", "target", "_site", "site-packages",
    "bower_components", "vendor", "Trash", "$RECYCLE.BIN", "_build", "coverage",
})
"""Folders never indexed, on top of every hidden folder (``.git``, ``.obsidian``, ``.trash``, ``.venv`` ...)."""
BATCH_NOTES = 512
"""Notes per store transaction (fewer commits rewrite the index pages fewer times)."""
RAMP_NOTES = 64
"""The first batch; each next one doubles up to ``batch_notes``, so writing starts early."""
PIECE_NOTES = 128
"""Notes per parse worker task."""
LINK_EDGE = "LINKS_TO"
MAX_FILE_BYTES = 8 << 20
PARALLEL_MIN_NOTES = 256
"""From this many notes to parse, worker processes parse them (a process start costs less than it saves)."""


class Parsed(NamedTuple):
    """A note parsed in a worker (or here), ready to write; a note that failed is its error text instead."""

    rows: Any  # the store's staged rows (``stage_rows``), or the row dicts for ``upsert_many``
    ids: list[str]
    texts: list[str] | None  # what each row embeds (None: no embedder)
    links: list[tuple[str, str]]
    names: list[str]  # aliases, then the title
    sections: int
    chunks: int
    warnings: list[str]


_FORKED: Syncer | None = None
"""The syncer a forked parse worker works for (set before the fork)."""


@contextmanager
def _forked(syncer: Syncer) -> Iterator[None]:
    """The syncer the parse workers fork with: they inherit it, so a source need not pickle."""
    global _FORKED
    _FORKED = syncer
    try:
        yield
    finally:
        _FORKED = None


def _orphan_watch(parent: int) -> None:
    """In a parse worker: exit when the syncing process is gone (a kill -9 leaves no worker behind).

    The worker's garbage collector is off: its rows hold no cycles, and a collection every few
    hundred dicts would cost more than the parse of a small note.
    """
    gc.freeze()
    gc.disable()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


def _parse_piece(items: list[tuple[NoteState, str]]) -> list[Parsed | str]:
    """In a parse worker: each note's rows, links and names, or its error."""
    assert _FORKED is not None
    return [_FORKED._parse_one(st, text) for st, text in items]


_Read = tuple[str, str] | tuple[NoteState, str | None, Parsed | str]
"""A file of a first sync as a worker read it: ``(kind, message)`` for a file skipped (``skip``:
binary, too large, a symlink leaving the folder) or unreadable (``failed``), else ``(its state,
how it was decoded, its parse result)``."""


def _read_piece(items: list[tuple[str, int, int, int, str | None]]) -> list[_Read]:
    """In a parse worker, for a first sync: read, hash, decode and parse each file ``(relpath,
    size, mtime_ns, ctime_ns, why it is skipped or None)``, as the syncing process would (:meth:`Syncer.run`)."""
    assert _FORKED is not None
    return [_FORKED._read_one(*item) for item in items]


@dataclass
class SyncStats:
    scanned: int = 0
    unchanged: int = 0
    new: int = 0
    changed: int = 0
    renamed: int = 0
    deleted: int = 0
    failed: int = 0
    sections: int = 0
    chunks: int = 0
    embedded: int = 0
    edges_added: int = 0
    edges_removed: int = 0
    skipped: int = 0  # binary, too large, a symlink leaving the folder: ``errors`` says which
    rescoped: int = 0  # unchanged notes rewritten because the collection's scope or agents changed
    repaired: bool = False
    cancelled: str | None = None  # why the sync stopped early (shutdown, removed, re-pointed)
    ms: float = 0.0
    scan_ms: float = 0.0
    embed_ms: float = 0.0
    write_ms: float = 0.0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # indexed, but not as written (encoding, frontmatter)

    def as_json(self) -> dict[str, Any]:
        return {k: (round(v, 1) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def is_junk(name: str) -> bool:
    return name.startswith(".") or name in JUNK_DIRS


def matches(rel: str, patterns: Sequence[str]) -> bool:
    """Whether ``rel`` (relative to the folder, ``/``-separated) matches a pattern (``**/x`` also
    matches ``x`` at the top)."""
    name = rel.rsplit("/", 1)[-1]
    for p in patterns:
        simple = p[3:] if p.startswith("**/") else p
        if fnmatch.fnmatchcase(rel, p) or "/" not in simple and fnmatch.fnmatchcase(name, simple):
            return True
    return False


def walk(root: Path, patterns: Sequence[str], *, stop: Callable[[], None] | None = None,
         on_skip: Callable[[str, str], None] | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """``(relpath, stat)`` of every file under ``root`` matching a pattern, junk folders pruned, sorted.

    A file symlink whose target is outside ``root`` is not followed (``on_skip(rel, reason)``):
    it would index a file of another folder at this collection's scope; nor is one whose target
    the walk reaches under its own path (the note would be stored twice). Folder symlinks are not
    descended (a loop, or another folder's notes). ``stop`` is called per folder.
    """
    stack = [""]
    real_root = os.path.realpath(root)
    while stack:
        if stop is not None:
            stop()
        rel_dir = stack.pop()
        try:
            entries = sorted(os.scandir(root / rel_dir if rel_dir else root), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not is_junk(entry.name):
                        subdirs.append(rel)
                    continue
                if not entry.is_file(follow_symlinks=True) or entry.name.startswith("."):
                    continue
            except OSError:
                continue
            if matches(rel, patterns):
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if os.path.commonpath([real_root, target]) != real_root:
                        if on_skip is not None:
                            on_skip(rel, "symlink-outside")
                        continue
                    if _indexed_itself(os.path.relpath(target, real_root), patterns):
                        if on_skip is not None:  # the note would be stored twice, once per path
                            on_skip(rel, f"symlink-to {os.path.relpath(target, real_root)}")
                        continue
                try:
                    yield rel, entry.stat(follow_symlinks=True)
                except OSError:
                    continue
        stack.extend(reversed(subdirs))


def _indexed_itself(rel: str, patterns: Sequence[str]) -> bool:
    """Whether the walk reaches the file at ``rel`` under its own path (no junk or hidden folder on the way)."""
    parts = rel.split("/")
    return (matches(rel, patterns) and not any(is_junk(p) for p in parts[:-1])
            and not any(p.startswith(".") for p in parts))


class _Stored(Exception):
    """A first sync found the store holding its first note's document: the general path takes over."""


class _Everything(set[str]):
    def __contains__(self, _item: object) -> bool:
        return True


def note_id_for(collection: str, relpath: str) -> str:
    return "n" + hashlib.sha256(f"{collection}\0{relpath}".encode()).hexdigest()[:24]


_CONTROL = bytes([*(b for b in range(32) if b not in (9, 10, 12, 13)), 127])
BINARY_SHARE = 0.05
"""Of a file that is not UTF-8: the share of control bytes that makes it binary (text in a legacy
encoding has next to none; random bytes about one in eight)."""


def decode(raw: bytes) -> tuple[str | None, str | None]:
    """``(text, how)``: UTF-8 (a BOM dropped; ``how`` None), UTF-16 by its BOM, else cp1252 or
    latin-1 (``how`` names it, for the sync report); ``(None, 'binary')`` for a file with NUL
    bytes or mostly not text (a binary named ``.md`` would become a document of garbage)."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            return None, "binary"
    if b"\0" in raw:
        return None, "binary"
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        pass
    sample = raw[:65536]
    if len(sample) - len(sample.translate(None, _CONTROL)) > BINARY_SHARE * len(sample):
        return None, "binary"
    try:
        return raw.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return raw.decode("latin-1"), "latin-1"


def _restated(old: NoteState, rel: str, digest: str, stat: os.stat_result) -> NoteState:
    """A known note at ``rel`` with the content ``digest`` and the file's new stat."""
    return NoteState(rel, old.note_id, old.doc_id, digest, stat.st_size, stat.st_mtime_ns, old.title, old.aliases,
                     old.links, old.edges, stat.st_ctime_ns)


@dataclass
class Change:
    """One note a sync (re)writes: the state to record once the store has it, the text to parse,
    whether its document may exist already (then what it had beyond the new hierarchy is dropped)
    and whether its stored vectors are kept (same content: a rename, or new tags)."""

    state: NoteState
    text: str
    existing: bool
    reuse_vectors: bool = False


@dataclass
class _Fresh:
    """A file at a path the state does not know: a new note, or one that moved here."""

    rel: str
    stat: os.stat_result
    digest: str
    text: str


@dataclass
class Scan:
    """What a walk found against the state."""

    seen: set[str] = field(default_factory=set)  # the notes' paths (a skipped file is none)
    changes: list[Change] = field(default_factory=list)  # known notes with new content or new tags
    fresh: list[_Fresh] = field(default_factory=list)  # paths the state does not know
    touched: list[NoteState] = field(default_factory=list)  # same content, new stat: the state only


@dataclass
class Plan:
    """What a sync writes, in order (:meth:`Syncer._apply`)."""

    changes: list[Change]
    revive: list[str] = field(default_factory=list)  # soft-deleted documents whose file is back
    renamed_from: list[str] = field(default_factory=list)  # old paths of renamed notes
    deleted: list[NoteState] = field(default_factory=list)  # notes whose file is gone


@dataclass
class _Work:
    """One note to write: its rows and the state to record once the store committed them."""

    state: NoteState
    rows: Any  # the store's staged rows (``stage_rows``), or the row dicts for ``upsert_many``
    ids: list[str]
    texts: list[str] | None  # what each row embeds (None: no embedder)
    existing: bool  # the document may exist: what it had beyond the new hierarchy is dropped
    reuse_vectors: bool = False
    vectors: dict[str, Any] = field(default_factory=dict)


class Syncer:
    def __init__(self, store: Any, collection: Collection, source: CollectionSource, *,
                 guards: Guards, home: Path, embedder: Any = None, batch_notes: int = BATCH_NOTES,
                 on_batch: Callable[[int], None] | None = None, stop: Callable[[], None] | None = None) -> None:
        self.store = store
        self.coll = collection
        self.source = source
        self.account = account_id = guards.account_id
        self.guards = guards
        self.embedder = embedder
        self.batch_notes = batch_notes
        self.root = Path(collection.path)
        self.state = State(state_path(home, account_id, collection.name))
        self.stats = SyncStats()
        self.on_batch = on_batch
        self.rehash = COLLECTIONS_REHASH.read()
        # a store that can stage rows has them validated and encoded where they are parsed
        self._staged = hasattr(store, "stage_rows") and hasattr(store, "write_staged")
        self._names_changed = False
        self.stop = stop or (lambda: None)
        """Called between files; raises ``SyncCancelled`` to stop (shutdown, collection removed)."""
        self._rescope = False
        self._warnings: list[str] = []
        self.allow_empty = False
        """Whether a folder where no file matches any more may delete every note (else refused)."""

    # ------------------------------------------------------------------ rows
    def _rows(self, st: NoteState, text: str) -> tuple[list[dict[str, Any]], list[tuple[str, str]], list[str]]:
        parsed = self.source.parse(text, st.relpath)
        title = str(parsed.get("title") or st.relpath)
        body = str(parsed.get("body") or "")
        attachment = f"collection:{self.coll.name}:{st.note_id}"
        doc = sectioniser.sectionise(body if body.strip() else title, title=title, fmt="markdown")
        shared: dict[str, Any] = {"collection": self.coll.name, "notePath": st.relpath, "attachmentId": attachment}
        if self.coll.scope:
            shared["scope"] = self.coll.scope
        if self.coll.agents:
            shared["agents"] = list(self.coll.agents)
        elif self._rescope:
            shared["agents"] = None  # the merge drops tags the collection no longer has
        self._warnings = [f"{st.relpath}: {w}" for w in parsed.get("warnings") or []]
        doc_props: dict[str, Any] = {"title": doc.title, "summary": doc.summary, "format": "markdown",
                                     "sectionCount": len(doc.sections), "contentChars": len(text),
                                     "contentHash": st.hash, "sourcePath": str(self.root / st.relpath), **shared}
        front = parsed.get("frontmatter") or {}
        if front:
            doc_props["frontmatter"] = json.dumps(front, ensure_ascii=False, default=str, sort_keys=True)[:20000]
        keywords = [str(k) for k in parsed.get("keywords") or []][:50]
        if keywords:
            doc_props["keywords"] = keywords
        aliases = [str(a) for a in parsed.get("aliases") or []][:50]
        if aliases:
            doc_props["aliases"] = aliases
        sections, chunks = [], []
        for sec in doc.sections:
            sid = sectioniser.section_id(st.doc_id, sec.index)
            srow: dict[str, Any] = {"id": sid, "labels": ["Section"], "edges": [],
                    "properties": {"title": sec.title, "body": sec.body, "summary": sec.summary, "index": sec.index,
                                   "path": list(sec.path), **shared}}
            for ch in sec.chunks if len(sec.chunks) > 1 else ():  # one chunk would repeat the section
                cid = sectioniser.chunk_id(st.doc_id, sec.index, ch.index)
                srow["edges"].append({"type": "HAS_CHUNK", "to": cid})
                chunks.append({"id": cid, "labels": ["Chunk"], "properties": {
                    "content": ch.content, "summary": ch.summary, "index": ch.index, "sectionIndex": sec.index,
                    **shared}})
            sections.append(srow)
        doc_row = {"id": st.doc_id, "labels": ["KnowledgeDocument"], "properties": doc_props,
                   "edges": [{"type": "HAS_SECTION", "to": r["id"]} for r in sections]}
        self.stats.sections += len(sections)
        self.stats.chunks += len(chunks)
        links = [(str(k), str(t)) for k, t in parsed.get("links") or []]
        return [*chunks, *sections, doc_row], links, aliases + [title]

    # ------------------------------------------------------------------ embedding and writing
    def _embed(self, batch: list[_Work]) -> list[_Work]:
        started = time.perf_counter()
        fresh: list[tuple[_Work, str, str]] = []
        for work in batch:
            for k, nid in enumerate(work.ids):
                if work.reuse_vectors:
                    vec = self.store.get_embedding(nid, guards=self.guards)
                    if vec is not None:
                        work.vectors[nid] = vec
                        continue
                if work.texts is not None:
                    fresh.append((work, nid, work.texts[k]))
        if self.embedder is not None and fresh:
            try:
                vectors = self.embedder.embed([text for *_, text in fresh])
            except Exception as exc:  # a failed embed never aborts the sync: the notes go in unembedded
                vectors = [None] * len(fresh)
                log("collections", "warn", reason="embed-failed", collection=self.coll.name,
                    detail=f"{type(exc).__name__}: {exc}"[:120])
            for (work, nid, _), vec in zip(fresh, vectors, strict=False):
                if vec is not None:
                    work.vectors[nid] = list(vec)
                    self.stats.embedded += 1
        self.stats.embed_ms += (time.perf_counter() - started) * 1000
        return batch

    def _write(self, batch: list[_Work]) -> None:
        started = time.perf_counter()
        try:
            self._store_batch(batch)
        except Exception as exc:
            if len(batch) == 1:
                self.stats.failed += 1
                self.stats.errors.append(f"{batch[0].state.relpath}: {type(exc).__name__}: {exc}"[:200])
                log("collections", "op=skip-error", collection=self.coll.name, path=batch[0].state.relpath,
                    detail=f"{type(exc).__name__}: {exc}"[:120])
                return
            for work in batch:  # one bad note must not sink its batch
                self._write([work])
            return
        for work in batch:
            if work.existing:
                self._drop_stale(work)
        self.state.put(w.state for w in batch)
        self.stats.write_ms += (time.perf_counter() - started) * 1000
        if self.on_batch:
            self.on_batch(len(batch))

    def _store_batch(self, batch: list[_Work]) -> None:
        """One store transaction for the batch's notes, with their vectors."""
        vectors = {nid: vec for work in batch for nid, vec in work.vectors.items()}
        if self._staged:
            self.store.write_staged([w.rows for w in batch], guards=self.guards,
                                    embeddings=vectors or None)
            return
        rows = [row for work in batch for row in work.rows]
        for row in rows:
            if row["id"] in vectors:
                row["embedding"] = vectors[row["id"]]
        self.store.upsert_many(rows, guards=self.guards)

    def _drop_stale(self, work: _Work) -> None:
        """Sections and chunks the note had before and no longer has: soft-deleted, unlinked.

        Their ids are positional (``section_id`` / ``chunk_id``), so the old hierarchy is found by
        id, section after section and chunk after chunk until an id was never written: no
        expansion (capped at 20 neighbours, it missed the tail of a long section or a note of
        many headings). A soft-deleted id is passed over, not taken for the end: an older sync
        may have left live ids beyond it.
        """
        doc = work.state.doc_id
        keep = set(work.ids)

        def drop(parent: str, nid: str, etype: str) -> bool:
            """False when ``nid`` was never written (the end of its run)."""
            if nid in keep:
                return True
            node = self.store.get(nid, guards=self.guards, include_deleted=True)
            if node is None:
                return False
            if not node.deleted:  # unlinked first: a narrowed process may only unlink nodes it can read
                self.store.delete_edge(parent, nid, etype, guards=self.guards)
                self.store.soft_delete(nid, guards=self.guards)
            return True

        for s in itertools.count():
            sid = sectioniser.section_id(doc, s)
            if sid not in keep and self.store.get(sid, guards=self.guards, include_deleted=True) is None:
                break
            for c in itertools.count():
                if not drop(sid, sectioniser.chunk_id(doc, s, c), "HAS_CHUNK"):
                    break
            drop(doc, sid, "HAS_SECTION")

    # ------------------------------------------------------------------ the sync
    def run(self) -> SyncStats:
        """Sync the folder: :meth:`_scan` it against the state, :meth:`_plan` what that means for the
        store (renames, documents to revive, notes gone), :meth:`_apply` the plan. A collection's
        first sync streams the walk into the parse workers instead (:meth:`_first_sync`)."""
        started = time.perf_counter()
        dirty = self.state.meta("syncing") is not None
        self.stats.repaired = dirty
        self.state.set_meta("syncing", str(time.time()))
        known = self.state.notes()
        tags = json.dumps({"scope": self.coll.scope, "agents": sorted(self.coll.agents), "path": self.coll.path},
                          sort_keys=True)
        self._rescope = self._retagged(known, tags)
        patterns = (self.coll.pattern,) if self.coll.pattern else tuple(self.source.patterns)
        if not known and not dirty and not self.state.gone() and self._first_sync(patterns):
            self.stop()
            self._link()
        else:
            scan = self._scan(known, patterns)
            if known and self.stats.scanned == 0 and not self.allow_empty:
                self._refuse_empty(known, patterns, dirty)
            plan = self._plan(known, scan, dirty)
            self.stats.scan_ms = (time.perf_counter() - started) * 1000
            if scan.touched:
                self.state.put(scan.touched)
            self._apply(plan, dirty)
        self.state.set_meta("tags", tags)
        self.state.set_meta("syncing", None)
        self.stats.ms = (time.perf_counter() - started) * 1000
        return self.stats

    def _retagged(self, known: dict[str, NoteState], tags: str) -> bool:
        """Whether the nodes carry other tags than the collection now has (re-scoped, re-pointed, or
        registered before the default scope when its nodes were unscoped): every note is rewritten."""
        recorded = self.state.meta("tags")
        if not (known and recorded != tags and (recorded is not None or self.coll.unscoped_before)):
            return False
        before = json.loads(recorded) if recorded else {}
        what = [k for k in ("scope", "agents", "path") if before.get(k) != json.loads(tags)[k]]
        log("collections", "op=rescope", collection=self.coll.name, scope=self.coll.scope,
            was=before.get("scope") if recorded else "-", notes=len(known),
            reason=f"{'-'.join(what) or 'tags'}-changed" if recorded else "registered-without-scope")
        return True

    def _scan(self, known: dict[str, NoteState], patterns: Sequence[str]) -> Scan:
        """Walk the folder and sort each matching file against the state (:meth:`_scan_file`)."""
        scan = Scan()
        for rel, stat in walk(self.root, patterns, stop=self.stop,
                              on_skip=lambda rel, reason: self._skip(scan, rel, reason)):
            self.stop()
            self.stats.scanned += 1
            scan.seen.add(rel)
            self._scan_file(scan, rel, stat, known.get(rel))
        return scan

    def _skip(self, scan: Scan, rel: str, reason: str) -> None:
        self.stats.skipped += 1
        self.stats.errors.append(f"{rel}: {reason}")
        scan.seen.discard(rel)  # a note that became binary or too large is a note no more

    def _scan_file(self, scan: Scan, rel: str, stat: os.stat_result, old: NoteState | None) -> None:
        """One file: unchanged (by its stat, or by its hash: ``touched``), a change of a known note,
        fresh (a path the state does not know), or skipped (too large, unreadable, binary)."""
        if old is not None and not self.rehash and not self._rescope and old.same_stat(stat):
            self.stats.unchanged += 1  # same size, nanosecond mtime and ctime: not read again
            return
        if stat.st_size > MAX_FILE_BYTES:
            self._skip(scan, rel, "too-large")
            return
        try:
            raw = (self.root / rel).read_bytes()
        except OSError as exc:
            self.stats.failed += 1
            self.stats.errors.append(f"{rel}: {exc.strerror or exc}")
            return
        digest = hashlib.sha256(raw).hexdigest()
        if old is not None and old.hash == digest and not self._rescope:
            self.stats.unchanged += 1
            scan.touched.append(_restated(old, rel, digest, stat))
            return
        text, how = decode(raw)
        if text is None:
            self._skip(scan, rel, how or "binary")
            return
        if how:
            self.stats.warnings.append(f"{rel}: not UTF-8; read as {how}")
        if old is None:
            scan.fresh.append(_Fresh(rel, stat, digest, text))
        elif old.hash == digest:  # same content, new tags: keep its vectors
            self.stats.rescoped += 1
            scan.changes.append(Change(_restated(old, rel, digest, stat), text, existing=True, reuse_vectors=True))
        else:
            self.stats.changed += 1
            scan.changes.append(Change(_restated(old, rel, digest, stat), text, existing=True))

    def _refuse_empty(self, known: dict[str, NoteState], patterns: Sequence[str], dirty: bool) -> None:
        """No file matches any more: an unmounted drive or a cloud folder not yet filled looks like
        this, so the notes are kept and the sync refused (``allow_empty`` deletes them)."""
        if not dirty:
            self.state.set_meta("syncing", None)
        raise UserError(f"PATH: no file under {self.root} matches {', '.join(patterns)} any more; the "
                        f"{len(known)} notes of collection '{self.coll.name}' were kept (an unmounted or not yet "
                        "filled folder looks like this). Sync with --allow-empty to delete them, "
                        "or remove the collection")

    def _plan(self, known: dict[str, NoteState], scan: Scan, dirty: bool) -> Plan:
        """What the scan means for the store: a fresh file holding a vanished note's content is that
        note renamed (its id, links and vectors kept), any other fresh file a new note; a vanished
        note nothing took over is deleted.

        A new note's document may exist soft-deleted: its file came back (the state's ``gone``
        remembers it), or the collection was removed and added again (ids are stable), which a
        first sync's probe of its first new note finds out; then every new note is looked up."""
        gone = {rel: n for rel, n in known.items() if rel not in scan.seen}
        by_hash: dict[str, list[NoteState]] = {}
        for n in gone.values():
            by_hash.setdefault(n.hash, []).append(n)
        plan = Plan(list(scan.changes))
        buried = self.state.gone() if scan.fresh else set()
        probe = not known and not dirty
        for f in scan.fresh:
            moved = by_hash.get(f.digest)
            if moved:
                old = moved.pop(0)
                plan.renamed_from.append(old.relpath)
                self.stats.renamed += 1
                plan.changes.append(Change(_restated(old, f.rel, f.digest, f.stat), f.text, existing=True,
                                           reuse_vectors=True))
                continue
            change = self._new_note(f)
            if dirty or probe or f.rel in buried:
                change.existing = self._stored(change.state.doc_id, plan)
                if probe:
                    probe = False
                    if change.existing:  # removed and added again: look at every note's document
                        buried = _Everything()
            self.stats.new += 1
            plan.changes.append(change)
        plan.deleted = [n for n in gone.values() if n.relpath not in plan.renamed_from]
        return plan

    def _new_note(self, f: _Fresh) -> Change:
        note_id = note_id_for(self.coll.name, f.rel)
        doc_id = sectioniser.document_id(self.account, f"collection:{self.coll.name}:{note_id}")
        return Change(NoteState(f.rel, note_id, doc_id, f.digest, f.stat.st_size, f.stat.st_mtime_ns, "", [], [], [],
                                f.stat.st_ctime_ns), f.text, existing=False)

    def _stored(self, doc_id: str, plan: Plan) -> bool:
        """Whether the store holds the document (a soft-deleted one is revived first: ``plan.revive``)."""
        node = self.store.get(doc_id, guards=self.guards, include_deleted=True)
        if node is not None and node.deleted:
            plan.revive.append(doc_id)
        return node is not None

    def _apply(self, plan: Plan, dirty: bool) -> None:
        """Write the plan: revive, write the changed and new notes, forget the renamed paths, delete
        the notes gone, then resolve the links that may have changed."""
        for doc_id in plan.revive:  # live again before its new content is written over it
            self.store.restore(doc_id, guards=self.guards)
        with gc_paused(), self._session():
            self._write_all(((c.state, c.existing, c.reuse_vectors, result) for c, result in self._parsed(plan.changes)),
                            embed=self.embedder is not None or any(c.reuse_vectors for c in plan.changes))
        if plan.renamed_from:
            self.state.drop(plan.renamed_from)
        for n in plan.deleted:
            self.store.soft_delete(n.doc_id, guards=self.guards)
        if plan.deleted:
            self.state.bury(plan.deleted)
            self.state.drop(n.relpath for n in plan.deleted)
        self.stats.deleted = len(plan.deleted)
        self.stop()
        if self.stats.new or self.stats.renamed or plan.deleted or dirty or self._names_changed:
            self._link()  # the set of names changed: any note's link may resolve differently now
        elif plan.changes:
            self._link(only={c.state.relpath for c in plan.changes})

    def _parsed(self, changes: list[Change]) -> Iterator[tuple[Change, Parsed | str]]:
        """``(change, parse result)`` in order: in this process, or, for a big sync, in forked
        worker processes (parsing and sectioning are pure Python: a thread would take turns with
        the writer on the GIL, a process runs beside it on another core)."""
        workers = self._workers(len(changes))
        if not workers:
            for change in changes:
                self.stop()
                yield change, self._parse_one(change.state, change.text)
            return
        step = min(self.batch_notes, PIECE_NOTES)
        pieces = (changes[start:start + step] for start in range(0, len(changes), step))
        with closing(self._pooled(workers, pieces, lambda piece: (_parse_piece, [(c.state, c.text) for c in piece]))) \
                as parsed:
            for piece, results in parsed:
                yield from zip(piece, results, strict=True)

    def _pooled(self, workers: int, pieces: Iterable[list[Any]],
                task: Callable[[list[Any]], tuple[Callable[[Any], list[Any]], Any]]) -> Generator[tuple[list[Any], list[Any]]]:
        """``(piece, what the worker returned for it)`` in order, from ``workers`` forked processes;
        ``task(piece)`` is the function and argument sent. Pieces are taken from ``pieces`` only as
        the workers need them (a bounded number ahead), so a walk feeding it runs beside them."""
        context = multiprocessing.get_context("fork")
        with _forked(self), ProcessPoolExecutor(workers, mp_context=context, initializer=_orphan_watch,
                                                initargs=(os.getpid(),)) as pool:
            pending: list[tuple[list[Any], Future[list[Any]]]] = []
            ahead = 2 * workers + 1  # bounds the texts and rows in flight
            try:
                for piece in pieces:
                    fn, arg = task(piece)
                    pending.append((piece, pool.submit(fn, arg)))
                    while len(pending) > ahead:
                        self.stop()
                        done, future = pending.pop(0)
                        yield done, future.result()
                while pending:
                    self.stop()
                    done, future = pending.pop(0)
                    yield done, future.result()
            except BaseException:  # stopped (or failed): the pieces not started are not parsed
                pool.shutdown(wait=False, cancel_futures=True)
                raise

    def _session(self) -> AbstractContextManager[Any]:
        """The store's setting for many staged writes in a row, where it has one."""
        session = getattr(self.store, "staged_session", None) if self._staged else None
        return session() if session is not None else nullcontext()

    def _first_sync(self, patterns: Sequence[str]) -> bool:
        """A collection's first sync, as one stream: the walk hands the files to the parse workers as
        it finds them, and they read, hash, decode, parse and stage each one (nothing to compare it
        with: every file is new), so this process only walks and writes, from the first piece on.

        The same notes, rows, counts and messages as the general path (:meth:`run`), in the same
        order. Returns False, with nothing written and the counts reset, when the general path
        applies instead: a folder too small for workers, or one whose first note's document the
        store already holds (the collection was removed and added again: every note is looked up).
        """
        walked = time.perf_counter()
        symlinks: list[tuple[str, int, int, int, str | None]] = []  # skipped by the walk, in its order

        def files() -> Iterator[tuple[str, int, int, int, str | None]]:
            for rel, stat in walk(self.root, patterns, stop=self.stop,
                                  on_skip=lambda rel, why: symlinks.append((rel, 0, 0, 0, why))):
                yield from symlinks
                symlinks.clear()
                self.stop()
                self.stats.scanned += 1
                yield (rel, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns,
                       "too-large" if stat.st_size > MAX_FILE_BYTES else None)
            yield from symlinks
            self.stats.scan_ms = (time.perf_counter() - walked) * 1000

        stream = files()
        head = list(itertools.islice(stream, PARALLEL_MIN_NOTES))
        workers = self._workers(len(head))
        if not workers:
            self.stats = SyncStats(repaired=self.stats.repaired)
            return False
        step = min(self.batch_notes, PIECE_NOTES)
        rest = itertools.chain(head, stream)
        pieces = iter(lambda: list(itertools.islice(rest, step)), [])
        scan_errors: list[str] = []
        scan_warnings: list[str] = []

        def results(read: Iterator[tuple[list[Any], list[_Read]]]) -> Iterator[tuple[NoteState, bool, bool, Parsed | str]]:
            probe = True
            for _, items in read:
                for item in items:
                    if len(item) == 2:
                        kind, message = item
                        if kind == "skip":
                            self.stats.skipped += 1
                        else:
                            self.stats.failed += 1
                        scan_errors.append(message)
                        continue
                    st, how, parsed = item
                    if probe:  # removed and added again? then the general path looks at every note's document
                        probe = False
                        if self.store.get(st.doc_id, guards=self.guards, include_deleted=True) is not None:
                            raise _Stored
                    if how:
                        scan_warnings.append(f"{st.relpath}: not UTF-8; read as {how}")
                    self.stats.new += 1
                    yield st, False, False, parsed

        try:
            with closing(self._pooled(workers, pieces, lambda piece: (_read_piece, piece))) as read, gc_paused(), \
                    self._session():
                self._write_all(results(read), embed=self.embedder is not None)
        except _Stored:
            self.stats = SyncStats(repaired=self.stats.repaired)
            return False
        self.stats.errors[:0] = scan_errors  # the general path reports the walk's findings first
        self.stats.warnings[:0] = scan_warnings
        return True

    def batch_limits(self) -> Iterator[int]:
        """The notes of each write (and embed) batch in turn: ``RAMP_NOTES``, doubling to ``batch_notes``."""
        limit = min(RAMP_NOTES, self.batch_notes)
        while True:
            yield limit
            limit = min(self.batch_notes, limit * 2)

    def _workers(self, notes: int) -> int:
        """Parse processes for ``notes`` notes (``PLUGHOST_COLLECTIONS_WORKERS``; 0 = parse here)."""
        if notes < PARALLEL_MIN_NOTES or "fork" not in multiprocessing.get_all_start_methods():
            return 0
        workers = COLLECTIONS_WORKERS.read()
        return min(4, max(1, (os.cpu_count() or 1) - 1)) if workers is None else workers

    def _read_one(self, rel: str, size: int, mtime_ns: int, ctime_ns: int, skipped: str | None) -> _Read:
        """A new file of a first sync, read and parsed (in a parse worker)."""
        if skipped is not None:
            return "skip", f"{rel}: {skipped}"
        try:
            raw = (self.root / rel).read_bytes()
        except OSError as exc:
            return "failed", f"{rel}: {exc.strerror or exc}"
        digest = hashlib.sha256(raw).hexdigest()
        text, how = decode(raw)
        if text is None:
            return "skip", f"{rel}: {how or 'binary'}"
        note_id = note_id_for(self.coll.name, rel)
        doc_id = sectioniser.document_id(self.account, f"collection:{self.coll.name}:{note_id}")
        st = NoteState(rel, note_id, doc_id, digest, size, mtime_ns, "", [], [], [], ctime_ns)
        return st, how, self._parse_one(st, text)

    def _parse_one(self, st: NoteState, text: str) -> Parsed | str:
        """The note's rows (staged by the store when it can), links and names, or the error as text;
        counts are added by the caller."""
        sections, chunks = self.stats.sections, self.stats.chunks
        try:
            rows, links, names = self._rows(st, text)
            ids = [row["id"] for row in rows]
            texts = [embedding_text(r["labels"], r["properties"]) or "" for r in rows] \
                if self.embedder is not None else None
            payload = self.store.stage_rows(rows, account_id=self.account, owned=True) if self._staged else rows
        except Exception as exc:  # a source that cannot parse one file (or a row the store refuses) skips that file
            return f"{st.relpath}: {type(exc).__name__}: {exc}"[:200]
        added = (self.stats.sections - sections, self.stats.chunks - chunks)
        self.stats.sections, self.stats.chunks = sections, chunks
        return Parsed(payload, ids, texts, links, names, added[0], added[1], self._warnings)

    def _write_all(self, parsed: Iterator[tuple[NoteState, bool, bool, Parsed | str]], *, embed: bool) -> None:
        """Write the notes ``(state, document may exist, reuse its vectors, parse result)`` in batches."""
        def batches() -> Iterator[list[_Work]]:
            batch: list[_Work] = []
            limits = self.batch_limits()
            limit = next(limits)
            for st, existing, reuse, result in parsed:
                if isinstance(result, str):
                    self.stats.failed += 1
                    self.stats.errors.append(result)
                    continue
                names = result.names
                self.stats.sections += result.sections
                self.stats.chunks += result.chunks
                self.stats.warnings.extend(result.warnings)
                if st.title and (st.title, sorted(st.aliases)) != (names[-1], sorted(names[:-1])):
                    self._names_changed = True  # notes linking to its old title resolve elsewhere now
                st.links, st.title, st.aliases = result.links, names[-1], names[:-1]
                batch.append(_Work(st, result.rows, result.ids, result.texts, existing, reuse))
                if len(batch) >= limit:
                    yield batch
                    batch = []
                    limit = next(limits)
            if batch:
                yield batch

        # three stages on three threads, each in order: parse (here) → embed → write. SQLite and
        # onnxruntime release the GIL, so on two cores the stages overlap instead of queueing.
        with ThreadPoolExecutor(1, thread_name_prefix="collection-embed") as embed_pool, \
                ThreadPoolExecutor(1, thread_name_prefix="collection-write") as write_pool:
            writes: list[Future[None]] = []
            for batch in batches():
                embedded: Future[list[_Work]] | None = embed_pool.submit(self._embed, batch) if embed else None

                def write(batch: list[_Work] = batch, embedded: Future[list[_Work]] | None = embedded) -> None:
                    self._write(embedded.result() if embedded is not None else batch)

                writes.append(write_pool.submit(write))
                while len([w for w in writes if not w.done()]) > 3:  # bound what waits in memory
                    writes[-4].result()
            for w in writes:
                w.result()

    def _link(self, only: set[str] | None = None) -> None:
        """Resolve every note's links (or only those of ``only``) against every note; write the difference."""
        notes = self.state.notes()
        by_rel: dict[str, str] = {}
        by_name: dict[str, str] = {}
        for rel in sorted(notes):
            n = notes[rel]
            low = rel.lower()
            by_rel.setdefault(low, n.doc_id)
            by_rel.setdefault(os.path.splitext(low)[0], n.doc_id)
            by_name.setdefault(os.path.splitext(os.path.basename(low))[0], n.doc_id)
        for rel in sorted(notes):
            for name in [notes[rel].title, *notes[rel].aliases]:
                by_name.setdefault(name.strip().lower(), notes[rel].doc_id)
        add: list[tuple[str, str, str, dict[str, Any] | None]] = []
        remove: list[tuple[str, str]] = []
        changed: list[tuple[str, list[str]]] = []
        for rel, n in notes.items():
            if only is not None and rel not in only:
                continue
            targets: dict[str, str] = {}
            for kind, target in n.links:
                if kind == "markdown":
                    path = os.path.normpath(os.path.join(os.path.dirname(rel), target)).replace(os.sep, "/").lower()
                    doc = by_rel.get(path)
                else:
                    low = target.strip().lower()
                    doc = by_rel.get(low) or by_rel.get(low + ".md") or by_name.get(low) or by_name.get(
                        os.path.basename(low))
                if doc and doc != n.doc_id:
                    targets.setdefault(doc, kind)
            wanted = sorted(targets)
            if wanted == sorted(n.edges):
                continue
            old = set(n.edges)
            add.extend((n.doc_id, LINK_EDGE, t, {"kind": targets[t]}) for t in wanted if t not in old)
            remove.extend((n.doc_id, t) for t in old if t not in targets)
            changed.append((rel, wanted))
        if add:
            missing = self.store.create_edges(add, guards=self.guards)
            self.stats.edges_added += len(add) - len(missing)
        for src, dst in remove:
            self.stats.edges_removed += self.store.delete_edge(src, dst, LINK_EDGE, guards=self.guards)
        if changed:
            self.state.set_edges(changed)

    def close(self) -> None:
        self.state.close()


def sync(store: Any, collection: Collection, source: CollectionSource, *, guards: Guards,
         home: Path, embedder: Any = None, batch_notes: int = BATCH_NOTES,
         stop_event: threading.Event | None = None, allow_empty: bool = False) -> SyncStats:
    """Sync one collection, one process at a time (another's sync of it is waited for); logs
    ``[collections] op=sync`` with the counts. It stops between two files when ``stop_event`` is
    set or the collection is removed or re-pointed meanwhile (``cancelled`` says why). A folder
    where no file matches any more is refused unless ``allow_empty`` (its notes are kept). The
    collection is ``guards``' account's."""
    account_id = guards.account_id

    def waiting() -> None:
        log("collections", "op=sync-wait", collection=collection.name, reason="another-sync-running")

    try:
        with sync_lock(home, account_id, collection.name, stop=stop_event, on_wait=waiting):
            syncer = Syncer(store, collection, source, guards=guards, home=home,
                            embedder=embedder, batch_notes=batch_notes,
                            stop=StopWhen(home, account_id, collection, stop_event))
            syncer.allow_empty = allow_empty
            try:
                syncer.stop()
                stats = syncer.run()
            except SyncCancelled as exc:
                stats = syncer.stats
                stats.cancelled = exc.reason
            finally:
                syncer.close()
    except SyncCancelled as exc:  # shut down while waiting for the other sync
        stats = SyncStats(cancelled=exc.reason)
    if stats.cancelled:
        log("collections", "op=sync-cancelled", collection=collection.name, reason=stats.cancelled,
            scanned=stats.scanned)
        return stats
    log("collections", "op=sync", collection=collection.name, account=account_id[:8], scanned=stats.scanned,
        unchanged=stats.unchanged, new=stats.new, changed=stats.changed, renamed=stats.renamed,
        deleted=stats.deleted, skipped=stats.skipped, failed=stats.failed, rescoped=stats.rescoped,
        warnings=len(stats.warnings), sections=stats.sections, chunks=stats.chunks,
        embedded=stats.embedded, edgesAdded=stats.edges_added, edgesRemoved=stats.edges_removed,
        repaired=stats.repaired, ms=f"{stats.ms:.0f}")
    if stats.scanned == 0:
        log("collections", "warn", reason="no-match", collection=collection.name,
            pattern=collection.pattern or ",".join(source.patterns))
    if stats.new or stats.changed or stats.renamed or stats.deleted or stats.rescoped:
        # a public collection's notes changed (or a collection stopped or started being public)
        after_write(store, home, account_id, [collection.scope, "public" if stats.rescoped else None],
                    reason="collection-sync")
    return stats
