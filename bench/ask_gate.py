"""The investigate-before-asking gate (PreToolUse on AskUserQuestion) as Claude Code runs it: wall time per call.

    python bench/ask_gate.py [--calls 60]

Runs ``sh plugins/memory/hooks/ask-gate.sh`` with Claude Code's PreToolUse input on stdin, a bare
environment and the account named by the config dir's ``settings.json``, over a 2 MiB transcript
tail of real-shaped records (consult_gate.py's) whose last owner message is followed by a look-up
(``memory-search``: pass) or by none (block, exit 2: only then does the gate ask the resolver
whose session it is). Floor in the same run: ``sh`` + ``python -S -c pass``. Prints p50/p95 and
the ratio to the floor.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results
from consult_gate import ACCOUNT, pct, record

REPO = Path(__file__).resolve().parent.parent
GATE = REPO / "plugins" / "memory" / "hooks" / "ask-gate.sh"


def transcript(path: Path, looked_up: bool) -> None:
    """About 2 MiB of turns (Bash calls and results), the owner's last message, then (or not) a search."""
    lines, n = [], 0
    while sum(map(len, lines)) < (2 << 20):
        n += 1
        lines.append(record("user", f"question {n}: what about the order?", n))
        for k in range(3):
            n += 1
            lines.append(record("assistant", [{"type": "tool_use", "id": f"t{n}", "name": "Bash",
                                               "input": {"command": f"ls {k}"}}], n))
            n += 1
            lines.append(record("user", [{"type": "tool_result", "tool_use_id": f"t{n - 1}", "content": "x" * 500}], n))
    n += 1
    lines.append(record("user", "Order more from the supplier", n))
    if looked_up:
        n += 1
        lines.append(record("assistant", [{"type": "tool_use", "id": "ts", "name":
                                           "mcp__plugin_memory_memory__memory-search", "input": {"query": "supplier"}}], n))
        n += 1
        lines.append(record("user", [{"type": "tool_result", "tool_use_id": "ts", "content": "y" * 400}], n))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=60)
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("sh + python -S -c pass, the interpreter start every hook process pays (measured in the same run)")
    work = Path(tempfile.mkdtemp(prefix="plughost-bench-ask-"))
    home = work / "home"
    (home / "logs").mkdir(parents=True)
    config = work / "cfg"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"env": {
        "ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(home), "PLUGHOST_PYTHON": sys.executable, "PLUGHOST_LOG_FILE": "0"}}))
    env = {"PATH": "/usr/bin:/bin", "CLAUDE_CONFIG_DIR": str(config), "HOME": str(work)}
    for looked_up in (True, False):
        transcript(work / f"t-{looked_up}.jsonl", looked_up)
    size = (work / "t-True.jsonl").stat().st_size
    floor = []
    for _ in range(args.calls):
        t = time.perf_counter()
        subprocess.run(["sh", "-c", f'"{sys.executable}" -S -c pass'], env=env, check=True)
        floor.append((time.perf_counter() - t) * 1000)
    f50 = pct(floor, 0.5)
    print(f"transcript tail {size / (1 << 20):.1f} MiB ({size:,} bytes)")
    print(f"floor  sh + python -S -c pass              p50 {f50:7.1f} ms  p95 {pct(floor, 0.95):7.1f} ms")
    for label, looked_up, want in (("looked up first (pass)", True, 0), ("no look-up (block)", False, 2)):
        stdin = json.dumps({"session_id": "s", "transcript_path": str(work / f"t-{looked_up}.jsonl"), "cwd": str(work),
                            "permission_mode": "default", "hook_event_name": "PreToolUse",
                            "tool_name": "AskUserQuestion", "tool_input": {"questions": []}}).encode()
        wall = []
        for _ in range(args.calls):
            t = time.perf_counter()
            done = subprocess.run(["sh", str(GATE)], input=stdin, capture_output=True, env=env, cwd=work, timeout=60)
            wall.append((time.perf_counter() - t) * 1000)
            if done.returncode != want:
                raise SystemExit(f"{label}: exit {done.returncode}, expected {want}: {done.stderr.decode()[-300:]}")
        w50 = pct(wall, 0.5)
        print(f"gate   {label:36s} p50 {w50:7.1f} ms  p95 {pct(wall, 0.95):7.1f} ms  x{w50 / f50:.2f} floor")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("ask_gate", main))
