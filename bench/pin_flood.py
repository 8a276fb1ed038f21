"""Unauthenticated pressure on a real `plughost serve` (bench/RESULTS.md#pin_flood, issue: no input exhausts the server).

Two floods against one server, each while a prober polls ``/healthz``:

- PIN flood: ``--clients`` concurrent ``POST /api/admin/session`` for made-up accounts, for
  ``--seconds`` (the global PIN limiter answers 429 beyond its rate; made-up accounts cost no
  scrypt);
- 10 MB bodies: ``--body-clients`` concurrent 10 MB POSTs spread over the webchat, Telegram, WhatsApp,
  log-ingest and MCP routes, with and without ``Content-Length`` (413 before the body is buffered).

Prints the server's idle RSS and its peak RSS during each flood (target: within 50 MB of idle),
``/healthz`` p50/p95 while idle (the floor measured in the same run) and during each flood (target
p95 < 100 ms), and the answers by status.

    .venv/bin/python bench/pin_flood.py [--clients 120] [--seconds 5]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
import results as bench_results  # noqa: E402  (bench/RESULTS.md, with --write-results)
from serve_process import start_serve  # noqa: E402  (bench/ is the script's folder)

ACCOUNT = "bench-acct"
BIG = 10 * 1024 * 1024


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def request(port: int, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
            chunked: bool = False, timeout: float = 60) -> int:
    """One HTTP/1.1 request on a fresh connection; the status code (0 when the server hung up first)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body)}")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            try:
                if chunked:
                    step = 1024 * 1024
                    for i in range(0, len(body), step):
                        part = body[i:i + step]
                        sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                    sock.sendall(b"0\r\n\r\n")
                else:
                    sock.sendall(body)
            except OSError:
                pass  # the server answered and closed before taking the whole body: that is the point
            head = sock.recv(64)
    except OSError:
        return 0
    match = re.match(rb"HTTP/1\.1 (\d{3})", head)
    return int(match.group(1)) if match else 0


PROBE = r"""
import json, re, socket, sys, time
port, pid, stop_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
import os
lat, peak = [], 0.0
def rss():
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0
while not os.path.exists(stop_file):
    t0 = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            while s.recv(65536):
                pass
    except OSError:
        pass
    lat.append((time.perf_counter() - t0) * 1000)
    peak = max(peak, rss())
    time.sleep(0.02)
print(json.dumps({"lat": lat, "peak": peak}))
"""


class Prober:
    """A separate process polling /healthz and the server's RSS (the flood's client threads do not skew it)."""

    def __init__(self, port: int, pid: int) -> None:
        self.port, self.pid = port, pid
        self.latencies: list[float] = []
        self.peak = 0.0
        self.stop_file = Path(tempfile.mkdtemp(prefix="plughost-probe-")) / "stop"

    def __enter__(self) -> Prober:
        self.cpu0, self.t0 = cpu_s(self.pid), time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-c", PROBE, str(self.port), str(self.pid), str(self.stop_file)],
                                     stdout=subprocess.PIPE, text=True)
        time.sleep(0.2)
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu_share = (cpu_s(self.pid) - self.cpu0) / max(1e-9, time.monotonic() - self.t0)
        self.stop_file.touch()
        out, _ = self.proc.communicate(timeout=60)
        data = json.loads(out)
        self.latencies, self.peak = data["lat"], data["peak"]

    def p(self, q: float) -> float:
        data = sorted(self.latencies)
        return data[min(len(data) - 1, int(q * len(data)))] if data else float("nan")


def start_server(home: Path) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_LOG_FILE": "0",
           "PLUGHOST_TELEGRAM_SECRET": "tg-secret", "PLUGHOST_WHATSAPP_APP_SECRET": "wa-secret"}
    return start_serve(env)


