"""Store parsed threads as Conversations with Messages, the shape the channels store, through
the one import pipeline (:class:`plughost.api.store.ImportSession`).

:func:`batches` turns the threads into the session's batches (whole threads: a Conversation row,
then its Messages; what the reader skipped goes to the session's skip lines); :class:`Writer` is
the batch write. Ids come from the account, the format and the source's own ids (a message without one: its time,
sender and a hash of its words), so a second run finds every message and writes nothing; a
message whose stored ``contentHash`` differs is rewritten; a new message of a known thread is
appended to its Conversation. A Conversation or Message an admin deleted is left as it is. Every
text is redacted (docs/redaction.md) before it is hashed or stored; Messages get their indexed
form (``searchContext``) and are embedded as ``conversation-append`` embeds them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from plughost import Embedder, GraphStore, Guards, Node, log
from plughost.api.store import (
    CONVERSATION_LABEL,
    HAS_MESSAGE,
    MESSAGE_LABEL,
    ImportBatch,
    ImportRow,
    guarded_upsert_many,
)
from plughost.api.util import redact_text
from plughost.plugins.memory import entities
from plughost.plugins.memory.archives.model import Parsed, Thread, Turn
from plughost.plugins.memory.embedding import indexed_form

CHANNELS = {"claude": "claude-export", "chatgpt": "chatgpt-export", "whatsapp": "whatsapp-export",
            "mbox": "email", "eml": "email"}
EMBED_BATCH = 64
BATCH_MESSAGES = 2000  # messages a batch: a long chat runs on over several (the bar moves); larger ones cost no less


@dataclass
class Summary:
    fmt: str
    conversations: int = 0
    messages: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    embedded: int = 0

    def line(self, dry_run: bool = False) -> str:
        return (f"[import-archive] format={self.fmt} conversations={self.conversations} messages={self.messages} "
                f"new={self.new} updated={self.updated} unchanged={self.unchanged} skipped={self.skipped} "
                f"embedded={self.embedded}" + (" dry-run=1" if dry_run else ""))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def keep_owner(row: dict[str, Any], prior: dict[str, Any]) -> None:
    """A run that cannot tell the owner's turns (no ``--me``) keeps an earlier run's mark: a turn
    stored as the owner's (sender ``owner``) stays theirs, so a re-import of a newer export changes
    only what the archive changed."""
    props = row["properties"]
    if prior.get("sender") != "owner" or props.get("sender") == "owner":
        return
    props.update(role="assistant", sender="owner")
    props["contentHash"] = _digest(*(f"{k}={props[k]}" for k in sorted(props) if k not in ("scope", "contentHash")))


def conversation_id(account: str, fmt: str, key: str) -> str:
    family = "mail" if fmt in ("mbox", "eml") else fmt  # an mbox and the same mail as .eml are one thread
    return "conv-" + _digest(account, "archive", family, key)


def _text(turn: Turn) -> str:
    text = redact_text(turn.text.strip())
    if turn.attachments:
        text = (text + "\n" if text else "") + "[attached: " + ", ".join(turn.attachments) + "]"
    return text


def message_rows(account: str, fmt: str, conv: str, thread: Thread, scope: str) -> list[dict[str, Any]]:
    """The thread's Messages as rows (ids, redacted text, contentHash), oldest first."""
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    last = None
    for turn in thread.turns:
        text = _text(turn)
        when = turn.sent_at or last
        last = when
        if turn.key:
            key = turn.key
        else:  # no id in the source: what it said, when and by whom (a repeat of the same gets a count)
            base = _digest(str(when), turn.sender, text)
            seen[base] = seen.get(base, 0) + 1
            key = f"{base}:{seen[base]}"
        family = "mail" if fmt in ("mbox", "eml") else fmt
        mid = "msg-" + _digest(account, "archive", family, conv, key)
        extra = {k: redact_text(v) if k == "subject" and isinstance(v, str) else v for k, v in turn.extra.items()}
        # the owner's own turns are the business's side (the channels' assistant), sender "owner": never a
        # person an erase could take (plughost erase --sender) and with them every conversation the owner is in
        props: dict[str, Any] = {"role": "assistant" if turn.owner else turn.role, "text": text, "conversationId": conv,
                                 "sentAt": when, "channel": CHANNELS[fmt],
                                 "sender": "owner" if turn.owner else turn.sender, "senderName": turn.sender,
                                 "scope": scope, "source": "import-archive", "sourceFormat": fmt,
                                 "attachments": list(turn.attachments) or None, **extra}
        props = {k: v for k, v in props.items() if v not in (None, "")}
        props["contentHash"] = _digest(*(f"{k}={props[k]}" for k in sorted(props) if k != "scope"))
        rows.append({"id": mid, "labels": [MESSAGE_LABEL], "properties": props})
    return rows


