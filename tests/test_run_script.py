"""The README's run command: `bash scripts/run.sh` brings the whole service up on the embedded
defaults, prints the URLs and a sample memory-search with results, and stops on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from tests.conftest import REPO


def test_run_script_serves_and_searches(tmp_path: Path) -> None:
    env = dict(os.environ, PLUGHOST_HOME=str(tmp_path / "home"), PORT="0", PLUGHOST_EMBEDDER="none")
    env.pop("ACCOUNT_ID", None)
    proc = subprocess.Popen(["bash", str(REPO / "scripts" / "run.sh")], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    lines: list[str] = []
    try:
        deadline = time.time() + 240
        assert proc.stdout is not None
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("serving at "):
                break
        text = "".join(lines)
        assert "serving at http://127.0.0.1:" in text, text[-3000:]
        assert "startup-self-test specialist-tool-drift=ok" in text
        assert "health:        http://127.0.0.1:" in text and "mcp memory:" in text
        sample = text.split('==> sample memory-search: "opening hours"', 1)[1]
        assert "Opening hours" in sample and "(score: " in sample
        base = text.rsplit("serving at ", 1)[1].split()[0]
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as resp:
            assert resp.status == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
