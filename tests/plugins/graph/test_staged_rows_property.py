"""Staged rows (``stage_rows`` then ``write_staged``, the folder sync's path) write exactly what
``upsert_many`` writes, and refuse exactly what it refuses, under any guards.

Each example seeds two identical stores (nodes of two accounts with scopes, agent tags, soft
deletes, edges), draws a batch of rows over a small id pool (new ids, stored ids, ids repeated
in the batch, ids another account uses, null properties, embeddings, edges to known and
unknown ids) and a principal (admin, ALLOWED_SCOPES, AGENT_SLUG), then writes the batch
through ``upsert_many`` into one store and, split into parts staged separately, through
``write_staged`` into the other. Oracle: the store files, read directly: the same nodes, side
tables, BM25 text (both indexes), vectors and edges, or the same refusal and nothing written.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plughost import Principal
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.ports.graph import Guards, WriteDenied
from plughost.util.errors import UserError

A, B = "acct-a", "acct-b"
POOL = ("n0", "n1", "n2", "n3", "n4", "n5", "b0")  # b0: only account B has it
SCOPES = (None, "public", "admin")
AGENTS = (None, ["a1"], ["a2"], ["a1", "a2"])
EXAMPLES = int(os.environ.get("STAGED_EXAMPLES", "40"))
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
"""Three store files an example: in memory where the machine has it (the disk's syncs dominate otherwise)."""

props_st = st.fixed_dictionaries(
    {"title": st.sampled_from(["alpha", "beta gamma", "Moving parts"])},
    optional={"body": st.sampled_from(["moved text", "INV-2024-0042 w5", None]),
              "scope": st.sampled_from(SCOPES), "agents": st.sampled_from(AGENTS),
              "keywords": st.sampled_from(["x, Y", ["k1", "k1"], None]), "n": st.integers(-5, 5)})
edge_st = st.fixed_dictionaries({"type": st.sampled_from(["LINKS_TO", "HAS_SECTION"]),
                                 "to": st.sampled_from([*POOL, "nowhere"])},
                                optional={"properties": st.sampled_from([{"w": 1}, None])})
row_st = st.fixed_dictionaries(
    {"id": st.sampled_from(POOL), "labels": st.sampled_from([["Section"], ["Chunk"], ["Note", "Section"]]),
     "properties": props_st},
    optional={"edges": st.lists(edge_st, max_size=2), "embedding": st.sampled_from([[0.5, 0.25, 1.0]])})
seed_st = st.lists(st.tuples(st.sampled_from(POOL[:5]), st.sampled_from(SCOPES), st.sampled_from(AGENTS),
                             st.booleans()), max_size=4, unique_by=lambda t: t[0])
who_st = st.sampled_from([Guards(A), Guards(A, allowed_scopes=("public",)), Guards(A, agent_slug="a1"),
                          Guards(A, allowed_scopes=("public", "admin"), agent_slug="a2"), Guards(A, allowed_scopes=())])


def _seed(path: Path, seed: list[tuple[str, Any, Any, bool]]) -> SqliteStore:
    other = SqliteStore(path, env={"ACCOUNT_ID": B})
    other.upsert_many([{"id": "b0", "labels": ["Section"], "properties": {"title": "theirs", "scope": "admin"}}],
                      guards=Principal.system(B).guards)
    other.close()
    store = SqliteStore(path, env={"ACCOUNT_ID": A, "PLUGHOST_EMBED_DIMENSIONS": "3"})
    rows = []
    for nid, scope, agents, _ in seed:
        props: dict[str, Any] = {"title": f"stored {nid}", "stale": 1}
        if scope:
            props["scope"] = scope
        if agents:
            props["agents"] = agents
        rows.append({"id": nid, "labels": ["Section"], "properties": props})
    if rows:
        store.upsert_many(rows, guards=Principal.system(A).guards)
        store.create_edges([(rows[0]["id"], "LINKS_TO", rows[-1]["id"], None)],
                           guards=Principal.system(A).guards)
    for nid, *_, deleted in seed:
        if deleted:
            store.soft_delete(nid, guards=Guards(A))
    return store


def _dump(path: Path) -> dict[str, Any]:
    con = sqlite3.connect(path)
    name = {rid: (acct, nid) for rid, nid, acct in con.execute("SELECT rid, id, account_id FROM nodes")}
    nodes = {}
    for rid, nid, acct, labels, props, scope, agents, deleted, dims in con.execute(
            "SELECT rid, id, account_id, labels, properties, scope, agents, deleted_at, dims FROM nodes"):
        side = {t: sorted(r[0] for r in con.execute(f"SELECT {c} FROM {t} WHERE node = ?", (rid,)))
                for t, c in (("node_labels", "label"), ("node_agents", "agent"), ("node_keywords", "keyword"))}
        texts = [con.execute(f"SELECT text FROM {t} WHERE rowid = ?", (rid,)).fetchone()
                 for t in ("node_text", "node_text_stem")]
        vector = con.execute("SELECT embedding FROM node_vectors WHERE node = ?", (rid,)).fetchone()
        nodes[(acct, nid)] = (json.loads(labels), json.loads(props), scope, agents, deleted is not None, dims, side,
                              texts, vector)
    edges = sorted((name[s], t, name[d], p) for s, t, d, p in con.execute("SELECT source, type, target, properties "
                                                                         "FROM edges"))
    stem = con.execute("SELECT count(*) FROM node_text_stem WHERE node_text_stem MATCH 'move'").fetchone()[0]
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    return {"nodes": nodes, "edges": edges, "stem-hits": stem}


def _outcome(fn: Any) -> tuple[str, str]:
    try:
        fn()
    except WriteDenied:
        return ("denied", "")
    except UserError as exc:
        return ("error", str(exc).split(":", 1)[0] if "edges[" not in str(exc) else "edge")
    return ("ok", "")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=seed_st, rows=st.lists(row_st, min_size=1, max_size=6), who=who_st, cut=st.integers(0, 6))
