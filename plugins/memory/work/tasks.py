"""Task provenance: ``work-create`` / ``work-update`` / ``work-complete``.

A Task is the unit of work a turn raised; ``memory-write``'s ``producedByTaskId`` then hangs
every entity it made from it, so "what did this turn produce" is
``(c:Conversation)<-[:RAISED_DURING]-(t:Task)-[:PRODUCED]->(e)``. The Task stores ``kind``,
``title``, ``inputs`` (JSON text) and ``inputSchema``, ``status`` (running → done|failed|
cancelled), ``steps`` (``<ISO time> <text>``), ``outcome``, ``startedAt``/``completedAt``; every
text of them passes :mod:`plughost.util.redact` first (``inputs`` with the schema's secret keys, the
schema without the ``default``/``examples`` of its secret properties).
Every read and write runs under the process's guards (``check_write`` inside the store), so a
public or narrowed process cannot see, update or complete another role's Task. Lines:
``[task] action-start|step|done task=<8> kind=.. conversation=<8>``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from plughost import Guards, Tool, UserError, WriteDenied, log
from plughost.api.store import CONVERSATION_LABEL, guarded_upsert_many
from plughost.api.util import redact_schema, redact_text, redact_value
from plughost.plugins.memory.toolcalls.trail import clip

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

TASK_LABEL = "Task"
RAISED_DURING = "RAISED_DURING"
STATUSES = ("running", "blocked", "done", "failed", "cancelled")
FINAL = ("done", "failed", "cancelled")
MAX_STEPS = 200
INPUTS_BUDGET = 8000
STEP_MAX_CHARS = 500


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Tasks:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.principal = host.principal
        self.guards: Guards = self.principal.guards
        self.store = host.store()

    def _write(self, rows: list[dict[str, Any]], what: str) -> None:
        try:
            guarded_upsert_many(self.store, rows, guards=self.guards)
        except WriteDenied as exc:
            raise UserError(f"{what}: {exc} ({exc.reason})") from None

    def _conversation(self, conversation_id: str | None) -> str | None:
        """The conversation named (it must be readable), else the session's, else none."""
        if conversation_id is not None:
            node = self.store.get(conversation_id, guards=self.guards)
            if node is None or CONVERSATION_LABEL not in node.labels:
                raise UserError(f"conversationId: no Conversation '{conversation_id}' this process can read")
            return node.id
        for sid in (self.principal.session_node, self.principal.session, self.principal.session_key):
            if not sid:
                continue
            node = self.store.get(sid, guards=self.guards)
            if node is not None and CONVERSATION_LABEL in node.labels:
                return node.id
            found = self.store.find(guards=self.guards, labels=[CONVERSATION_LABEL], where={"sessionId": sid}, limit=1)
            if found:
                return found[0].id
        return None

    def _task(self, task_id: str) -> Any:
        node = self.store.get(task_id, guards=self.guards) if isinstance(task_id, str) and task_id else None
        if node is None or TASK_LABEL not in node.labels:
            raise UserError(f"taskId: no Task '{task_id}' this process can read")
        return node

    def create(self, *, kind: str, inputs: dict[str, Any] | None = None, inputSchema: dict[str, Any] | None = None,  # noqa: N803
               conversationId: str | None = None, title: str | None = None) -> dict[str, Any]:  # noqa: N803
        if not isinstance(kind, str) or not kind.strip():
            raise UserError("kind: expected a non-empty string")
        conversation = self._conversation(conversationId)
        kind = redact_text(kind.strip())
        text, cut = clip(redact_value(inputs or {}, inputSchema), INPUTS_BUDGET)
        import uuid  # with its platform import, off the boot path

        task_id = f"task-{uuid.uuid4().hex}"
        props: dict[str, Any] = {"kind": kind, "title": redact_text(title) if isinstance(title, str) and title
                                 else kind, "inputs": text, "inputsTruncated": cut, "status": "running",
                                 "startedAt": _now(), "steps": []}
        if inputSchema:
            props["inputSchema"] = json.dumps(redact_schema(inputSchema), ensure_ascii=False)[:INPUTS_BUDGET]
        if conversation:
            props["conversationId"] = conversation
        if not self.guards.narrowed:
            props["scope"] = "admin"
        row: dict[str, Any] = {"id": task_id, "labels": [TASK_LABEL], "properties": props}
        if conversation:
            row["edges"] = [{"type": RAISED_DURING, "to": conversation}]
        self._write([row], "work-create")
        log("task", "action-start", task=task_id[5:13], kind=kind[:60],
            conversation=(conversation or "")[:8] or None)
        return {"taskId": task_id, "status": "running", "conversationId": conversation}

    def update(self, *, taskId: str, step: str | None = None, status: str | None = None) -> dict[str, Any]:  # noqa: N803
        node = self._task(taskId)
        props = dict(node.properties)
        if props.get("status") in FINAL:
            raise UserError(f"taskId: Task '{taskId}' is {props['status']}; it takes no more updates")
        if status is not None and status not in STATUSES[:2]:
            raise UserError("status: expected running or blocked (work-complete ends a task)")
        steps = list(props.get("steps") or [])
        if step is not None:
            if not isinstance(step, str) or not step.strip():
                raise UserError("step: expected a non-empty string")
            if len(steps) >= MAX_STEPS:
                raise UserError(f"step: the task already has {MAX_STEPS} steps")
            steps.append(f"{_now()} {redact_text(step.strip())[:STEP_MAX_CHARS]}")
        change = {"steps": steps, **({"status": status} if status else {})}
        self._write([{"id": node.id, "labels": [TASK_LABEL], "properties": change}], "work-update")
        log("task", "step", task=node.id[5:13], steps=len(steps), status=status or props.get("status"))
        return {"taskId": node.id, "steps": len(steps), "status": status or props.get("status")}

    def complete(self, *, taskId: str, outcome: str, status: str = "done") -> dict[str, Any]:  # noqa: N803
        node = self._task(taskId)
        if status not in FINAL:
            raise UserError(f"status: expected one of {', '.join(FINAL)}")
        if not isinstance(outcome, str) or not outcome.strip():
            raise UserError("outcome: expected a non-empty string")
        if node.properties.get("status") in FINAL:
            raise UserError(f"taskId: Task '{taskId}' is already {node.properties['status']}")
        done = _now()
        self._write([{"id": node.id, "labels": [TASK_LABEL], "properties": {
            "status": status, "outcome": redact_text(outcome.strip())[:INPUTS_BUDGET], "completedAt": done}}],
            "work-complete")
        produced = sorted(n.node.id for n in self.store.expand([node.id], guards=self.guards, limit=1000)
                          .get(node.id, []) if n.type == "PRODUCED" and n.direction == "out")
        log("task", "done", task=node.id[5:13], status=status, produced=len(produced))
        return {"taskId": node.id, "status": status, "completedAt": done, "produced": produced}


def task_tools(host: Host) -> list[Tool]:
    def work_create(**args: Any) -> Any:
        return Tasks(host).create(**args)

    def work_update(**args: Any) -> Any:
        return Tasks(host).update(**args)

    def work_complete(**args: Any) -> Any:
        return Tasks(host).complete(**args)

    return [Tool("work-create", work_create), Tool("work-update", work_update),
            Tool("work-complete", work_complete)]
