"""A collection's first sync is streamed through the parse workers (they read, hash and parse each
file as the walk finds it) and its batches of new rows are written without reading first; the
store it leaves is the one the general path leaves, row for row.

One folder (linked notes past the worker threshold, a Latin-1 note, a binary one, an empty one,
unclosed frontmatter, a symlink leaving the folder, a file over the size limit) is synced three
ways into three homes: streamed (the default), parsed in the syncing process
(``PLUGHOST_COLLECTIONS_WORKERS=0``: read, hashed and parsed there, one note after another),
and through a store that offers only ``upsert_many`` (the ordinary upsert, no staged rows).
Oracle: the store files and the sync state, read directly, and the sync's counts and messages.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from collections_support import ACCOUNT, host_for, write_notes
from graph_support import indexed_terms

from plughost.plugins.memory.collections import registry
from plughost.plugins.memory.collections import sync as sync_module
from plughost.plugins.memory.collections.markdown import MARKDOWN
from plughost.ports.graph import Guards

NOTES = 300  # past PARALLEL_MIN_NOTES: the streamed path forks workers


class _UpsertOnly:
    """The store without ``stage_rows`` / ``write_staged``: the sync falls back to ``upsert_many``."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in ("stage_rows", "write_staged"):
            raise AttributeError(name)
        return getattr(self._store, name)


def _folder(root: Path) -> Path:
    notes = root / "vault"
    write_notes(notes, NOTES)
    odd = notes / "odd"
    odd.mkdir()
    (odd / "latin.md").write_bytes("# Caf\xe9\n\nna\xefve [[Note 3]] and [x](../d3/note-3.md)\n".encode("latin-1"))
    (odd / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)))
    (odd / "empty.md").write_text("")
    (odd / "long.md").write_text("# Long\n\n" + "\n\n".join(f"Paragraph {i} of a long note. " * 20 for i in range(4)))
    (odd / "front.md").write_text("---\ntitle: Front\naliases: [f1, f2]\nkeywords: k1, k2\n---\n# Front\n\n[[f1]]\n")
    (odd / "unclosed.md").write_text("---\ntitle: X\nno close\n\n# Body\n\ntext [[Note 1]]\n")
    (odd / "huge.md").write_text("# Huge\n\n" + "word " * 20_000)
    outside = root / "outside.md"
    outside.write_text("# Outside\n")
    (odd / "away.md").symlink_to(outside)
    return notes


def _synced(home: Path, notes: Path, monkeypatch: pytest.MonkeyPatch, workers: str, *,
            upsert_only: bool = False) -> dict[str, Any]:
    monkeypatch.setenv("PLUGHOST_COLLECTIONS_WORKERS", workers)
    host = host_for(home)
    try:
        store = host.store()
        coll = registry.add(home, ACCOUNT, "vault", str(notes), scope="team", agents=["writer"])
        stats = sync_module.sync(_UpsertOnly(store) if upsert_only else store, coll, MARKDOWN, guards=Guards(ACCOUNT),
                                 home=home)
        path = store.path
    finally:
        host.close()
    out = _dump(path, registry.state_path(home, ACCOUNT, "vault"))
    out["stats"] = {k: v for k, v in stats.as_json().items() if not k.endswith("ms")}
    return out


def _dump(db: Path, state: Path) -> dict[str, Any]:
    con = sqlite3.connect(db)
    name = dict(con.execute("SELECT rid, id FROM nodes"))
    nodes = {}
    for nid, labels, props, scope, agents, deleted, dims in con.execute(
            "SELECT id, labels, properties, scope, agents, deleted_at, dims FROM nodes"):
        nodes[nid] = (labels, {k: v for k, v in json.loads(props).items() if k != "sourcePath"}, scope, agents,
                      deleted, dims)
    side = {t: sorted((name[n], v) for v, n in con.execute(f"SELECT {c}, node FROM {t}"))
            for t, c in (("node_labels", "label"), ("node_agents", "agent"), ("node_keywords", "keyword"))}
    fts = {t: sorted((name[r], hashlib.sha256(repr(terms).encode()).hexdigest())
                     for r, terms in indexed_terms(con, t).items()) for t in ("node_text", "node_text_stem")}
    hits = [con.execute(f"SELECT count(*) FROM {t} WHERE {t} MATCH 'note'").fetchone()[0]
            for t in ("node_text", "node_text_stem")]
    edges = sorted((name[s], t, name[d], p) for s, t, d, p in con.execute(
        "SELECT source, type, target, properties FROM edges"))
    order = [nid for _, nid in sorted(name.items())]  # the same rids, in the walk's order
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    with sqlite3.connect(state) as scon:
        notes = sorted(scon.execute("SELECT relpath, note_id, doc_id, hash, size, title, aliases, links, edges "
                                    "FROM notes"))
    return {"nodes": nodes, "side": side, "fts": fts, "hits": hits, "edges": edges, "order": order, "state": notes}


def test_the_streamed_first_sync_leaves_the_store_the_general_path_leaves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sync_module, "MAX_FILE_BYTES", 50_000)  # huge.md (100 KB) is over it
    notes = _folder(tmp_path)
    streamed: list[bool] = []
    first_sync = sync_module.Syncer._first_sync

    def spy(self: sync_module.Syncer, patterns: Any) -> bool:
        streamed.append(first_sync(self, patterns))
        return streamed[-1]

    monkeypatch.setattr(sync_module.Syncer, "_first_sync", spy)
    got = _synced(tmp_path / "streamed", notes, monkeypatch, "2")
    here = _synced(tmp_path / "here", notes, monkeypatch, "0")
    upserted = _synced(tmp_path / "upserted", notes, monkeypatch, "0", upsert_only=True)
    assert streamed == [True, False, False]
    stats = got["stats"]
    assert stats["new"] == NOTES + 5 and stats["skipped"] == 3 and stats["scanned"] == NOTES + 7
    assert stats["errors"] == ["odd/away.md: symlink-outside", "odd/huge.md: too-large", "odd/image.md: binary"]
    assert stats["warnings"][0] == "odd/latin.md: not UTF-8; read as cp1252" and len(stats["warnings"]) == 2
    assert stats["edges_added"] > NOTES and stats["chunks"] > 0 and got["hits"][0] > 0
    assert got == here
    assert got == upserted
