"""Stored conversation turns become searchable by meaning within seconds, not at the next reindex.

The channels pipeline persists a Message before its 2xx and must stay fast, so it only says so
(the ``plughost_messages_stored`` hook). Under ``plughost serve`` that wakes one background
thread here, which drains the account's Messages and Conversations without an embedding: each
Message gets its indexed form (``searchContext``, as ``conversation-append`` writes it) and its
vector, in batches. It also wakes every ``PLUGHOST_EMBED_QUEUE_POLL_S`` seconds (default
:data:`POLL_S`), so a backlog from before the start, or turns another process stored, are caught
up too. In any other process (``plughost record-turn``, ``channels retry``) the hook embeds the
given Messages in place. ``PLUGHOST_EMBED_QUEUE=0`` turns the thread off (``plughost memory
reindex`` then backfills). One line per batch: ``[embed-queue] op=embedded count=N ms=..``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from plughost import Principal, StateKey, log
from plughost.api import serving
from plughost.api.store import CONVERSATION_LABEL, MESSAGE_LABEL
from plughost.plugins.memory.embedding import indexed_form
from plughost.plugins.memory.embedding.text import embedding_text
from plughost.plugins.memory.serving import serving_account
from plughost.plugins.memory.settings import EMBED_QUEUE, EMBED_QUEUE_POLL_S

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Embedder, Host

LABELS = (MESSAGE_LABEL, CONVERSATION_LABEL)
BATCH = 32
STEP = 4  # nodes embedded between two looks at the stop event (a stopping server waits for one step)
LEFT_MAX = 1000  # the unembedded nodes a stop counts at most
POLL_S = EMBED_QUEUE_POLL_S.default
RETRY_S = 5.0  # after the embedder failed a whole batch (an Ollama that is down): wait, then retry
STATE_KEY: StateKey[EmbedQueue] = StateKey("memory.embed-queue")


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:160]


def embed_nodes(store: Any, embedder: Embedder, account_id: str, nodes: Sequence[Any],
                skip: set[str]) -> int:
    """Embed ``nodes`` (a Message in its indexed form); returns how many got a vector.

    A node with nothing to embed, or that fails while others of its batch embed, goes into
    ``skip`` (logged once); when none embeds (the embedder is down) this raises and skips none."""
    rows: list[dict[str, Any]] = []
    texts: list[str] = []
    for node in nodes:
        props = dict(node.properties)
        extra: dict[str, Any] = {}
        if indexed_form.is_message(node.labels) and indexed_form.CONTEXT_PROPERTY not in props:
            props = indexed_form.indexed_message(store, account_id, node.id, props)
            if indexed_form.CONTEXT_PROPERTY in props:
                extra[indexed_form.CONTEXT_PROPERTY] = props[indexed_form.CONTEXT_PROPERTY]
        text = embedding_text(node.labels, props)
        if text is None:
            skip.add(node.id)
            log("embed-queue", "op=skip", node=node.id, reason="no-text")
            continue
        rows.append({"id": node.id, "labels": list(node.labels), "properties": extra})
        texts.append(text)
    if not rows:
        return 0
    try:
        vectors = embedder.embed(texts)
    except Exception:
        failed: list[tuple[str, Exception]] = []
        for row, text in zip(rows, texts, strict=True):  # find the culprit(s) one node at a time
            try:
                row["embedding"] = embedder.embed([text])[0]
            except Exception as exc:
                failed.append((row["id"], exc))
        if len(failed) == len(rows):  # none embeds: the embedder is down, not the nodes
            raise
        for node_id, why in failed:
            skip.add(node_id)
            log("embed-queue", "op=skip", node=node_id, reason="embed-failed", error=_error(why))
        rows = [r for r in rows if "embedding" in r]
    else:
        for row, vector in zip(rows, vectors, strict=True):
            row["embedding"] = vector
    store.upsert_many(rows, guards=Principal.system(account_id).guards)
    return len(rows)


def drain(store: Any, embedder: Embedder, account_id: str, skip: set[str],
          stop: threading.Event | None = None) -> int:
    """Embed every live Message and Conversation of the account that lacks a vector; returns how many.

    With ``stop``, the batch is embedded :data:`STEP` nodes at a time and ``stop`` is checked between
    them: a stopping server leaves the rest (still without a vector) for the next start's backlog and
    says how many, ``[embed-queue] op=stopped left=N``."""
    total = 0
    while stop is None or not stop.is_set():
        nodes = store.missing_embeddings(account_id=account_id, labels=list(LABELS), exclude=skip, limit=BATCH)
        if not nodes:
            break
        started = time.perf_counter()
        done = 0
        step = STEP if stop is not None else len(nodes)
        for at in range(0, len(nodes), step):
            if stop is not None and stop.is_set():
                break
            done += embed_nodes(store, embedder, account_id, nodes[at:at + step], skip)
        total += done
        if done:
            log("embed-queue", "op=embedded", count=done, ms=round((time.perf_counter() - started) * 1000))
    if stop is not None and stop.is_set():
        left = store.missing_embeddings(account_id=account_id, labels=list(LABELS), exclude=skip, limit=LEFT_MAX)
        if left:
            log("embed-queue", "op=stopped", left=len(left) if len(left) < LEFT_MAX else f"{LEFT_MAX}+")
    return total


class EmbedQueue:
    """The serving process's background embedder: woken by the hook, or by its poll."""

    def __init__(self, host: Host, account_id: str, embedder: Embedder, poll_s: float) -> None:
        self.host, self.account, self.embedder, self.poll_s = host, account_id, embedder, poll_s
        self.wake = threading.Event()
        self.stop_event = threading.Event()
        self.skip: set[str] = set()
        self.thread = threading.Thread(target=self._run, name="embed-queue", daemon=True)

    def start(self) -> EmbedQueue:
        self.wake.set()  # the backlog first
        self.thread.start()
        log("embed-queue", "op=start", account=self.account[:8], embedder=self.embedder.name, pollS=self.poll_s)
        return self

    def notify(self) -> None:
        self.wake.set()

    def _run(self) -> None:
        while not self.stop_event.is_set():
            self.wake.wait(self.poll_s)
            self.wake.clear()
            if self.stop_event.is_set():
                break
            try:
                drain(self.host.store(), self.embedder, self.account, self.skip, self.stop_event)
            except Exception as exc:  # the embedder or the store is down: the next wake retries
                log("embed-queue", "op=error", error=_error(exc))
                self.stop_event.wait(RETRY_S)

    def halt(self) -> None:
        """Stop after the step in hand, without waiting (the serving stop's listener, on the loop)."""
        self.stop_event.set()
        self.wake.set()

    def stop(self) -> None:
        self.halt()
        self.thread.join(10)


