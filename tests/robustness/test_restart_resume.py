"""Nothing accepted is lost (docs/channels.md#resume): `plughost serve` stopped under webchat, Telegram and WhatsApp
load, then restarted (or `plughost channels retry`): every accepted message is stored, and answered
exactly once — one reply Message per inbound, one send to the platform, one reply event in webchat.
A backlog of any size is resumed (no cap), oldest first, in batches while the server serves."""

from __future__ import annotations

import collections
import json
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from channels_support import telegram_update, wa_signed, whatsapp_payload
from robust_support import NO_LIMITS, cli, fakes, serve_env, start, store_messages

pytestmark = pytest.mark.e2e  # end to end: -m "not e2e" leaves it out locally; CI runs it

TG = {"X-Telegram-Bot-Api-Secret-Token": "tg-secret"}
PER_CHANNEL = 24  # messages per channel, from 6 senders each


class Load:
    """Senders on three channels posting until told to stop; records what the server accepted."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.accepted: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.webchat_sessions = [f"visitor-session-{i:02d}" for i in range(6)]

    def _post(self, client: httpx.Client, path: str, **kw: Any) -> httpx.Response | None:
        try:
            return client.post(self.base + path, timeout=30, **kw)
        except httpx.HTTPError:
            return None  # the server stopped: this one was not accepted

    def webchat(self, sender: int, n: int) -> None:
        with httpx.Client() as c:
            session = self.webchat_sessions[sender]
            for i in range(n):
                text = f"wc {sender} {i}"
                r = self._post(c, "/channels/webchat/messages", json={"session": session, "text": text, "id": f"m{i}"})
                if r is None:
                    return
                if r.status_code == 202:
                    with self.lock:
                        self.accepted.append({"channel": "webchat", "id": r.json()["messageId"], "text": text,
                                              "session": session})

    def telegram(self, sender: int, n: int) -> None:
        with httpx.Client() as c:
            for i in range(n):
                text = f"tg {sender} {i}"
                r = self._post(c, "/channels/telegram/webhook", json=telegram_update(9000 + sender, 100 + i, text),
                               headers=TG)
                if r is None:
                    return
                if r.status_code == 200:
                    with self.lock:
                        self.accepted.append({"channel": "telegram", "id": r.json()["messageId"], "text": text})

    def whatsapp(self, sender: int, n: int) -> None:
        with httpx.Client() as c:
            for i in range(n):
                text = f"wa {sender} {i}"
                raw, headers = wa_signed(whatsapp_payload(f"4477009{sender:05d}", f"wamid.IN{sender}.{i}", text))
                r = self._post(c, "/channels/whatsapp/webhook", content=raw, headers=headers)
                if r is None:
                    return
                if r.status_code == 200:
                    with self.lock:
                        self.accepted.append({"channel": "whatsapp", "id": r.json()["messages"][0]["messageId"],
                                              "text": text})

    def run_until(self, stop: Any) -> list[threading.Thread]:
        per = PER_CHANNEL // 6
        threads = [threading.Thread(target=fn, args=(s, per), daemon=True)
                   for fn in (self.webchat, self.telegram, self.whatsapp) for s in range(6)]
        for t in threads:
            t.start()
        stop()
        for t in threads:
            t.join(60)
        return threads


def _stop_under_load(served: Any, sig: int, after: int, load: Load) -> None:
    deadline = time.monotonic() + 60
    while len(load.accepted) < after and time.monotonic() < deadline:
        time.sleep(0.01)
    served.proc.send_signal(sig)
    served.proc.wait(timeout=180)  # a loaded CI machine: graceful stop, lifespan, then the turns' threads


def _wait_answered(home: Path, accepted: list[dict[str, Any]], served: Any, timeout: float = 240) -> list[Any]:
    """Poll the store (a fresh reader) until every accepted inbound has a sent reply."""
    ids = {a["id"] for a in accepted}
    deadline = time.monotonic() + timeout
    while True:
        rows = store_messages(home)
        sent = {m.properties.get("inReplyTo") for m in rows if m.properties.get("deliveryStatus") == "sent"}
        if ids <= sent:
            return rows
        if time.monotonic() > deadline:
            missing = sorted(ids - sent)[:5]
            raise AssertionError(f"{len(ids - sent)} accepted messages unanswered, e.g. {missing}")
        time.sleep(0.5)


def _assert_exactly_once(rows: list[Any], accepted: list[dict[str, Any]], fake: Any, base: str) -> None:
    """Accepted ⊆ stored; every stored inbound (a SIGKILL may store one it never acknowledged) answered once."""
    by_id = {m.id: m for m in rows}
    for a in accepted:  # every accepted message was stored, as sent
        node = by_id.get(a["id"])
        assert node is not None, f"accepted {a['channel']} message {a['id']} is not in the store"
        assert node.properties["text"] == a["text"]
    inbound = [m for m in rows if m.properties.get("role") == "user"]
    assert all(m.properties["status"] == "answered" for m in inbound)
    replies = collections.Counter(m.properties.get("inReplyTo") for m in rows if m.properties.get("role") == "assistant")
    assert all(replies[m.id] == 1 for m in inbound), "an inbound has more or fewer than one reply Message"
    for api in ("telegram", "whatsapp"):
        texts = collections.Counter(r["json"]["text"] if api == "telegram" else r["json"]["text"]["body"]
                                    for r in fake.sent(api))
        expected = {f"echo: {m.properties['text']}" for m in inbound if m.properties["channel"] == api}
        assert set(texts) == expected, f"{api}: sent replies differ from the stored messages"
        assert max(texts.values(), default=1) == 1, f"{api}: a reply was sent twice: {texts.most_common(2)}"
    sessions = {m.properties["sender"] for m in inbound if m.properties["channel"] == "webchat"}
    assert {a["session"] for a in accepted if a["channel"] == "webchat"} <= sessions
    with httpx.Client(base_url=base, timeout=30) as c:
        for session in sessions:
            events = c.get("/channels/webchat/messages", params={"session": session}).json()["events"]
            answers = collections.Counter(e["text"] for e in events if e["role"] == "assistant")
            expected = {f"echo: {m.properties['text']}" for m in inbound if m.properties["sender"] == session}
            assert set(answers) == expected and max(answers.values()) == 1, session


def _stopped_under_load(plughost_home: Path, tmp_path: Path, fake: Any, api_base: str,
                        sig: int) -> tuple[dict[str, str], Any, list[dict[str, Any]]]:
    """A server under channel load stopped by ``sig`` mid-turn: (its env, the stopped server, the
    messages it accepted with a 2xx)."""
    env = serve_env(plughost_home, tmp_path, api_base, fake, AGENT_DELAY="0.4", PLUGHOST_AGENT_CONCURRENCY="4")
    first = start(env)
    load = Load(first.base)
    load.run_until(lambda: _stop_under_load(first, sig, PER_CHANNEL, load))
    return env, first, list(load.accepted)


def test_sigterm_under_load_then_restart_answers_every_accepted_message_once(plughost_home: Path,
                                                                              tmp_path: Path) -> None:
    with fakes(plughost_home) as (fake, api_base):
        env, first, accepted = _stopped_under_load(plughost_home, tmp_path, fake, api_base, signal.SIGTERM)
        assert first.proc.returncode == 0
        stored = {m.id: m for m in store_messages(plughost_home)}
        assert {a["id"] for a in accepted} <= set(stored)  # persisted before the 2xx, SIGTERM or not
        left = [a for a in accepted if stored[a["id"]].properties["status"] == "received"]
        assert left, "the stop came too late to leave turns behind; the test proves nothing"

        second = start(env)
        rows = _wait_answered(plughost_home, accepted, second)
        _assert_exactly_once(rows, accepted, fake, second.base)
        code, _, err = second.terminate()
        assert code == 0
        assert f"[channels] op=resume unanswered={len(left)} pending=0 busy=0" in err
        assert f"[channels] op=resumed resumed={len(left)} delivered=0 busy=0 answered={len(left)}" in err


def test_sigkill_under_load_then_channels_retry_then_restart_sends_nothing_twice(plughost_home: Path,
                                                                                  tmp_path: Path) -> None:
    with fakes(plughost_home) as (fake, api_base):
        env, first, accepted = _stopped_under_load(plughost_home, tmp_path, fake, api_base, signal.SIGKILL)
        retry = cli("channels", "retry", "--json", env=env)
        assert retry.returncode == 0, retry.stderr[-2000:]
        outcome = json.loads(retry.stdout)
        assert outcome["unanswered"]["busy"] == 0 and outcome["unanswered"]["resumed"] > 0
        rows = store_messages(plughost_home)
        sent_before = len(fake.sent())
        # the retry ran every turn; a server started afterwards finds nothing left to do
        second = start(env)
        time.sleep(1.0)
        _assert_exactly_once(rows, accepted, fake, second.base)
        code, _, err = second.terminate()
        assert code == 0 and "op=resume " not in err and len(fake.sent()) == sent_before


BACKLOG = 600  # above the cap a restart used to resume at most (500), in six batches of 100


def post_backlog(base: str, n: int, sessions: int) -> list[dict[str, Any]]:
    """``n`` webchat messages over ``sessions`` visitors (each visitor's in order); the accepted ones."""

    def visitor(v: int) -> list[dict[str, Any]]:
        session, out = f"backlog-visitor-{v:04d}", []
        with httpx.Client(base_url=base, timeout=60) as c:
            for i in range(v, n, sessions):
                text = f"q {v} {i}"
                r = c.post("/channels/webchat/messages", json={"session": session, "text": text, "id": f"b{i}"})
                assert r.status_code == 202, r.text
                out.append({"channel": "webchat", "id": r.json()["messageId"], "text": text, "session": session})
        return out

    with ThreadPoolExecutor(8) as pool:
        return [a for chunk in pool.map(visitor, range(sessions)) for a in chunk]


def test_a_backlog_above_the_old_cap_is_resumed_whole_in_batches_while_serving(plughost_home: Path,
                                                                                tmp_path: Path) -> None:
    with fakes(plughost_home) as (fake, api_base):
        # the first server stores every message and answers none (its agent takes a minute), then dies
        env = serve_env(plughost_home, tmp_path, api_base, fake, AGENT_DELAY="60", PLUGHOST_AGENT_CONCURRENCY="1",
                        **NO_LIMITS)
        first = start(env)
        t0 = time.monotonic()
        accepted = post_backlog(first.base, BACKLOG, sessions=200)
        posted_s = time.monotonic() - t0
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=60)
        assert len(accepted) == BACKLOG

        env = {**env, "AGENT_DELAY": "0", "PLUGHOST_AGENT_CONCURRENCY": "8", "PLUGHOST_RESUME_BATCH": "100"}
        second = start(env)
        t1 = time.monotonic()
        # new traffic is taken while the backlog is being resumed, and answered
        with httpx.Client(base_url=second.base, timeout=30) as c:
            fresh = c.post("/channels/webchat/messages", json={"session": "fresh-visitor-01", "text": "new one"})
            assert fresh.status_code == 202
            assert c.get("/healthz").status_code == 200
        fresh_id = fresh.json()["messageId"]
        rows = _wait_answered(plughost_home, [*accepted, {"id": fresh_id}], second, timeout=900)
        resumed_s = time.monotonic() - t1
        by_id = {m.id: m for m in rows}
        assert by_id[fresh_id].properties["status"] == "answered"
        _assert_exactly_once(rows, [*accepted, {"channel": "webchat", "id": fresh_id, "text": "new one",
                                                "session": "fresh-visitor-01"}], fake, second.base)
        code, _, err = second.terminate()
    assert code == 0 and "Traceback" not in err
    assert f"[channels] op=resume unanswered={BACKLOG} pending=0 busy=0 batch=100" in err
    batches = [ln for ln in err.splitlines() if ln.startswith("[channels] op=resume-batch ")]
    assert len(batches) == BACKLOG // 100 and batches[-1].endswith(" left=0"), batches[-3:]
    assert f"[channels] op=resumed resumed={BACKLOG} delivered=0 busy=0 answered={BACKLOG} batches={BACKLOG // 100}" in err
    # oldest first: each visitor's replies were recorded in the order the messages were received
    replies = sorted((m for m in rows if m.properties.get("role") == "assistant"),
                     key=lambda m: m.properties["createdNs"])
    order: dict[str, list[str]] = collections.defaultdict(list)
    for m in replies:
        order[m.properties["recipient"]].append(m.properties["text"])
    for a in accepted[:50]:
        texts = order[a["session"]]
        assert texts == sorted(texts, key=lambda t: int(t.rsplit(" ", 1)[1])), a["session"]
    print(f"\n[test] backlog={BACKLOG} posted_s={posted_s:.1f} resumed_s={resumed_s:.1f}")
