"""Workflows with step records (docs/memory.md#workflows): ``workflow-execute`` runs declared steps,
``workflow-read`` reads what they did.

A workflow is a name and its steps, declared in the call: ``[{tool, arguments?, name?}]``, each a
plughost tool on the admin allowlist (its bare name when one plugin serves it, else its canonical
``mcp__plugin_<plugin>_<server>__<tool>`` name), at most :data:`MAX_STEPS`. The steps run in order
in process, with the argument checks an MCP call gets; a failing step ends the run unless
``continueOnError``. The run is stored through the store under the caller's guards::

    (:Workflow {name, status: completed|failed, startedAt, completedAt, steps, failedStep?,
                sessionId?, scope: admin}) -[:HAS_STEP]-> (:StepResult {workflowId, index, name,
                toolName, pluginName, input, output, isError, startedAt, completedAt, scope: admin})

inputs and outputs redacted and clipped as the tool-call audit does (a step's call is recorded here,
not again as a ToolCall). Both tools are the owner's (an admin process nothing narrows): a visitor's,
an agent's or a scoped session is refused, and another account's run is not found. Lines:
``[workflow] op=run name=.. id=<8> status=.. steps=N failed=.. ms=..`` and ``op=read``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from plughost import Tool, UserError, WriteDenied, log
from plughost.api.store import guarded_upsert_many, require_admin
from plughost.api.util import redact_value
from plughost.plugins.memory.settings import AUDIT_INPUT_CHARS, AUDIT_OUTPUT_CHARS
from plughost.plugins.memory.toolcalls.trail import clip

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

WORKFLOW_LABEL = "Workflow"
STEP_LABEL = "StepResult"
HAS_STEP = "HAS_STEP"
MAX_STEPS = 20
SELF = ("workflow-execute", "workflow-read")
"""Never a step: a workflow does not run workflows."""


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _admin(host: Host, what: str) -> None:
    try:
        require_admin(host.principal, what)
    except WriteDenied as exc:
        raise UserError(str(exc)) from None


def resolve_tool(host: Host, name: str, where: str) -> tuple[str, str, str, dict[str, Any] | None]:
    """``(plugin, tool, canonical, input schema)`` of a step's tool; a UserError naming ``where``."""
    surface = host.surface
    allowed = set(surface.admin) - set(surface.withheld)
    found = surface.all.get(name)
    if found is None:
        matches = [t for t in surface.all.values() if t.name == name]
        if len(matches) > 1:
            raise UserError(f"{where}: '{name}' is served by {', '.join(sorted(t.plugin for t in matches))}; "
                            "give its canonical name (mcp__plugin_<plugin>_<server>__<tool>)")
        found = matches[0] if matches else None
    if found is None or found.name in SELF or found.canonical not in allowed:
        offered = sorted(t.name for t in surface.all.values() if t.canonical in allowed and t.name not in SELF)
        raise UserError(f"{where}: '{name}' is not a tool a workflow may run; expected one of {', '.join(offered)}")
    return found.plugin, found.name, found.canonical, found.input_schema


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def execute(host: Host, *, name: str, steps: list[dict[str, Any]], continueOnError: bool = False) -> dict[str, Any]:  # noqa: N803
    """``workflow-execute``: run the steps in order, store the run and each step's result."""
    _admin(host, "workflow-execute")
    guards = host.principal.guards
    account = guards.account_id
    name = name.strip()
    if not name:
        raise UserError("name: expected a non-empty workflow name")
    if not steps or len(steps) > MAX_STEPS:
        raise UserError(f"steps: expected 1 to {MAX_STEPS} steps")
    plan = []  # every step is checked before any runs: a bad declaration runs nothing
    for i, step in enumerate(steps):
        tool = step.get("tool")
        if not isinstance(tool, str) or not tool:
            raise UserError(f"steps[{i}].tool: expected a tool name")
        arguments = step.get("arguments", {})
        if not isinstance(arguments, dict):
            raise UserError(f"steps[{i}].arguments: expected an object")
        plugin, bare, canonical, schema = resolve_tool(host, tool, f"steps[{i}].tool")
        try:  # the MCP server's own argument check, for every step before the first runs
            host.check_call(plugin, bare, arguments)
        except UserError as exc:
            raise UserError(f"steps[{i}].arguments: {exc}") from None
        plan.append((i, step.get("name") or bare, plugin, bare, canonical, schema, arguments))
    started = _now_iso()
    clock = time.perf_counter()
    session = host.principal.session_key
    run_id = "workflow-" + hashlib.sha256("\x1f".join((account, name, started, os.urandom(8).hex())).encode()).hexdigest()[:32]
    in_budget, out_budget = AUDIT_INPUT_CHARS.read(host.env), AUDIT_OUTPUT_CHARS.read(host.env)
    results: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    failed: int | None = None
    for i, label, plugin, tool, canonical, schema, arguments in plan:
        step_started = _now_iso()
        try:
            value = host.call_tool(plugin, tool, arguments)
            error, output = False, value
        except UserError as exc:
            error, output = True, str(exc)
        except Exception as exc:  # noqa: BLE001 - a step's failure is its result, recorded
            error, output = True, f"{type(exc).__name__}: {str(exc)[:300]}"
        if not error and isinstance(output, dict) and output.get("isError") is True:
            error = True
        input_text, input_cut = clip(redact_value(arguments, schema), in_budget)
        output_text, output_cut = clip(redact_value(output) if output is not None else "", out_budget)
        step_id = f"stepresult-{run_id[9:]}-{i:02d}"
        props = {"workflowId": run_id, "index": i, "name": label, "toolName": canonical, "pluginName": plugin,
                 "input": input_text, "output": output_text, "inputTruncated": input_cut,
                 "outputTruncated": output_cut, "isError": error, "startedAt": step_started,
                 "completedAt": _now_iso(), "scope": "admin"}
        rows.append({"id": step_id, "labels": [STEP_LABEL], "properties": props})
        results.append({"id": step_id, "index": i, "name": label, "tool": tool, "isError": error,
                        "output": output if not error else output_text})
        if error and failed is None:
            failed = i
            if not continueOnError:
                break
    status = "completed" if failed is None else "failed"
    run = {"name": name, "title": name, "status": status, "startedAt": started, "completedAt": _now_iso(),
           "steps": len(results), "declaredSteps": len(plan), "scope": "admin",
           **({"failedStep": failed} if failed is not None else {}), **({"sessionId": session} if session else {})}
    rows.insert(0, {"id": run_id, "labels": [WORKFLOW_LABEL], "properties": run,
                    "edges": [{"type": HAS_STEP, "to": r["id"]} for r in rows]})
    guarded_upsert_many(host.store(), rows, guards=guards)
    ms = round((time.perf_counter() - clock) * 1000)
    log("workflow", "op=run", name=name[:60], id=run_id[9:17], status=status, steps=len(results),
        failed=failed, ms=ms)
    return {"workflowId": run_id, "name": name, "status": status, "failedStep": failed, "steps": results}


