"""`plughost graph export`: the import lines round-trip (nodes, edges, embeddings, times and 100
memory-search queries, on both stores), constant memory, admin only, and nothing half-written."""

from __future__ import annotations

import json
import os
import random
import tracemalloc
import uuid
from pathlib import Path

import pytest
from graph_support import WORDS, graph_rows, store_snapshot, write_jsonl

from plughost.ports.graph import Guards
from tests.backends import BACKENDS, use_backend, wipe
from tests.conftest import ensure_account, run_cli

DIMS = "384"
"""The vector length of the round trip: the shared Neo4j server's indexes are made at the default, 384."""
SMALL_DIMS = "8"
"""The embedded store's own file only (the memory test)."""


def _env(home: Path, account: str) -> dict[str, str]:
    return {"PLUGHOST_HOME": str(home), "ACCOUNT_ID": account, "PLUGHOST_EMBED_DIMENSIONS": DIMS}


def _search_ids(make_host, env: dict[str, str], queries: list[str]) -> list[list[tuple[str, float]]]:
    from plughost.plugins.memory.retrieval.pipeline import SearchRequest
    from plughost.plugins.memory.retrieval.service import run_search

    host = make_host(**env)
    out = []
    for query in queries:
        rows = run_search(host, SearchRequest(query, limit=10), dict(host.env)).rows
        out.append([(r.node.id, round(r.score, 4)) for r in rows])
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_export_then_import_into_a_fresh_home_gives_the_same_graph(
        backend: str, tmp_path: Path, plughost_home: Path, monkeypatch: pytest.MonkeyPatch, make_host) -> None:
    use_backend(monkeypatch, backend)
    tag = uuid.uuid4().hex[:6]
    src, dst = f"acct-exp-{tag}", f"acct-imp-{tag}"  # one Neo4j server: two accounts; embedded: two homes
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    for home, account in ((home_a, src), (home_b, dst)):
        home.mkdir()
        ensure_account({**os.environ, **_env(home, account)})
    rows = graph_rows(240, int(DIMS))
    res = run_cli("graph", "import", str(write_jsonl(tmp_path / "in.jsonl", rows)), env=_env(home_a, src))
    assert res.returncode == 0, res.stderr
    host_a = make_host(**_env(home_a, src))
    store_a = host_a.store()
    for nid in ("g00010", "g00011", "g00123"):
        assert store_a.soft_delete(nid, guards=Guards(src)) >= 1
    try:
        out = tmp_path / "graph.jsonl"
        res = run_cli("graph", "export", "--out", str(out), env=_env(home_a, src))
        assert res.returncode == 0, res.stderr
        assert f"[graph-export] done account={src[:8]} format=jsonl file=graph.jsonl nodes=" in res.stderr
        lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert {"id", "labels", "properties", "stamps"} <= set(lines[0])
        assert any("embedding" in line for line in lines) and any("edges" in line for line in lines)
        assert any("deletedAt" in line["stamps"] for line in lines)
        assert all("accountId" not in line["properties"] for line in lines)

        res = run_cli("graph", "import", str(out), env=_env(home_b, dst))
        assert res.returncode == 0, res.stderr
        assert "[graph-import] stamps nodes=" in res.stderr
        store_b = make_host(**_env(home_b, dst)).store()
        nodes_a, edges_a = store_snapshot(store_a, src)
        nodes_b, edges_b = store_snapshot(store_b, dst)
        assert len(nodes_a) == len(rows)
        assert nodes_b == nodes_a
        assert edges_b == edges_a and len(edges_a) > len(rows)

        rnd = random.Random(3)
        queries = [" ".join(rnd.sample(WORDS, rnd.randint(1, 3))) for _ in range(100)]
        found_a = _search_ids(make_host, _env(home_a, src), queries)
        found_b = _search_ids(make_host, _env(home_b, dst), queries)
        assert sum(1 for hits in found_a if hits) >= 90
        assert found_b == found_a
        vec = rows[1]["embedding"]
        assert [h.node.id for h in store_b.vector_search(vec, 5, guards=Guards(dst))] == \
            [h.node.id for h in store_a.vector_search(vec, 5, guards=Guards(src))]
    finally:
        wipe(store_a, src, dst)


def test_export_streams_in_constant_memory(tmp_path: Path, plughost_home: Path) -> None:
    """Ten times the nodes, the same peak: the export holds one page, never the account."""
    from plughost.plugins.graph.export import export_jsonl
    from plughost.plugins.graph.sqlite_store import SqliteStore

    peaks = {}
    for account, n in (("acct-small", 2000), ("acct-big", 20000)):
        f = write_jsonl(tmp_path / f"{account}.jsonl", graph_rows(n, int(SMALL_DIMS), prefix=account[-3:]))
        res = run_cli("graph", "import", str(f), env={"ACCOUNT_ID": account, "PLUGHOST_EMBED_DIMENSIONS": SMALL_DIMS})
        assert res.returncode == 0, res.stderr
        store = SqliteStore(plughost_home / "graph.sqlite", env={"ACCOUNT_ID": account})
        out = tmp_path / f"{account}.out.jsonl"
        tracemalloc.start()
        with open(os.devnull, "w") as devnull:
            summary = export_jsonl(store, account, out, devnull)
        peaks[account] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        store.close()
        assert summary["nodes"] == n
        assert out.stat().st_size > n * 150
    assert peaks["acct-big"] < 1.5 * peaks["acct-small"], peaks


