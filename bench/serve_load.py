"""Load on `plughost serve`: wrk against /healthz and /sites/ (default 20 s each), with a raw baseline.

    .venv/bin/python bench/serve_load.py [--duration 20] [--connections 32] [--threads 2] [--no-sigterm]

Prints requests/s, latency and wrk's error counts for plughost's app and for a bare
Starlette + uvicorn app serving the same content (the raw baseline, measured in the same run),
and their ratio. Then a SIGTERM lands mid-load on a fresh server: the number of requests the
server accepted (its `[serve] op=stopped requests=N` line) must equal the number wrk saw
completed. wrk's read/write socket errors there are its next request on keep-alive connections
the server closed while stopping (never read by the server). Needs `wrk` (Debian package `wrk`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

REPO = Path(__file__).resolve().parent.parent

RAW_APP = textwrap.dedent("""
    import sys
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    async def health(request):
        return JSONResponse({"status": "ok"})

    app = Starlette(routes=[Route("/healthz", health),
                            Mount("/sites", StaticFiles(directory=sys.argv[2], html=True))])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"server on port {port} did not come up")


def wrk(url: str, duration: float, connections: int, threads: int) -> dict[str, float]:
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{int(duration)}s", "--latency", url],
                         capture_output=True, text=True, timeout=duration + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    errors = {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors = dict(zip(errors, map(int, m.groups()), strict=True))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)

    def ms(m: re.Match[str] | None) -> float:
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]

    return {"rps": rps, "requests": total, "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "p50_ms": ms(p50), "p99_ms": ms(p99), **errors}


def setup_home(home: Path) -> dict[str, str]:
    site = home / "sites" / "pub"
    (site / "css").mkdir(parents=True)
    (site / "index.html").write_text("<!doctype html><h1>published</h1>" + "<p>lorem ipsum</p>" * 50)
    (site / "css" / "site.css").write_text("body{margin:0}\n" * 100)
    account = "bench-account"
    folder = home / "accounts" / account
    try:
        sys.path.insert(0, str(REPO))
        from plughost.runtime.accounts import create_account  # type: ignore[import-not-found]

        create_account(account, home)
    except ImportError:
        (folder / "specialists" / "agents").mkdir(parents=True)
        (folder / "users.json").write_text(json.dumps([{"userId": "owner", "name": "owner", "role": "owner"}]))
        (folder / "account.json").write_text(json.dumps({"accountId": account, "enabledPlugins": [],
                                                         "adminPhones": [], "admins": ["owner"],
                                                         "defaultAgent": "admin"}))
    return {**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": account, "PLUGHOST_EMBEDDER": "none"}


def start_plughost(env: dict[str, str], port: int, stderr: object = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "serve", "--port", str(port)], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=stderr)
    wait_port(port)
    return proc


def row(name: str, r: dict[str, float]) -> str:
    errs = f"connect={r['connect']} read={r['read']} write={r['write']} timeout={r['timeout']} non2xx={r['non2xx']}"
    return (f"  {name:<28} {r['rps']:>9.0f} req/s  p50 {r['p50_ms']:>7.2f} ms  p99 {r['p99_ms']:>7.2f} ms  "
            f"requests={r['requests']}  {errs}")


def sigterm_run(env: dict[str, str], args: argparse.Namespace) -> None:
    """A fresh server under wrk, SIGTERM at 3 s: the server's own request count must equal wrk's."""
    port = free_port()
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = start_plughost(env, port, stderr=err)
        try:
            load = subprocess.Popen(["wrk", f"-t{args.threads}", f"-c{args.connections}", "-d8s",
                                     f"http://127.0.0.1:{port}/sites/pub/"], stdout=subprocess.PIPE, text=True)
            time.sleep(3)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        stopped = time.monotonic() - t0
        out = load.communicate(timeout=60)[0]
        err.seek(0)
        served = re.search(r"\[serve\] op=stopped signal=SIGTERM requests=(\d+)", err.read())
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errs = m.groups() if m else ("0", "0", "0", "0")
    total = re.search(r"(\d+) requests in", out)
    print("SIGTERM during load (/sites/pub/, wrk 8 s, signal at 3 s, fresh server)")
    print(f"  exit={code} stopped-in={stopped:.2f}s wrk-completed={total.group(1) if total else '?'} "
          f"server-accepted={served.group(1) if served else '?'} (equal = every accepted request completed)")
    print(f"  wrk socket errors: connect={errs[0]} read={errs[1]} write={errs[2]} timeout={errs[3]} "
          "(read/write: wrk's next request on a keep-alive connection the server had closed; never read)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-sigterm", action="store_true", help="skip the SIGTERM-during-load run")
    bench_results.add_flag(parser)
    args = parser.parse_args()
    bench_results.floor("a bare Starlette + uvicorn app serving the same content, under the same wrk load")
    if not shutil.which("wrk"):
        print("wrk not found (apt-get install -y wrk)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="plughost-bench-") as tmp:
        env = setup_home(Path(tmp))
        port = free_port()
        plughost = start_plughost(env, port)
        raw = None
        try:
            raw_port = free_port()
            raw = subprocess.Popen([sys.executable, "-c", RAW_APP, str(raw_port), str(Path(tmp) / "sites")],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(raw_port)
            results = {}
            for label, path in (("/healthz", "/healthz"), ("/sites/ (index.html)", "/sites/pub/"),
                                ("/sites/ asset (css)", "/sites/pub/css/site.css")):
                results[label] = (wrk(f"http://127.0.0.1:{port}{path}", args.duration, args.connections, args.threads),
                                  wrk(f"http://127.0.0.1:{raw_port}{path}", args.duration, args.connections,
                                      args.threads))
        finally:  # never leave a server behind, whatever failed
            for proc in (raw, plughost):
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
        print(f"wrk -t{args.threads} -c{args.connections} -d{int(args.duration)}s on {os.cpu_count()} cores "
              "(plughost logs a [sites] line per /sites request, as the contract says)")
        for label, (ours, base) in results.items():
            print(f"{label}")
            print(row("plughost serve", ours))
            print(row("raw starlette+uvicorn", base))
            print(f"  ratio plughost/raw: {ours['rps'] / base['rps']:.2f}")
        if not args.no_sigterm:
            sigterm_run(env, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("serve_load", main))
