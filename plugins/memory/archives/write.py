"""Store parsed threads as Conversations with Messages, the shape the channels store.

Ids come from the account, the format and the source's own ids (a message without one: its time,
sender and a hash of its words), so a second run finds every message and writes nothing; a
message whose stored ``contentHash`` differs is rewritten; a new message of a known thread is
appended to its Conversation. A Conversation or Message an admin deleted is left as it is. Every
text is redacted (docs/redaction.md) before it is hashed or stored; Messages get their indexed
form (``searchContext``) and are embedded as ``conversation-append`` embeds them.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from plughost import Embedder, GraphStore, Guards, Node, log
from plughost.api.store import CONVERSATION_LABEL, HAS_MESSAGE, MESSAGE_LABEL, guarded_upsert_many
from plughost.api.util import Progress, redact_text
from plughost.plugins.memory import entities
from plughost.plugins.memory.archives.model import Thread, Turn
from plughost.plugins.memory.embedding import indexed_form

CHANNELS = {"claude": "claude-export", "chatgpt": "chatgpt-export", "whatsapp": "whatsapp-export",
            "mbox": "email", "eml": "email"}
EMBED_BATCH = 64


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
    problems: list[str] = field(default_factory=list)

    def line(self, dry_run: bool = False) -> str:
        return (f"[import-archive] format={self.fmt} conversations={self.conversations} messages={self.messages} "
                f"new={self.new} updated={self.updated} unchanged={self.unchanged} skipped={self.skipped} "
                f"embedded={self.embedded}" + (" dry-run=1" if dry_run else ""))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


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


class Writer:
    def __init__(self, store: GraphStore, embedder: Embedder | None, guards: Guards, fmt: str, *,
                 scope: str = "admin", dry_run: bool = False, env: Any = None) -> None:
        self.store, self.embedder, self.guards, self.fmt = store, embedder, guards, fmt
        self.account = guards.account_id
        self.scope, self.dry_run, self.env = scope, dry_run, env
        self.summary = Summary(fmt)
        self.turns = indexed_form.context_turns(env)

    def run(self, threads: list[Thread], progress: bool | None = None, stream: TextIO | None = None) -> Summary:
        total = sum(len(t.turns) for t in threads)
        bar = Progress(total, stream or sys.stderr, progress, unit="messages")
        done = 0
        for thread in threads:
            self.thread(thread)
            done += len(thread.turns)
            bar.update(done)
        bar.finish()
        return self.summary

    def thread(self, thread: Thread) -> None:
        s = self.summary
        conv = conversation_id(self.account, self.fmt, thread.key)
        s.conversations += 1
        s.messages += len(thread.turns)
        existing = self.store.get(conv, guards=self.guards, include_deleted=True)
        if existing is not None and (existing.deleted or CONVERSATION_LABEL not in existing.labels):
            s.unchanged += len(thread.turns)  # deleted by an admin: left deleted
            return
        scope = str(existing.properties.get("scope") or self.scope) if existing is not None else self.scope
        rows = message_rows(self.account, self.fmt, conv, thread, scope)
        stored = {n.id: n for n in self.store.find(guards=self.guards, labels=[MESSAGE_LABEL],
                                                    where={"conversationId": conv}, limit=1_000_000)}
        todo, new_ids = self._changed(rows, stored)
        if not todo or self.dry_run:
            return
        self._index(todo, [n for n in stored.values() if n.id not in {r["id"] for r in todo}])
        conv_row = {"id": conv, "labels": [CONVERSATION_LABEL],
                    "properties": self._conversation_properties(thread, rows, existing, scope),
                    "edges": [{"type": HAS_MESSAGE, "to": mid} for mid in new_ids]}
        guarded_upsert_many(self.store, [*todo, conv_row], guards=self.guards)
        self._entities(todo)

    def _changed(self, rows: list[dict[str, Any]], stored: dict[str, Node]) -> tuple[list[dict[str, Any]], list[str]]:
        """The rows to write (new or changed; a deleted turn stays deleted) and the ids of the new ones."""
        s = self.summary
        todo: list[dict[str, Any]] = []
        new_ids: list[str] = []
        for row in rows:
            prior = stored.get(row["id"]) or self.store.get(row["id"], guards=self.guards, include_deleted=True)
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

    def _conversation_properties(self, thread: Thread, rows: list[dict[str, Any]], existing: Node | None,
                                 scope: str) -> dict[str, Any]:
        """The Conversation's properties: its last message's time (never moved back), and when new, the rest."""
        times = [r["properties"].get("sentAt") for r in rows if r["properties"].get("sentAt")]
        conv_props: dict[str, Any] = {"lastMessageAt": max(times) if times else None}
        if existing is None:
            conv_props.update(title=redact_text(thread.title), scope=scope, channel=CHANNELS[self.fmt],
                              startedAt=min(times) if times else None, source="import-archive",
                              sourceFormat=self.fmt)
        elif existing.properties.get("lastMessageAt") and times and str(existing.properties["lastMessageAt"]) > max(times):
            conv_props.pop("lastMessageAt")
        return {k: v for k, v in conv_props.items() if v is not None}

    def _index(self, todo: list[dict[str, Any]], others: list[Any]) -> None:
        """Set the new turns' ``searchContext`` from the whole conversation, and embed them."""
        if self.turns > 0:
            merged = [(r["id"], r["properties"]) for r in todo] + [(n.id, n.properties) for n in others]
            merged.sort(key=lambda x: indexed_form.order_key(x[0], x[1]))
            wanted = indexed_form.contexts(merged, self.turns)
            for row in todo:
                if wanted.get(row["id"]):
                    row["properties"][indexed_form.CONTEXT_PROPERTY] = wanted[row["id"]]
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