def batches(account: str, fmt: str, parsed: Parsed, scope: str,
            batch_size: int = BATCH_MESSAGES) -> Iterator[ImportBatch]:
    """The archive as an import session's batches of ``batch_size`` messages: each thread as its
    Conversation row, then its Messages in time order (a long chat runs on over several batches);
    the reader's skipped items go with the first (``where: why``). ``done_bytes`` counts messages,
    as the progress bar does."""
    skips: list[tuple[int | str, str]] = []
    for problem in parsed.skipped:
        where, _, why = problem.partition(": ")
        skips.append((where, why or "skipped"))
    rows: list[ImportRow] = []
    done = lines = in_batch = 0
    for thread in parsed.threads:
        conv = conversation_id(account, fmt, thread.key)
        lines += 1
        rows.append(ImportRow(lines, b"", {"id": conv, "labels": [CONVERSATION_LABEL], "properties": {
            "title": redact_text(thread.title), "scope": scope, "channel": CHANNELS[fmt],
            "source": "import-archive", "sourceFormat": fmt}}))
        # in time order, so every turn's indexed form finds the turns before it written already
        rows_in_order = sorted(message_rows(account, fmt, conv, thread, scope),
                               key=lambda r: indexed_form.order_key(r["id"], r["properties"]))
        for row in rows_in_order:
            lines += 1
            done += 1
            in_batch += 1
            rows.append(ImportRow(lines, b"", row))
            if in_batch >= batch_size:
                yield ImportBatch(rows, skips, done, lines)
                rows, skips, in_batch = [], [], 0
    if rows or skips:
        yield ImportBatch(rows, skips, done, lines)


@dataclass
class _Open:
    """The conversation being written: its row, what the store had, and its messages so far."""

    row: dict[str, Any]
    existing: Node | None
    stored: dict[str, Node]
    known: dict[str, tuple[tuple[str, str], dict[str, Any]]]  # id -> (order key, properties): stored or written
    last: str | None  # the stored or written lastMessageAt
    written: bool = False

    @property
    def left_deleted(self) -> bool:
        return self.existing is not None and (self.existing.deleted or CONVERSATION_LABEL not in self.existing.labels)


