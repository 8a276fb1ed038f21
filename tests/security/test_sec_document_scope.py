"""A change of a document's scope carries to its whole hierarchy (docs/guards.md), on each store.

Making a published KnowledgeDocument private (``memory-update`` of its ``scope``) must take its
Sections and Chunks with it, in the same write: a public reader (``ALLOWED_SCOPES=public``, the
webchat's memory runner) then finds none of its text. Likewise a Section and its Chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plughost.plugins.memory.writes.outcome import Call
from plughost.plugins.memory.writes.writer import MemoryWriter
from plughost.ports.graph import Guards, WriteDenied
from tests.backends import BACKENDS, neo4j_env

A = "acct-docscope"
ROTA = "# Rota\n\nThe staff rota.\n\n## Monday\n\nAnna opens the till at 7.\n\n## Tuesday\n\nBen closes at 9.\n"
PUBLIC = Guards(A, ("public",))


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        s: Any = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": A})
        s.wipe_account(A)
    else:
        from plughost.plugins.graph.sqlite_store import SqliteStore

        s = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": A})
    yield s
    if request.param == "neo4j":
        s.wipe_account(A)
    s.close()


def public_parts(store: Any) -> dict[str, list[str]]:
    return {label: sorted(n.id for n in store.find(guards=PUBLIC, labels=[label], limit=100))
            for label in ("KnowledgeDocument", "Section", "Chunk")}


def test_making_a_document_private_takes_its_sections_and_chunks(store: Any) -> None:
    w = MemoryWriter(store, None, {"ACCOUNT_ID": A})
    doc = w.ingest(Call("memory-ingest", {}), content=ROTA, scope="public")["elementId"]
    before = public_parts(store)
    assert before["KnowledgeDocument"] == [doc] and before["Section"] and before["Chunk"]
    w.update(Call("memory-update", {}), id=doc, properties={"scope": "admin"})
    assert public_parts(store) == {"KnowledgeDocument": [], "Section": [], "Chunk": []}
    assert store.fulltext_search("till", 10, guards=PUBLIC) == []
    admin = Guards(A, ("admin",))
    assert {n.properties["scope"] for n in store.find(guards=admin, labels=["Chunk"], limit=100)} == {"admin"}
    # and back: publishing it again publishes the parts
    w.update(Call("memory-update", {}), id=doc, properties={"scope": "public"})
    assert public_parts(store) == before


def test_a_section_takes_its_chunks_and_leaves_its_siblings(store: Any) -> None:
    w = MemoryWriter(store, None, {"ACCOUNT_ID": A})
    w.ingest(Call("memory-ingest", {}), content=ROTA, scope="public")
    monday = next(n for n in store.find(guards=PUBLIC, labels=["Section"], limit=100) if n.properties["title"] == "Monday")
    w.update(Call("memory-update", {}), id=monday.id, properties={"scope": "shared"})
    texts = " ".join(n.properties["content"] for n in store.find(guards=PUBLIC, labels=["Chunk"], limit=100))
    assert "Ben closes" in texts and "Anna" not in texts


def test_a_narrowed_process_cannot_carry_a_scope_onto_a_part_it_cannot_read(store: Any) -> None:
    w = MemoryWriter(store, None, {"ACCOUNT_ID": A})
    doc = w.ingest(Call("memory-ingest", {}), content=ROTA, scope="public")["elementId"]
    monday = next(n for n in store.find(guards=PUBLIC, labels=["Section"], limit=100) if n.properties["title"] == "Monday")
    w.update(Call("memory-update", {}), id=monday.id, properties={"scope": "admin"})  # the owner hides a part
    narrowed = MemoryWriter(store, None, {"ACCOUNT_ID": A, "ALLOWED_SCOPES": "public,shared"})
    with pytest.raises(WriteDenied):  # else "shared" would declassify the admin part
        narrowed.update(Call("memory-update", {}), id=doc, properties={"scope": "shared"})
    assert store.get(doc, guards=PUBLIC) is not None  # nothing written
    assert {n.properties["scope"] for n in store.find(guards=Guards(A), labels=["Chunk"], limit=100)} == \
        {"public", "admin"}
