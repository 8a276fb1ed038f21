"""The JSONL imports at the trust boundary (issue items 8, 12 and 17), through ``plughost`` (a real
process where one is killed mid-import, else the CLI in process, isolated); the store file is read directly.

- another account's id in a line is this account's own new node: nothing aborts, nothing tells;
- a bad line (a 5,000-digit integer, 10,000 labels, a key outside the naming rule, a store-set key,
  an integer past 64 bits, an embedding of the wrong length) is skipped with its line number;
- id-less lines get ids from content and line, so re-running an interrupted import adds nothing;
- ``memory import`` writes edges batch by batch, not after the last node;
- both imports are admin-only: a narrowed process is refused and writes nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run_in_process
from graph_support import kill_once_committed

from plughost import Principal

A, B = "acct-a", "acct-b"


def count(db: Path, sql: str = "SELECT count(*) FROM nodes", *params: object) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, params).fetchone()[0]
    finally:
        con.close()


def lines(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def env(home: Path, account: str = A, **extra: str) -> dict[str, str]:
    return {"PLUGHOST_HOME": str(home), "ACCOUNT_ID": account, "PLUGHOST_EMBEDDER": "none",
            "PLUGHOST_EMBED_DIMENSIONS": "3", **extra}


@pytest.fixture
def home(plughost_home: Path) -> Path:
    from plughost.plugins.graph.sqlite_store import SqliteStore
    from plughost.runtime.accounts import account_dir, build_account, write_json_atomic

    for acct in (A, B):
        account, users = build_account(acct)
        write_json_atomic(account_dir(acct, plughost_home) / "account.json", account)
        write_json_atomic(account_dir(acct, plughost_home) / "users.json", users)
    s = SqliteStore(plughost_home / "graph.sqlite", env={"ACCOUNT_ID": B})
    s.upsert_node(["Person"], {"name": "b's secret", "scope": "admin"},
                  guards=Principal.system(B).guards, node_id="b-1")
    s.close()
    return plughost_home


@pytest.mark.parametrize("command", ["graph", "memory"])
def test_bad_lines_skip_by_number_and_nothing_else_is_lost(home: Path, cli, tmp_path: Path, command: str) -> None:
    good = [{"id": f"g{i}", "labels": ["Person"], "properties": {"name": f"p{i}"}} for i in range(6)]
    bad = [
        {"id": "b-1", "labels": ["Person"], "properties": {"name": "mine now"}},  # another account's id: fine
        '{"labels": ["Person"], "properties": {"n": ' + "7" * 5000 + "}}",
        {"labels": [f"L{i}" for i in range(10000)], "properties": {}},
        {"labels": ["Person"], "properties": {"bad key": 1}},
        {"labels": ["Person"], "properties": {"createdAt": "2020-01-01"}},
        {"labels": ["Person"], "properties": {"n": 2 ** 63}},
        {"labels": ["Chunk"], "properties": {"content": "x"}, "embedding": [0.1] * 7},
    ]
    src = lines(tmp_path / "f.jsonl", good[:3] + bad + good[3:])
    done = cli(command, "import", str(src), "--no-progress", env=env(home))
    out = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in out, out
    for lineno in range(5, 11):  # every bad line by its number (line 4 is another account's id: imported)
        assert f"line={lineno}" in out, (lineno, out)
    assert "line=4" not in out and "another account" not in out and "belongs" not in out
    db = home / "graph.sqlite"
    assert count(db, "SELECT count(*) FROM nodes WHERE account_id = ?", A) == 7
    assert count(db, "SELECT count(*) FROM nodes WHERE account_id = ? AND id = 'b-1' "
                     "AND properties LIKE '%secret%'", B) == 1


def test_graph_import_of_id_less_lines_reruns_idempotently(home: Path, tmp_path: Path) -> None:
    n = 150_000
    src = tmp_path / "big.jsonl"
    with open(src, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"labels": ["Chunk"], "properties": {"content": f"chunk {i} w5"}}) + "\n")
    db = home / "graph.sqlite"
    before = count(db)
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "graph", "import", str(src), "--no-progress"],
                            env={**os.environ, **env(home)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    seen = kill_once_committed(proc, db, before + 10_000)
    assert before < seen < before + n
    done = run_in_process(["graph", "import", str(src), "--no-progress"], {**os.environ, **env(home)})
    assert done.returncode == 0, done.stderr[-500:]
    assert count(db, "SELECT count(*) FROM nodes WHERE account_id = ?", A) == n  # nothing duplicated


def test_memory_import_writes_edges_as_it_goes_and_reruns_idempotently(home: Path, tmp_path: Path) -> None:
    n = 12_000
    src = tmp_path / "m.jsonl"
    with open(src, "w", encoding="utf-8") as fh:
        for i in range(n):
            row = {"labels": ["Note"], "properties": {"title": f"note {i}"}}
            if i % 2:  # every other line has an id, the line before it points at it (a forward edge)
                row["id"] = f"m{i}"
            else:
                row["edges"] = [{"type": "NEXT", "to": f"m{i + 1}"}]
            fh.write(json.dumps(row) + "\n")
    db = home / "graph.sqlite"
    cmd = [sys.executable, "-m", "plughost.cli", "memory", "import", str(src), "--no-progress", "--batch-size", "200"]
    proc = subprocess.Popen(cmd, env={**os.environ, **env(home)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    seen = kill_once_committed(proc, db, 3000)
    assert seen < n
    assert count(db, "SELECT count(*) FROM edges") > 0  # committed batches' edges are in already
    done = run_in_process(cmd[3:], {**os.environ, **env(home)})  # the rerun: in process, isolated
    assert done.returncode == 0, done.stderr[-500:]
    assert count(db, "SELECT count(*) FROM nodes WHERE account_id = ?", A) == n
    assert count(db, "SELECT count(*) FROM edges") == n // 2


@pytest.mark.parametrize("command", ["graph", "memory"])
@pytest.mark.parametrize("narrow", [{"ALLOWED_SCOPES": "public"}, {"AGENT_SLUG": "a1"}])
def test_imports_are_admin_only(home: Path, cli, tmp_path: Path, command: str, narrow: dict) -> None:
    src = lines(tmp_path / "f.jsonl", [{"id": "x", "labels": ["Person"], "properties": {"scope": "admin"}}])
    before = count(home / "graph.sqlite")
    done = cli(command, "import", str(src), "--no-progress", env=env(home, **narrow))
    assert done.returncode == 2 and "admin only" in done.stderr and "Traceback" not in done.stderr
    assert count(home / "graph.sqlite") == before


@pytest.mark.parametrize("command", ["graph", "memory"])
@pytest.mark.parametrize("label", ["Lease", "GraphNode"])
def test_an_import_never_makes_a_node_with_a_label_the_system_owns(home: Path, cli, tmp_path: Path, command: str,
                                                                   label: str) -> None:
    """Six ``Lease`` lines from one account once skipped another's audits on a shared store: a
    reserved label is a bad line (its number and one reason), the rest imports."""
    rows = [{"id": "ok-1", "labels": ["Person"], "properties": {"name": "fine"}},
            {"labels": [label], "properties": {"name": "audit:acct-b", "owner": "x", "expiresAt": 9 ** 15}},
            {"labels": ["Person", label], "properties": {"name": "two labels"}}]
    done = cli(command, "import", str(lines(tmp_path / "l.jsonl", rows)), "--no-progress", env=env(home))
    out = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in out, out
    assert "line=2" in out and "line=3" in out and f"'{label}' is reserved" in out, out
    db = home / "graph.sqlite"
    assert count(db, "SELECT count(*) FROM nodes WHERE account_id = ?", A) == 1
    assert count(db, "SELECT count(*) FROM nodes WHERE labels LIKE ?", f"%{label}%") == 0
