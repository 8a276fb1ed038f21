"""Time on tasks (plugins/memory/work/worktime.py, docs/memory.md#time-on-tasks): the work-time tools
through the served MCP tool table, the CLI through ``cli.main``, the census in the standing audits,
and a hypothesis state machine of starts, stops and adjustments on both backends with the store
as the oracle of ``secondsLogged == sum(TimeEntry.seconds) + sum(TimeAdjustment.delta)``."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from memory_support import ACCOUNT, call_tool, cli, server_log

from plughost import Principal
from plughost.ports.graph import Guards
from plughost.util.errors import UserError
from tests.backends import BACKENDS, use_backend, wipe
from tests.conftest import ensure_account

EXAMPLES = int(os.environ.get("WORKTIME_EXAMPLES", "25"))


def _task(host: Any, title: str = "valuation") -> str:
    from plughost.plugins.memory.work.tasks import Tasks

    return str(Tasks(host).create(kind="client-work", title=title)["taskId"])


def _ok(result: tuple[bool, str]) -> dict[str, Any]:
    is_error, text = result
    assert not is_error, text
    return dict(json.loads(text))


@pytest.fixture
def owner(make_host, monkeypatch):
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    ensure_account()
    return make_host()


def test_start_stop_adjust_through_the_tools(owner, plughost_home) -> None:
    one, two = _task(owner, "one"), _task(owner, "two")
    started = _ok(call_tool(owner, "work-time-start", {"taskId": one}))
    assert started["endedAt"] is None
    _ok(call_tool(owner, "work-time-start", {"taskId": two}))  # concurrent on another task
    is_error, text = call_tool(owner, "work-time-start", {"taskId": one})
    assert is_error and "a timer already runs" in text and "\n" not in text.strip()
    is_error, text = call_tool(owner, "work-time-adjust", {"taskId": one, "seconds": 60, "reason": "forgot"})
    assert is_error and "stop it before adjusting" in text
    stopped = _ok(call_tool(owner, "work-time-stop", {"taskId": one}))
    assert stopped["seconds"] >= 0 and stopped["secondsLogged"] == stopped["seconds"]
    is_error, text = call_tool(owner, "work-time-stop", {"taskId": one})
    assert is_error and "no timer runs" in text
    fixed = _ok(call_tool(owner, "work-time-adjust", {"taskId": one, "seconds": 3600, "reason": "phone call, 1 h"}))
    assert fixed["newSeconds"] == 3600 and fixed["delta"] == 3600 - stopped["seconds"]
    fixed = _ok(call_tool(owner, "work-time-adjust", {"taskId": one, "delta": -600, "reason": "lunch"}))
    assert fixed["secondsLogged"] == 3000

    store, g = owner.store(), Guards(ACCOUNT)
    task = store.get(one, guards=g)
    assert task.properties["secondsLogged"] == 3000
    entry = store.get(started["timeEntryId"], guards=g)
    assert entry.properties["endedAt"] and entry.properties["seconds"] == stopped["seconds"]
    edges = store.expand([started["timeEntryId"]], guards=g)[started["timeEntryId"]]
    assert [(n.type, n.direction, n.node.id) for n in edges] == [("LOGGED_AGAINST", "out", one)]
    adj = store.find(guards=g, labels=["TimeAdjustment"], where={"taskId": one}, limit=10)
    assert sorted(a.properties["delta"] for a in adj) == sorted([3600 - stopped["seconds"], -600])
    assert all(a.properties["reason"] and a.properties["by"].startswith("owner") and a.properties["at"] for a in adj)
    assert store.find(guards=g, labels=["TimeEntry"], where={"taskId": two}, limit=5)[0].properties.get("endedAt") is None
    logs = "\n".join(server_log(plughost_home))
    assert "[work-time] op=start" in logs and "[work-time] op=stop" in logs and "[work-time] op=adjust" in logs


@pytest.mark.parametrize(("args", "expected"), [
    ({"taskId": "task-nope", "delta": 5, "reason": "x"}, "taskId: no Task 'task-nope'"),
    ({"taskId": "T", "seconds": "60", "reason": "x"}, "seconds"),
    ({"taskId": "T", "seconds": 1.5, "reason": "x"}, "seconds"),
    ({"taskId": "T", "seconds": -1, "reason": "x"}, "seconds"),
    ({"taskId": "T", "reason": "x"}, "exactly one"),
    ({"taskId": "T", "seconds": 5, "delta": 5, "reason": "x"}, "exactly one"),
    ({"taskId": "T", "delta": -5, "reason": "x"}, "would make the task's time -5"),
    ({"taskId": "T", "delta": 5, "reason": "  "}, "reason"),
])
def test_bad_adjustments_are_one_line_tool_errors(owner, args, expected) -> None:
    task = _task(owner)
    args = {k: (task if v == "T" else v) for k, v in args.items()}
    is_error, text = call_tool(owner, "work-time-adjust", args)
    assert is_error and expected in text and "Traceback" not in text, text
    assert owner.store().find(guards=Guards(ACCOUNT), labels=["TimeAdjustment"], limit=5) == []


def test_unknown_task_and_narrowed_processes_are_refused(owner, make_host) -> None:
    is_error, text = call_tool(owner, "work-time-start", {"taskId": "task-missing"})
    assert is_error and "no Task 'task-missing'" in text
    task = _task(owner)
    for env in ({"ALLOWED_SCOPES": "public"}, {"AGENT_SLUG": "a1"}, {"PLUGHOST_SESSION_ROLE": "public",
                                                                   "PLUGHOST_SESSION_ID": "visitor-1"}):
        narrowed = make_host(ACCOUNT_ID=ACCOUNT, **env)
        is_error, text = call_tool(narrowed, "work-time-start", {"taskId": task})
        assert is_error and "owner or an owner's session only" in text, (env, text)
    assert owner.store().find(guards=Guards(ACCOUNT), labels=["TimeEntry"], limit=5) == []


def test_the_cli_starts_stops_adjusts_and_shows(owner) -> None:
    task = _task(owner)
    assert cli("memory", "work-time", "start", task).returncode == 0
    out = cli("memory", "work-time", "show", task)
    assert out.returncode == 0 and "a timer is running" in out.stdout
    refused = cli("memory", "work-time", "adjust", task, "--seconds", "90", "--reason", "x")
    assert refused.returncode != 0 and "stop it before adjusting" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
    assert cli("memory", "work-time", "stop", task).returncode == 0
    bad = cli("memory", "work-time", "adjust", task, "--seconds", "1.5h", "--reason", "x")
    assert bad.returncode != 0 and "--seconds: expected a whole number of seconds" in bad.stderr
    no_timer = cli("memory", "work-time", "stop", task)
    assert no_timer.returncode != 0 and "no timer runs" in no_timer.stderr
    ok = cli("memory", "work-time", "adjust", task, "--delta", "+90", "--reason", "call", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["delta"] == 90
    shown = json.loads(cli("memory", "work-time", "show", task, "--json").stdout)
    assert shown["secondsLogged"] == 90 + shown["entries"][0]["seconds"] and not shown["running"]
    unknown = cli("memory", "work-time", "start", "task-unknown")
    assert unknown.returncode != 0 and "no Task 'task-unknown'" in unknown.stderr


def test_the_census_finds_a_drifted_task_and_memory_audit_shows_it(owner, plughost_home) -> None:
    from plughost.plugins.memory.upkeep.standing import run_once
    from plughost.plugins.memory.work.worktime import WorkTime

    task, clean = _task(owner, "drifts"), _task(owner, "clean")
    WorkTime(owner).adjust(taskId=task, delta=120, reason="call")
    WorkTime(owner).adjust(taskId=clean, delta=60, reason="call")
    WorkTime(owner).start(taskId=clean)
    owner.store().upsert_many([{"id": task, "labels": ["Task"], "properties": {"secondsLogged": 999}}],
                              guards=Principal.system(ACCOUNT).guards)  # a write around the tools: the sum no longer holds
    record = run_once(owner, ACCOUNT, 10)
    assert record is not None and record["counts"]["timeDrifted"] == 1 and record["counts"]["timersRunning"] == 1
    logs = "\n".join(server_log(plughost_home))
    assert f"[timeentry-census] op=drift task={task[5:13]} secondsLogged=999 expected=120" in logs
    out = cli("memory", "audit")
    assert out.returncode == 0 and "time on tasks: 2 tasks, 1 timer running, 1 drifted" in out.stdout
    assert f"{task}: secondsLogged=999 expected=120" in out.stdout and "timeDrifted=1" in out.stdout
    report = json.loads(cli("memory", "audit", "--json").stdout)
    assert report["timeCensus"]["drifted"] == [{"taskId": task, "secondsLogged": 999, "expected": 120}]


class Clock:
    """The wall clock the state machine moves forward (whole and fractional seconds)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("backend", BACKENDS)
