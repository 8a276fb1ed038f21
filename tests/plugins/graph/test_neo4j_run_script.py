"""`bash scripts/run.sh` with NEO4J_URI set runs the whole main job on Neo4j: the demo graph, the
gates, serve, the webchat's answers and the sample search all use the server, and no embedded
database is made. The install it leaves stays on that server: its `.env` records the store, so
the printed rerun command (in a plain shell, from another folder) and the installed MCP servers
(started as Claude Code starts them) find the demo's data."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest
from run_support import ask, read_until_serving, start_run_script

from tests.backends import needs_neo4j, neo4j_env
from tests.conftest import REPO

pytestmark = [needs_neo4j,
              pytest.mark.e2e]

ACCOUNT = "demo-neo4j"


def test_run_script_on_neo4j(tmp_path: Path) -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from plughost.ports.graph import Guards

    store = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": ACCOUNT})
    store.wipe_account(ACCOUNT)
    home = tmp_path / "home"
    env = dict(os.environ, PLUGHOST_HOME=str(home), PORT="0", ACCOUNT_ID=ACCOUNT, **neo4j_env())
    for var in ("PLUGHOST_STORE", "PLUGHOST_EMBEDDER", "PLUGHOST_AGENT", "PLUGHOST_AGENT_COMMAND"):
        env.pop(var, None)  # a new user's defaults, with the graph on Neo4j
    proc = start_run_script(env, REPO)
    try:
        text = "".join(read_until_serving(proc, 240))
        assert "serving at http://127.0.0.1:" in text, text[-3000:]
        assert "graph store: neo4j at bolt" in text or "graph store: neo4j at neo4j" in text, text[-3000:]
        assert re.search(r"\[boot\] op=gates gates=(\d+) ok=\1 failed=0", text), text[-3000:]
        assert "(score " in text and "Opening hours" in text, text[-3000:]  # the sample search
        base = text.rsplit("serving at ", 1)[1].split()[0]
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as resp:
            assert resp.status == 200
        reply, _, _, _ = ask(base, "What are your opening hours?", None, 0)
        assert "Tuesday to Saturday from 7:00 to 16:00" in reply, reply
        assert store.count(guards=Guards(ACCOUNT)) > 0  # the demo graph lives in Neo4j
        assert not (home / "graph.sqlite").exists()
        dotenv = (home / ".env").read_text().splitlines()
        assert "PLUGHOST_STORE=neo4j" in dotenv and f"NEO4J_URI={neo4j_env()['NEO4J_URI']}" in dotenv, dotenv
        rerun = text.split("rerun the sample search:\n", 1)[1].splitlines()[0].strip()
        plain = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # a user's new shell: nothing exported
        res = subprocess.run(["env", "-i", *[f"{k}={v}" for k, v in plain.items()], "bash", "-c", rerun],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and "Opening hours" in res.stdout, (rerun, res.stdout, res.stderr)
        assert _mcp_search(home / "claude-config", tmp_path, "opening hours")[0] == "memory-search"
        assert not (home / "graph.sqlite").exists()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        store.wipe_account(ACCOUNT)
        store.close()


def _mcp_search(config_dir: Path, cwd: Path, query: str) -> tuple[str, str]:
    """The installed memory server, started as Claude Code starts it, answers ``memory-search``."""
    import anyio
    from mcp import Client, StdioServerParameters

    from plughost.payload.launch import installed_launches

    launches, problems = installed_launches(config_dir, str(cwd))
    assert not problems, problems
    memory = next(launch for launch in launches if launch.plugin == "memory")
    params = StdioServerParameters(command=memory.command, args=memory.args, env=memory.env, cwd=str(cwd))

    async def go() -> str:
        async with Client(params) as client:
            result = await client.call_tool("memory-search", {"query": query})
            return "".join(getattr(c, "text", "") for c in result.content)

    text = anyio.run(go)
    assert "Opening hours" in text, text[:2000]
    return "memory-search", text
