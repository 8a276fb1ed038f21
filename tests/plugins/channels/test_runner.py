"""The agent runner (docs/channels.md#runners): command runner, deterministic sessions, per-sender order, parallel senders."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from pathlib import Path

import pytest

from plughost import AgentTurn, Principal, Role
from plughost.api.hooks import run_agent
from plughost.plugins.channels.compose import TurnInput, fetch_rules
from plughost.plugins.channels.runner import CommandRunner, KeyedSerializer, RunnerError, session_id_for
from plughost.plugins.channels.runner_choice import get_runner
from plughost.runtime import hooktable
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import takes_turn
from tests.support.channels_support import agent_turn

TIMED_AGENT = r'''
IFS= read -r line || true
sender=$(printf '%s' "$line" | sed -E 's/.*"sender": "([^"]*)".*/\1/')
n=$(printf '%s' "$line" | sed -E 's/.*"messageId": "m([0-9]+)".*/\1/')
start=$(date +%s.%N)
sleep "$AGENT_DELAY"
end=$(date +%s.%N)
printf '{"sender": "%s", "n": %s, "start": %s, "end": %s, "session": "%s"}\n' \
  "$sender" "$n" "$start" "$end" "$PLUGHOST_SESSION_ID" >> "$AGENT_LOG"
printf 'reply %s %s\n' "$sender" "$n"
'''


def make_runner(tmp_path: Path, delay: float, timeout: float = 30) -> CommandRunner:
    script = tmp_path / "timed_agent.sh"
    script.write_text(TIMED_AGENT)
    env = {"AGENT_DELAY": str(delay), "AGENT_LOG": str(tmp_path / "log.jsonl"), "PATH": "/usr/bin:/bin"}
    return CommandRunner(["sh", str(script)], timeout=timeout, env=env)


def test_session_ids_deterministic() -> None:
    a = session_id_for("acct", "telegram:1")
    assert a == session_id_for("acct", "telegram:1") and uuid.UUID(a).version == 5
    assert a != session_id_for("acct", "telegram:2") and a != session_id_for("other", "telegram:1")


def test_twenty_senders_ten_messages_ordered_and_parallel(tmp_path: Path) -> None:
    runner = make_runner(tmp_path, delay=0.2)
    senders = [f"s{i:02d}" for i in range(20)]

    async def main() -> tuple[dict[str, list[str]], float]:
        lanes = KeyedSerializer()
        replies: dict[str, list[str]] = {s: [] for s in senders}

        def job(sender: str, n: int):
            async def run() -> None:
                sid = session_id_for("acct", sender)
                out = await runner.run(sid, agent_turn({"sender": sender, "messageId": f"m{n}"}, session=sid))
                replies[sender].append(out)
            return run

        t0 = time.perf_counter()
        tasks = [lanes.submit(s, job(s, n)) for n in range(10) for s in senders]  # all at once, interleaved
        await asyncio.gather(*tasks)
        return replies, time.perf_counter() - t0

    replies, wall = asyncio.run(main())
    for s in senders:
        assert replies[s] == [f"reply {s} {n}" for n in range(10)]
    rows = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert len(rows) == 200
    per_sender: dict[str, list[dict]] = {}
    for r in rows:
        per_sender.setdefault(r["sender"], []).append(r)
    slowest = 0.0
    for runs in per_sender.values():
        runs.sort(key=lambda r: r["start"])
        assert [r["n"] for r in runs] == list(range(10))  # strictly in order ...
        assert all(a["end"] <= b["start"] for a, b in zip(runs, runs[1:], strict=False))  # ... never overlapping
        assert len({r["session"] for r in runs}) == 1
        slowest = max(slowest, runs[-1]["end"] - runs[0]["start"])
    events = sorted([(r["start"], 1) for r in rows] + [(r["end"], -1) for r in rows])
    peak = running = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    total = sum(r["end"] - r["start"] for r in rows)
    print(f"\nwall={wall:.2f}s slowest-sender={slowest:.2f}s sum={total:.2f}s peak-concurrency={peak}")
    assert peak >= 5  # different senders ran at the same time


def test_timeout_and_failures(tmp_path: Path) -> None:
    slow = make_runner(tmp_path, delay=30, timeout=0.5)  # the script sleeps in a child: the group is killed
    with pytest.raises(RunnerError, match="timeout after 0.5s"):
        asyncio.run(slow.run("sid", agent_turn({"sender": "a", "messageId": "m0"})))
    with pytest.raises(RunnerError, match="exit 1"):
        asyncio.run(CommandRunner(["false"]).run("sid", agent_turn({})))
    with pytest.raises(RunnerError, match="not-configured"):
        asyncio.run(CommandRunner(None).run("sid", agent_turn({})))
    with pytest.raises(RunnerError, match="spawn-failed"):
        asyncio.run(CommandRunner(["/nonexistent/agent"]).run("sid", agent_turn({})))


class EchoRunner:
    """A runner written for the payload dict (before the typed turn): kept working for a release."""

    async def run(self, session_id: str, payload: dict) -> str:
        return f"custom:{payload.get('text')}"


class TypedRunner:
    async def run(self, session_id: str, turn: AgentTurn) -> str:
        return f"typed:{turn.text}:{turn.role}:{turn.principal.role.value}"


WIRE_KEYS = ["sessionId", "agentSession", "turnKind", "accountId", "channel", "sender", "role", "userId", "messageId",
             "payload", "text", "screening", "scheduled"]


def test_a_turn_reaches_a_typed_runner_as_is_and_a_dict_runner_as_its_json_with_a_warning() -> None:
    owner = Principal.owner("acct")
    turn = agent_turn({"role": "public", "text": "hi", "sender": "v", "channel": "webchat"}, owner, "conv")
    assert turn.principal.role is Role.PUBLIC and turn.principal.session == "conv" and turn.kind == "visitor"
    assert not takes_turn(EchoRunner()) and takes_turn(TypedRunner())
    assert asyncio.run(run_agent(TypedRunner(), "s", turn)) == "typed:hi:public:public"
    with pytest.warns(DeprecationWarning, match=r"EchoRunner\.run.*turn: AgentTurn"):
        assert asyncio.run(run_agent(EchoRunner(), "s", turn)) == "custom:hi"


def test_a_dict_runner_is_logged_once_per_class_since_python_hides_the_warning(capsys) -> None:
    """The DeprecationWarning is hidden by default: the first old-style turn of each runner class logs one
    ``[channels] warn op=runner-deprecated`` line naming the class and the new signature."""
    from plughost.runtime import types as runtime_types

    runtime_types._deprecated_runners.clear()

    class OtherEchoRunner(EchoRunner):
        pass

    turn = agent_turn({"role": "public", "text": "hi", "sender": "v", "channel": "webchat"}, Principal.owner("acct"),
                      "conv")
    capsys.readouterr()
    with pytest.warns(DeprecationWarning):
        for runner in (EchoRunner(), EchoRunner(), OtherEchoRunner(), TypedRunner()):
            asyncio.run(run_agent(runner, "s", turn))
    lines = [line for line in capsys.readouterr().err.splitlines() if "op=runner-deprecated" in line]
    assert [line.split()[3] for line in lines] == ["runner=EchoRunner", "runner=OtherEchoRunner"], lines
    assert all(line.startswith("[channels] warn op=runner-deprecated runner=") for line in lines), lines
    assert 'detail="EchoRunner.run(session_id, payload)' in lines[0] and "turn: AgentTurn" in lines[0], lines


def test_the_turns_json_keeps_the_documented_keys_in_order() -> None:
    """The command runner's stdin (docs/channels.md#runners): exactly the keys a runner read before the typed turn."""
    admin = AgentTurn(Principal.owner("acct").for_turn("admin", "conv"), "conv", "agent-s", "telegram", "1", "m1",
                      "## Context\nhi", "hi", user_id="u1", screening={"verdict": "CLEAN"}, scheduled=True)
    wire = admin.as_dict()
    assert list(wire) == WIRE_KEYS
    assert wire["role"] == "admin" and wire["turnKind"] == "scheduled" and wire["accountId"] == "acct"
    visitor = AgentTurn.from_dict({**wire, "role": "public", "scheduled": False, "visitorKey": "k",
                                   "visitorMemory": ["name: Ann"]}, Principal.owner("acct"))
    assert list(visitor.as_dict()) == [*WIRE_KEYS, "visitorKey", "visitorMemory"]
    assert visitor.as_dict()["turnKind"] == "visitor" and visitor.principal.is_public
    assert AgentTurn.from_dict(wire, Principal.owner("acct")).as_dict() == wire


