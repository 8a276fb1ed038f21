"""Webhook load: N deliveries from S senders over D seconds against one `plughost channels serve`.

Telegram and WhatsApp senders are mixed (half each). Each sender posts its messages in order
(the next one after the previous answer), paced so the whole run spans the duration; a few
deliveries are re-sent to exercise idempotency. Afterwards the store is checked: every
message persisted exactly once, per-sender order kept (by receipt and by reply), no 5xx.
A raw baseline (a bare Starlette endpoint that parses the body and answers 200, served by
the same uvicorn) is measured under the same load in the same run.

    .venv/bin/python bench/webhook_load.py                      # 2000 messages, 50 senders, 30 s
    .venv/bin/python bench/webhook_load.py --messages 400 --duration 10
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import results as bench_results  # bench/RESULTS.md, with --write-results

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

ACCOUNT = "acct-bench"
TG_SECRET = "tg-secret"
WA_SECRET = "wa-app-secret"

RAW_APP = '''
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
import json

async def hook(request):
    json.loads(await request.body())
    return JSONResponse({"ok": True})

app = Starlette(routes=[Route("/channels/telegram/webhook", hook, methods=["POST"]),
                        Route("/channels/whatsapp/webhook", hook, methods=["POST"])])
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeApis:
    """Loopback Telegram + WhatsApp APIs recording every reply, in arrival order."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, str]] = []  # (recipient, text)
        self.lock = threading.Lock()

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def telegram(request: Any) -> Any:
            body = json.loads(await request.body())
            with self.lock:
                self.replies.append((f"tg:{body['chat_id']}", body["text"]))
                n = len(self.replies)
            return JSONResponse({"ok": True, "result": {"message_id": n}})

        async def whatsapp(request: Any) -> Any:
            body = json.loads(await request.body())
            with self.lock:
                self.replies.append((f"wa:{body['to']}", body["text"]["body"]))
                n = len(self.replies)
            return JSONResponse({"messages": [{"id": f"wamid.OUT{n}"}]})

        return Starlette(routes=[Route("/bot{token}/sendMessage", telegram, methods=["POST"]),
                                 Route("/{phone}/messages", whatsapp, methods=["POST"])])


def serve_in_thread(app: Any, port: int) -> Any:
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return server


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit("server did not start")


def telegram_body(uid: int, n: int, text: str) -> bytes:
    return json.dumps({"update_id": uid * 1000 + n, "message": {
        "message_id": n, "from": {"id": uid, "is_bot": False, "first_name": "T"},
        "chat": {"id": uid, "type": "private"}, "date": int(time.time()), "text": text}}).encode()


def whatsapp_body(phone: str, n: int, text: str) -> bytes:
    return json.dumps({"object": "whatsapp_business_account", "entry": [{"id": "W", "changes": [{
        "field": "messages", "value": {"messaging_product": "whatsapp", "metadata": {"phone_number_id": "1"},
                                       "contacts": [{"profile": {"name": "W"}, "wa_id": phone}],
                                       "messages": [{"from": phone, "id": f"wamid.{phone}.{n}",
                                                     "timestamp": str(int(time.time())), "type": "text",
                                                     "text": {"body": text}}]}}]}]}).encode()


