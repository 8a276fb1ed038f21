"""An agent turn end to end: a visitor's webchat message to its reply, through a real `plughost serve`.

    python bench/turn.py [--turns 10] [--runner memory,claude] [--write-results]

Per runner: spawn (``plughost serve --port 0`` started to its "serving on" line), the first turn
(POST ``/channels/webchat/messages`` → the assistant's event on the long poll ``GET
/channels/webchat/messages?wait=``), then ``--turns`` more turns (p50 / p95). The ``memory``
runner answers from the store in process. The ``claude`` runner spawns the pinned CLI
(``.tools/node_modules/.bin/claude``) per turn against a loopback stand-in for the Anthropic
Messages API (``ANTHROPIC_BASE_URL``: tests/support/fake_messages_api.py, which answers every
request at once with one fixed text message, streamed as server-sent events when asked) that
records when each request came and which MCP tools it offered: per turn, the first request (the CLI
spawned and its plugin servers connected) and the first request offering MCP tools (the first tool
available), beside the reply. Floors in the same run: ``claude --version`` and ``python -c 'import
mcp.server'`` (process start and the SDK), interleaved with the turns.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "bench"), str(REPO / "tests" / "support")]

import results as bench_results  # noqa: E402
from fake_messages_api import FakeMessagesAPI, mcp_tool_names  # noqa: E402
from serve_process import start_serve  # noqa: E402

ACCOUNT = "acct-turn"
CLAUDE = REPO / ".tools" / "node_modules" / ".bin" / "claude"
REPLY = "Stand-in reply."


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def wall(argv: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=env, check=False)
    return (time.perf_counter() - t) * 1000


def turn(port: int, session: str | None, text: str, api: FakeMessagesAPI,
         timeout: float = 120) -> tuple[dict[str, float | None], str, str]:
    """One visitor turn: ({"reply", "request", "tools"}: ms from the POST to the assistant's reply, to
    the turn's first Messages API request and to its first request offering MCP tools (None when
    none came: the memory runner calls no model), "tool_count" on the first request; its text; the session)."""
    import httpx

    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as c:
        after = 0  # the session's events so far: the reply wanted is the first assistant event after them
        if session:
            seen = c.get("/channels/webchat/messages", params={"session": session, "after": 0}).json()
            after = max([int(e.get("seq", 0)) for e in seen.get("events", [])] or [0])
        api.clear()
        t, t_mono = time.perf_counter(), time.monotonic()
        r = c.post("/channels/webchat/messages", json={"text": text, **({"session": session} if session else {})})
        r.raise_for_status()
        session = r.json()["session"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = c.get("/channels/webchat/messages", params={"session": session, "after": after, "wait": 30})
            for event in events.json().get("events", []):
                after = max(after, int(event.get("seq", 0)))
                if event.get("role") == "assistant":
                    got: dict[str, float | None] = {"reply": (time.perf_counter() - t) * 1000}
                    with api.lock:
                        requests = list(api.requests)
                    got["request"] = (requests[0][0] - t_mono) * 1000 if requests else None
                    got["tool_count"] = float(len(mcp_tool_names(requests[0][1]))) if requests else None
                    ready = [ts for ts, body in requests if mcp_tool_names(body)]
                    got["tools"] = (ready[0] - t_mono) * 1000 if ready else None
                    return got, str(event.get("text", "")), session
    raise SystemExit("no reply within the timeout")


def run_runner(name: str, home: Path, turns: int, api: FakeMessagesAPI, floors: dict[str, list[float]]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGHOST_RATE_")}
    env.update({"PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_LOG_FILE": "0",
                "PLUGHOST_STORE": "sqlite", "NEO4J_URI": "", "PLUGHOST_AGENT": name})
    if name == "claude":
        env.update({"PLUGHOST_CLAUDE_BIN": str(CLAUDE), "ANTHROPIC_BASE_URL": api.url,
                    "ANTHROPIC_API_KEY": "sk-ant-bench-loopback", "DISABLE_TELEMETRY": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"})
    t = time.perf_counter()
    proc, port = start_serve(env)
    spawn = (time.perf_counter() - t) * 1000
    try:
        first, text, session = turn(port, None, "What do you know about backups?", api)
        times, replies = [], {text}
        for i in range(turns):
            floors["claude --version"].append(wall([str(CLAUDE), "--version"]) if CLAUDE.exists() else float("nan"))
            floors["python -c 'import mcp.server'"].append(wall([sys.executable, "-c", "import mcp.server"]))
            got, reply, _ = turn(port, session, f"And question {i}: how do I restore one?", api)
            times.append(got)
            replies.add(reply)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    return {"spawn": spawn, "first": first, "text": " | ".join(sorted(replies)), "times": times}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--runner", default="memory,claude")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("claude --version (the pinned CLI) and python -c 'import mcp.server', interleaved with "
                        "the turns")
    api = FakeMessagesAPI(REPLY).__enter__()
    floors: dict[str, list[float]] = {"claude --version": [], "python -c 'import mcp.server'": []}
    rows = []
    with tempfile.TemporaryDirectory(prefix="plughost-bench-turn-") as tmp:
        from plughost.runtime.accounts import create_account

        for name in args.runner.split(","):
            home = Path(tmp) / name
            home.mkdir()
            create_account(ACCOUNT, home)
            if name == "claude" and not CLAUDE.exists() and not shutil.which("claude"):
                print(f"claude runner: skipped, no CLI at {CLAUDE}")
                continue
            try:
                got = run_runner(name, home, args.turns, api, floors)
            except SystemExit as exc:
                print(f"{name} runner: no figure ({exc})")
                continue
            rows.append((name, got))
    api.__exit__(None, None, None)
    print(f"\n{args.turns} turns per runner after the first; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print("ms from the visitor's POST; 1st request: the turn's first Messages API request (the CLI spawned); "
          "tools: the first request offering MCP tools (first tool available). A visitor's claude turn runs with "
          "--strict-mcp-config and no servers (its knowledge comes in the system prompt), so no server connects "
          "and no tool is offered: an admin turn's server connect and first tool are bench/claude_turn.py's")
    print("| runner | spawn (serve up) ms | first turn ms | turn p50 ms | turn p95 ms | 1st request p50 ms | "
          "tools p50 ms | MCP tools on 1st request | reply |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, got in rows:
        replies = [t["reply"] for t in got["times"]]
        requests = [t["request"] for t in got["times"] if t["request"] is not None]
        tools = [t["tools"] for t in got["times"] if t["tools"] is not None]
        counts = sorted({int(t["tool_count"]) for t in got["times"] if t["tool_count"] is not None})
        print(f"| {name} | {got['spawn']:.0f} | {got['first']['reply']:.0f} | {pct(replies, 0.5):.0f} | "
              f"{pct(replies, 0.95):.0f} | {f'{pct(requests, 0.5):.0f}' if requests else '-'} | "
              f"{f'{pct(tools, 0.5):.0f}' if tools else 'never'} | {','.join(map(str, counts)) or '-'} | "
              f"{got['text'][:60]!r} |")
    for label, values in floors.items():
        clean = [v for v in values if v == v]
        if clean:
            print(f"floor {label}: p50 {statistics.median(clean):.0f} ms, p95 {pct(clean, 0.95):.0f} ms")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("turn", main))