def test_export_is_admin_only_and_for_the_process_account(tmp_path: Path, plughost_home: Path) -> None:
    f = write_jsonl(tmp_path / "in.jsonl", graph_rows(5, int(DIMS)))
    assert run_cli("graph", "import", str(f), env={"ACCOUNT_ID": "acct-x", "PLUGHOST_EMBED_DIMENSIONS": DIMS}
                   ).returncode == 0
    out = tmp_path / "x.jsonl"
    res = run_cli("graph", "export", "--out", str(out), env={"ACCOUNT_ID": "acct-x", "ALLOWED_SCOPES": "public"})
    assert res.returncode != 0 and "graph export: admin only" in res.stderr and "Traceback" not in res.stderr
    assert len([line for line in res.stderr.splitlines() if "admin only" in line]) == 1
    assert not out.exists()
    ensure_account({**os.environ, "ACCOUNT_ID": "acct-other"})
    res = run_cli("graph", "export", "--account", "acct-other", env={"ACCOUNT_ID": "acct-x"})
    assert res.returncode == 2 and "--account: 'acct-other' is not this process's account" in res.stderr
    res = run_cli("graph", "export", "--account", "bad id!", env={"ACCOUNT_ID": ""})
    assert res.returncode == 2 and "--account: 'bad id!'" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("graph", "export", "--out", str(tmp_path / "nope" / "x.jsonl"), env={"ACCOUNT_ID": "acct-x"})
    assert res.returncode == 2 and "no such folder" in res.stderr
    res = run_cli("graph", "export", "--format", "neo4j-admin", env={"ACCOUNT_ID": "acct-x"})
    assert res.returncode == 2 and "expected DIR" in res.stderr
    res = run_cli("graph", "export", "--account", "acct-x", "--out", str(out), env={"ACCOUNT_ID": ""})
    assert res.returncode == 0, res.stderr  # the install's operator names the account
    assert len(out.read_text().splitlines()) == 5
    assert (out.stat().st_mode & 0o777) == 0o600  # admin-scope data is the owner's to read
    link, victim = tmp_path / "link.jsonl", tmp_path / "victim.txt"
    victim.write_text("keep me")
    link.symlink_to(victim)
    for target in (link, Path("/dev/null")):  # a link or a device is never replaced
        res = run_cli("graph", "export", "--out", str(target), env={"ACCOUNT_ID": "acct-x"})
        assert res.returncode == 2 and "is not a regular file" in res.stderr and "Traceback" not in res.stderr
    assert link.is_symlink() and victim.read_text() == "keep me" and Path("/dev/null").is_char_device()
    res = run_cli("graph", "export", "--out", "/proc/nope.jsonl", env={"ACCOUNT_ID": "acct-x"})
    assert res.returncode == 2 and "cannot write here" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("graph", "export", env={"ACCOUNT_ID": "acct-x"})  # no --out: standard output
    assert res.returncode == 0 and [json.loads(line)["id"] for line in res.stdout.splitlines()] == \
        [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert not list(tmp_path.glob(".*.partial"))


def test_import_refuses_bad_stamps_by_line(tmp_path: Path, plughost_home: Path) -> None:
    f = write_jsonl(tmp_path / "s.jsonl", [
        {"id": "a", "labels": ["Person"], "properties": {}, "stamps": {"createdAt": "yesterday", "updatedAt": "x"}},
        {"id": "b", "labels": ["Person"], "properties": {},
         "stamps": {"createdAt": "2020-01-02T03:04:05.006Z", "updatedAt": "2021-01-02T03:04:05.006Z",
                    "deletedAt": "2022-01-02T03:04:05.006Z"}},
    ])
    res = run_cli("graph", "import", str(f), env={"ACCOUNT_ID": "acct-s"})
    assert res.returncode == 2
    assert "skip line=1 reason=" in res.stderr and "stamps.createdAt: expected an ISO 8601 time" in res.stderr
    from plughost.plugins.graph.sqlite_store import SqliteStore

    store = SqliteStore(plughost_home / "graph.sqlite", env={"ACCOUNT_ID": "acct-s"})
    node = store.get("b", guards=Guards("acct-s"), include_deleted=True)
    assert node is not None and node.properties["createdAt"] == "2020-01-02T03:04:05.006Z"
    assert node.properties["updatedAt"] == "2021-01-02T03:04:05.006Z"
    assert node.properties["deletedAt"] == "2022-01-02T03:04:05.006Z"
    assert store.get("a", guards=Guards("acct-s"), include_deleted=True) is None
    store.close()