class Writer:
    """The batch write of an archive import (:class:`plughost.api.store.BatchWriter`): a
    Conversation row opens its thread; its Messages (in this batch or the next ones) are written
    when new or changed (a Conversation an admin deleted stays deleted; a new message keeps its
    Conversation's scope), with their indexed form and vectors, then their entities."""

    def __init__(self, store: GraphStore, embedder: Embedder | None, guards: Guards, fmt: str, *,
                 dry_run: bool = False, env: Any = None, owner_known: bool = True) -> None:
        self.store, self.embedder, self.guards, self.fmt = store, embedder, guards, fmt
        self.dry_run, self.env, self.owner_known = dry_run, env, owner_known
        self.summary = Summary(fmt)
        self.turns = indexed_form.context_turns(env)
        self.open: _Open | None = None

    def write(self, rows: list[ImportRow], skip: Callable[[int, str], None]) -> tuple[int, int]:
        """Write one batch; returns ``(nodes, edges)`` written."""
        nodes = edges = 0
        messages: list[dict[str, Any]] = []
        for r in rows:
            if CONVERSATION_LABEL not in r.row["labels"]:
                messages.append(r.row)
                continue
            n, e = self._messages(messages)
            nodes, edges, messages = nodes + n, edges + e, []
            self._start(r.row)
        n, e = self._messages(messages)
        return nodes + n, edges + e

    def finish(self) -> tuple[int, list[tuple[int, str, str]]]:
        """Nothing waits: a message's edge is written with it."""
        return 0, []

    def _start(self, conv_row: dict[str, Any]) -> None:
        self.summary.conversations += 1
        existing = self.store.get(conv_row["id"], guards=self.guards, include_deleted=True)
        stored = {} if existing is None else {n.id: n for n in self.store.find(
            guards=self.guards, labels=[MESSAGE_LABEL], where={"conversationId": conv_row["id"]}, limit=1_000_000)}
        last = existing.properties.get("lastMessageAt") if existing is not None else None
        known = {i: (indexed_form.order_key(i, n.properties), n.properties) for i, n in stored.items()}
        self.open = _Open(conv_row, existing, stored, known, str(last) if last else None)

    def _messages(self, rows: list[dict[str, Any]]) -> tuple[int, int]:
        """The open conversation's next messages: what is new or changed, written with the Conversation."""
        conv, s = self.open, self.summary
        if not rows or conv is None:
            return 0, 0
        s.messages += len(rows)
        if conv.left_deleted:
            s.unchanged += len(rows)  # deleted by an admin: left deleted
            return 0, 0
        if conv.existing is not None:  # a new or changed message keeps the conversation's scope (not in contentHash)
            scope = str(conv.existing.properties.get("scope") or conv.row["properties"]["scope"])
            for row in rows:
                row["properties"]["scope"] = scope
        todo, new_ids = self._changed(rows, conv.stored)
        if not todo or self.dry_run:
            return 0, 0
        self._index(todo, conv)
        conv_row = {**conv.row, "properties": self._conversation_properties(conv, rows),
                    "edges": [{"type": HAS_MESSAGE, "to": mid} for mid in new_ids]}
        guarded_upsert_many(self.store, [*todo, conv_row], guards=self.guards)
        conv.written = True
        conv.known.update((r["id"], (indexed_form.order_key(r["id"], r["properties"]), r["properties"])) for r in todo)
        self._entities(todo)
        return len(todo) + 1, len(new_ids)

    def _changed(self, rows: list[dict[str, Any]], stored: dict[str, Node]) -> tuple[list[dict[str, Any]], list[str]]:
        """The rows to write (new or changed; a deleted turn stays deleted) and the ids of the new ones."""
        s = self.summary
        todo: list[dict[str, Any]] = []
        new_ids: list[str] = []
        for row in rows:
            prior = stored.get(row["id"]) or self.store.get(row["id"], guards=self.guards, include_deleted=True)
            if prior is not None and not self.owner_known:
                keep_owner(row, prior.properties)
            if prior is not None and (prior.deleted or prior.properties.get("contentHash")
                                      == row["properties"]["contentHash"]):
                s.unchanged += 1
                continue
            if prior is None:
                s.new += 1
                new_ids.append(row["id"])
            else:
                s.updated += 1
            todo.append(row)
        return todo, new_ids

    def _conversation_properties(self, conv: _Open, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The Conversation's properties: its last message's time (never moved back), and when new, the rest."""
        times = [str(r["properties"]["sentAt"]) for r in rows if r["properties"].get("sentAt")]
        props: dict[str, Any] = {}
        if times and (conv.last is None or max(times) > conv.last):
            props["lastMessageAt"] = conv.last = max(times)
        if conv.existing is None and not conv.written:
            props.update(conv.row["properties"], startedAt=min(times) if times else None)
        return {k: v for k, v in props.items() if v not in (None, "")}

    def _index(self, todo: list[dict[str, Any]], conv: _Open) -> None:
        """Set the new turns' ``searchContext`` from the turns before them (stored, or written
        earlier in this run), and embed them. Only the new turns' contexts are computed: a long
        chat is written a batch at a time, and its earlier turns already have theirs."""
        if self.turns > 0:
            ids = {r["id"] for r in todo}
            merged = [(indexed_form.order_key(r["id"], r["properties"]), r["properties"], True) for r in todo]
            merged += [(key, props, False) for i, (key, props) in conv.known.items() if i not in ids]
            merged.sort(key=lambda x: x[0])
            for i, (_, props, new) in enumerate(merged):
                if new:
                    text = indexed_form.search_context(
                        props, [p for _, p, _ in merged[max(0, i - self.turns):i]], self.turns)
                    if text:
                        props[indexed_form.CONTEXT_PROPERTY] = text
        if self.embedder is None:
            return
        for start in range(0, len(todo), EMBED_BATCH):
            part = todo[start:start + EMBED_BATCH]
            texts = [indexed_form.embedding_text(r["properties"], self.env) or "" for r in part]
            try:
                vectors = self.embedder.embed(texts)
            except Exception as exc:  # noqa: BLE001 - stored without vectors; `plughost memory reindex` embeds them
                log("graph-write", "warn", reason="embed-failed", labels="Message", nodes=len(part),
                    error=type(exc).__name__)
                continue
            for row, text, vector in zip(part, texts, vectors, strict=True):
                if text:
                    row["embedding"] = vector
                    self.summary.embedded += 1

    def _entities(self, rows: list[dict[str, Any]]) -> None:
        if not entities.enabled(self.env):
            return
        try:
            entities.write(self.store, [(r["id"], r["properties"]) for r in rows], guards=self.guards,
                           known=sorted({str(r["properties"].get("sender")) for r in rows}))
        except Exception as exc:  # noqa: BLE001 - the turns are stored; `reindex --entities` extracts later
            log("memory-entities", "warn", reason="extract-failed", nodes=len(rows), error=type(exc).__name__)
