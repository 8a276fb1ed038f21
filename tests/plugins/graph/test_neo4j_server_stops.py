"""A Neo4j server that stops under a command, on a private server this test starts and stops
(`scripts/neo4j/neo4j.sh`, as `.ci/run` does): `plughost graph compact` interrupted mid-rebuild
fails as the import does (one `[graph] op=unavailable` line, one `plughost:` line, exit 1, no
traceback), and a command started while the server is down is exit 1 (the store is unavailable,
not bad input) without advice to switch to the embedded store, which on an install means an
empty one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends import needs_neo4j
from tests.conftest import REPO, ensure_account

pytestmark = needs_neo4j

ACCOUNT = "acct-stops"
LAUNCHER = REPO / "scripts" / "neo4j" / "neo4j.sh"


@pytest.fixture
def private_neo4j() -> Iterator[dict[str, str]]:
    """A Neo4j of this test's own (stopping the run's shared one would fail every later test)."""
    env = dict(os.environ, NEO4J_HEAP=os.environ.get("NEO4J_HEAP", "1g"))
    if Path("/dev/shm").is_dir():
        env.setdefault("NEO4J_RUN_PARENT", "/dev/shm")
    started = subprocess.run(["bash", str(LAUNCHER), "start"], capture_output=True, text=True, env=env, timeout=600)
    assert started.returncode == 0, started.stderr[-2000:]
    info = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
    try:
        yield info
    finally:
        subprocess.run(["bash", str(LAUNCHER), "stop", info["NEO4J_RUN_DIR"]], capture_output=True, timeout=120)


def _cli_env(uri: str, home: Path) -> dict[str, str]:
    env = dict(os.environ, ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(home), PLUGHOST_STORE="neo4j", NEO4J_URI=uri,
               NEO4J_MAX_RETRY_S="3")
    ensure_account(env)
    return env


def _one_unavailable_failure(res: subprocess.CompletedProcess[str]) -> None:
    err = res.stderr
    assert res.returncode == 1, err
    assert "Traceback" not in err and "neo4j.exceptions" not in err, err
    assert err.count("[graph] op=unavailable backend=neo4j") == 1, err
    lines = [line for line in err.splitlines() if line.startswith("plughost: ")]
    assert len(lines) == 1 and "Neo4j does not answer" in lines[0], err
    assert "PLUGHOST_STORE=sqlite" not in err, err


def test_compact_interrupted_by_the_server_stopping_is_one_clear_failure(private_neo4j, plughost_home: Path) -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    uri = private_neo4j["NEO4J_URI"]
    store = Neo4jStore.from_env({"NEO4J_URI": uri, "ACCOUNT_ID": ACCOUNT})
    # enough vectors that rebuilding the index takes seconds: the server stops while it populates
    # (loaded without the index, then created: the HNSW graph is built once, not per transaction)
    store._auto("DROP INDEX chunk_embedding IF EXISTS")
    store._rows("UNWIND range(1, 10000) AS i CREATE (:GraphNode:Chunk {accountId: $a, id: 'c' + i, "
                "embedding: [x IN range(1, 384) | rand()]})", {"a": ACCOUNT}, read=False)
    assert "chunk_embedding" in store.ensure_schema()
    store._auto("CALL db.awaitIndexes(600)")  # so the population seen below is the compaction's
    env = _cli_env(uri, plughost_home)
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "graph", "compact", "--label", "Chunk"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            states = store._rows("SHOW INDEXES YIELD name, state WHERE name = 'chunk_embedding' RETURN state")
            if states and states[0]["state"] == "POPULATING":
                break
            time.sleep(0.05)
        assert proc.poll() is None, "compact ended before the index was populating: " + proc.communicate()[1]
        store.close()
        subprocess.run(["bash", str(LAUNCHER), "stop", private_neo4j["NEO4J_RUN_DIR"]], capture_output=True,
                       timeout=120, check=True)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _one_unavailable_failure(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    # the server is gone now: a command that starts meanwhile is unavailable, not bad input
    res = subprocess.run([sys.executable, "-m", "plughost.cli", "graph", "purge"], env=env, capture_output=True,
                         text=True, timeout=120)
    _one_unavailable_failure(res)
    assert f"at {uri}" in res.stderr, res.stderr