class RunnerPlugin:
    @hookimpl
    def plughost_agent_runner(self, host):
        return EchoRunner()


def test_hook_plughost_agent_runner(make_host) -> None:
    host = make_host(PLUGHOST_AGENT_COMMAND="cat")
    assert isinstance(host.first(hooktable.AGENT_RUNNER), CommandRunner)
    assert host.first(hooktable.AGENT_RUNNER).command == ["cat"]
    with host.temporary_plugin(RunnerPlugin(), "runner-test"):
        runner = get_runner(host)
        assert isinstance(runner, EchoRunner)
        assert asyncio.run(runner.run("s", {"text": "hi"})) == "custom:hi"


def test_hook_plughost_channel_adapters(make_host) -> None:
    host = make_host()
    adapters = {c.item.name: c for c in host.collect(hooktable.CHANNEL_ADAPTERS)}
    assert set(adapters) >= {"webchat", "telegram", "whatsapp"}
    assert all(c.plugin == "channels" and c.item.send is not None for c in adapters.values())
    paths = {r.key for c in adapters.values() for r in c.item.routes}
    assert {"POST /channels/telegram/webhook", "GET /channels/whatsapp/webhook", "POST /channels/whatsapp/webhook",
            "GET /channels/webchat/stream", "POST /channels/webchat/messages"} <= paths


