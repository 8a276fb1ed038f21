"""Neo4j-only behaviour of the store on a real server: schema DDL only when missing (readers
never), `plughost graph import` into Neo4j through the real CLI (batched UNWIND transactions,
skip-and-report), and atomic multi-part writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from graph_support import MIXED_LINES, big_file, write_jsonl

from host.errors import UserError
from host.graph import Guards
from tests.backends import BACKENDS, neo4j_env
from tests.conftest import run_cli

pytestmark = pytest.mark.skipif("neo4j" not in BACKENDS, reason="needs Neo4j (NEO4J_URI; CI starts one)")

ACCOUNT = "acct-neo4j-store"


@pytest.fixture
def neo():
    from plugins.graph.neo4j_store import Neo4jStore

    store = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT})
    store.wipe_account(ACCOUNT)
    yield store
    store.wipe_account(ACCOUNT)
    store.close()


def test_schema_ddl_runs_only_for_what_is_missing_and_never_from_a_reader(neo, capfd) -> None:
    from plugins.graph.neo4j_store import Neo4jStore

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
        neo.upsert_many(rows, account_id=ACCOUNT)
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
