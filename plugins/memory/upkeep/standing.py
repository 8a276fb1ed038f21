"""The standing audits ``plughost serve`` runs on a timer, so nobody has to type ``memory audit``.

Every ``PLUGHOST_AUDIT_PERIOD`` seconds (default 300; ``0`` turns it off) one background thread of
the serving process, for its account:

- **embed** what lacks an embedding: :func:`plughost.plugins.memory.embedding.reindex.reindex`, at most
  ``PLUGHOST_AUDIT_EMBED_LIMIT`` nodes (default 500) a run, the turns' context pass and the backlog
  pass together, the rest the next run;
- **count** what ``plughost memory audit`` counts (:func:`plughost.plugins.memory.upkeep.counts.counts`):
  nodes still without a vector, without an account, without a scope, and the stored against the
  injected active rules (the reconcile);
- **census** the time on tasks (:func:`plughost.plugins.memory.work.worktime.census`): every Task's
  ``secondsLogged`` against its TimeEntries' seconds plus its TimeAdjustments' deltas, each
  drifted task logged (``[timeentry-census] op=drift``), counted as ``timeDrifted``;
- **end** the visitors' conversations idle past ``PLUGHOST_VISITOR_IDLE_S``, writing their
  per-visitor memory slices (:func:`plughost.plugins.memory.conversations.visitor_memory.sweep`), counted as ``visitorSlices``;
- **rebuild** the public agents' KNOWLEDGE.md (:func:`plughost.plugins.memory.knowledge.rebuild.rebuild`),
  counted as ``knowledgeRebuilt`` (the files that changed): a net under the rebuild after each
  public write, for what reached the store another way (a graph import), and the first fill after
  an install;
- **purge** the nodes soft-deleted longer ago than the grace (the store port's ``purge`` with its
  default grace, the one ``plughost graph purge`` uses: 7 days).

One audit failing is logged (``[audit] warn audit=.. error=..``) and never stops the others, the
thread or the server. Each run logs one line, ``[audit] op=run embedded=N missing=N ... ms=N``,
and writes its record (time, counts, duration) atomically to ``<home>/accounts/<id>/audit-last.json``;
``plughost memory audit`` prints it. The next run is due a period after the recorded one, so a
restart within the period does not run again early. The thread waits on an event: a shutdown
stops it at once, not a period later.

On a shared store (several servers on one Neo4j, docs/channels.md#several-servers-on-one-store)
a run also takes the lease ``audit:<account>`` for one period (renewed while it runs, then left to
expire): the servers' audits run once a period between them, and a server that died mid-run
leaves the next one to its lease's expiry (``[audit] op=skipped reason=lease-held holder=..``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

from plughost import StateKey, log
from plughost.api import serving
from plughost.api.serving import leases
from plughost.api.util import write_atomic
from plughost.plugins.memory.conversations.visitor_memory import sweep
from plughost.plugins.memory.embedding.reindex import reindex
from plughost.plugins.memory.knowledge.rebuild import rebuild
from plughost.plugins.memory.serving import serving_account
from plughost.plugins.memory.settings import AUDIT_EMBED_LIMIT, AUDIT_PERIOD
from plughost.plugins.memory.upkeep.counts import counts
from plughost.plugins.memory.upkeep.record import iso as _iso
from plughost.plugins.memory.upkeep.record import last_run, parse, record_path
from plughost.plugins.memory.work.worktime import census

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

STATE_KEY: StateKey[StandingAudit] = StateKey("memory.standing-audit")


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:160]


def _embed(host: Host, account_id: str, limit: int, stop: threading.Event | None) -> dict[str, int]:
    embedder, store = host.embedder(), host.store()
    if embedder is None:
        return {}
    if not store.missing_embeddings(account_id=account_id, limit=1):
        return {"embedded": 0, "embedSkipped": 0}  # an idle run logs its one line, no reindex lines
    summary = reindex(store, embedder, account_id=account_id, limit=limit, summaries=False, stop=stop)
    return {"embedded": summary.processed, "embedSkipped": summary.skipped}


def _count(host: Host, account_id: str, limit: int, stop: threading.Event | None) -> dict[str, int]:
    report = counts(host, time_census=False)
    rules = report["activeRules"]
    found: dict[str, int] = {"missing": sum(report["nullEmbedding"].values())}
    if report["nullAccount"] is not None:
        found["nullAccount"] = int(report["nullAccount"])
    if report["unscoped"] is not None:
        found["unscoped"] = sum(u["count"] for u in report["unscoped"].values())
    found["rulesDrifted"] = int(rules["stored"] != rules["injected"])
    return found


def _census(host: Host, account_id: str, limit: int, stop: threading.Event | None) -> dict[str, int]:
    found = census(host.store(), account_id)
    return {"timeDrifted": len(found["drifted"]), "timersRunning": int(found["running"])}


def _visitors(host: Host, account_id: str, limit: int, stop: threading.Event | None) -> dict[str, int]:
    return {"visitorSlices": sweep(host, account_id)}


def _knowledge(host: Host, account_id: str, limit: int, stop: threading.Event | None) -> dict[str, int]:
    changed = rebuild(host.store(), host.home, account_id, reason="upkeep")
    return {"knowledgeRebuilt": sum(changed.values())}


def _purge(host: Host, account_id: str, limit: int, stop: threading.Event | None) -> dict[str, int]:
    return {"purged": int(host.store().purge(account_id=account_id))}  # the port's default grace


AUDITS = (("embed", _embed), ("count", _count), ("census", _census), ("visitors", _visitors),
          ("knowledge", _knowledge), ("purge", _purge))
"""In order: the count sees what the embed left."""


def run_once(host: Host, account_id: str, limit: int,
             stop: threading.Event | None = None) -> dict[str, Any] | None:
    """Every standing audit once (a failing one is logged and skipped); logs the run, writes its record.
    None when ``stop`` was set between two audits (a stopping server): no record, the next start runs."""
    started_wall, started = time.time(), time.perf_counter()
    found: dict[str, int] = {}
    warnings: list[str] = []
    for name, audit in AUDITS:
        if stop is not None and stop.is_set():
            log("audit", "op=interrupted", before=name)
            return None
        try:
            found.update(audit(host, account_id, limit, stop))
        except Exception as exc:  # one audit never stops the others
            warnings.append(name)
            log("audit", "warn", audit=name, error=_error(exc))
    ms = round((time.perf_counter() - started) * 1000)
    record = {"at": _iso(started_wall), "counts": found, "ms": ms, "warnings": warnings}
    try:
        write_atomic(record_path(host.home, account_id), json.dumps(record, indent=2) + "\n")
    except OSError as exc:
        log("audit", "warn", audit="record", error=_error(exc))
    log("audit", "op=run", **found, warnings=len(warnings), ms=ms)
    return record


class StandingAudit:
    """The serving process's audit thread: waits until the next run is due, or until stopped."""

    def __init__(self, host: Host, account_id: str, period: int, limit: int) -> None:
        self.host, self.account, self.period, self.limit = host, account_id, period, limit
        self.ran_at: float | None = None  # this process's last run (the record may be unwritable)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="standing-audit", daemon=True)

    def due(self, now: float) -> float:
        """When the next run is due: a period after the recorded run (never later than a period from now)."""
        last = last_run(self.host.home, self.account)
        times = [t for t in (parse(last.get("at")) if last else None, self.ran_at) if t is not None]
        if not times:
            return now
        return min(max(times) + self.period, now + self.period)

    def start(self) -> StandingAudit:
        now = time.time()
        log("audit", "op=start", account=self.account[:8], periodS=self.period, next=_iso(self.due(now)))
        self.thread.start()
        return self

    def _shared_turn(self) -> tuple[Any, str] | float | None:
        """On a shared store: (leases, name) when this server runs now, else seconds until the holder's
        lease runs out; None on a store that is not shared."""
        shared = leases(self.host)
        if shared is None:
            return None
        name = f"audit:{self.account}"
        if shared.take(name, ttl_s=self.period) is not None:
            return shared, name
        holder = shared.holder(name)
        log("audit", "op=skipped", reason="lease-held", holder=holder.owner if holder else "?")
        return max(1.0, (holder.expires_ms / 1000 - time.time()) if holder else 1.0)

    def _run(self) -> None:
        while not self.stop_event.is_set():
            wait = self.due(time.time()) - time.time()
            if wait > 0:
                self.stop_event.wait(wait)
                continue
            try:
                turn = self._shared_turn()
            except Exception as exc:  # the store did not answer: try again in a period
                log("audit", "warn", audit="lease", error=_error(exc))
                self.ran_at = time.time()
                continue
            if isinstance(turn, float):
                self.stop_event.wait(min(turn, self.period))
                continue
            self.ran_at = time.time()
            try:
                run_once(self.host, self.account, self.limit, self.stop_event)
            except Exception as exc:  # the log failed: the thread keeps its period
                log("audit", "warn", audit="run", error=_error(exc))
            finally:
                if turn is not None:
                    turn[0].keep(turn[1])  # no more renewal: it expires a period after this run

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(10)


def start(host: Host) -> None:
    """Under ``plughost serve`` for an account, not narrowed, with a period: start the thread."""
    if STATE_KEY in host.state or serving.RUNTIME not in host.state:
        return  # one-shot commands and stdio MCP servers never run it
    period = AUDIT_PERIOD.read(host.env)
    if period <= 0:
        log("audit", "op=off", reason="PLUGHOST_AUDIT_PERIOD=0")
        return
    account = serving_account(host, "audit")
    if account is not None:
        runner = StandingAudit(host, account, period, AUDIT_EMBED_LIMIT.read(host.env)).start()
        host.state.set(STATE_KEY, runner)
        # a SIGTERM ends a run's embedding after its batch in hand, not after the grace and a join
        serving.stop_of(host).on_stop(runner.stop_event.set)


def stop(host: Host) -> None:
    runner = host.state.pop(STATE_KEY)
    if runner is not None:
        runner.stop()
