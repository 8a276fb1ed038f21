"""`plughost graph import` / `plughost graph purge` through the real CLI, plus crash safety."""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import sys
from pathlib import Path

from graph_support import MIXED_LINES, big_file, kill_once_committed, write_jsonl

from plughost import Principal
from plughost.ports.graph import Guards
from tests.conftest import ensure_account, run_cli

ACCOUNT = "acct-imp"


def open_db(home: Path):
    from plughost.plugins.graph.sqlite_store import SqliteStore

    return SqliteStore(home / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT})


def test_import_reports_bad_lines_and_keeps_the_rest(tmp_path: Path, plughost_home: Path) -> None:
    f = write_jsonl(tmp_path / "nodes.jsonl", MIXED_LINES)
    res = run_cli("graph", "import", str(f), env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 2, res.stderr
    err = res.stderr
    assert "[graph-import] skip line=2 reason=" in err and "invalid JSON" in err
    assert "skip line=4 reason=" in err and "labels[0]" in err
    assert "skip line=6 reason=" in err and "ghost" in err
    assert "skip line=7 reason=" in err and "skip line=8 reason=" in err and "skip line=9 reason=" in err
    assert "Traceback" not in err
    assert "[graph-import] done file=nodes.jsonl nodes=3 edges=1 skipped=5 errors=6 batches=1" in err
    store = open_db(plughost_home)
    g = Guards(ACCOUNT)
    assert store.count(guards=g) == 3
    assert [n.node.id for n in store.expand(["a"], guards=g)["a"]] == ["b"]
    assert store.get("b", guards=g).properties["backlinkCount"] == 1
    store.close()


def test_reimport_upserts_and_forward_edges_resolve(tmp_path: Path, plughost_home: Path) -> None:
    f = big_file(tmp_path / "chain.jsonl", 50)
    rows = [json.loads(line) for line in f.read_text().splitlines()]
    write_jsonl(f, list(reversed(rows)))  # every edge points at a later line
    for _ in range(2):
        res = run_cli("graph", "import", str(f), "--batch-size", "7", env={"ACCOUNT_ID": ACCOUNT})
        assert res.returncode == 0, res.stderr
        assert "nodes=50 edges=49 skipped=0 errors=0 batches=8" in res.stderr
    store = open_db(plughost_home)
    assert store.count(guards=Guards(ACCOUNT)) == 50
    assert len(store.expand(["n10"], guards=Guards(ACCOUNT))["n10"]) == 2
    store.close()


def test_import_needs_account_and_file(tmp_path: Path) -> None:
    res = run_cli("graph", "import", str(tmp_path / "missing.jsonl"), env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 2 and "missing.jsonl: no such file" in res.stderr
    f = write_jsonl(tmp_path / "x.jsonl", [{"labels": ["Person"]}])
    res = run_cli("graph", "import", str(f))
    assert res.returncode == 2 and "ACCOUNT_ID: not set" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("graph", "import", str(f), "--batch-size", "0", env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 2 and "--batch-size" in res.stderr


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    f = big_file(tmp_path / "p.jsonl", 300)
    master, slave = pty.openpty()
    env = dict(os.environ, ACCOUNT_ID=ACCOUNT)
    ensure_account(env)
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "graph", "import", str(f), "--batch-size", "100"],
                            stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    text = b"".join(chunks).decode()
    assert proc.returncode == 0
    assert "\r[" in text and "100.0%" in text and "300 nodes" in text
    assert "[graph-import] done" in text


def test_purge_command(tmp_path: Path, plughost_home: Path) -> None:
    store = open_db(plughost_home)
    store.upsert_node(["Person"], {"name": "gone"}, guards=Principal.system(ACCOUNT).guards, node_id="gone")
    store.upsert_node(["Person"], {"name": "kept"}, guards=Principal.system(ACCOUNT).guards, node_id="kept")
    store.soft_delete("gone", guards=Guards(ACCOUNT))
    res = run_cli("graph", "purge", env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 0 and "[graph-purge] done purged=0" in res.stderr
    res = run_cli("graph", "purge", "--days", "0", env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 0 and "[graph-purge] done purged=1" in res.stderr
    assert store.get("gone", guards=Guards(ACCOUNT), include_deleted=True) is None
    assert store.get("kept", guards=Guards(ACCOUNT)) is not None
    store.close()


def test_sigkill_mid_import_keeps_every_committed_batch(tmp_path: Path, plughost_home: Path) -> None:
    f = big_file(tmp_path / "big.jsonl", 30000)
    env = dict(os.environ, ACCOUNT_ID=ACCOUNT)
    ensure_account(env)
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "graph", "import", str(f), "--batch-size", "500",
                             "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    db = plughost_home / "graph.sqlite"
    seen = kill_once_committed(proc, db, 2000)
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    count = con.execute("SELECT count(*) FROM nodes").fetchone()[0]
    assert count >= seen and count % 500 == 0 and count < 30000
    ids = {r[0] for r in con.execute("SELECT id FROM nodes")}
    assert ids == {f"n{i}" for i in range(count)}  # committed batches are whole and in order
    assert con.execute("SELECT count(*) FROM node_text").fetchone()[0] == count
    assert con.execute("SELECT count(*) FROM edges").fetchone()[0] == count - 1
    con.close()
    res = run_cli("graph", "import", str(f), "--batch-size", "5000", env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 0, res.stderr
    store = open_db(plughost_home)
    assert store.count(guards=Guards(ACCOUNT)) == 30000
    assert store.integrity_check() == "ok"
    store.close()


def test_two_processes_writing_at_once_both_succeed(tmp_path: Path, plughost_home: Path) -> None:
    a = big_file(tmp_path / "a.jsonl", 3000, prefix="a")
    b = big_file(tmp_path / "b.jsonl", 3000, prefix="b")
    env = dict(os.environ, ACCOUNT_ID=ACCOUNT)
    ensure_account(env)
    procs = [subprocess.Popen([sys.executable, "-m", "plughost.cli", "graph", "import", str(f), "--batch-size", "50",
                               "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
             for f in (a, b)]
    outs = [p.communicate(timeout=120)[1] for p in procs]
    for p, err in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "nodes=3000 edges=2999 skipped=0" in err
    store = open_db(plughost_home)
    assert store.count(guards=Guards(ACCOUNT)) == 6000
    assert store.integrity_check() == "ok"
    assert len(store.fulltext_search("w5", 10, guards=Guards(ACCOUNT))) == 10
    store.close()


def test_the_import_example_of_the_docs_imports_as_documented(tmp_path: Path, plughost_home: Path) -> None:
    """The `plughost graph import` line format of ``docs/graph.md`` is the one the command takes."""
    from tests.conftest import REPO

    section = (REPO / "docs" / "graph.md").read_text(encoding="utf-8").split("\n## Import\n", 1)[1]
    block = section.split("```jsonl\n", 1)[1].split("```", 1)[0]
    assert all(key in section for key in ("`labels`", "`properties`", "`id`", "`embedding`", "`edges`"))
    f = tmp_path / "readme.jsonl"
    f.write_text(block, encoding="utf-8")
    res = run_cli("graph", "import", str(f), env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 0, res.stderr
    assert "[graph-import] done file=readme.jsonl nodes=3 edges=2 skipped=0 errors=0" in res.stderr, res.stderr
    store = open_db(plughost_home)
    g = Guards(ACCOUNT)
    assert store.get("acme", guards=g).properties["scope"] == "public"
    assert {n.node.id for n in store.expand(["acme"], guards=g)["acme"]} >= {"ada"}
    store.close()
