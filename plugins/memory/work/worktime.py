"""Time on tasks: ``work-time-start`` / ``work-time-stop`` / ``work-time-adjust`` (docs/memory.md#time-on-tasks).

A timer is a ``TimeEntry`` (``taskId``, ``startedAt``, ``by``; ``endedAt`` absent while it runs)
with ``(:TimeEntry)-[:LOGGED_AGAINST]->(:Task)``. One timer runs per task at a time; timers on
different tasks run side by side. Stopping one sets ``endedAt`` and ``seconds`` (whole seconds)
and adds them to the Task's ``secondsLogged`` in the same write. A manual correction is a
``TimeAdjustment`` (``taskId``, ``at``, ``by``, ``reason``, ``previousSeconds``, ``newSeconds``,
``delta``), append-only, never while a timer runs on that task. So for every Task

    secondsLogged == sum(TimeEntry.seconds) + sum(TimeAdjustment.delta)

which :func:`census` checks (the standing audits run it; ``plughost memory audit`` prints it).
Only an unnarrowed admin principal logs time: the owner (CLI, the owner's MCP servers) and an
owner's session (the owner's agent). Lines: ``[work-time] op=start|stop|adjust task=<8> ..`` and
``[timeentry-census] op=run|drift ..``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from plughost import GraphStore, Guards, Principal, Tool, UserError, WriteDenied, log
from plughost.api.store import guarded_upsert_many
from plughost.api.util import redact_text

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

TASK_LABEL = "Task"
ENTRY_LABEL = "TimeEntry"
ADJUSTMENT_LABEL = "TimeAdjustment"
LOGGED_AGAINST = "LOGGED_AGAINST"
MAX_SECONDS = 10 * 365 * 24 * 3600
"""The largest total or delta accepted (ten years of seconds): anything bigger is a typo."""
REASON_MAX_CHARS = 500
SCAN = 100_000

_lock = threading.Lock()
"""One check-then-write at a time in this process (one running timer per task)."""


def _hex_id() -> str:
    """A random 32-hex id (``uuid4().hex``); uuid is imported on the first write, off the boot path."""
    import uuid

    return uuid.uuid4().hex


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse(at: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(at).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def whole_seconds(value: Any, field: str, *, signed: bool) -> int:
    """An integer (never a bool, a float or a string) within :data:`MAX_SECONDS`; else a one-line refusal."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{field}: expected an integer number of seconds, got {value!r}")
    low = -MAX_SECONDS if signed else 0
    if not low <= value <= MAX_SECONDS:
        raise UserError(f"{field}: expected an integer from {low} to {MAX_SECONDS}, got {value}")
    return value


def entries(store: GraphStore, guards: Guards, task_id: str) -> list[Any]:
    return store.find(guards=guards, labels=[ENTRY_LABEL], where={"taskId": task_id}, limit=SCAN)


def adjustments(store: GraphStore, guards: Guards, task_id: str) -> list[Any]:
    return store.find(guards=guards, labels=[ADJUSTMENT_LABEL], where={"taskId": task_id}, limit=SCAN)


def running(found: list[Any]) -> Any | None:
    return next((e for e in found if e.properties.get("endedAt") is None), None)


