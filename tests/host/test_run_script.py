"""The README's run command as a new user meets it: `bash scripts/run.sh` comes up in a short
output, every URL it prints answers, the webchat answers from the demo's memory (and says when
it does not know), the printed search command works as pasted, and SIGTERM to run.sh leaves
no process behind and the port free."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from run_support import REPO, ask, group_alive, read_until_serving, start_run_script

pytestmark = pytest.mark.e2e  # end to end: -m "not e2e" leaves it out locally; CI runs it

MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status


def _mcp_initialize(url: str, token: str) -> int:
    req = urllib.request.Request(url, json.dumps(MCP_INIT).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        body = resp.read().decode("utf-8", "replace")
        assert '"serverInfo"' in body, body[:500]
        return resp.status


def test_run_script_as_a_new_user(tmp_path: Path) -> None:
    env = dict(os.environ, PLUGHOST_HOME=str(tmp_path / "home"), PORT="0")
    for var in ("ACCOUNT_ID", "PLUGHOST_EMBEDDER", "PLUGHOST_AGENT", "PLUGHOST_AGENT_COMMAND"):
        env.pop(var, None)  # the defaults a new user gets
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "run.log").write_text("the previous start's last line\n")
    proc = start_run_script(env, tmp_path)
    port = None
    try:
        lines = read_until_serving(proc, 300)
        text = "".join(lines)
        assert "serving at http://127.0.0.1:" in text, text[-3000:]
        # setup's own line comes only when the virtualenv is new or older than pyproject.toml
        after_setup = lines[next(i for i, line in enumerate(lines)
                                 if line.startswith("==> ") and not line.startswith("==> setup")):]
        print(f"run.sh printed {len(after_setup)} lines after setup")
        assert len(after_setup) <= 40, text
        assert "startup-self-test specialist-tool-drift=ok" in text
        assert re.search(r"\[boot\] op=gates gates=(\d+) ok=\1 failed=0", text), "every gate ok"
        assert "(score " in text and "Opening hours" in text  # the sample search, in one line
        base = text.rsplit("serving at ", 1)[1].split()[0]
        port = int(base.rsplit(":", 1)[1])

        urls = dict(re.findall(r"^  ([a-z ]+):\s+(http://\S+)$", text, flags=re.M))
        assert {"health", "sites", "webchat", "mcp memory"} <= set(urls), urls
        token_file = re.search(r'Authorization: Bearer \$\(cat ([^)\s]+)\)', text)  # how run.sh says to authenticate
        assert token_file, text
        token = Path(token_file.group(1)).read_text().strip()
        for label, url in urls.items():
            status = _mcp_initialize(url, token) if label.startswith("mcp ") else _get(url)
            assert status == 200, (label, url, status)
        with urllib.request.urlopen(urls["sites"], timeout=10) as resp:
            assert "Harbour Street Bakery" in resp.read().decode()
        with urllib.request.urlopen(urls["webchat"], timeout=10) as resp:  # greets as the demo's business
            assert '<h1 id="product">Harbour Street Bakery</h1>' in resp.read().decode()

        inspector = next(line.strip() for line in lines if "mcp-inspector --cli" in line)  # as pasted
        assert "npx" not in inspector and "/.tools/node_modules/.bin" in inspector
        if (REPO / ".tools" / "node_modules" / ".bin" / "mcp-inspector").exists():
            listed = subprocess.run(["bash", "-c", inspector], cwd=tmp_path, capture_output=True, text=True,
                                    timeout=120, env=dict(env, HOME=str(tmp_path)))
            assert listed.returncode == 0 and '"memory-search"' in listed.stdout, listed.stderr[-2000:]

        session, after = None, 0
        reply, session, after, took = ask(base, "What are your opening hours?", session, after)
        assert "Tuesday to Saturday from 7:00 to 16:00" in reply and "Source:" in reply, reply
        print(f"\n[test] opening hours answered in {took:.2f}s")  # the figure: bench/run_start.py
        reply, session, after, took = ask(base, "Do you deliver cakes?", session, after)
        assert "We deliver cakes within 5 km" in reply, reply
        reply, session, after, took = ask(base, "What is the capital of Peru?", session, after)
        assert "don't know" in reply and "pass your question on" in reply, reply

        command = next(line.strip() for line in lines if " memory search " in line)
        assert ".venv/bin/plughost" in command and "PLUGHOST_HOME=" in command
        clean = {k: v for k, v in os.environ.items() if k not in ("PLUGHOST_HOME", "ACCOUNT_ID")}
        rerun = subprocess.run(["bash", "-c", command], cwd="/", env=clean, capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        assert "Opening hours" in rerun.stdout
        assert len(rerun.stdout.splitlines()) <= 25, rerun.stdout  # compact: two lines a result, --full for all
        assert (tmp_path / "home" / "run.log.1").read_text() == "the previous start's last line\n"  # kept, not wiped
        assert "the previous start" not in (tmp_path / "home" / "run.log").read_text()
    finally:
        proc.send_signal(signal.SIGTERM)  # to run.sh alone, as `kill -TERM <pid>` would
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for _ in range(100):
        if not group_alive(proc.pid):
            break
        time.sleep(0.1)
    leftover = group_alive(proc.pid)
    if leftover:
        os.killpg(proc.pid, signal.SIGKILL)
    assert not leftover, "SIGTERM to run.sh left processes running"
    if port:
        with socket.socket() as sock:  # free again: a new server can listen on it (TIME_WAIT allowed)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(1)


def test_run_script_says_port_must_be_a_number(tmp_path: Path) -> None:
    """`PORT=abc scripts/run.sh`: one line naming the reason, exit 2, before anything is set up."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "run.sh"
    for bad in ("abc", "80x", "70000"):
        done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PORT": bad, "PLUGHOST_HOME": str(tmp_path / "home")})
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == f"run.sh: PORT must be a number from 0 to 65535 (0: any free port), not '{bad}'"
        assert not (tmp_path / "home").exists()
