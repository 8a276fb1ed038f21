"""Agent sessions carry their kind: any sequence of visitor, owner-scheduled and admin turns through
the real pipeline and the real claude runner (a stand-in CLI that records its argv) never lets one
kind of turn resume another kind's session. A crossing is one CLI session id seen with the public
flags and with the admin flags, or a scheduled turn in the visitor's session."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path

import pytest
from channels_support import ACCOUNT, agent_turn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plughost.plugins.channels.claude_runner import ClaudeRunner
from plughost.plugins.channels.pipeline import Inbound, dispatch_scheduled, gateway
from plughost.plugins.channels.runner import RunnerError, agent_session_for
from plughost.plugins.channels.runner_choice import get_runner
from tests.plugins.channels.test_claude_runner import STAND_IN

STEPS = st.lists(st.sampled_from(["visitor", "scheduled", "admin", "other-visitor"]), min_size=2, max_size=6)
_n = itertools.count()


def _flags(argv: list[str]) -> tuple[str, str]:
    """(session id, 'admin' or 'public') of one recorded CLI run."""
    sid = argv[argv.index("--resume") + 1] if "--resume" in argv else argv[argv.index("--session-id") + 1]
    return sid, "admin" if "--permission-mode" in argv else "public"


@pytest.fixture
def claude_host(make_host, account, tmp_path: Path):
    script = tmp_path / "claude"
    script.write_text(f"#!{sys.executable} -S\n{STAND_IN}")
    script.chmod(0o755)
    host = make_host(PLUGHOST_AGENT="claude", PLUGHOST_CLAUDE_BIN=str(script),
                     PLUGHOST_CLAUDE_CONFIG_DIR=str(tmp_path / "config"), STAND_IN_LOG=str(tmp_path / "calls.jsonl"),
                     PLUGHOST_AGENT_TIMEOUT="30")
    assert isinstance(get_runner(host), ClaudeRunner)
    return host, tmp_path / "calls.jsonl"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_no_turn_resumes_another_kinds_session(claude_host, steps: list[str]) -> None:
    host, log = claude_host
    visitor, other = f"v{next(_n)}", f"w{next(_n)}"

    async def turn(step: str, i: int) -> None:
        if step == "scheduled":
            await dispatch_scheduled(host, channel="webchat", sender=visitor, event="order-ready",
                                     text="Tell the customer the rye bread order is ready", owner_user_id="owner",
                                     target={"sender": visitor}, platform_id=f"schedule:{visitor}:{i}")
            return
        sender = {"visitor": visitor, "other-visitor": other, "admin": "owner~1"}[step]
        channel = "admin" if step == "admin" else "webchat"
        msg = Inbound(channel=channel, sender=sender, text=f"turn {i} from {step}", platform_id=f"{sender}:{i}:{step}",
                      target={"sender": sender})
        _mid, _dup, task = await gateway(host).accept(msg)
        if task is not None:
            await task

    async def run_all() -> None:
        for i, step in enumerate(steps):
            await turn(step, i)

    asyncio.run(run_all())
    kinds: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        sid, kind = _flags(json.loads(line)["argv"])
        kinds.setdefault(sid, set()).add(kind)
    crossings = {sid: k for sid, k in kinds.items() if len(k) > 1}
    assert crossings == {}, f"sessions used by more than one kind of turn: {crossings}"
    key = f"webchat:{visitor}"
    visitor_session, scheduled_session = (agent_session_for(ACCOUNT, key, k) for k in ("visitor", "scheduled"))
    if "visitor" in steps:
        assert kinds.get(visitor_session) == {"public"}
    if "scheduled" in steps:
        assert kinds.get(scheduled_session) == {"admin"}  # the owner's own session, never the visitor's


def test_a_session_recorded_for_another_kind_is_refused(claude_host) -> None:
    """A record that says a session was made for the owner is never resumed by a visitor's turn."""
    host, log = claude_host
    runner = get_runner(host)
    sid = agent_session_for(ACCOUNT, "webchat:mixed", "visitor")
    runner.sessions_file.parent.mkdir(parents=True, exist_ok=True)
    runner.sessions_file.write_text(json.dumps({sid: {"startedAt": "2026-01-01T00:00:00Z", "kind": "scheduled"}}))
    with pytest.raises(RunnerError, match="session-kind"):
        asyncio.run(runner.run(sid, agent_turn({"role": "public", "text": "hi", "payload": "hi"}, host.principal)))
    assert not log.exists()  # the CLI was never started
