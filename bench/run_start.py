"""Benchmark `bash scripts/run.sh` as a new user meets it: the first start (a fresh PLUGHOST_HOME:
the demo seeds and embeds its documents, the brand is bundled and installed) and warm starts
(the same home again), each to the "serving at" line, then the first webchat answer.

The floor, measured in the same run, is the cheapest plughost process (`plughost --version`)
and a bare `plughost serve` on the warm home, so the ratios say what run.sh adds on this
machine under its current load. setup.sh is run once before timing (its venv is the setup's
cost, not the start's).

    .venv/bin/python bench/run_start.py [--warm 3]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

REPO = Path(__file__).resolve().parent.parent
PY = str(REPO / ".venv" / "bin" / "python")


def start(home: Path, env: dict[str, str]) -> tuple[float, float, subprocess.Popen[str]]:
    """(seconds to "serving at", seconds to the first answer, the process)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(["bash", str(REPO / "scripts" / "run.sh")], env={**env, "PLUGHOST_HOME": str(home)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    assert proc.stdout is not None
    base = ""
    for line in proc.stdout:
        if line.startswith("serving at "):
            base = line.split()[2]
            break
    ready = time.perf_counter() - t0
    if not base:
        raise SystemExit("run.sh did not come up")
    t1 = time.perf_counter()
    body = json.dumps({"text": "What are your opening hours?"}).encode()
    req = urllib.request.Request(f"{base}/channels/webchat/messages", body, {"Content-Type": "application/json"})
    session = json.load(urllib.request.urlopen(req, timeout=30))["session"]
    while True:
        url = f"{base}/channels/webchat/messages?session={session}&after=0&wait=10"
        events = json.load(urllib.request.urlopen(url, timeout=30))["events"]
        if any(e["role"] == "assistant" for e in events):
            return ready, time.perf_counter() - t1, proc


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def floor(cmd: list[str], env: dict[str, str], until: str | None = None) -> float:
    t0 = time.perf_counter()
    if until is None:
        subprocess.run(cmd, env=env, capture_output=True, check=True)
        return time.perf_counter() - t0
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if until in line:
            break
    took = time.perf_counter() - t0
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warm", type=int, default=3)
    bench_results.add_flag(parser)
    args = parser.parse_args()
    bench_results.floor("plughost --version, and a bare plughost serve on the same home (measured in the same run)")
    env = {k: v for k, v in os.environ.items() if k not in ("ACCOUNT_ID", "PLUGHOST_AGENT", "PLUGHOST_EMBEDDER")}
    env["PORT"] = "0"
    subprocess.run(["bash", str(REPO / "scripts" / "setup.sh")], check=True, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="run-start-") as tmp:
        home = Path(tmp) / "home"
        first, first_answer, proc = start(home, env)
        stop(proc)
        warm, answers = [], []
        for _ in range(args.warm):
            ready, answer, proc = start(home, env)
            stop(proc)
            warm.append(ready)
            answers.append(answer)
        fenv = {**env, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": "demo"}
        version = floor([PY, "-m", "plughost.cli", "--version"], fenv)
        serve = floor([PY, "-m", "plughost.cli", "serve", "--port", "0", "--config-dir", str(home / "claude-config")],
                      fenv, until="serving on")
    load = os.getloadavg()[0]
    w = statistics.median(warm)
    print(f"load average (1 min): {load:.1f} on {os.cpu_count()} cores")
    print(f"first start (fresh home) to 'serving at': {first:6.2f} s   first answer {first_answer:.2f} s")
    print(f"warm start (median of {len(warm)}):        {w:6.2f} s   first answer {statistics.median(answers):.2f} s")
    print(f"floor: plughost --version                 {version:6.2f} s   warm/floor {w / version:5.1f}x")
    print(f"floor: bare plughost serve (warm home)     {serve:6.2f} s   warm/serve {w / serve:5.2f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(bench_results.run("run_start", main))