def delivery(sender: int, n: int) -> tuple[str, bytes, dict[str, str], str]:
    """(path, body, headers, recipient key) for sender ``sender``'s message ``n``."""
    text = f"message {n:04d} from sender {sender}"
    if sender % 2 == 0:
        uid = 700_000 + sender
        return ("/channels/telegram/webhook", telegram_body(uid, n, text),
                {"X-Telegram-Bot-Api-Secret-Token": TG_SECRET, "Content-Type": "application/json"}, f"tg:{uid}")
    phone = f"1555{sender:07d}"
    raw = whatsapp_body(phone, n, text)
    sig = "sha256=" + hmac.new(WA_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    return "/channels/whatsapp/webhook", raw, {"X-Hub-Signature-256": sig, "Content-Type": "application/json"}, \
        f"wa:{phone}"


async def load(base: str, senders: int, per_sender: int, duration: float, redeliver_every: int) -> dict[str, Any]:
    import httpx

    latencies: list[float] = []
    statuses: dict[int, int] = {}
    interval = duration / per_sender
    limits = httpx.Limits(max_connections=senders, max_keepalive_connections=senders)

    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        async def post(path: str, body: bytes, headers: dict[str, str]) -> None:
            for _attempt in range(3):  # like a platform, re-deliver after a transport error
                t0 = time.perf_counter()
                try:
                    r = await client.post(path, content=body, headers=headers)
                except httpx.TransportError as exc:
                    key = f"transport:{type(exc).__name__}"
                    statuses[key] = statuses.get(key, 0) + 1
                    continue
                latencies.append(time.perf_counter() - t0)
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                return

        async def sender_loop(s: int) -> None:
            await asyncio.sleep(interval * s / senders)  # stagger the senders
            start = time.perf_counter()
            for n in range(per_sender):
                path, body, headers, _ = delivery(s, n)
                await post(path, body, headers)
                if redeliver_every and (s * per_sender + n) % redeliver_every == 0:
                    await post(path, body, headers)  # a platform re-delivery
                pause = start + (n + 1) * interval - time.perf_counter()
                if pause > 0:
                    await asyncio.sleep(pause)

        t0 = time.perf_counter()
        await asyncio.gather(*(sender_loop(s) for s in range(senders)))
        wall = time.perf_counter() - t0
    latencies.sort()
    return {"wall": wall, "requests": len(latencies), "statuses": statuses,
            "p50_ms": statistics.median(latencies) * 1000,
            "p95_ms": latencies[int(0.95 * (len(latencies) - 1))] * 1000,
            "max_ms": latencies[-1] * 1000}


def start_server(cmd: list[str], env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as fh:
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=fh, stderr=fh)
    wait_port(port, proc)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def verify(home: Path, env: dict[str, str], fake: FakeApis, senders: int, per_sender: int) -> dict[str, Any]:
    from plughost.ports.graph import Guards
    from plughost.runtime.host import Host

    host = Host(env=env).load()
    try:
        store = host.store()
        rows = store.find(guards=Guards(ACCOUNT), labels=["Message"], where={"role": "user"},
                          limit=senders * per_sender * 2)
        ids = [r.properties["platformMessageId"] for r in rows]
        by_sender: dict[str, list[tuple[int, int]]] = {}
        for r in rows:
            n = int(r.properties["text"].split()[1])
            by_sender.setdefault(r.properties["sender"], []).append((r.properties["receivedNs"], n))
        receipt_order_ok = all([n for _, n in sorted(v)] == sorted(n for _, n in v) for v in by_sender.values())
        replies: dict[str, list[int]] = {}
        for who, text in fake.replies:
            replies.setdefault(who, []).append(int(text.split()[2]))  # 're message NNNN'
        reply_order_ok = all(v == sorted(v) for v in replies.values())
        return {"persisted": len(rows), "unique": len(set(ids)), "senders": len(by_sender),
                "receipt_order_ok": receipt_order_ok, "replies": len(fake.replies), "reply_order_ok": reply_order_ok}
    finally:
        host.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--senders", type=int, default=50)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--redeliver-every", type=int, default=20, help="re-send every Nth delivery (0: never)")
    bench_results.add_flag(parser)
    args = parser.parse_args()
    bench_results.floor("a bare Starlette endpoint that parses the body and answers 200, same uvicorn, same load")
    per_sender = args.messages // args.senders

    work = Path(tempfile.mkdtemp(prefix="plughost-webhook-load-"))
    home = work / "home"
    (home / "accounts" / ACCOUNT).mkdir(parents=True)
    (home / "accounts" / ACCOUNT / "account.json").write_text(json.dumps({"adminPhones": [], "admins": []}))
    agent = work / "agent.sh"
    agent.write_text("sed -E 's/.*(message [0-9]{4}).*/re \\1/'\n")

    fake = FakeApis()
    api_port = free_port()
    serve_in_thread(fake.app(), api_port)
    api = f"http://127.0.0.1:{api_port}"
    env = {**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none",
           "PLUGHOST_AGENT_COMMAND": f"sh {agent}", "PLUGHOST_LOG_FILE": "0",
           "PLUGHOST_TELEGRAM_TOKEN": "1:x", "PLUGHOST_TELEGRAM_SECRET": TG_SECRET, "PLUGHOST_TELEGRAM_API_BASE": api,
           "PLUGHOST_WHATSAPP_TOKEN": "t", "PLUGHOST_WHATSAPP_PHONE_ID": "1", "PLUGHOST_WHATSAPP_APP_SECRET": WA_SECRET,
           "PLUGHOST_WHATSAPP_API_BASE": api, "PYTHONPATH": str(REPO)}

    # the raw baseline: same uvicorn, same load, a bare endpoint
    (work / "rawapp.py").write_text(RAW_APP)
    port = free_port()
    raw_proc = start_server([sys.executable, "-m", "uvicorn", "--app-dir", str(work), "rawapp:app",
                             "--port", str(port), "--log-level", "error"], env, port, work / "raw.log")
    try:
        raw = asyncio.run(load(f"http://127.0.0.1:{port}", args.senders, per_sender, args.duration, 0))
    finally:
        stop(raw_proc)

    port = free_port()
    proc = start_server([sys.executable, "-m", "plughost.cli", "channels", "serve", "--port", str(port)], env, port,
                        work / "server.log")
    try:
        ours = asyncio.run(load(f"http://127.0.0.1:{port}", args.senders, per_sender, args.duration,
                                args.redeliver_every))
        deadline = time.time() + 120
        while len(fake.replies) < args.senders * per_sender and time.time() < deadline:
            time.sleep(0.2)
        drained_after = time.time() - (deadline - 120)
    finally:
        stop(proc)
    checks = verify(home, env, fake, args.senders, per_sender)

    expected = args.senders * per_sender
    five_xx = sum(v for k, v in ours["statuses"].items() if isinstance(k, int) and k >= 500)
    print(f"webhook load: {expected} messages from {args.senders} senders (telegram+whatsapp) "
          f"paced over {args.duration:.0f}s, +{ours['requests'] - expected} re-deliveries")
    print(f"  channels: wall={ours['wall']:.1f}s throughput={ours['requests'] / ours['wall']:.1f} req/s "
          f"p50={ours['p50_ms']:.1f}ms p95={ours['p95_ms']:.1f}ms max={ours['max_ms']:.1f}ms "
          f"statuses={ours['statuses']}")
    print(f"  raw baseline: wall={raw['wall']:.1f}s throughput={raw['requests'] / raw['wall']:.1f} req/s "
          f"p50={raw['p50_ms']:.1f}ms p95={raw['p95_ms']:.1f}ms max={raw['max_ms']:.1f}ms")
    print(f"  ratio p95 channels/raw = {ours['p95_ms'] / max(raw['p95_ms'], 1e-6):.1f}x; "
          f"all replies delivered {drained_after:.1f}s after the load ended")
    print(f"  persisted={checks['persisted']} unique={checks['unique']} expected={expected} "
          f"senders={checks['senders']} receipt-order-ok={checks['receipt_order_ok']} "
          f"replies={checks['replies']} reply-order-ok={checks['reply_order_ok']} 5xx={five_xx}")
    ok = (checks["persisted"] == checks["unique"] == expected and checks["receipt_order_ok"]
          and checks["reply_order_ok"] and checks["replies"] == expected and five_xx == 0)
    print(f"  work dir (server logs): {work}")
    print("  RESULT " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(bench_results.run("webhook_load", main))
