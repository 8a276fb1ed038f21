"""Neo4j-only behaviour of the store on a real server: schema DDL only when missing (readers
never), `plughost graph import` into Neo4j through the real CLI (batched UNWIND transactions,
skip-and-report), and atomic multi-part writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from graph_support import MIXED_LINES, big_file, write_jsonl

from plughost import Principal
from plughost.ports.graph import Guards
from plughost.util.errors import UserError
from tests.backends import needs_neo4j, neo4j_env
from tests.conftest import run_cli

pytestmark = needs_neo4j

ACCOUNT = "acct-neo4j-store"


@pytest.fixture
def neo():
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    store = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT})
    store.wipe_account(ACCOUNT)
    yield store
    store.wipe_account(ACCOUNT)
    store.close()


def test_schema_ddl_runs_only_for_what_is_missing_and_never_from_a_reader(neo, capfd) -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    capfd.readouterr()
    assert neo.ensure_schema() == []  # all there: no DDL at all
    neo._auto("DROP INDEX report_embedding IF EXISTS")
    reader = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_GRAPH_READ_ONLY": "1"})
    assert "Report" not in reader.vector_indexes()
    err = capfd.readouterr().err
    assert "[graph-store] schema-missing count=1 names=report_embedding action=none reason=read-only" in err
    reader.close()
    writer = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT})
    assert "[graph-store] schema-created name=report_embedding" in capfd.readouterr().err
    assert writer.vector_indexes()["Report"] == 384
    writer.close()


def test_a_failing_multi_part_write_leaves_nothing(neo) -> None:
    """An ingest hierarchy is one transaction: a bad edge at the end rolls back the document too."""
    rows = [{"id": "doc", "labels": ["KnowledgeDocument"], "properties": {"title": "Handbook"},
             "edges": [{"type": "HAS_SECTION", "to": "sec"}]},
            {"id": "sec", "labels": ["Section"], "properties": {"title": "Intro"},
             "edges": [{"type": "HAS_CHUNK", "to": "nowhere"}]}]
    with pytest.raises(UserError, match=r"rows\[1\]\.edges\[0\]\.to: node 'nowhere' not found"):
        neo.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
    assert neo.count(guards=Guards(ACCOUNT)) == 0


def test_graph_import_into_neo4j_skips_and_reports(tmp_path: Path, plughost_home: Path, neo) -> None:
    f = write_jsonl(tmp_path / "nodes.jsonl", MIXED_LINES)
    res = run_cli("graph", "import", str(f), env={"ACCOUNT_ID": ACCOUNT, **neo4j_env()})
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert "skip line=6 reason=" in res.stderr and "ghost" in res.stderr
    assert "[graph-import] done file=nodes.jsonl nodes=3 edges=1 skipped=5 errors=6 batches=1" in res.stderr
    g = Guards(ACCOUNT)
    assert neo.count(guards=g) == 3
    assert [n.node.id for n in neo.expand(["a"], guards=g)["a"]] == ["b"]
    assert neo.get("b", guards=g).properties["backlinkCount"] == 1


def test_graph_import_into_neo4j_batches_and_reimports(tmp_path: Path, plughost_home: Path, neo) -> None:
    f = big_file(tmp_path / "chain.jsonl", 50)
    rows = [json.loads(line) for line in f.read_text().splitlines()]
    write_jsonl(f, list(reversed(rows)))  # every edge points at a later line
    for _ in range(2):
        res = run_cli("graph", "import", str(f), "--batch-size", "7", env={"ACCOUNT_ID": ACCOUNT, **neo4j_env()})
        assert res.returncode == 0, res.stderr
        assert "nodes=50 edges=49 skipped=0 errors=0 batches=8" in res.stderr
    assert neo.count(guards=Guards(ACCOUNT)) == 50
    assert len(neo.expand(["n10"], guards=Guards(ACCOUNT))["n10"]) == 2


def test_three_imports_of_one_file_at_once_all_finish_with_one_copy(tmp_path: Path, plughost_home: Path,
                                                                      neo) -> None:
    """Imports racing on the same ids: a batch whose CREATE meets another writer's node (the
    uniqueness constraint) is written again through the MERGE path, not a traceback."""
    import os
    import subprocess
    import sys

    from tests.conftest import ensure_account

    f = big_file(tmp_path / "race.jsonl", 3000)
    env = {**os.environ, "ACCOUNT_ID": ACCOUNT, **neo4j_env()}
    ensure_account(env)
    procs = [subprocess.Popen([sys.executable, "-m", "plughost.cli", "graph", "import", str(f), "--batch-size", "500"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0 and "Traceback" not in err, err[-2000:]
        assert "nodes=3000" in err and "skipped=0 errors=0" in err
    g = Guards(ACCOUNT)
    assert neo.count(guards=g) == 3000
    edges = neo._rows("MATCH (a:GraphNode {accountId: $a})-[r]->() RETURN count(r) AS n", {"a": ACCOUNT})[0]["n"]
    assert edges == 2999  # one NEXT edge per line after the first, made once
    counts = neo._rows("MATCH (b:GraphNode {accountId: $a}) OPTIONAL MATCH ()-[r]->(b) "
                       "WITH b, b.backlinkCount AS stored, count(r) AS real WHERE stored <> real RETURN count(b) AS n",
                       {"a": ACCOUNT})[0]["n"]
    assert counts == 0  # every backlinkCount exact


TRICKY_LINES: list[object] = [
    {"id": "old", "labels": ["Person"], "properties": {"name": "Old"},
     "edges": [{"type": "KNOWS", "to": "p1"}]},  # already stored: its edges MERGE
    {"id": "p1", "labels": ["Person"], "properties": {"name": "One", "keywords": "A, b", "meta": {"x": 1}},
     "edges": [{"type": "KNOWS", "to": "p2", "properties": {"since": 1}},
               {"type": "KNOWS", "to": "p2", "properties": {"how": "work"}},  # a repeat merges its properties
               {"type": "LIKES", "to": "p1"}, {"type": "KNOWS", "to": "old"}, {"type": "KNOWS", "to": "ghost"}]},
    {"id": "p2", "labels": ["Person"], "properties": {"name": "Two"},
     "edges": [{"type": "KNOWS", "to": "p9"}]},  # a later batch's node: a deferred edge
    {"id": "p1", "labels": ["Chunk"], "properties": {"content": "again"},  # a repeated id in the batch
     "edges": [{"type": "LIKES", "to": "p2"}, {"type": "LIKES", "to": "p1"}]},
    {"id": "p3", "labels": ["Chunk"], "properties": {"content": "three"}, "embedding": [0.5] * 384,
     "edges": [{"type": "PART_OF", "to": "p1", "properties": {"rank": 2}}]},
    {"id": "p9", "labels": ["Person"], "properties": {"name": "Nine"}, "edges": [{"type": "KNOWS", "to": "p3"}]},
]
"""One import exercising every edge case of the create-new-nodes path: an id already stored, a
repeated id and repeated edges in a batch, a self loop, edge properties, edges to a stored node,
to a later batch and to no node, keywords, nested properties and an embedding."""


def _dump(store, account: str) -> tuple[list[Any], list[Any]]:
    nodes = store._rows("MATCH (n:GraphNode {accountId: $a}) RETURN n.id AS id, labels(n) AS labels, "
                        "n {.*, createdAt: null, updatedAt: null, accountId: null} AS props ORDER BY id", {"a": account})
    edges = store._rows("MATCH (a:GraphNode {accountId: $a})-[r]->(b) RETURN a.id AS s, type(r) AS t, b.id AS d, "
                        "properties(r) AS p ORDER BY s, t, d", {"a": account})
    return ([(r["id"], sorted(r["labels"]), {k: v for k, v in r["props"].items() if v is not None}) for r in nodes],
            [(r["s"], r["t"], r["d"], r["p"]) for r in edges])


def test_graph_import_creating_new_nodes_writes_what_merging_writes(tmp_path: Path, neo) -> None:
    """The import's create path (ids the account lacks) against the MERGE path every other write
    takes, over the same file in two accounts: the same nodes, labels, properties,
    ``backlinkCount``s, edges and the same report."""
    from plughost.plugins.graph.importer import import_jsonl
    from plughost.plugins.graph.neo4j_store import Neo4jImport, Neo4jStore

    class MergeOnly(Neo4jStore):
        def import_session(self, account_id):
            return Neo4jImport(self, account_id, create=False)

    other = "acct-neo4j-store-merge"
    merge = MergeOnly(neo.driver, env={**neo4j_env(), "ACCOUNT_ID": other}, apply_schema=False)
    merge.wipe_account(other)
    seed, f = write_jsonl(tmp_path / "seed.jsonl", TRICKY_LINES[:1]), write_jsonl(tmp_path / "t.jsonl", TRICKY_LINES)
    try:
        summaries = []
        for store, account in ((neo, ACCOUNT), (merge, other)):
            import_jsonl(store, seed, guards=Principal.owner(account).guards, progress=False)
            s = import_jsonl(store, f, guards=Principal.owner(account).guards, batch_size=5, progress=False)
            summaries.append((s.nodes, s.edges, s.skipped, s.errors))
        assert summaries[0] == summaries[1]
        assert summaries[0][:3] == (6, 10, 0) and "ghost" in summaries[0][3][0]
        got, want = _dump(neo, ACCOUNT), _dump(merge, other)
        assert got == want
        props = dict((i, p) for i, _, p in got[0])
        assert props["p1"]["backlinkCount"] == 3 and props["p1"]["content"] == "again" and "meta" in props["p1"]
        assert ("p1", "KNOWS", "p2", {"since": 1, "how": "work"}) in got[1]
    finally:
        merge.wipe_account(other)


def _unit(rng, dims: int = 384) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(dims)]


def test_compact_rebuilds_vector_indexes_under_their_options_while_searches_go_on(neo, capfd) -> None:
    """`compact_vector_indexes` swaps each index for one built in one pass: its name, label and
    options (a custom HNSW m here) stay, search results stay, a search running meanwhile never
    fails and always has min(k, eligible) rows, and a reader refuses. A store whose discovered
    index is gone finds out and still answers exactly."""
    import random
    import threading
    import time

    from plughost.plugins.graph.neo4j_store import Neo4jStore

    rng = random.Random(5)
    neo._auto("DROP INDEX report_embedding IF EXISTS")
    neo._auto("CREATE VECTOR INDEX report_embedding FOR (n:Report) ON (n.embedding) OPTIONS {indexConfig: "
              "{`vector.dimensions`: 384, `vector.similarity_function`: 'cosine', `vector.hnsw.m`: 12}}")
    neo._auto("CALL db.awaitIndexes(60)")
    neo.clear_index_cache()
    try:
        for batch in range(4):  # four transactions: four segments in the index
            neo.upsert_many([{"id": f"r{batch}-{i}", "labels": ["Report"],
                              "properties": {"title": f"report {batch} {i}", "scope": "public" if i % 3 else "admin"},
                              "embedding": _unit(rng)} for i in range(15)], guards=Principal.system(ACCOUNT).guards)
        public = Guards(ACCOUNT, ("public",), None)
        queries = [_unit(rng) for _ in range(5)]
        before = [[h.node.id for h in neo.vector_search(q, 10, guards=public, labels=["Report"])] for q in queries]
        options = {r["name"]: r["options"]["indexConfig"] for r in neo._rows(
            "SHOW INDEXES YIELD name, options WHERE name = 'report_embedding' RETURN name, options")}
        errors: list[BaseException] = []
        counts: list[int] = []
        done = threading.Event()

        searcher = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT})  # another process's store
        searcher.vector_indexes()

        def search() -> None:
            try:
                while not done.is_set():
                    counts.append(len(searcher.vector_search(queries[0], 50, guards=public, labels=["Report"])))
            except BaseException as exc:  # noqa: BLE001 — the test reports it
                errors.append(exc)

        def searched(n: int) -> None:
            for _ in range(600):
                if len(counts) >= n or errors:
                    return
                time.sleep(0.05)

        thread = threading.Thread(target=search)
        thread.start()
        capfd.readouterr()
        try:
            searched(3)
            assert neo.compact_vector_indexes(["Report"]) == ["report_embedding"]
            searched(len(counts) + 3)
        finally:
            done.set()
            thread.join(60)
            searcher.close()
        assert not errors, errors
        assert counts and set(counts) == {40}  # 40 public Reports: every search had them all
        assert "[graph-store] op=vectors-compacted indexes=1 names=report_embedding" in capfd.readouterr().err
        after = {r["name"]: r["options"]["indexConfig"] for r in neo._rows(
            "SHOW INDEXES YIELD name, options, state WHERE name = 'report_embedding' AND state = 'ONLINE' "
            "RETURN name, options")}
        assert after == options and after["report_embedding"]["vector.hnsw.m"] == 12
        assert [[h.node.id for h in neo.vector_search(q, 10, guards=public, labels=["Report"])]
                for q in queries] == before
        reader = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_GRAPH_READ_ONLY": "1"})
        with pytest.raises(UserError, match="a reader never rebuilds indexes"):
            reader.compact_vector_indexes()
        assert "Report" in reader.vector_indexes()  # discovered, then dropped behind its back:
        neo._auto("DROP INDEX report_embedding")  # the search re-discovers and scores exactly
        assert len(reader.vector_search(queries[0], 50, guards=public, labels=["Report"])) == 40
        assert "[graph-search] op=index-gone action=rediscover" in capfd.readouterr().err
        reader.close()
    finally:
        neo._auto("DROP INDEX report_embedding IF EXISTS")
        neo.ensure_schema()


def test_graph_compact_command(tmp_path: Path, plughost_home: Path, neo) -> None:
    """`plughost graph compact`: admin only; on Neo4j it rebuilds the label's index, on the
    embedded store (exact search, no index) it says there was nothing to do."""
    neo.upsert_node(["Chunk"], {"content": "x"},
                    guards=Principal.system(ACCOUNT).guards, node_id="c1", embedding=[0.5] * 384)
    res = run_cli("graph", "compact", "--label", "Chunk", env={"ACCOUNT_ID": ACCOUNT, **neo4j_env()})
    assert res.returncode == 0, res.stderr
    assert "[graph-store] op=vectors-compacted indexes=1 names=chunk_embedding" in res.stderr
    assert "[graph-compact] done backend=neo4j indexes=1" in res.stderr
    res = run_cli("graph", "compact", env={"ACCOUNT_ID": ACCOUNT, "ALLOWED_SCOPES": "public", **neo4j_env()})
    assert res.returncode != 0 and "graph compact: admin only" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("graph", "compact", "--wait-seconds", "0", env={"ACCOUNT_ID": ACCOUNT, **neo4j_env()})
    assert res.returncode == 2 and "--wait-seconds: expected a positive number" in res.stderr
    res = run_cli("graph", "compact", "--label", "Nope", env={"ACCOUNT_ID": ACCOUNT, **neo4j_env()})
    assert res.returncode == 2 and "[graph-compact] done" not in res.stderr, res.stderr
    assert "plughost: --label: Nope: no vector index on this database; expected one of " in res.stderr
    assert "Chunk" in res.stderr.split("expected one of ", 1)[1]
    for backend in ({**neo4j_env()}, {"PLUGHOST_STORE": "sqlite"}):
        res = run_cli("graph", "compact", "--label", "Chunk", "--label", "Per`son", env={"ACCOUNT_ID": ACCOUNT, **backend})
        assert res.returncode == 2 and res.stderr.startswith(
            "plughost: --label: expected an identifier ([A-Za-z_][A-Za-z0-9_]*), got 'Per`son'"), res.stderr
    res = run_cli("graph", "compact", "--label", "Person", env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 0 and "[graph-compact] done backend=sqlite indexes=0 reason=no-vector-index" in res.stderr
    assert 'detail="the embedded store scores vectors exactly; it has no vector index to rebuild"' in res.stderr
    assert neo.vector_search([0.5] * 384, 1, guards=Guards(ACCOUNT))[0].node.id == "c1"


def test_an_edge_waiting_for_its_target_survives_its_source_vanishing(neo) -> None:
    """An edge to a later batch waits with its source's handle; if another writer deletes the
    source meanwhile, the target keeps an exact backlinkCount and the edge is reported at the end."""
    from plughost.plugins.graph.common import prepare_row

    def batch(rows):
        prepared = [prepare_row(r, ACCOUNT, "node", parsed=True, strict=True) for r in rows]
        edges = [(i, j, t, to, p) for i, (_, es) in enumerate(prepared) for j, (t, to, p) in enumerate(es)]
        return [item for item, _ in prepared], edges, list(range(1, len(rows) + 1))

    session = neo.import_session(ACCOUNT)
    assert session.add(*batch([{"id": "a", "labels": ["Person"], "properties": {"name": "A"},
                                "edges": [{"type": "KNOWS", "to": "t"}]},
                               {"id": "b", "labels": ["Person"], "properties": {"name": "B"},
                                "edges": [{"type": "KNOWS", "to": "t"}]}])) == 0
    neo._rows("MATCH (n:GraphNode {accountId: $a, id: 'a'}) DETACH DELETE n", {"a": ACCOUNT}, read=False)
    assert session.add(*batch([{"id": "t", "labels": ["Person"], "properties": {"name": "T"}}])) == 1
    assert session.finish() == (0, [(1, "KNOWS", "t")])
    g = Guards(ACCOUNT)
    assert neo.get("t", guards=g).properties["backlinkCount"] == 1
    assert [n.node.id for n in neo.expand(["t"], guards=g)["t"]] == ["b"]


def test_the_analysed_text_follows_merges_stays_hidden_and_is_backfilled_before_the_index(neo, capfd) -> None:
    """Each write that touches a text property rewrites the node's analysed text from all its text
    properties (the stored ones merged); reads never return it; a store written before it existed
    (no ftsText, the old per-field english index) gets it on the next writer's start, then the
    index is rebuilt, once."""
    from plughost.plugins.graph.analysis import INDEX_TEXT
    from plughost.plugins.graph.neo4j_store import FULLTEXT_INDEX

    g = Principal.system(ACCOUNT).guards
    neo.upsert_node(["Service"], {"name": "Wedding cakes"}, guards=g, node_id="s1")
    neo.upsert_node(["Service"], {"body": "Tiered sponges, delivered"}, guards=g, node_id="s1")
    neo.upsert_node(["Service"], {"rank": 2}, guards=g, node_id="s1")  # no text property: the text stays
    stored = neo._rows(f"MATCH (n {{accountId: $a, id: 's1'}}) RETURN n.{INDEX_TEXT} AS t", {"a": ACCOUNT})
    assert stored[0]["t"] == "wed cake tier spong deliv"
    assert [h.node.id for h in neo.fulltext_search("delivering weddings", 5, guards=g)] == ["s1"]
    assert INDEX_TEXT not in neo.get("s1", guards=g).properties
    assert INDEX_TEXT not in neo.scan_nodes(account_id=ACCOUNT)[0].properties
    neo.upsert_node(["Service"], {"body": None}, guards=g, node_id="s1")
    assert neo.fulltext_search("delivered", 5, guards=g) == []

    neo._rows("MATCH (n {accountId: $a}) REMOVE n.ftsText", {"a": ACCOUNT}, read=False)
    neo._auto(f"DROP INDEX {FULLTEXT_INDEX}")
    neo._auto(f"CREATE FULLTEXT INDEX {FULLTEXT_INDEX} FOR (n:GraphNode) ON EACH [n.name, n.body] "
              "OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}}")
    capfd.readouterr()
    assert neo.ensure_schema() == [FULLTEXT_INDEX]
    err = capfd.readouterr().err
    assert "[graph-store] schema-backfill property=ftsText nodes=" in err
    assert err.index("schema-backfill") < err.index(f"schema-dropped name={FULLTEXT_INDEX}")
    assert [h.node.id for h in neo.fulltext_search("wedding", 5, guards=g)] == ["s1"]
    assert neo.ensure_schema() == []
    assert "schema-backfill" not in capfd.readouterr().err


def test_concurrent_writes_of_one_node_s_text_both_reach_its_analysed_text(neo) -> None:
    """A write of another text property of the same node waits for the first to commit (the
    stored text is read under the node's write lock), so the analysed text holds both."""
    import threading

    from plughost.plugins.graph.common import prepare
    from plughost.plugins.graph.neo4j_store.writes import write_nodes

    g = Principal.system(ACCOUNT).guards
    neo.upsert_node(["Service"], {"name": "Cakes"}, guards=g, node_id="s2")
    written, release = threading.Event(), threading.Event()

    def slow(tx: Any) -> None:
        write_nodes(tx, [prepare(["Service"], {"title": "Sourdough"}, account_id=ACCOUNT, node_id="s2")], ACCOUNT)
        written.set()
        release.wait(30)  # the transaction stays open, its lock held, until the other write is under way

    first = threading.Thread(target=neo.write, args=(slow,))
    first.start()
    assert written.wait(30)
    second = threading.Thread(target=neo.upsert_node, args=(["Service"], {"body": "Rye loaves"}),
                              kwargs={"guards": g, "node_id": "s2"})
    second.start()
    second.join(0.5)  # blocked on the lock: it cannot have read the text yet
    release.set()
    first.join(30)
    second.join(30)
    stored = neo._rows("MATCH (n {accountId: $a, id: 's2'}) RETURN n.ftsText AS t", {"a": ACCOUNT})[0]["t"]
    assert set(stored.split()) == {"cake", "sourdough", "rye", "loav"}
