"""An owner's session context: what a new or resumed admin session of Claude Code is told first.

The memory plugin's ``SessionStart`` hook (source ``startup`` or ``resume``) asks ``plughost
serve`` (or the host in the hook process) for it, and Claude Code adds it to the session as
``additionalContext``: the open Tasks (running or blocked, newest first), the leads still
awaiting a reply (the channels' ``follow-up`` Tasks not yet done), the last standing audit's
findings (its non-zero problem counts, ``<home>/accounts/<id>/audit-last.json``) and its alerts
(audits that failed in that run, a record older than three periods). It is bounded by
``PLUGHOST_SESSION_CONTEXT_CHARS`` (whole lines are dropped from the end of each part, never
cut mid-line) and logged ``[session-context] op=injected session=.. source=.. tasks=N leads=N
findings=N alerts=N bytes=N`` (``op=skip reason=..`` when nothing is given).

Only the owner's (admin) session gets it: a narrowed session (a visitor's, an agent's, one
with scopes) is refused before anything is read, here as in the hook's plan, and every read runs
under the account's admin guards, which only such a session holds.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from plughost import Guards, Principal, UserError, log
from plughost.plugins.memory.settings import AUDIT_PERIOD, SESSION_CONTEXT, SESSION_CONTEXT_CHARS
from plughost.plugins.memory.upkeep.record import last_run, parse

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

SOURCES = ("startup", "resume")
OPEN = ("running", "blocked")
LEAD_KIND = "follow-up"
PER_PART = 20
"""Rows read per part at most (the budget usually cuts sooner)."""
TASK_SCAN = 500
"""Open Tasks read per status to find the owner's own among the leads."""
PROBLEMS = ("missing", "nullAccount", "unscoped", "rulesDrifted")
"""The standing audit's counts that are findings when non-zero (``purged`` is housekeeping)."""


def _one_line(value: Any, limit: int = 160) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _inputs(props: dict[str, Any]) -> dict[str, Any]:
    try:
        data = json.loads(props.get("inputs") or "{}")
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _open_tasks(host: Host, guards: Guards) -> tuple[list[str], list[str]]:
    """Lines of the open Tasks and of the leads awaiting a reply, newest first, each read on its own
    (a flood of visitors' leads never hides the owner's own tasks)."""
    store = host.store()
    leads_rows, task_rows = [], []
    for status in OPEN:
        leads_rows += store.find(guards=guards, labels=["Task"], where={"status": status, "kind": LEAD_KIND},
                                 order_by="startedAt", limit=PER_PART * 2)
        task_rows += [n for n in store.find(guards=guards, labels=["Task"], where={"status": status},
                                            order_by="startedAt", limit=TASK_SCAN)
                      if n.properties.get("kind") != LEAD_KIND]

    def newest(rows: list[Any]) -> list[Any]:
        return sorted(rows, key=lambda n: str(n.properties.get("startedAt") or ""), reverse=True)

    tasks, leads = [], []
    for node in newest(leads_rows):
        p = dict(node.properties)
        inputs = _inputs(p)
        contact = _one_line(inputs.get("contact"), 60)
        question = _one_line(inputs.get("question") or p.get("title"), 140)
        leads.append(f"- {question} (contact: {contact or 'none'}; channel: {_one_line(inputs.get('channel'), 20)};"
                     f" since {str(p.get('startedAt') or '')[:10]}; id: {node.id})")
    for node in newest(task_rows):
        p = dict(node.properties)
        tasks.append(f"- {_one_line(p.get('title') or p.get('kind') or 'Task', 120)} ({p.get('status')};"
                     f" since {str(p.get('startedAt') or '')[:10]}; id: {node.id})")
    return tasks[:PER_PART], leads[:PER_PART]


def _audit(host: Host, account: str, now: float) -> tuple[list[str], list[str], str | None]:
    """The last standing run's findings and alerts, and when it ran."""
    record = last_run(host.home, account)
    if record is None:
        return [], [], None
    raw = record.get("counts")
    counts: dict[str, Any] = raw if isinstance(raw, dict) else {}
    findings = [f"- {name}: {counts[name]}" for name in PROBLEMS
                if isinstance(counts.get(name), int) and counts[name] > 0]
    alerts = [f"- the {_one_line(w, 40)} audit failed in the last run" for w in record.get("warnings") or []]
    period = AUDIT_PERIOD.read(host.env)
    started = parse(record.get("at"))
    if period and started is not None and now - started > 3 * period:
        alerts.append(f"- the standing audits last ran {round((now - started) / 60)} minutes ago "
                      f"(every {period} s is due): is plughost serve running?")
    return findings, alerts, str(record.get("at"))


def _fit(parts: list[tuple[str, list[str]]], budget: int) -> tuple[str, dict[str, int]]:
    """The block within ``budget`` characters; how many lines of each part made it. The parts come
    in order of urgency; each gets an even share of what is left when it starts (a share one does
    not use passes on), and a part cut short says how many lines it left out."""
    head = "## Your open work (plughost, at the start of this session)\n"
    text, shown = head, {}
    todo = [(title, lines) for title, lines in parts if lines]
    for title, _ in parts:
        shown[title] = 0
    for i, (title, lines) in enumerate(todo):
        share = (budget - len(text)) // (len(todo) - i)
        section = f"\n### {title}\n"
        block = section
        for n, line in enumerate(lines):
            more = f"- ({len(lines) - n - 1} more not shown)\n" if n + 1 < len(lines) else ""
            if len(block) + len(line) + 1 + len(more) > share:
                if n:
                    block += f"- ({len(lines) - n} more not shown)\n"
                break
            block += line + "\n"
            shown[title] += 1
        if shown[title] and len(text) + len(block) <= budget:
            text += block
        else:
            shown[title] = 0
    return text, shown


def session_context(host: Host, account: str, session_id: str, source: str, request: dict[str, Any],
                    now: float | None = None) -> str | None:
    """The owner's session context (None: nothing to inject, or not an owner's session)."""
    sid = session_id[:8]
    if source not in SOURCES:
        log("session-context", "op=skip", session=sid, source=source, reason="source")
        return None
    if request.get("role") not in (None, "admin") or request.get("scopes") is not None or request.get("agent"):
        log("session-context", "op=skip", session=sid, source=source, reason="not-admin")
        return None
    if not SESSION_CONTEXT.read(host.env):
        log("session-context", "op=skip", session=sid, source=source, reason="off")
        return None
    guards = Principal.owner(account).guards
    tasks, leads = _open_tasks(host, guards)
    findings, alerts, at = _audit(host, account, time.time() if now is None else now)
    parts = [("Alerts", alerts), (f"Standing audit findings ({at})" if at else "Standing audit findings", findings),
             ("Open tasks", tasks), ("Leads awaiting a reply", leads)]
    if not any(lines for _, lines in parts):
        log("session-context", "op=skip", session=sid, source=source, reason="nothing-open")
        return None
    try:
        budget = SESSION_CONTEXT_CHARS.read(host.env)
    except UserError as exc:  # a bad value costs the owner nothing but the setting: the default, said once
        budget = SESSION_CONTEXT_CHARS.default
        log("session-context", "warn", reason="bad-setting", detail=str(exc).splitlines()[0][:200], using=budget)
    text, shown = _fit(parts, budget)
    log("session-context", "op=injected", session=sid, source=source, tasks=shown["Open tasks"],
        leads=shown["Leads awaiting a reply"], findings=shown[parts[1][0]], alerts=shown["Alerts"],
        bytes=len(text.encode("utf-8")))
    return text
