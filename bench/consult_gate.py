"""The consult-before-send gate (PreToolUse) as Claude Code runs it: wall time per call.

    python bench/consult_gate.py [--calls 60]

Runs ``sh plugins/memory/hooks/consult-gate.sh`` with Claude Code's PreToolUse input on stdin, a
bare environment and the account named by the config dir's ``settings.json``, for three calls:
a tool that is no deliverable (``memory-search``: every MCP call pays this), a document deliverable
whose transcript (a 2 MiB tail of real-shaped records) shows ``profile-read`` (pass) and one whose
does not (block, exit 2). Floor in the same run: ``sh`` + ``python -S -c pass``, the interpreter
start every hook pays. Prints p50/p95 and the ratio to the floor.
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

REPO = Path(__file__).resolve().parent.parent
GATE = REPO / "plugins" / "memory" / "hooks" / "consult-gate.sh"
ACCOUNT = "bench-gate"
DOC = "/home/dev/shop/memory/users/ada/documents/quote.pdf"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def record(kind: str, content: object, n: int) -> str:
    return json.dumps({"parentUuid": f"u{n - 1}", "isSidechain": False, "userType": "external", "cwd": "/home/dev/shop",
                       "sessionId": "s", "version": "2.0.14", "type": kind, "uuid": f"u{n}",
                       "timestamp": "2026-12-03T18:00:00.000Z", "message": {"role": kind, "content": content}})


def transcript(path: Path, consulted: bool) -> None:
    """About 2 MiB: many turns of tool calls and results, the last user message, then (or not) profile-read."""
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
    lines.append(record("user", "Send Ada the quote", n))
    if consulted:
        n += 1
        lines.append(record("assistant", [{"type": "tool_use", "id": "tp", "name":
                                           "mcp__plugin_memory_memory__profile-read", "input": {}}], n))
        n += 1
        lines.append(record("user", [{"type": "tool_result", "tool_use_id": "tp", "content": "{}"}], n))
    for k in range(40):  # the work between the read and the delivery: results only
        n += 1
        lines.append(record("user", [{"type": "tool_result", "tool_use_id": f"w{k}", "content": "y" * 400}], n))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=60)
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("sh + python -S -c pass, the interpreter start every hook process pays (measured in the same run)")
    work = Path(tempfile.mkdtemp(prefix="plughost-bench-gate-"))
    home = work / "home"
    (home / "logs").mkdir(parents=True)
    config = work / "cfg"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"env": {
        "ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(home), "PLUGHOST_PYTHON": sys.executable, "PLUGHOST_LOG_FILE": "0"}}))
    env = {"PATH": "/usr/bin:/bin", "CLAUDE_CONFIG_DIR": str(config), "HOME": str(work)}
    for consulted in (True, False):
        transcript(work / f"t-{consulted}.jsonl", consulted)
    size = (work / "t-True.jsonl").stat().st_size
    cases = [
        ("not a deliverable (memory-search)", "mcp__plugin_memory_memory__memory-search", {"query": "x"}, True, 0),
        ("document, profile-read ran (pass)", "Write", {"file_path": DOC, "content": "%PDF"}, True, 0),
        ("document, no profile-read (block)", "Write", {"file_path": DOC, "content": "%PDF"}, False, 2),
    ]
    floor = []
    for _ in range(args.calls):
        t = time.perf_counter()
        subprocess.run(["sh", "-c", f'"{sys.executable}" -S -c pass'], env=env, check=True)
        floor.append((time.perf_counter() - t) * 1000)
    f50 = pct(floor, 0.5)
    print(f"transcript tail {size / (1 << 20):.1f} MiB ({size:,} bytes)")
    print(f"floor  sh + python -S -c pass              p50 {f50:7.1f} ms  p95 {pct(floor, 0.95):7.1f} ms")
    for label, tool, tool_input, consulted, want in cases:
        stdin = json.dumps({"session_id": "s", "transcript_path": str(work / f"t-{consulted}.jsonl"), "cwd": str(work),
                            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
                            "tool_input": tool_input}).encode()
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
    raise SystemExit(bench_results.run("consult_gate", main))
