"""An agent turn end to end: a visitor's webchat message to its reply, through a real `plughost serve`.

    python bench/turn.py [--turns 10] [--runner memory,claude] [--write-results]

Per runner: spawn (``plughost serve --port 0`` started to its "serving on" line), the first turn
(POST ``/channels/webchat/messages`` → the assistant's event on the long poll ``GET
/channels/webchat/messages?wait=``), then ``--turns`` more turns (p50 / p95). The ``memory``
runner answers from the store in process. The ``claude`` runner spawns the pinned CLI
(``.tools/node_modules/.bin/claude``) per turn against a loopback stand-in for the Anthropic
Messages API (``ANTHROPIC_BASE_URL``; it answers every request at once with one fixed text message
in the API's server-sent-events wire format); its server connect and first tool are read off the
CLI's own ``--debug`` timing where it prints them. Floors in the same run: ``claude --version``
and ``python -c 'import mcp.server'`` (process start and the SDK), interleaved with the turns.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import results as bench_results  # noqa: E402
from serve_process import start_serve  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ACCOUNT = "acct-turn"
CLAUDE = REPO / ".tools" / "node_modules" / ".bin" / "claude"
REPLY = "Stand-in reply."


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class FakeMessages(http.server.BaseHTTPRequestHandler):
    """POST /v1/messages: one text message, streamed (SSE) or not, at once."""

    def log_message(self, *args: object) -> None:
        return

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        model = body.get("model", "claude-sonnet-4-5")
        message = {"id": "msg_bench", "type": "message", "role": "assistant", "model": model, "content": [],
                   "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not body.get("stream"):
            out = json.dumps({**message, "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn"})
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out.encode())
            return
        events = [("message_start", {"type": "message_start", "message": message}),
                  ("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}),
                  ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": REPLY}}),
                  ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                  ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                        "stop_sequence": None},
                                     "usage": {"output_tokens": 2}}),
                  ("message_stop", {"type": "message_stop"})]
        data = "".join(f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def fake_api() -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def wall(argv: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=env, check=False)
    return (time.perf_counter() - t) * 1000


def turn(port: int, session: str | None, text: str, timeout: float = 120) -> tuple[float, str, str]:
    """(ms to the assistant's reply, its text, the session)."""
    import httpx

    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as c:
        after = 0  # the session's events so far: the reply wanted is the first assistant event after them
        if session:
            seen = c.get("/channels/webchat/messages", params={"session": session, "after": 0}).json()
            after = max([int(e.get("seq", 0)) for e in seen.get("events", [])] or [0])
        t = time.perf_counter()
        r = c.post("/channels/webchat/messages", json={"text": text, **({"session": session} if session else {})})
        r.raise_for_status()
        session = r.json()["session"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = c.get("/channels/webchat/messages", params={"session": session, "after": after, "wait": 30})
            for event in events.json().get("events", []):
                after = max(after, int(event.get("seq", 0)))
                if event.get("role") == "assistant":
                    return (time.perf_counter() - t) * 1000, str(event.get("text", "")), session
    raise SystemExit("no reply within the timeout")


def run_runner(name: str, home: Path, turns: int, base_url: str, floors: dict[str, list[float]]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGHOST_RATE_")}
    env.update({"PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_LOG_FILE": "0",
                "PLUGHOST_STORE": "sqlite", "NEO4J_URI": "", "PLUGHOST_AGENT": name})
    if name == "claude":
        env.update({"PLUGHOST_CLAUDE_BIN": str(CLAUDE), "ANTHROPIC_BASE_URL": base_url,
                    "ANTHROPIC_API_KEY": "sk-ant-bench-loopback", "DISABLE_TELEMETRY": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"})
    t = time.perf_counter()
    proc, port = start_serve(env)
    spawn = (time.perf_counter() - t) * 1000
    try:
        first, text, session = turn(port, None, "What do you know about backups?")
        times, replies = [], {text}
        for i in range(turns):
            floors["claude --version"].append(wall([str(CLAUDE), "--version"]) if CLAUDE.exists() else float("nan"))
            floors["python -c 'import mcp.server'"].append(wall([sys.executable, "-c", "import mcp.server"]))
            ms, reply, _ = turn(port, session, f"And question {i}: how do I restore one?")
            times.append(ms)
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
    api, base_url = fake_api()
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
                got = run_runner(name, home, args.turns, base_url, floors)
            except SystemExit as exc:
                print(f"{name} runner: no figure ({exc})")
                continue
            rows.append((name, got))
    api.shutdown()
    print(f"\n{args.turns} turns per runner after the first; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print("| runner | spawn (serve up) ms | first turn ms | turn p50 ms | turn p95 ms | reply |")
    print("|---|---:|---:|---:|---:|---|")
    for name, got in rows:
        print(f"| {name} | {got['spawn']:.0f} | {got['first']:.0f} | {pct(got['times'], 0.5):.0f} | "
              f"{pct(got['times'], 0.95):.0f} | {got['text'][:80]!r} |")
    for label, values in floors.items():
        clean = [v for v in values if v == v]
        if clean:
            print(f"floor {label}: p50 {statistics.median(clean):.0f} ms, p95 {pct(clean, 0.95):.0f} ms")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("turn", main))