def read(host: Host, *, workflowId: str | None = None, name: str | None = None, limit: int = 10) -> dict[str, Any]:  # noqa: N803
    """``workflow-read``: one run with its step results (``workflowId``), else the latest runs."""
    _admin(host, "workflow-read")
    guards = host.principal.guards
    store = host.store()
    if workflowId:
        node = store.get(workflowId, guards=guards)
        if node is None or WORKFLOW_LABEL not in node.labels:
            raise UserError(f"workflowId: no workflow run '{workflowId[:80]}' in this account")
        steps = store.find(guards=guards, labels=[STEP_LABEL], where={"workflowId": workflowId}, limit=MAX_STEPS + 1)
        steps.sort(key=lambda n: n.properties.get("index") or 0)
        log("workflow", "op=read", id=workflowId[9:17], steps=len(steps))
        return {"workflow": {"id": node.id, **node.properties},
                "steps": [{"id": s.id, **{k: s.properties.get(k) for k in (
                    "index", "name", "toolName", "pluginName", "input", "output", "inputTruncated",
                    "outputTruncated", "isError", "startedAt", "completedAt")}} for s in steps]}
    where = {"name": name} if name else {}
    limit = max(1, min(int(limit), 100))
    runs = store.find(guards=guards, labels=[WORKFLOW_LABEL], where=where, order_by="startedAt", descending=True,
                      limit=limit)
    log("workflow", "op=read", runs=len(runs))
    return {"workflows": [{"id": n.id, **{k: n.properties.get(k) for k in (
        "name", "status", "startedAt", "completedAt", "steps", "failedStep")}} for n in runs]}


def workflow_tools(host: Host) -> list[Tool]:
    def workflow_execute(**args: Any) -> Any:
        return execute(host, **args)

    def workflow_read(**args: Any) -> Any:
        return read(host, **args)

    return [Tool("workflow-execute", workflow_execute), Tool("workflow-read", workflow_read)]
