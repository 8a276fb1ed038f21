"""The scheduler inside `plughost serve`: an entry set 2 s ahead fires on its own at its time, once,
as an admin turn with the provenance marker in the sender's own session, and not again after a
restart; a claimed entry dispatched twice is one message and one turn."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from channels_support import ACCOUNT, FakeApis, agent_calls, agent_command, channel_host, serve, wait_for

from plughost.plugins.channels.compose import PROVENANCE_HEADING
from plughost.plugins.channels.runner import agent_session_for, session_id_for
from tests.conftest import run_cli


class Server:
    """`plughost serve --port 0` in a subprocess; stopped with SIGTERM."""

    def __init__(self, env: dict[str, str], tmp: Path, n: int) -> None:
        self.out = tmp / f"serve-{n}.out"
        self.err = tmp / f"serve-{n}.err"
        self.proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "serve", "--port", "0"], env=env,
                                     stdout=self.out.open("w"), stderr=self.err.open("w"))
        wait_for(lambda: "serving on" in self.out.read_text() or self.proc.poll() is not None, timeout=120)
        assert self.proc.poll() is None, self.err.read_text()[-2000:]

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        return self.err.read_text()


def entries(home: Path) -> list[dict]:
    return json.loads((home / "accounts" / ACCOUNT / "schedule.json").read_text())


def test_scheduled_dispatch_fires_once_while_serving_and_not_after_restart(account, plughost_home: Path,
                                                                          tmp_path: Path) -> None:
    folder = plughost_home / "accounts" / ACCOUNT  # a complete account, as `plughost serve`'s gates want it
    data = json.loads((folder / "account.json").read_text())
    (folder / "account.json").write_text(json.dumps({**data, "enabledPlugins": []}))
    fake = FakeApis()
    with serve(fake.app()) as api_base:
        env = {**os.environ, **fake.env(api_base), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_AGENT": "command",
               "PLUGHOST_AGENT_COMMAND": agent_command(tmp_path), "AGENT_CAPTURE": str(tmp_path / "agent-calls.jsonl")}
        added = run_cli("schedule", "add", "--channel", "telegram", "--to", "777", "--event", "daily-report",
                        "--text", "send the daily report", "--owner", "u-owner", "--in", "2", "--json", env=env)
        assert added.returncode == 0, added.stderr
        entry = json.loads(added.stdout)
        due = datetime.fromisoformat(entry["at"].replace("Z", "+00:00"))
        server = Server(env, tmp_path, 1)
        try:
            calls = wait_for(lambda: agent_calls(tmp_path), timeout=30)
            fired_at = datetime.now(UTC)
            wait_for(lambda: entries(plughost_home)[0]["status"] == "done", timeout=20)
        finally:
            log1 = server.stop()
        assert fired_at >= due
        call = calls[0]
        assert call["scheduled"] is True and call["role"] == "admin"
        assert PROVENANCE_HEADING in call["payload"] and "event=daily-report owner=u-owner" in call["payload"]
        # an owner session of its own: never the visitor's session, never a plain admin one
        assert call["turnKind"] == "scheduled" and call["agentSession"] == agent_session_for(ACCOUNT, "telegram:777",
                                                                                             "scheduled")
        assert call["agentSession"] not in {agent_session_for(ACCOUNT, "telegram:777", k) for k in ("visitor", "admin")}
        assert call["env_session"] == session_id_for(ACCOUNT, "telegram:777")  # the conversation's key
        assert fake.sent("telegram")[0]["json"]["chat_id"] == "777"
        assert f"[schedule] op=fired id={entry['id']} event=daily-report status=answered delivered=true" in log1
        done = entries(plughost_home)[0]
        assert done["status"] == "done" and done["delivered"] is True and done["messageId"].startswith("msg-")

        server = Server(env, tmp_path, 2)  # restart: the fired entry stays fired; a new one still fires
        try:
            later = run_cli("schedule", "add", "--channel", "telegram", "--to", "778", "--event", "reminder",
                            "--text", "remind me", "--in", "1", env=env)
            assert later.returncode == 0, later.stderr
            wait_for(lambda: len(agent_calls(tmp_path)) >= 2, timeout=30)
            time.sleep(1.5)  # a few more scheduler ticks
        finally:
            log2 = server.stop()
    assert [c["sender"] for c in agent_calls(tmp_path)] == ["777", "778"]
    assert "[schedule] op=started" in log2 and entry["id"] not in log2
    assert len(fake.sent("telegram")) == 2


def test_a_dispatch_claimed_twice_is_one_message_and_one_turn(make_host, account, tmp_path: Path) -> None:
    from plughost.plugins.channels.pipeline import dispatch_scheduled

    host = channel_host(make_host, tmp_path)

    async def twice() -> tuple[str, str]:
        kw = {"channel": "telegram", "sender": "9", "event": "e", "text": "go", "platform_id": "schedule:sch-1"}
        first = await dispatch_scheduled(host, **kw)
        second = await dispatch_scheduled(host, **kw)
        return first.status, second.status

    assert asyncio.run(twice()) == ("answered", "duplicate")
    assert len(agent_calls(tmp_path)) == 1


def test_schedule_add_bad_time_is_one_line(account) -> None:
    bad = run_cli("schedule", "add", "--channel", "telegram", "--to", "1", "--event", "e", "--text", "t",
                  "--at", "tomorrow-ish")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("plughost: --at: expected an ISO 8601")
    assert not (Path(os.environ["PLUGHOST_HOME"]) / "accounts" / ACCOUNT / "schedule.json").exists()


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--in", "nan", "--in: expected a number of seconds from 0"),
    ("--in", "inf", "--in: expected a number of seconds from 0"),
    ("--in", "1e12", "--in: expected a number of seconds from 0"),
    ("--in", "-5", "--in: expected a number of seconds from 0"),
    ("--at", "2020-01-01T00:00:00", "--at: 2020-01-01T00:00:00.000Z is in the past"),
    ("--at", "9999-01-01T00:00:00Z", "--at: 9999-01-01T00:00:00.000Z is more than 10 years ahead"),
])
def test_schedule_add_refuses_a_time_it_could_not_mean(account, flag: str, value: str, says: str) -> None:
    bad = run_cli("schedule", "add", "--channel", "telegram", "--to", "1", "--event", "e", "--text", "t",
                  f"{flag}={value}")
    assert bad.returncode == 2, bad.stderr
    lines = bad.stderr.strip().splitlines()
    assert lines[-1].startswith(f"plughost: {says}"), bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (Path(os.environ["PLUGHOST_HOME"]) / "accounts" / ACCOUNT / "schedule.json").exists()


def test_a_scheduled_turn_a_stop_interrupted_runs_at_the_next_dispatch(make_host, account, tmp_path: Path,
                                                                       capfd) -> None:
    """A stop between storing a scheduled turn and running it leaves the Message ``received``: the
    entry's next dispatch (the next start re-fires it) runs that turn, once, instead of calling it a duplicate."""
    from plughost.plugins.channels.pipeline import dispatch_scheduled, gateway

    kw = {"channel": "telegram", "sender": "9", "event": "e", "text": "go", "platform_id": "schedule:sch-2"}
    first = channel_host(make_host, tmp_path)
    gateway(first).stopping = True  # the server began its stop: no agent runs
    assert asyncio.run(dispatch_scheduled(first, **kw)).status == "interrupted"
    assert agent_calls(tmp_path) == []
    first.close()  # its claim goes with it
    second = channel_host(make_host, tmp_path)
    assert asyncio.run(dispatch_scheduled(second, **kw)).status == "answered"
    assert asyncio.run(dispatch_scheduled(second, **kw)).status == "duplicate"
    assert len(agent_calls(tmp_path)) == 1
    assert "[channels] op=rerun channel=telegram" in capfd.readouterr().err