def test_state_machine_keeps_the_invariant(backend, make_host, monkeypatch) -> None:
    from plughost.plugins.memory.work.worktime import ADJUSTMENT_LABEL, ENTRY_LABEL, WorkTime, census

    use_backend(monkeypatch, backend)
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    ensure_account()
    host = make_host()
    store, g = host.store(), Guards(ACCOUNT)

    class Machine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            wipe(store, ACCOUNT)
            self.clock = Clock()
            self.work = WorkTime(host, clock=self.clock)
            self.tasks = [_task(host, f"t{i}") for i in range(3)]
            self.model = {t: 0 for t in self.tasks}  # the expected secondsLogged
            self.open: dict[str, float] = {}  # task → when its timer started

        @rule(i=st.integers(0, 2))
        def start(self, i: int) -> None:
            task = self.tasks[i]
            if task in self.open:
                with pytest.raises(UserError, match="already runs"):
                    self.work.start(taskId=task)
            else:
                self.work.start(taskId=task)
                self.open[task] = self.clock.now

        @rule(i=st.integers(0, 2))
        def stop(self, i: int) -> None:
            task = self.tasks[i]
            if task not in self.open:
                with pytest.raises(UserError, match="no timer runs"):
                    self.work.stop(taskId=task)
                return
            done = self.work.stop(taskId=task)
            began = self.open.pop(task)
            assert 0 <= done["seconds"] <= int(self.clock.now - began) + 1
            self.model[task] += done["seconds"]

        @rule(i=st.integers(0, 2), value=st.integers(-5000, 5000), absolute=st.booleans())
        def adjust(self, i: int, value: int, absolute: bool) -> None:
            task = self.tasks[i]
            args: dict[str, Any] = {"seconds": abs(value)} if absolute else {"delta": value}
            if task in self.open:
                with pytest.raises(UserError, match="stop it before adjusting"):
                    self.work.adjust(taskId=task, reason="fix", **args)
                return
            new = abs(value) if absolute else self.model[task] + value
            if new < 0:
                with pytest.raises(UserError, match="would make"):
                    self.work.adjust(taskId=task, reason="fix", **args)
                return
            self.work.adjust(taskId=task, reason="fix", **args)
            self.model[task] = new

        @rule(seconds=st.floats(0, 4000, allow_nan=False))
        def wait(self, seconds: float) -> None:
            self.clock.now += seconds

        @invariant()
        def the_store_agrees(self) -> None:
            for task in self.tasks:
                node = store.get(task, guards=g)
                logged = int(node.properties.get("secondsLogged") or 0)
                timers = store.find(guards=g, labels=[ENTRY_LABEL], where={"taskId": task}, limit=1000)
                fixes = store.find(guards=g, labels=[ADJUSTMENT_LABEL], where={"taskId": task}, limit=1000)
                assert logged == self.model[task]
                assert logged == sum(int(e.properties.get("seconds") or 0) for e in timers) + \
                    sum(int(a.properties["delta"]) for a in fixes)
                assert sum(e.properties.get("endedAt") is None for e in timers) == (task in self.open)
            found = census(store, ACCOUNT)
            assert found["drifted"] == [] and found["running"] == len(self.open)

        def teardown(self) -> None:
            for task in list(self.open):  # the embedded store is the test's: the next example starts with none
                self.work.stop(taskId=task)

    run_state_machine_as_test(Machine, settings=settings(
        max_examples=EXAMPLES if backend == "sqlite" else max(5, EXAMPLES // 3), stateful_step_count=20,
        deadline=None, suppress_health_check=list(HealthCheck)))


def test_the_cli_refuses_in_one_line_in_a_real_process(owner) -> None:
    from tests.conftest import run_cli_process

    out = run_cli_process("memory", "work-time", "stop", "task-nope", env={"ACCOUNT_ID": ACCOUNT})
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr.strip().splitlines()[-1].endswith("taskId: no Task 'task-nope' this process can read")
    assert "Traceback" not in out.stderr


def test_a_deleted_task_is_no_drift_and_erase_takes_its_time_records(owner) -> None:
    from plughost.plugins.memory.work.worktime import WorkTime, census

    kept, gone = _task(owner, "kept"), _task(owner, "a lead for ana@example.com")
    owner.store().upsert_many([{"id": gone, "labels": ["Task"], "properties": {"inputs": json.dumps({"contact": "ana@example.com"})}}],
                              guards=Principal.system(ACCOUNT).guards)
    for task in (kept, gone):
        WorkTime(owner).adjust(taskId=task, delta=60, reason="call")
    WorkTime(owner).start(taskId=gone)
    WorkTime(owner).stop(taskId=gone)
    owner.store().soft_delete(gone, guards=Guards(ACCOUNT))
    found = census(owner.store(), ACCOUNT)
    assert found["drifted"] == [] and found["orphaned"] == 1 and found["tasks"] == 1
    out = cli("erase", "--contact", "ana@example.com", "--json")
    assert out.returncode == 0, out.stderr
    labels = json.loads(out.stdout)["labels"]
    assert labels["TimeEntry"] == 1 and labels["TimeAdjustment"] == 1 and labels["Task"] == 1
    left = owner.store().find(guards=Guards(ACCOUNT), labels=["TimeAdjustment"], limit=10)
    assert [a.properties["taskId"] for a in left] == [kept]
    assert census(owner.store(), ACCOUNT) == {"tasks": 1, "running": 0, "drifted": [], "orphaned": 0}