def test_staged_rows_write_what_upsert_many_writes(seed: list[Any], rows: list[dict[str, Any]], who: Guards,
                                                   cut: int) -> None:
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        ref_path, staged_path = Path(tmp) / "ref.sqlite", Path(tmp) / "staged.sqlite"
        ref, staged = _seed(ref_path, seed), _seed(staged_path, seed)
        parts = [rows[:cut], rows[cut:]] if 0 < cut < len(rows) else [rows]
        want = _outcome(lambda: ref.upsert_many(json.loads(json.dumps(rows)), guards=who))
        got = _outcome(lambda: staged.write_staged(
            [staged.stage_rows(json.loads(json.dumps(p)), account_id=A) for p in parts], guards=who))
        ref.close()
        staged.close()
        assert got == want
        assert _dump(staged_path) == _dump(ref_path)


def test_embeddings_by_id_and_foreign_parts(tmp_path: Path) -> None:
    """``embeddings`` adds vectors to staged rows (fast and slow alike); another account's staged
    rows, or anything that is not staged rows, are refused before anything is written."""
    store = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": A, "PLUGHOST_EMBED_DIMENSIONS": "2"})
    store.upsert_many([{"id": "old", "labels": ["Section"], "properties": {"title": "old"}}],
                      guards=Principal.system(A).guards)
    part = store.stage_rows([{"id": "new", "labels": ["Section"], "properties": {"title": "new"}},
                             {"id": "old", "labels": ["Section"], "properties": {"title": "old again"}}],
                            account_id=A)
    assert store.write_staged([part], guards=Guards(A),
                              embeddings={"new": [1.0, 0.0], "old": [0.0, 1.0]}) == 2
    assert store.get_embedding("new", guards=Guards(A)) == [1.0, 0.0]
    assert store.get_embedding("old", guards=Guards(A)) == [0.0, 1.0]
    other = SqliteStore(tmp_path / "g.sqlite", env={"ACCOUNT_ID": B})
    foreign = other.stage_rows([{"id": "x", "labels": ["Section"], "properties": {}}], account_id=B)
    for bad in ([foreign], [{"id": "x"}]):
        with pytest.raises(UserError, match=r"parts\[0\]: expected rows staged by stage_rows"):
            store.write_staged(bad, guards=Principal.system(A).guards)  # type: ignore[list-item]
    with pytest.raises(UserError, match=r"rows\[0\]\.properties\.scope: expected a string"):
        store.stage_rows([{"id": "y", "labels": ["Section"], "properties": {"scope": 3}}], account_id=A)
    assert store.get("x", guards=Guards(A)) is None
    other.close()
    store.close()
