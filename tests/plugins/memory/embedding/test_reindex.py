"""Reindex (docs/memory.md#reindex): skip-and-continue past failing nodes, never refetching them."""

from __future__ import annotations

import re
from collections import Counter

from memory_support import ACCOUNT, server_log

from plughost import Principal
from plughost.ports.graph import Guards
from plughost.runtime.hookspecs import hookimpl


class PickyEmbedder:
    """A third-party provider that fails on any text containing 'FAIL' (a batch with one fails whole)."""

    name = "picky"
    dimensions = 8

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        if any("FAIL" in t for t in texts):
            raise RuntimeError("model choked")
        return [[1.0] + [0.0] * 7 for _ in texts]


class PickyPlugin:
    def __init__(self, embedder: PickyEmbedder) -> None:
        self.embedder = embedder

    @hookimpl
    def plughost_embedder(self, host):
        return self.embedder


def seed(store, n: int, failing: set[int]) -> list[str]:
    rows = [{"id": f"n{i:03d}", "labels": ["Event"],
             "properties": {"name": f"event {i}" + (" FAIL" if i in failing else "")}} for i in range(n)]
    store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
    return [r["id"] for r in rows]


def test_reindex_skips_failing_nodes_and_finishes(make_host, plughost_home) -> None:
    from plughost.plugins.memory.embedding.reindex import reindex

    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="picky-embedder", EMBED_DIMENSIONS="8")
    picky = PickyEmbedder()
    host.register(PickyPlugin(picky), "picky-embedder")
    assert host.embedder() is picky
    failing = {3, 17, 18, 40}
    ids = seed(host.store(), 45, failing)
    summary = reindex(host.store(), host.embedder(), account_id=ACCOUNT, batch_size=10)
    assert (summary.processed, summary.skipped) == (41, 4)
    assert sorted(summary.skipped_ids) == sorted(ids[i] for i in failing)
    # each failing text went to the provider exactly twice: once in its batch, once alone; never refetched
    seen = Counter(t for call in picky.calls for t in call)
    for i in failing:
        assert seen[f"Event\nname: event {i} FAIL"] == 2
    assert all(count <= 2 for count in seen.values())
    log = server_log(plughost_home)
    assert "[reindex] op=done processed=41 skipped=4" in " ".join(log)
    done = [line for line in log if line.startswith("[reindex] op=done")]
    assert len(done) == 1 and done[0] == "[reindex] op=done processed=41 skipped=4"
    skips = [line for line in log if line.startswith("[reindex] op=skip-error")]
    assert sorted(re.search(r"node=(\S+)", s)[1] for s in skips) == sorted(ids[i] for i in failing)
    assert sum(line.startswith("[reindex] op=embedded") for line in log) == 41
    left = {n.id for n in host.store().missing_embeddings(account_id=ACCOUNT)}
    assert left == {ids[i] for i in failing}
    # a second run still finishes and reports the same skips (they stay unembedded)
    again = reindex(host.store(), host.embedder(), account_id=ACCOUNT, batch_size=10)
    assert (again.processed, again.skipped) == (0, 4)


def test_reindex_respects_labels_limit_and_account(make_host) -> None:
    from plughost.plugins.memory.embedding.reindex import reindex

    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="picky-embedder", EMBED_DIMENSIONS="8")
    picky = PickyEmbedder()
    host.register(PickyPlugin(picky), "picky-embedder")
    seed(host.store(), 5, set())
    host.store().upsert_many([{"id": "p1", "labels": ["Person"], "properties": {"name": "Ann"}}],
                             guards=Principal.system(ACCOUNT).guards)
    summary = reindex(host.store(), picky, account_id=ACCOUNT, labels=["Person"])
    assert (summary.processed, summary.skipped) == (1, 0)
    summary = reindex(host.store(), picky, account_id=ACCOUNT, limit=2)
    assert summary.processed == 2
    assert len(host.store().missing_embeddings(account_id=ACCOUNT)) == 3
    assert host.store().get("p1", guards=Guards(ACCOUNT)).has_embedding