def make_account(home: Path) -> None:
    sys.path.insert(0, str(REPO))
    os.environ["PLUGHOST_HOME"] = str(home)
    from plughost.plugins.admin import sessions
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, home)
    sessions.set_pin(home, ACCOUNT, "4821-blue", "owner")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=120, help="concurrent PIN attempts (default 120)")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--body-clients", type=int, default=20, help="concurrent 10 MB uploads (default 20)")
    bench_results.add_flag(parser)
    args = parser.parse_args()
    bench_results.floor("/healthz p50/p95 while idle, measured first in the same run")
    with tempfile.TemporaryDirectory(prefix="plughost-flood-") as tmp:
        home = Path(tmp)
        make_account(home)
        proc, port = start_server(home)
        try:
            token = (home / "accounts" / ACCOUNT / "credentials" / "http-token").read_text().strip()
            for _ in range(20):  # warm the routes once
                request(port, "GET", "/healthz")
            time.sleep(1.0)
            idle_rss = rss_mb(proc.pid)
            with Prober(port, proc.pid) as idle:
                time.sleep(2.0)
            report = {"idle": {"rssMb": round(idle_rss, 1), "healthzP50Ms": round(idle.p(0.5), 1),
                               "healthzP95Ms": round(idle.p(0.95), 1), "probes": len(idle.latencies)}}

            def pin_flood(i: int) -> int:
                body = json.dumps({"accountId": f"made-up-{i}-{time.monotonic_ns()}", "pin": "0000-nope"}).encode()
                return request(port, "POST", "/api/admin/session", body, {"Content-Type": "application/json"})

            statuses: collections.Counter[int] = collections.Counter()
            with Prober(port, proc.pid) as flood, ThreadPoolExecutor(args.clients) as pool:
                ends = time.monotonic() + args.seconds
                n = 0
                while time.monotonic() < ends:
                    for status in pool.map(pin_flood, range(n, n + args.clients)):
                        statuses[status] += 1
                    n += args.clients
            report["pinFlood"] = {"requests": sum(statuses.values()), "statuses": dict(sorted(statuses.items())),
                                  "peakRssMb": round(flood.peak, 1), "rssOverIdleMb": round(flood.peak - idle_rss, 1),
                                  "healthzP50Ms": round(flood.p(0.5), 1), "healthzP95Ms": round(flood.p(0.95), 1),
                                  "probes": len(flood.latencies), "serverCpuShare": round(flood.cpu_share, 2)}

            big = b"x" * BIG
            targets = [("/channels/webchat/messages", {}), ("/channels/telegram/webhook",
                                                             {"X-Telegram-Bot-Api-Secret-Token": "tg-secret"}),
                       ("/channels/whatsapp/webhook", {}), ("/api/admin/log-ingest", {"Authorization": f"Bearer {token}"}),
                       ("/mcp/memory", {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})]

            def big_body(i: int) -> int:
                path, headers = targets[i % len(targets)]
                return request(port, "POST", path, big, {"Content-Type": "application/json", **headers},
                               chunked=bool(i % 2))

            big_statuses: collections.Counter[int] = collections.Counter()
            with Prober(port, proc.pid) as bodies, ThreadPoolExecutor(args.body_clients) as pool:
                for status in pool.map(big_body, range(args.body_clients * 4)):
                    big_statuses[status] += 1
            report["tenMbBodies"] = {"requests": sum(big_statuses.values()),
                                     "statuses": dict(sorted(big_statuses.items())),
                                     "peakRssMb": round(bodies.peak, 1),
                                     "rssOverIdleMb": round(bodies.peak - idle_rss, 1),
                                     "healthzP50Ms": round(bodies.p(0.5), 1), "healthzP95Ms": round(bodies.p(0.95), 1),
                                     "probes": len(bodies.latencies), "serverCpuShare": round(bodies.cpu_share, 2)}
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    floor = report["idle"]["healthzP95Ms"]
    print(f"load average (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"idle: rss={report['idle']['rssMb']} MB  /healthz p50={report['idle']['healthzP50Ms']} ms "
          f"p95={floor} ms (the floor)")
    for name in ("pinFlood", "tenMbBodies"):
        r = report[name]
        print(f"{name}: {r['requests']} requests {r['statuses']}  peak rss={r['peakRssMb']} MB "
              f"(+{r['rssOverIdleMb']} MB over idle; target <= 50)  /healthz p50={r['healthzP50Ms']} ms "
              f"p95={r['healthzP95Ms']} ms (x{r['healthzP95Ms'] / floor if floor else float('nan'):.1f} the floor; "
              f"target < 100 ms)  server cpu={r['serverCpuShare']} cores")
    print(json.dumps(report, sort_keys=True))
    ok = all(report[n]["rssOverIdleMb"] <= 50 and report[n]["healthzP95Ms"] < 100 for n in ("pinFlood", "tenMbBodies"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(bench_results.run("pin_flood", main))
