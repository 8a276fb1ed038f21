"""Chunk summaries: extractive (no model), stored with each Chunk when ``memory-ingest`` writes it,
on both stores; backfilled by ``plughost memory reindex`` for Chunks stored without one; the text
surfacing shows for a Chunk, as a Section shows its summary."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plughost import Principal
from plughost.plugins.memory.sectioniser import SUMMARY_MAX_CHARS, chunk, chunk_summary
from plughost.ports.graph import Guards
from tests.backends import BACKENDS, neo4j_env, wipe
from tests.conftest import run_cli

ACCOUNT = "acct-chunks"
GUIDE = "\n\n".join([
    "# Bakery guide",
    "## Sourdough",
    "We bake sourdough bread every morning at five, in the stone oven behind the shop. Our sourdough uses a "
    "starter that is twenty years old and was brought from Porto by the founder. The dough rests for two days "
    "before it is baked. Customers often ask whether the sourdough is vegan, and it is.",
    "Parking is available behind the bakery for ten minutes. The sourdough loaf costs four euros; a half loaf "
    "of sourdough costs two euros fifty. Rye bread costs three euros and is baked on Tuesdays only.",
    "On Sundays the shop is closed, but we deliver sourdough bread to cafes in the old town. Wholesale orders "
    "for sourdough must reach us by Friday noon, by email to orders@harbour.example, with the number of loaves.",
    "Birthday cakes are made to order with three days' notice. A cake for twelve people costs thirty euros, and "
    "a cake for twenty costs forty-five euros. We write names on cakes in chocolate or in sugar icing. Cakes can "
    "be picked up from eight in the morning; we do not deliver cakes, because they travel badly in summer heat.",
])


def _env(backend: str) -> dict[str, str]:
    store = {**neo4j_env(), "PLUGHOST_STORE": "neo4j"} if backend == "neo4j" else {"PLUGHOST_STORE": "sqlite"}
    return {**os.environ, **store, "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}


def _host(backend: str) -> Any:
    from plughost.runtime.host import Host

    return Host(env=_env(backend)).load()


def _chunks(host: Any) -> list[Any]:
    return host.store().find(guards=Guards(ACCOUNT), labels=["Chunk"], order_by="id", descending=False, limit=100)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]


def test_a_short_chunk_is_its_own_summary_a_long_one_its_telling_sentences() -> None:
    assert chunk_summary("  We open\nat seven.  ") == "We open at seven."
    long = " ".join(GUIDE.split("\n\n")[2:])
    summary = chunk_summary(long)
    assert 0 < len(summary) <= SUMMARY_MAX_CHARS and summary != long
    picked = _sentences(summary)
    whole = _sentences(long)
    assert all(s in whole for s in picked)  # extractive: whole sentences of the chunk, nothing else
    assert [whole.index(s) for s in picked] == sorted(whole.index(s) for s in picked)  # in their own order
    assert chunk_summary(long) == summary  # deterministic
    assert chunk_summary("x" * 1000).endswith("…") and len(chunk_summary("x" * 1000)) <= SUMMARY_MAX_CHARS + 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=200),
                min_size=1, max_size=12))
def test_every_chunk_summary_is_bounded_and_taken_from_the_chunk(parts: list[str]) -> None:
    text = ". ".join(parts)
    summary = chunk_summary(text)
    assert len(summary) <= SUMMARY_MAX_CHARS + 1
    flat = " ".join(text.split())
    if len(flat) <= SUMMARY_MAX_CHARS:
        assert summary == flat
    elif not summary.endswith("…"):
        assert all(s in flat for s in summary.split(". ") if s)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, plughost_home: Path) -> Any:
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    host = _host(request.param)
    wipe(host.store(), ACCOUNT)
    host.close()
    yield request.param
    host = _host(request.param)
    wipe(host.store(), ACCOUNT)
    host.close()


def test_ingest_stores_each_chunks_summary_and_surfacing_shows_it(backend: str) -> None:
    from memory_support import call_tool

    from plughost.plugins.memory.surfacing.search import surface_items

    host = _host(backend)
    try:
        err, text = call_tool(host, "memory-ingest", {"content": GUIDE, "attachmentId": "guide", "scope": "admin"})
        assert not err, text
        nodes = _chunks(host)
        assert len(nodes) == len(chunk(GUIDE.split("## Sourdough", 1)[1].strip())) >= 2
        for node in nodes:
            assert node.properties["summary"] == chunk_summary(node.properties["content"]), node.id
        long = [n for n in nodes if len(" ".join(n.properties["content"].split())) > SUMMARY_MAX_CHARS]
        assert long and all(len(n.properties["summary"]) <= SUMMARY_MAX_CHARS for n in long)
        items = surface_items(host, "wholesale sourdough orders Friday", Guards(ACCOUNT), 4, ())
        shown = {i["id"]: i for i in items}
        hit = [n for n in nodes if n.id in shown]
        assert hit, items
        for node in hit:
            assert shown[node.id]["text"] == node.properties["summary"]  # as a Section shows its summary
    finally:
        host.close()


def test_reindex_backfills_chunks_stored_without_a_summary(backend: str) -> None:
    host = _host(backend)
    content = GUIDE.split("\n\n")[3]
    try:
        host.store().upsert_many([
            {"id": "old-chunk", "labels": ["Chunk"], "embedding": [0.1] * 8,
             "properties": {"content": content, "index": 0, "sectionIndex": 0, "scope": "admin"}},
            {"id": "kept-chunk", "labels": ["Chunk"],
             "properties": {"content": "Kept.", "summary": "a summary of its own", "index": 0, "scope": "admin"}},
        ], guards=Principal.system(ACCOUNT).guards)
    finally:
        host.close()
    env = {k: v for k, v in _env(backend).items() if k.startswith(("NEO4J_", "PLUGHOST_STORE", "PLUGHOST_EMBEDDER"))}
    done = run_cli("memory", "reindex", env={**env, "ACCOUNT_ID": ACCOUNT})
    assert "reindex: chunk-summaries backfilled=1" in done.stdout, done.stdout + done.stderr
    assert "[reindex] op=chunk-summaries backfilled=1" in done.stderr
    host = _host(backend)
    try:
        old = host.store().get("old-chunk", guards=Guards(ACCOUNT))
        kept = host.store().get("kept-chunk", guards=Guards(ACCOUNT))
        assert old is not None and kept is not None
        assert old.properties["summary"] == chunk_summary(content)
        assert kept.properties["summary"] == "a summary of its own"
    finally:
        host.close()
    again = run_cli("memory", "reindex", env={**env, "ACCOUNT_ID": ACCOUNT})
    assert "reindex: chunk-summaries backfilled=0" in again.stdout  # nothing left: a rerun writes nothing