def test_reindex_progress_bar_on_a_terminal(make_host) -> None:
    import io

    from plughost.plugins.memory.embedding.reindex import reindex

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none", EMBED_DIMENSIONS="8")
    seed(host.store(), 12, {5})
    out = Tty()
    summary = reindex(host.store(), PickyEmbedder(), account_id=ACCOUNT, batch_size=4, progress=None, stream=out)
    assert (summary.processed, summary.skipped) == (11, 1)
    frames = out.getvalue()
    assert "\r[" in frames and "100.0% 12 nodes" in frames and frames.endswith("\n")
    quiet = io.StringIO()  # not a terminal: no bar
    reindex(host.store(), PickyEmbedder(), account_id=ACCOUNT, stream=quiet)
    assert quiet.getvalue() == ""


def test_a_stop_ends_the_reindex_after_the_batch_in_hand(make_host, plughost_home) -> None:
    """A stopping server's reindex (the standing audit's): the stop is looked at between batches, the
    batch in hand is stored, the rest keeps waiting for the next run, the Messages' context pass too."""
    import threading

    from plughost.plugins.memory.embedding.reindex import reindex

    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="picky-embedder", EMBED_DIMENSIONS="8")
    stop = threading.Event()

    class StopsAfterOne(PickyEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            stop.set()  # the SIGTERM arrives while the first batch embeds
            return super().embed(texts)

    host.register(PickyPlugin(StopsAfterOne()), "picky-embedder")
    store = host.store()
    seed(store, 30, set())
    store.upsert_many([{"id": f"m{i:03d}", "labels": ["Message"], "properties": {
        "role": "user", "text": f"turn {i}", "conversationId": "conv-1", "sentAt": f"2026-03-04T10:00:{i:02d}Z"}}
        for i in range(25)], guards=Principal.system(ACCOUNT).guards)
    summary = reindex(store, host.embedder(), account_id=ACCOUNT, batch_size=10, stop=stop)
    assert summary.processed == 10  # the context pass's first batch of turns, then nothing more
    assert len(store.missing_embeddings(account_id=ACCOUNT, limit=100)) == 55 - 10
    log = " ".join(server_log(plughost_home))
    assert "[reindex] op=context conversations=1 changed=10 turns=" in log and " stopped=15" in log
    assert "[reindex] op=stopped processed=10" in log and "[reindex] op=done processed=10 skipped=0" in log
    stop.clear()
    assert reindex(store, host.embedder(), account_id=ACCOUNT, batch_size=10).processed == 45  # the next run


def test_the_limit_caps_the_context_pass_too_and_the_next_runs_take_the_rest(make_host, plughost_home) -> None:
    """The standing audit's ``PLUGHOST_AUDIT_EMBED_LIMIT``: one run embeds at most ``limit`` nodes,
    the Messages' context pass included; what it leaves the next runs take, none twice."""
    from plughost.plugins.memory.embedding.reindex import reindex
    from plughost.plugins.memory.upkeep import standing

    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="picky-embedder", EMBED_DIMENSIONS="8")
    picky = PickyEmbedder()
    host.register(PickyPlugin(picky), "picky-embedder")
    store = host.store()
    seed(store, 6, set())
    store.upsert_many([{"id": f"m{c}{i:02d}", "labels": ["Message"], "properties": {
        "role": "user", "text": f"turn {c} {i}", "conversationId": f"conv-{c}", "sentAt": f"2026-03-04T10:00:{i:02d}Z"}}
        for c in (1, 2) for i in range(12)], guards=Principal.system(ACCOUNT).guards)
    record = standing.run_once(host, ACCOUNT, 10)
    assert record is not None and record["counts"]["embedded"] == 10
    assert sum(len(call) for call in picky.calls) == 10
    assert len(store.missing_embeddings(account_id=ACCOUNT, limit=100)) == 30 - 10
    assert "[reindex] op=context conversations=2 changed=10 turns=" in " ".join(server_log(plughost_home))
    assert " left=14" in " ".join(server_log(plughost_home))
    runs = [reindex(store, host.embedder(), account_id=ACCOUNT, limit=10, summaries=False).processed
            for _ in range(3)]
    assert runs == [10, 10, 0] and not store.missing_embeddings(account_id=ACCOUNT, limit=100)
    assert sum(len(call) for call in picky.calls) == 30  # every node embedded once
    contexts = [n.properties.get("searchContext") for n in store.find(
        guards=Guards(ACCOUNT), labels=["Message"], limit=100)]
    assert len(contexts) == 24 and all(contexts)