class WorkTime:
    """The three operations for one principal; ``clock`` is the wall clock (seconds since the epoch)."""

    def __init__(self, host: Host, clock: Callable[[], float] = time.time) -> None:
        self.principal = host.principal
        self.store = host.store()
        self.clock = clock

    @property
    def guards(self) -> Guards:
        return self.principal.guards

    def _admit(self, tool: str) -> None:
        if not self.principal.is_admin:
            raise UserError(f"{tool}: the owner or an owner's session only; this process is narrowed "
                            f"({self.principal.describe()}) (account-isolation)")

    def _task(self, task_id: Any) -> Any:
        if not isinstance(task_id, str) or not task_id.strip():
            raise UserError("taskId: expected the id of a Task (a non-empty string)")
        node = self.store.get(task_id, guards=self.guards)
        if node is None or TASK_LABEL not in node.labels:
            raise UserError(f"taskId: no Task '{task_id}' this process can read")
        return node

    def _who(self) -> str:
        return self.principal.role.value + (f":{self.principal.session_key}" if self.principal.session_key else "")

    def _write(self, rows: list[dict[str, Any]], what: str) -> None:
        try:
            guarded_upsert_many(self.store, rows, guards=self.guards)
        except WriteDenied as exc:
            raise UserError(f"{what}: {exc} ({exc.reason})") from None

    def start(self, *, taskId: str) -> dict[str, Any]:  # noqa: N803
        self._admit("work-time-start")
        with _lock:
            task = self._task(taskId)
            if task.properties.get("status") in ("done", "failed", "cancelled"):
                raise UserError(f"taskId: Task '{task.id}' is {task.properties['status']}; no timer starts on it")
            open_entry = running(entries(self.store, self.guards, task.id))
            if open_entry is not None:
                raise UserError(f"taskId: a timer already runs on Task '{task.id}' (since "
                                f"{open_entry.properties.get('startedAt')}); stop it first")
            entry_id, now = f"time-{_hex_id()}", _iso(self.clock())
            self._write([{"id": entry_id, "labels": [ENTRY_LABEL],
                          "properties": {"taskId": task.id, "startedAt": now, "by": self._who(), "scope": "admin"},
                          "edges": [{"type": LOGGED_AGAINST, "to": task.id}]}], "work-time-start")
        log("work-time", "op=start", task=task.id[5:13], entry=entry_id[5:13])
        return {"taskId": task.id, "timeEntryId": entry_id, "startedAt": now, "endedAt": None}

    def stop(self, *, taskId: str) -> dict[str, Any]:  # noqa: N803
        self._admit("work-time-stop")
        with _lock:
            task = self._task(taskId)
            open_entry = running(entries(self.store, self.guards, task.id))
            if open_entry is None:
                raise UserError(f"taskId: no timer runs on Task '{task.id}'; start one with work-time-start")
            ended = self.clock()
            began = _parse(open_entry.properties.get("startedAt")) or ended
            seconds = max(0, int(ended - began))
            total = int(task.properties.get("secondsLogged") or 0) + seconds
            self._write([{"id": open_entry.id, "labels": [ENTRY_LABEL],
                          "properties": {"endedAt": _iso(ended), "seconds": seconds}},
                         {"id": task.id, "labels": [TASK_LABEL], "properties": {"secondsLogged": total}}],
                        "work-time-stop")
        log("work-time", "op=stop", task=task.id[5:13], entry=open_entry.id[5:13], seconds=seconds, total=total)
        return {"taskId": task.id, "timeEntryId": open_entry.id, "seconds": seconds, "secondsLogged": total}

    def adjust(self, *, taskId: str, reason: str, seconds: Any = None, delta: Any = None) -> dict[str, Any]:  # noqa: N803
        self._admit("work-time-adjust")
        if (seconds is None) == (delta is None):
            raise UserError("seconds / delta: expected exactly one (seconds: the new total; delta: what to add)")
        if not isinstance(reason, str) or not reason.strip():
            raise UserError("reason: expected a non-empty string saying why the time is corrected")
        with _lock:
            task = self._task(taskId)
            open_entry = running(entries(self.store, self.guards, task.id))
            if open_entry is not None:
                raise UserError(f"taskId: a timer runs on Task '{task.id}'; stop it before adjusting its time")
            previous = int(task.properties.get("secondsLogged") or 0)
            if seconds is not None:
                new = whole_seconds(seconds, "seconds", signed=False)
            else:
                new = previous + whole_seconds(delta, "delta", signed=True)
                if not 0 <= new <= MAX_SECONDS:
                    raise UserError(f"delta: {delta} would make the task's time {new} seconds; expected a total "
                                    f"from 0 to {MAX_SECONDS}")
            change, at = new - previous, _iso(self.clock())
            adjustment_id = f"timeadj-{_hex_id()}"
            self._write([{"id": adjustment_id, "labels": [ADJUSTMENT_LABEL],
                          "properties": {"taskId": task.id, "at": at, "by": self._who(), "scope": "admin",
                                         "reason": redact_text(reason.strip())[:REASON_MAX_CHARS],
                                         "previousSeconds": previous, "newSeconds": new, "delta": change}},
                         {"id": task.id, "labels": [TASK_LABEL], "properties": {"secondsLogged": new}}],
                        "work-time-adjust")
        log("work-time", "op=adjust", task=task.id[5:13], previous=previous, new=new, delta=change)
        return {"taskId": task.id, "adjustmentId": adjustment_id, "previousSeconds": previous, "newSeconds": new,
                "delta": change, "secondsLogged": new}

    def show(self, *, taskId: str) -> dict[str, Any]:  # noqa: N803
        """The task's total, its timers (the running one too) and adjustments, oldest first."""
        task = self._task(taskId)
        timers = sorted(entries(self.store, self.guards, task.id), key=lambda n: str(n.properties.get("startedAt")))
        fixes = sorted(adjustments(self.store, self.guards, task.id), key=lambda n: str(n.properties.get("at")))
        keep = ("startedAt", "endedAt", "seconds", "by")
        return {"taskId": task.id, "secondsLogged": int(task.properties.get("secondsLogged") or 0),
                "running": running(timers) is not None,
                "entries": [{"id": n.id, **{k: n.properties.get(k) for k in keep}} for n in timers],
                "adjustments": [{"id": n.id, **{k: n.properties.get(k) for k in
                                                ("at", "by", "reason", "previousSeconds", "newSeconds", "delta")}}
                                for n in fixes]}


