"""One client flooding webchat, then slow request heads, against a real `plughost serve` (docs/channels.md#flood-limits).

With the shipped limits (no PLUGHOST_RATE_* set), on loopback only:

1. ``--messages`` (2,000) webchat messages from one client address, ``--clients`` (8) connections
   at once, over ``--sessions`` (50) visitor sessions (a flooder mints sessions at will): the share
   answered 429, then, once the accepted ones are answered (at most ``--settle`` s), messages lost
   (a 202 not in the store: must be 0), unanswered and answered twice;
2. ``--slow`` (300) connections that send a request head one byte now and then: the seconds until
   the server closed the last of them (target <= 10) and ``/healthz`` p50/p95 meanwhile (target
   p95 < 100 ms), against the idle floor measured first in the same run.

Prints ``[bench] key=value`` lines, the load average and a JSON summary; exit 1 when a target is missed.

    .venv/bin/python bench/webchat_flood.py [--messages 2000] [--slow 300]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
import results as bench_results  # noqa: E402  (bench/RESULTS.md, with --write-results)
from serve_process import start_serve  # noqa: E402  (bench/ is the script's folder)

ACCOUNT = "acct-bench"
AGENT = "import sys, json; d = json.loads(sys.stdin.read()); print('echo: ' + d['text'])\n"


def start_server(home: Path) -> tuple[subprocess.Popen[str], int]:
    agent = home / "agent.py"
    agent.write_text(AGENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGHOST_RATE_")}
    env.update({"PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_LOG_FILE": "0",
                "PLUGHOST_STORE": "sqlite", "NEO4J_URI": "", "PLUGHOST_AGENT": "command",
                "PLUGHOST_AGENT_COMMAND": f"{sys.executable} -S {agent}"})
    return start_serve(env)


def healthz_ms(port: int) -> float:
    t0 = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            while s.recv(65536):
                pass
    except OSError:
        pass
    return (time.perf_counter() - t0) * 1000


def pct(data: list[float], q: float) -> float:
    data = sorted(data)
    return round(data[min(len(data) - 1, int(q * len(data)))], 1) if data else float("nan")


class Probe:
    """Polls /healthz every 50 ms on a thread while a phase runs."""

    def __init__(self, port: int) -> None:
        self.port, self.lat, self._stop = port, [], threading.Event()

    def __enter__(self) -> Probe:
        def run() -> None:
            while not self._stop.is_set():
                self.lat.append(healthz_ms(self.port))
                time.sleep(0.05)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join(30)


def flood(port: int, n: int, clients: int, sessions: int, limit_s: float) -> tuple[collections.Counter[int],
                                                                                  list[str], float, bool]:
    import httpx

    statuses: collections.Counter[int] = collections.Counter()
    accepted: list[str] = []
    lock = threading.Lock()
    ends = time.monotonic() + limit_s
    bad_429 = False

    def worker(w: int) -> None:
        nonlocal bad_429
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
            for i in range(w, n, clients):
                if time.monotonic() > ends:
                    return
                r = c.post("/channels/webchat/messages",
                           json={"session": f"flood-visitor-{i % sessions:03d}", "text": f"message {i}", "id": f"f{i}"})
                with lock:
                    statuses[r.status_code] += 1
                    if r.status_code == 202:
                        accepted.append(r.json()["messageId"])
                    elif r.status_code == 429:
                        body = r.json()
                        bad_429 |= not (r.headers.get("retry-after") and body.get("error") and body.get("detail"))

    t0 = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(worker, range(clients)))
    return statuses, accepted, time.monotonic() - t0, bad_429


def settle(home: Path, accepted: list[str], limit_s: float) -> dict[str, int]:
    """Wait until every accepted message has a reply (bounded); lost / unanswered / answered twice."""
    from plughost.ports.graph import Guards
    from plughost.runtime.host import Host

    host = Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_STORE": "sqlite"}).load()
    try:
        deadline = time.monotonic() + limit_s
        while True:
            rows = host.store().find(guards=Guards(ACCOUNT), labels=["Message"], limit=1_000_000)
            replies = collections.Counter(m.properties.get("inReplyTo") for m in rows
                                          if m.properties.get("role") == "assistant")
            stored = {m.id for m in rows if m.properties.get("role") == "user"}
            unanswered = [a for a in accepted if replies[a] == 0]
            if not unanswered or time.monotonic() > deadline:
                return {"lost": sum(a not in stored for a in accepted), "unanswered": len(unanswered),
                        "answeredTwice": sum(replies[a] > 1 for a in accepted),
                        "storedNot2xx": len(stored - set(accepted))}
            time.sleep(0.5)
    finally:
        host.close()


def slow_heads(port: int, n: int) -> tuple[float, int]:
    """``n`` connections trickling a request head; (seconds until the last was closed, still open at 15 s)."""
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(f"POST /channels/webchat/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-{i}: ".encode())
        socks.append(s)
    opened = time.monotonic()
    closed_at: dict[int, float] = {}
    while len(closed_at) < n and time.monotonic() - opened < 15:
        for i, s in enumerate(socks):
            if i in closed_at:
                continue
            try:
                s.send(b"a")  # one byte now and then
                s.setblocking(False)
                try:
                    if s.recv(1024) == b"":
                        closed_at[i] = time.monotonic() - opened
                except BlockingIOError:
                    pass
                finally:
                    s.setblocking(True)
            except OSError:
                closed_at[i] = time.monotonic() - opened
        time.sleep(0.25)
    for s in socks:
        s.close()
    return (max(closed_at.values()) if closed_at else float("inf")), n - len(closed_at)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8, help="connections at once for the flood (default 8)")
    parser.add_argument("--sessions", type=int, default=50, help="visitor sessions the flood rotates (default 50)")
    parser.add_argument("--slow", type=int, default=300, help="slow-head connections (default 300)")
    parser.add_argument("--settle", type=float, default=120.0, help="seconds to wait for the answers (default 120)")
    bench_results.add_flag(parser)
    args = parser.parse_args()
    bench_results.floor("/healthz p50/p95 while idle, measured first in the same run")
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="plughost-webchat-flood-") as tmp:
        home = Path(tmp)
        from plughost.runtime.accounts import create_account

        os.environ["PLUGHOST_HOME"] = str(home)
        create_account(ACCOUNT, home)
        proc, port = start_server(home)
        try:
            for _ in range(20):
                healthz_ms(port)
            idle = [healthz_ms(port) for _ in range(40)]
            report["idle"] = {"healthzP50Ms": pct(idle, 0.5), "healthzP95Ms": pct(idle, 0.95)}
            with Probe(port) as during_flood:
                statuses, accepted, took, bad_429 = flood(port, args.messages, args.clients, args.sessions, 120)
            sent = sum(statuses.values())
            report["flood"] = {"sent": sent, "seconds": round(took, 1), "statuses": dict(sorted(statuses.items())),
                               "share429": round(statuses[429] / max(1, sent), 3), "malformed429": bad_429,
                               "healthzP95Ms": pct(during_flood.lat, 0.95),
                               **settle(home, accepted, args.settle)}
            with Probe(port) as during_slow:
                last_closed, still_open = slow_heads(port, args.slow)
            report["slowHeads"] = {"connections": args.slow, "lastClosedS": round(last_closed, 1),
                                   "stillOpen": still_open, "healthzP50Ms": pct(during_slow.lat, 0.5),
                                   "healthzP95Ms": pct(during_slow.lat, 0.95), "probes": len(during_slow.lat)}
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    f, s, floor = report["flood"], report["slowHeads"], report["idle"]["healthzP95Ms"]
    print(f"[bench] load_avg_1m={os.getloadavg()[0]:.1f} cores={os.cpu_count()}")
    print(f"[bench] phase=idle healthz_p50_ms={report['idle']['healthzP50Ms']} healthz_p95_ms={floor} (the floor)")
    print(f"[bench] phase=flood sent={f['sent']} seconds={f['seconds']} statuses={json.dumps(f['statuses'])} "
          f"share_429={f['share429']} lost={f['lost']} (target 0) unanswered={f['unanswered']} "
          f"answered_twice={f['answeredTwice']} healthz_p95_ms={f['healthzP95Ms']}")
    print(f"[bench] phase=slow-heads connections={s['connections']} last_closed_s={s['lastClosedS']} (target <= 10) "
          f"still_open={s['stillOpen']} healthz_p50_ms={s['healthzP50Ms']} healthz_p95_ms={s['healthzP95Ms']} "
          f"(target < 100; x{s['healthzP95Ms'] / floor if floor else float('nan'):.1f} the floor)")
    print(json.dumps(report, sort_keys=True))
    ok = (f["lost"] == 0 and f["answeredTwice"] == 0 and not f["malformed429"] and s["stillOpen"] == 0
          and s["lastClosedS"] <= 10 and s["healthzP95Ms"] < 100)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(bench_results.run("webchat_flood", main))
