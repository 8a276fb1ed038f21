"""The background embedder of stored turns: the drain (indexed form, vectors, skips, a failing
embedder) and the ``plughost_messages_stored`` hook outside ``plughost serve`` (in place)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conversation_support import HashEmbedder, open_store

from plughost import Principal
from plughost.plugins.memory.embedding import queue as embed_queue
from plughost.ports.graph import Guards
from tests.conftest import require_local_model

ACCOUNT = "acct-one"


def _turns(store, n: int = 3) -> list[str]:
    rows = [{"id": f"m{i}", "labels": ["Message", "WebchatMessage"],
             "properties": {"role": "user" if i % 2 == 0 else "assistant", "text": f"turn number {i}",
                            "conversationId": "conv-1", "sentAt": f"2026-03-04T10:00:0{i}Z", "scope": "public"}}
            for i in range(n)]
    rows.append({"id": "conv-1", "labels": ["Conversation"], "properties": {"channel": "webchat", "sender": "v1"}})
    store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
    return [r["id"] for r in rows]


def test_drain_embeds_turns_in_their_indexed_form(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    store = open_store(tmp_path / "g.sqlite", ACCOUNT)
    _turns(store)
    store.upsert_many([{"id": "m-empty", "labels": ["Message"], "properties": {"role": "user", "text": " ",
                                                                                "conversationId": "conv-1"}}],
                      guards=Principal.system(ACCOUNT).guards)
    skip: set[str] = set()
    assert embed_queue.drain(store, HashEmbedder(), ACCOUNT, skip) == 4  # three turns and the Conversation
    assert [n.id for n in store.missing_embeddings(account_id=ACCOUNT, limit=10)] == ["m-empty"]
    assert skip == {"m-empty"}
    assert embed_queue.drain(store, HashEmbedder(), ACCOUNT, skip) == 0  # a skipped node is not fetched again
    second = store.get("m1", guards=Guards(ACCOUNT))
    assert second is not None and second.properties["searchContext"].endswith("user: turn number 0")
    err = capfd.readouterr().err
    assert "[embed-queue] op=embedded count=4" in err and err.count("op=skip node=m-empty reason=no-text") == 1


class Down:
    name, dimensions = "down", 8

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise ConnectionError("embedder unreachable")


def test_an_embedder_that_is_down_leaves_the_turns_for_the_next_wake(tmp_path: Path) -> None:
    store = open_store(tmp_path / "g.sqlite", ACCOUNT)
    _turns(store)
    skip: set[str] = set()
    with pytest.raises(ConnectionError):
        embed_queue.drain(store, Down(), ACCOUNT, skip)
    assert skip == set() and len(store.missing_embeddings(account_id=ACCOUNT, limit=10)) == 4
    assert embed_queue.drain(store, HashEmbedder(), ACCOUNT, skip, threading.Event()) == 4


def test_hook_plughost_messages_stored(make_host, plughost_home: Path) -> None:
    """Outside ``plughost serve`` the hook embeds the named Messages in place (the local model)."""
    require_local_model()
    from plughost.runtime import hooktable

    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="local")
    store = host.store()
    ids = _turns(store, 2)
    errors = host.call_each(hooktable.MESSAGES_STORED, account_id=ACCOUNT, message_ids=["m1", "nope"])
    assert errors == []
    missing = {n.id for n in store.missing_embeddings(account_id=ACCOUNT, limit=10)}
    assert missing == set(ids) - {"m1"}
    assert "searchContext" in store.get("m1", guards=Guards(ACCOUNT)).properties


def test_a_stop_while_embedding_leaves_the_rest_for_the_next_start(tmp_path: Path,
                                                                    capfd: pytest.CaptureFixture[str]) -> None:
    """A server stopping with a backlog queued: the thread looks at the stop between small steps,
    stops after the step in hand and says how many nodes wait for the next start."""
    from types import SimpleNamespace

    store = open_store(tmp_path / "g.sqlite", ACCOUNT)
    _turns(store, 9)  # nine turns and their Conversation: ten nodes without a vector
    stopping = threading.Event()

    class StopsMidway(HashEmbedder):  # the shutdown arrives while the first step embeds
        def embed(self, texts: list[str]) -> list[list[float]]:
            stopping.set()
            return super().embed(texts)

    queue = embed_queue.EmbedQueue(SimpleNamespace(store=lambda: store), ACCOUNT, StopsMidway(), 60.0)
    queue.stop_event = stopping
    queue.start()
    assert stopping.wait(30)
    queue.stop()
    assert not queue.thread.is_alive()
    left = len(store.missing_embeddings(account_id=ACCOUNT, limit=100))
    assert left == 10 - embed_queue.STEP
    err = capfd.readouterr().err
    assert f"[embed-queue] op=stopped left={left}" in err
    assert embed_queue.drain(store, HashEmbedder(), ACCOUNT, set(), threading.Event()) == left  # the next start


def test_the_serving_stop_halts_the_embedding_when_it_begins(make_host, plughost_home: Path,
                                                              capfd: pytest.CaptureFixture[str]) -> None:
    """Under `plughost serve` the thread winds down when the SIGTERM begins the stop, not when the
    plugins shut down after the grace: the step in hand ends and the rest waits for the next start."""
    from plughost.api import serving

    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none")
    host.state.set(serving.RUNTIME, object())  # type: ignore[arg-type]  # what `serve` sets; only its presence is read
    started, release = threading.Event(), threading.Event()

    class Held(HashEmbedder):  # the first step embeds until the stop has begun
        def embed(self, texts: list[str]) -> list[list[float]]:
            started.set()
            release.wait(30)
            return super().embed(texts)

    host.embedder = Held  # type: ignore[method-assign]
    store = host.store()
    _turns(store, 9)
    embed_queue.start(host)
    queue = host.state.get(embed_queue.STATE_KEY)
    assert queue is not None and started.wait(30)
    serving.stop_of(host).begin(10.0, "SIGTERM")  # no loop here: the listeners run at once
    release.set()
    queue.thread.join(30)
    assert not queue.thread.is_alive()  # ended by the stop's beginning alone, before any shutdown hook
    assert len(store.missing_embeddings(account_id=ACCOUNT, limit=100)) == 10 - embed_queue.STEP
    assert f"[embed-queue] op=stopped left={10 - embed_queue.STEP}" in capfd.readouterr().err
    embed_queue.stop(host)