def census(store: GraphStore, account_id: str) -> dict[str, Any]:
    """Every live Task with logged time or a timer against the invariant; logs one line per drifted
    task and one for the run. ``{"tasks", "running", "drifted": [{taskId, secondsLogged, expected}],
    "orphaned"}`` (``orphaned``: Tasks deleted or gone that still have time records)."""
    guards = Principal.owner(account_id).guards
    sums: dict[str, int] = {}
    open_timers = 0
    for node in store.find(guards=guards, labels=[ENTRY_LABEL], limit=SCAN):
        task = str(node.properties.get("taskId"))
        sums[task] = sums.get(task, 0) + int(node.properties.get("seconds") or 0)
        open_timers += node.properties.get("endedAt") is None
    for node in store.find(guards=guards, labels=[ADJUSTMENT_LABEL], limit=SCAN):
        task = str(node.properties.get("taskId"))
        sums[task] = sums.get(task, 0) + int(node.properties.get("delta") or 0)
    logged = {n.id: int(n.properties.get("secondsLogged") or 0)
              for n in store.find(guards=guards, labels=[TASK_LABEL], limit=SCAN)
              if n.properties.get("secondsLogged") is not None}
    orphaned = 0  # time records of a Task that is deleted or gone: nothing to disagree with
    for task in sorted(set(sums) - set(logged)):
        held = store.get(task, guards=guards, include_deleted=True)
        if held is None or held.deleted:
            orphaned += 1
            del sums[task]
    drifted = []
    for task in sorted(set(sums) | set(logged)):
        have, expected = logged.get(task, 0), sums.get(task, 0)
        if have != expected:
            drifted.append({"taskId": task, "secondsLogged": have, "expected": expected})
            log("timeentry-census", "op=drift", task=task[5:13], secondsLogged=have, expected=expected)
    tasks = len(set(sums) | set(logged))
    log("timeentry-census", "op=run", tasks=tasks, running=open_timers, drifted=len(drifted), orphaned=orphaned)
    return {"tasks": tasks, "running": open_timers, "drifted": drifted, "orphaned": orphaned}


def worktime_tools(host: Host) -> list[Tool]:
    def start(**args: Any) -> Any:
        return WorkTime(host).start(**args)

    def stop(**args: Any) -> Any:
        return WorkTime(host).stop(**args)

    def adjust(**args: Any) -> Any:
        return WorkTime(host).adjust(**args)

    return [Tool("work-time-start", start), Tool("work-time-stop", stop), Tool("work-time-adjust", adjust)]
