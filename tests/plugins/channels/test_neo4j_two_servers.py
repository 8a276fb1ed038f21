"""Two ``plughost serve`` processes, separate homes, one real Neo4j (docs/channels.md#several-servers-on-one-store).

Both get the same Telegram webhook stream (every update posted to both), both are restarted
(SIGTERM) mid-run and one is then killed with SIGKILL while it holds turns: every accepted
message is answered exactly once, every scheduled turn fires once, the dead server's turn leases
are taken over by the other after they expire, and the standing audit runs once between them.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.backends import needs_neo4j, neo4j_env
from tests.support.channels_support import FakeApis, agent_command, serve, write_account
from tests.support.serve_helpers import ServeProcess, start_serve

pytestmark = [pytest.mark.timeout(420),
              needs_neo4j]

TTL_S = 3.0
SENDERS = 6


def _post(server: ServeProcess | None, body: dict[str, Any]) -> int:
    """POST an update to a server's webhook; its status, or 0 when nobody answers there."""
    if server is None or server.proc.poll() is not None:
        return 0
    req = urllib.request.Request(f"{server.base}/channels/telegram/webhook", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "X-Telegram-Bot-Api-Secret-Token": "tg-secret"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def _update(n: int) -> tuple[dict[str, Any], str]:
    sender = 910_000 + n % SENDERS
    text = f"question {n} from {sender}"
    return {"update_id": 800_000 + n, "message": {
        "message_id": 5_000 + n, "from": {"id": sender, "is_bot": False, "first_name": "Vis"},
        "chat": {"id": sender, "type": "private"}, "date": 1764464400, "text": text}}, text


def _schedule(home: Path, account: str, *entries: dict[str, Any]) -> None:
    """Add entries to a home's schedule under its lock (a running server changes it too)."""
    from plughost.plugins.channels.scheduler import schedule_path, update

    update(schedule_path(home, account), lambda have: have.extend(dict(e) for e in entries))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Pair:
    """The two homes, their environments and the servers running on them."""

    def __init__(self, tmp: Path, account: str, base_env: dict[str, str]) -> None:
        self.account, self.base_env = account, base_env
        self.homes = {name: tmp / f"home-{name}" for name in "ab"}
        self.running: dict[str, ServeProcess | None] = {"a": None, "b": None}
        self.logs: list[tuple[str, Path]] = []  # (server name, its stderr file), every start
        for home in self.homes.values():
            write_account(home, account)

    def start(self, name: str) -> ServeProcess:
        env = {**self.base_env, "PLUGHOST_HOME": str(self.homes[name])}
        server = start_serve(env=env, timeout=120)
        self.running[name] = server
        self.logs.append((name, server.stderr_path))
        return server

    def stop(self, name: str, sig: int = signal.SIGTERM) -> str:
        server = self.running[name]
        assert server is not None
        self.running[name] = None
        _, _, err = server.terminate(sig, timeout=60)
        return err

    def lines(self, pattern: str) -> list[str]:
        out = []
        for _, path in self.logs:
            out += [line for line in path.read_text(errors="replace").splitlines() if re.search(pattern, line)]
        return out


@pytest.fixture
def neo4j_account() -> Any:
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    env = neo4j_env()
    account = f"acct-2srv-{uuid.uuid4().hex[:8]}"
    store = Neo4jStore.from_env({**env, "ACCOUNT_ID": account})
    yield account, env, store
    ids = [r["id"] for r in store._rows("MATCH (n:GraphNode {accountId: $a}) RETURN n.id AS id", {"a": account})]
    store._rows("UNWIND $names AS name MATCH (l:Lease {name: name}) DELETE l",
                {"names": [f"turn:{i}" for i in ids] + [f"audit:{account}"]}, read=False)
    store.wipe_account(account)
    store.close()


def test_two_servers_on_one_neo4j_answer_each_message_once(neo4j_account: Any, tmp_path: Path) -> None:
    account, neo_env, store = neo4j_account
    fake = FakeApis()
    with serve(fake.app()) as api_base:
        base_env = {**neo_env, **fake.env(api_base), "ACCOUNT_ID": account, "PLUGHOST_STORE": "neo4j",
                    "PLUGHOST_AGENT_COMMAND": agent_command(tmp_path), "AGENT_DELAY": "0.4",
                    "PLUGHOST_AGENT_TIMEOUT": "30", "PLUGHOST_LEASE_TTL": str(TTL_S),
                    "PLUGHOST_AUDIT_PERIOD": "600", "PLUGHOST_SHUTDOWN_GRACE": "3"}
        pair = Pair(tmp_path, account, base_env)

        def entry(k: int, due_s: float) -> dict[str, Any]:
            now = datetime.now(UTC)
            return {"id": f"sch-2srv{k}", "channel": "telegram", "to": "920001", "event": f"reminder-{k}",
                    "text": f"scheduled {k}", "owner": "u-owner", "chatId": None,
                    "at": _iso(now + timedelta(seconds=due_s)), "status": "pending", "createdAt": _iso(now)}

        entries: list[dict[str, Any]] = []
        accepted: dict[str, list[int]] = {}
        lock = threading.Lock()
        pool = ThreadPoolExecutor(max_workers=8)

        def send(n: int) -> None:
            body, text = _update(n)
            a, b = pair.running["a"], pair.running["b"]
            got = list(pool.map(lambda s: _post(s, body), [a, b]))
            with lock:
                accepted[text] = got

        def stream(first: int, last: int, gap: float = 0.05) -> None:
            for n in range(first, last):
                send(n)
                time.sleep(gap)

        try:
            entries.append(entry(0, 5))
            for home in pair.homes.values():  # the same schedule on both homes (a deployment's copy)
                _schedule(home, account, entries[0])
            pair.start("a")
            pair.start("b")
            stream(0, 20)
            pair.stop("a")  # restart a while b takes the stream
            stream(20, 26)
            pair.start("a")
            entries.append(entry(1, 1))
            for home in pair.homes.values():
                _schedule(home, account, entries[1])
            stream(26, 34)
            pair.stop("b")  # restart b while a takes the stream
            stream(34, 40)
            pair.start("b")
            _wait_replies(fake, {"echo: scheduled 0", "echo: scheduled 1"}, 60)  # both done before the kill
            # both up again: a burst a's lanes are still working through when it is killed
            burst = threading.Thread(target=stream, args=(40, 60, 0.0))
            burst.start()
            # killed while the burst runs and it holds turns (after the burst, a fast machine has
            # often answered them all); the rest of the burst goes to b alone
            deadline = time.monotonic() + 30
            while not _holds_turns(pair, store, "a") and time.monotonic() < deadline:
                time.sleep(0.02)
            killed = pair.running["a"]
            assert killed is not None
            killed_owner = _owner(killed.stderr_path)
            pair.stop("a", signal.SIGKILL)
            burst.join()
            # the turns it died holding: its leases stay until they expire (what the survivor takes over)
            in_flight = {str(r["text"]) for r in store._rows(
                "MATCH (l:Lease) WHERE l.owner = $o AND l.name STARTS WITH 'turn:' "
                "MATCH (m:Message {id: substring(l.name, 5)}) RETURN m.text AS text", {"o": killed_owner})}
            stream(60, 70)  # the survivor alone
            entries.append(entry(2, 1))
            _schedule(pair.homes["b"], account, entries[2])  # the survivor's alone
            expected = {text for text, got in accepted.items() if 200 in got}
            _wait_replies(fake, {f"echo: {t}" for t in expected} | {f"echo: scheduled {k}" for k in range(3)}, 120)
            time.sleep(TTL_S)  # a second answer would have come by now
            pair.stop("b")
        finally:
            pool.shutdown(wait=False)
            for name, server in pair.running.items():
                if server is not None:
                    pair.stop(name, signal.SIGKILL)

    replies = Counter(r["json"]["text"] for r in fake.sent("telegram"))
    answered = {t for t in expected if replies[f"echo: {t}"] >= 1}
    twice = sorted(t for t in expected if replies[f"echo: {t}"] > 1)
    takeovers = pair.lines(r"\[lease\] op=takeover name=turn:")
    from_killed = [line for line in takeovers if f"previous={killed_owner}" in line]
    fired = Counter(re.search(r"id=(\S+)", line).group(1) for line in pair.lines(r"\[schedule\] op=fired"))
    audits = pair.lines(r"\[audit\] op=run ")
    print(f"[two-servers] accepted={len(expected)} answered={len(answered)} answered-twice={len(twice)} "
          f"in-flight-at-kill={len(in_flight)} takeovers={len(takeovers)} from-killed={len(from_killed)} scheduled-fired={sum(fired.values())} "
          f"audit-runs={len(audits)} posted={len(accepted)}")
    assert len(expected) == 70, {t: g for t, g in accepted.items() if 200 not in g}
    assert answered == expected, sorted(expected - answered)
    # Exactly once, except where no store can tell: a turn the killed server held whose reply reached
    # Telegram (sendMessage has no idempotency key) in the instant before it recorded the send. Those
    # are answered again by the server that takes the turn over; nothing else ever is.
    assert set(twice) <= in_flight, (twice, sorted(in_flight))
    assert all(replies[f"echo: {t}"] == 2 for t in twice), twice
    assert not [t for t in replies if t.startswith("echo: question") and t[6:] not in expected]
    assert from_killed, takeovers  # the dead server's turns went to the other once their leases ran out
    assert fired == {e["id"]: 1 for e in entries}, fired
    assert [replies[f"echo: scheduled {k}"] for k in range(3)] == [1, 1, 1]
    assert len(audits) == 1, audits  # once a period between both servers and their restarts
    assert len(pair.lines(r"\[lease\] op=owner ")) == len(pair.logs) == 4  # one owner id per serve process
    assert store._rows("MATCH (n:GraphNode {accountId: $a}) WHERE n.role = 'user' AND n.status = 'received' "
                       "RETURN count(n) AS c", {"a": account})[0]["c"] == 0


def _wait_replies(fake: FakeApis, texts: set[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if texts <= {r["json"]["text"] for r in fake.sent("telegram")}:
            return
        time.sleep(0.25)


def _owner(stderr: Path) -> str:
    found = re.search(r"\[lease\] op=owner owner=(\S+)", stderr.read_text(errors="replace"))
    assert found, stderr.read_text(errors="replace")[-2000:]
    return found.group(1)


def _holds_turns(pair: Pair, store: Any, name: str) -> bool:
    """Whether server ``name`` holds turn leases right now (so killing it leaves some to take over)."""
    server = pair.running[name]
    if server is None:
        return False
    try:
        owner = _owner(server.stderr_path)
    except AssertionError:
        return False
    rows = store._rows("MATCH (l:Lease) WHERE l.owner = $o AND l.name STARTS WITH 'turn:' RETURN count(l) AS c",
                       {"o": owner})
    return rows[0]["c"] >= 2