class Rules:
    @hookimpl
    def plughost_active_rules(self, account_id: str):
        return {"rules": ["Answer in French"], "source": "owner", "owner": "u-owner-1234567"}


def test_hook_plughost_active_rules(make_host, capfd) -> None:
    host = make_host()
    turn = TurnInput(channel="whatsapp", role="admin", text="x", account_id="acct")
    with host.temporary_plugin(Rules(), "rules-test"):
        assert host.first(hooktable.ACTIVE_RULES, account_id="acct")["rules"] == ["Answer in French"]
        assert fetch_rules(host, turn) == ["Answer in French"]
        public = TurnInput(channel="whatsapp", role="public", text="x", account_id="acct")
        assert fetch_rules(host, public) == []
    err = capfd.readouterr().err
    assert "[preference-inject] op=inject channel=whatsapp injected=1 owner=u-owner- source=owner" in err
    assert err.count("[preference-inject]") == 1  # never fetched for a public turn


def test_hook_plughost_cli_commands(make_host) -> None:

    host = make_host()
    mine = {c.item.name for c in host.collect(hooktable.CLI_COMMANDS) if c.plugin == "channels"}
    assert mine == {"record-turn", "channels", "schedule"}


def test_agent_concurrency_is_bounded(make_host, account, tmp_path: Path) -> None:
    from plughost.plugins.channels.pipeline import Inbound, gateway

    script = tmp_path / "agent.sh"
    script.write_text('cat > /dev/null\necho "start $(date +%s.%N)" >> "$AGENT_LOG"\nsleep 0.3\n'
                      'echo "end $(date +%s.%N)" >> "$AGENT_LOG"\necho done\n')
    host = make_host(ACCOUNT_ID=account, PLUGHOST_AGENT_COMMAND=f"sh {script}", PLUGHOST_AGENT_CONCURRENCY="2",
                     AGENT_LOG=str(tmp_path / "log"))

    async def main() -> list:
        gw = gateway(host)
        tasks = []
        for i in range(6):  # six different senders: only the slots hold them back
            _, _, task = await gw.accept(Inbound("webchat", f"visitor-{i:04d}", "hello", f"v{i}"))
            tasks.append(task)
        return await asyncio.gather(*tasks)

    turns = asyncio.run(main())
    assert [t.status for t in turns] == ["answered"] * 6
    events = sorted((float(ts), 1 if kind == "start" else -1)
                    for kind, ts in (line.split() for line in (tmp_path / "log").read_text().splitlines()))
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    assert peak == 2


@pytest.mark.parametrize("output", ["", "   \n\t\n"])
def test_an_empty_reply_gets_the_polite_fallback_not_silence(make_host, account, tmp_path: Path, capfd,
                                                              output: str) -> None:
    from plughost.plugins.channels.pipeline import AGENT_UNAVAILABLE, Inbound, gateway

    script = tmp_path / "agent.sh"
    script.write_text(f"cat > /dev/null\nprintf '{output!s}'\n".replace("\n\t\n", "\\n\\t\\n"))
    host = make_host(ACCOUNT_ID=account, PLUGHOST_AGENT_COMMAND=f"sh {script}")

    async def main():
        _, _, task = await gateway(host).accept(Inbound("webchat", "visitor-0001", "hello?", "e1"))
        return await task

    turn = asyncio.run(main())
    assert (turn.status, turn.reply) == ("agent-failed", AGENT_UNAVAILABLE)
    assert "op=agent-failed channel=webchat" in capfd.readouterr().err


def test_an_over_long_reply_is_cut_at_a_word_and_logged(make_host, account, tmp_path: Path, capfd) -> None:
    from plughost.plugins.channels.pipeline import MAX_REPLY_CHARS, Inbound, gateway

    script = tmp_path / "agent.py"
    script.write_text("import sys\nsys.stdin.read()\nprint('word ' * 400000)\n")
    host = make_host(ACCOUNT_ID=account, PLUGHOST_AGENT_COMMAND=f"{sys.executable} -S {script}")

    async def main():
        _, _, task = await gateway(host).accept(Inbound("webchat", "visitor-0002", "talk a lot", "e2"))
        return await task

    turn = asyncio.run(main())
    assert turn.status == "answered" and len(turn.reply) <= MAX_REPLY_CHARS
    assert turn.reply.endswith("word…")
    assert f"op=reply-truncated messageId={turn.message_id} chars=1999999 limit={MAX_REPLY_CHARS}" in capfd.readouterr().err