def start(host: Host) -> None:
    """Under ``plughost serve`` for an account, with an embedder, not narrowed: start the thread."""
    if STATE_KEY in host.state or serving.RUNTIME not in host.state:
        return
    if not EMBED_QUEUE.read(host.env):
        log("embed-queue", "op=off", reason="PLUGHOST_EMBED_QUEUE=0")
        return
    account = serving_account(host, "embed-queue")
    if account is None:
        return
    embedder = host.embedder()
    if embedder is None:
        log("embed-queue", "op=off", reason="no-embedder")
        return
    poll = EMBED_QUEUE_POLL_S.read(host.env)
    queue = EmbedQueue(host, account, embedder, poll).start()
    host.state.set(STATE_KEY, queue)
    # a SIGTERM stops the embedding at once: the backlog never takes CPU from the turns the grace
    # lets finish, and the stop waits for one step (STEP nodes), not for the grace and then a step
    serving.stop_of(host).on_stop(queue.halt)


def stop(host: Host) -> None:
    queue = host.state.pop(STATE_KEY)
    if queue is not None:
        queue.stop()


def messages_stored(host: Host, account_id: str, message_ids: Sequence[str]) -> None:
    """The hook: wake the serving process's thread, or (no server here) embed the Messages now."""
    queue = host.state.get(STATE_KEY)
    if queue is not None:
        queue.notify()
        return
    if serving.RUNTIME in host.state or not message_ids:
        return  # a server whose thread is off: `plughost memory reindex` backfills
    embedder = host.embedder()
    if embedder is None:
        return
    store = host.store()
    guards = Principal.owner(account_id).guards
    nodes = [n for n in (store.get(i, guards=guards) for i in dict.fromkeys(message_ids)) if n is not None]
    started = time.perf_counter()
    try:
        done = embed_nodes(store, embedder, account_id, nodes, set())
    except Exception as exc:  # stored all the same; a server's poll or reindex embeds them later
        log("embed-queue", "op=error", error=_error(exc), count=len(nodes))
        return
    log("embed-queue", "op=embedded", count=done, ms=round((time.perf_counter() - started) * 1000), inline=1)
