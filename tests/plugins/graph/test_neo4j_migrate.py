"""`plughost graph migrate --to neo4j` on the real Neo4j: batches with progress, SIGKILLed twice
(in the node phase, then in the edge phase) and run again until it converges with no duplicate,
the verification, and the install's store recorded for every later process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from graph_support import graph_rows, store_snapshot, write_jsonl

from plughost import Principal
from plughost.ports.graph import Guards
from tests.backends import neo4j_env
from tests.conftest import ensure_account, run_cli

DIMS = "384"
"""The shared server's vector indexes are made at the default length: a test never makes them at another."""


def _kill_when(proc: subprocess.Popen, state: Path, phase: str, at_least: int) -> dict:
    """SIGKILL ``proc`` once its checkpoint says ``phase`` has committed ``at_least`` rows."""
    deadline = time.time() + 120
    seen: dict = {}
    try:
        while time.time() < deadline and proc.poll() is None:
            try:
                seen = json.loads(state.read_text())
            except (FileNotFoundError, ValueError):
                seen = {}
            counts = [a.get(f"{phase}_count", 0) for a in seen.get("accounts", {}).values()]
            if sum(counts) >= at_least:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the migration finished before it could be killed; give it more nodes"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return seen


def test_migrate_survives_kill_9_converges_and_records_the_store(tmp_path: Path, plughost_home: Path,
                                                                  make_host) -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from plughost.plugins.graph.neo4j_store.writes import clean_props
    from plughost.plugins.graph.sqlite_store import SqliteStore
    from plughost.util.config import load_env

    tag = uuid.uuid4().hex[:6]
    big, small = f"acct-mig-{tag}", f"acct-mis-{tag}"
    for account, n in ((big, 2500), (small, 40)):
        ensure_account({**os.environ, "ACCOUNT_ID": account})
        f = write_jsonl(tmp_path / f"{account}.jsonl", graph_rows(n, int(DIMS), prefix=account[-3:]))
        res = run_cli("graph", "import", str(f), env={"ACCOUNT_ID": account, "PLUGHOST_EMBED_DIMENSIONS": DIMS})
        assert res.returncode == 0, res.stderr
    source = SqliteStore(plughost_home / "graph.sqlite", env={"ACCOUNT_ID": big})
    assert source.soft_delete(f"{big[-3:]}00007", guards=Guards(big)) == 1
    env = {**neo4j_env(), "ACCOUNT_ID": "", "PLUGHOST_EMBED_DIMENSIONS": DIMS}
    targets = {a: Neo4jStore.from_env({**os.environ, **env, "ACCOUNT_ID": a}) for a in (big, small)}
    try:
        res = run_cli("graph", "migrate", "--to", "neo4j", env={**env, "ACCOUNT_ID": big, "ALLOWED_SCOPES": "public"})
        assert res.returncode == 2 and "graph migrate: admin only" in res.stderr and "Traceback" not in res.stderr
        res = run_cli("graph", "migrate", "--to", "neo4j", env={**env, "ACCOUNT_ID": big})
        assert res.returncode == 2 and "other account(s) besides" in res.stderr and "ACCOUNT_ID= plughost" in res.stderr

        state = plughost_home / "graph-migrate.json"
        argv = [sys.executable, "-m", "plughost.cli", "graph", "migrate", "--to", "neo4j", "--batch-size", "100"]
        proc_env = {**os.environ, **env}
        for phase, at_least in (("nodes", 600), ("edges", 900)):
            proc = subprocess.Popen(argv, env=proc_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            seen = _kill_when(proc, state, phase, at_least)
            assert seen["accounts"], seen
            err = proc.stderr.read() if proc.stderr else ""
            assert f"[graph-migrate] progress account={small[:8]}" in err or "phase=" in err, err[-2000:]

        res = run_cli("graph", "migrate", "--to", "neo4j", "--batch-size", "100", env=env)
        assert res.returncode == 0, res.stderr[-3000:]
        err = res.stderr
        assert "[graph-migrate] start accounts=2 batch=100" in err and "resumed=true" in err
        assert "phase=nodes" in err or "phase=edges" in err
        assert err.count("] verified account=") == 2 and "mismatches=0 recorded=neo4j" in err, err[-3000:]
        assert "[graph-migrate] done accounts=2" in err and "recorded=neo4j" in err
        assert "revert=\"PLUGHOST_STORE=sqlite in" in err or "revert=PLUGHOST_STORE=sqlite" in err
        assert all(a["nodes_done"] and a["edges_done"] for a in json.loads(state.read_text())["accounts"].values())

        for account in (big, small):  # the same nodes (times, vectors, deletions) and edges, no duplicate
            nodes_s, edges_s = store_snapshot(source if account == big else
                                              SqliteStore(plughost_home / "graph.sqlite", env={"ACCOUNT_ID": account}),
                                              account)
            nodes_t, edges_t = store_snapshot(targets[account], account)
            assert len(nodes_t) == len(nodes_s) == len({n[0] for n in nodes_t})
            assert nodes_t == [(i, labels, clean_props(props), vec) for i, labels, props, vec in nodes_s]
            assert edges_t == edges_s

        recorded = (plughost_home / ".env").read_text()
        assert "PLUGHOST_STORE=neo4j" in recorded and f"NEO4J_URI={env['NEO4J_URI']}" in recorded
        clean = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
        later = load_env({**clean, "ACCOUNT_ID": big})  # a later process, no NEO4J_* exported: the .env decides
        assert make_host(**later).store().backend == "neo4j"
        assert later["NEO4J_URI"] == env["NEO4J_URI"]
        res = run_cli("memory", "search", "sourdough oven", "--expand-hops", "0",
                      env={"ACCOUNT_ID": big, "PLUGHOST_EMBED_DIMENSIONS": DIMS})
        assert res.returncode == 0 and res.stdout.strip(), res.stderr

        res = run_cli("graph", "migrate", "--to", "neo4j", env=env)  # again: nothing new, still agrees
        assert res.returncode == 0 and res.stderr.count("agreed=") == 2 and "mismatches=0" in res.stderr, res.stderr[-2000:]
    finally:
        for account, store in targets.items():
            store.wipe_account(account)
            store.close()
        source.close()


def test_migrate_never_writes_over_an_account_it_did_not_put_there(tmp_path: Path, plughost_home: Path) -> None:
    """Another install's live data under the same account id: refused before anything is written."""
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    account = f"acct-own-{uuid.uuid4().hex[:6]}"
    env = {**neo4j_env(), "ACCOUNT_ID": account, "PLUGHOST_EMBED_DIMENSIONS": DIMS}
    live = Neo4jStore.from_env({**os.environ, **env})
    try:
        live.upsert_node(["Note"], {"name": "the other install's note", "scope": "admin"},
                         guards=Principal.system(account).guards,
                         node_id="shared-id")
        ensure_account({**os.environ, "ACCOUNT_ID": account})
        f = write_jsonl(tmp_path / "in.jsonl", [{"id": "shared-id", "labels": ["Chunk"],
                                                 "properties": {"text": "this install's chunk", "scope": "admin"}}])
        assert run_cli("graph", "import", str(f), env={"ACCOUNT_ID": account, "PLUGHOST_EMBED_DIMENSIONS": DIMS}
                       ).returncode == 0
        res = run_cli("graph", "migrate", "--to", "neo4j", env=env)
        assert res.returncode == 2 and "already holds 1 node(s) of account" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr and not (plughost_home / "graph-migrate.json").exists()
        node = live.get("shared-id", guards=Guards(account))
        assert node is not None and list(node.labels) == ["Note"] and node.properties["name"] == "the other install's note"
        assert "PLUGHOST_STORE=neo4j" not in ((plughost_home / ".env").read_text()
                                              if (plughost_home / ".env").exists() else "")
    finally:
        live.erase_nodes(["shared-id"], account_id=account)
        live.close()


def test_an_exact_copy_of_a_small_store_verifies_and_records(plughost_home: Path) -> None:
    """One README ingested and a few chat messages: on so few nodes BM25's IDF differs most between
    the stores and most lists are short, so the check ranks only what both can rank, and records."""
    account = f"acct-small-{uuid.uuid4().hex[:6]}"
    env = {"ACCOUNT_ID": account, "PLUGHOST_EMBED_DIMENSIONS": DIMS}
    ensure_account({**os.environ, **env})
    readme = Path(__file__).resolve().parents[3] / "README.md"
    assert run_cli("memory", "ingest", str(readme), env=env).returncode == 0
    for text in ("hello, what are the opening hours of the shop", "do you ship sourdough bread to Berlin",
                 "thanks, and how much does delivery cost"):
        res = run_cli("memory", "write", "--labels", "Message",
                      "--properties", json.dumps({"text": text, "channel": "webchat"}), env=env)
        assert res.returncode == 0, res.stderr
    target = _neo4j_store(account)
    try:
        res = run_cli("graph", "migrate", "--to", "neo4j", env={**neo4j_env(), **env, "ACCOUNT_ID": ""})
        assert res.returncode == 0 and "mismatches=0" in res.stderr, res.stderr[-3000:]
        verified = next(line for line in res.stderr.splitlines() if "] verified account=" in line)
        done = next(line for line in res.stderr.splitlines() if "] done accounts=" in line)
        nodes = int(verified.split(" nodes=")[1].split()[0])  # the account's nodes, each once
        assert f"copied_nodes={nodes} " in done and "recorded=neo4j" in done, (verified, done)
        assert " ranked=" in verified and " same_sets=" in verified and "fix=" not in verified
        assert nodes == sum(1 for _ in target.scan_nodes(account_id=account, after="", limit=10_000))
        res = run_cli("graph", "migrate", "--to", "neo4j", env={**neo4j_env(), **env, "ACCOUNT_ID": ""})
        assert res.returncode == 0 and "copied_nodes=0" in res.stderr and f" nodes={nodes} " in res.stderr
    finally:
        target.wipe_account(account)
        target.close()


def _neo4j_store(account: str) -> Any:
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    return Neo4jStore.from_env({**os.environ, **neo4j_env(), "ACCOUNT_ID": account,
                                "PLUGHOST_EMBED_DIMENSIONS": DIMS})
