"""Finishing what a stopped process left: failed replies re-sent, unfinished turns resumed.

``plughost channels retry`` does both; a starting server resumes (``plughost_startup``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Mapping
from typing import TypeAlias

from plughost import Host, Node, StateKey, log
from plughost.api.serving import leases, stop_of
from plughost.plugins.channels.outbound import HTTP_CLIENT
from plughost.plugins.channels.pipeline import (
    GATEWAY,
    Delivery,
    Gateway,
    Inbound,
    Turn,
    gateway,
    inbound_from_node,
    stored_target,
)
from plughost.plugins.channels.settings import CHANNELS_RESUME, RESUME_BATCH
from plughost.plugins.channels.wire import JSON, JSONObject


async def retry_failed(host: Host, *, limit: int = 500) -> JSONObject:
    """Every reply Message with ``deliveryStatus=failed``, oldest first, sent again through its adapter."""
    gw = gateway(host)
    rows = await asyncio.to_thread(gw.store.find, guards=gw.guards(), labels=["Message"],
                                   where={"deliveryStatus": "failed"}, order_by="createdNs",
                                   descending=False, limit=limit)
    sent = failed = 0
    try:
        for node in rows:
            p = node.properties
            msg = Inbound(channel=str(p.get("channel")), sender=str(p.get("recipient")), text="",
                          platform_id=f"retry:{node.id}", target=stored_target(p.get("target")))
            outcome = await gw.deliver(msg, node.id, str(p.get("text") or ""))
            sent += bool(outcome.get("ok"))
            failed += not outcome.get("ok")
    finally:
        await drain(host)
    log("channels", "op=retry", retried=len(rows), sent=sent, failed=failed)
    return {"retried": len(rows), "sent": sent, "failed": failed}


Job: TypeAlias = "asyncio.Future[Turn] | asyncio.Future[Delivery]"
"""A resumed turn, or a pending reply's delivery."""

DEFAULT_BATCH = RESUME_BATCH.default
COUNT_PAGE = 500


def batch_size(env: Mapping[str, str]) -> int:
    """``PLUGHOST_RESUME_BATCH``: turns taken per batch (default 100, 1..10000)."""
    return RESUME_BATCH.read(env)


INBOUND = ({"role": "user", "status": "received"}, "receivedNs")
PENDING = ({"deliveryStatus": "pending"}, "createdNs")


class Backlog:
    """The turns and replies left by processes that are gone, taken oldest first a batch at a time.

    Only what was stored before ``started_ns`` is backlog: this process's own traffic is newer
    (it starts serving after the resume began) and a live process's turns are left to it and
    counted as busy. Picking and re-claiming happens under the resume lock, so a starting server
    and ``channels retry`` never take the same one. Every read is one bounded page: nothing
    holds the whole backlog in memory, and no cap leaves part of it behind.
    """

    def __init__(self, gw: Gateway, started_ns: int) -> None:
        self.gw = gw
        self.started_ns = started_ns
        self.skip: set[str] = set()  # never taken here: busy, scheduled, or a reply its turn re-records
        self.inflight: set[str] = set()  # taken and not finished
        self.taken: set[str] = set()  # taken once: never again, whatever the store says
        self.busy = 0
        self._alive: dict[str, bool] = {}

    def _owner_alive(self, token: JSON) -> bool:
        if token == self.gw.claims.token:
            return False
        key = str(token)
        if key not in self._alive:
            self._alive[key] = self.gw.claims.alive(token)
        return self._alive[key]

    @staticmethod
    def turn_of(node: Node, which: tuple[JSONObject, str]) -> str:
        """The inbound whose turn a row belongs to (a pending reply's is the one it answers)."""
        return str(node.properties.get("inReplyTo") or node.id) if which is PENDING else str(node.id)

    def _held(self, rows: list[Node], which: tuple[JSONObject, str]) -> set[str]:
        """On a shared store, the turns among ``rows`` a live process holds (its lease)."""
        claims = self.gw.claims
        return claims.busy([self.turn_of(n, which) for n in rows]) if claims.shared else set()

    def _busy(self, node: Node, which: tuple[JSONObject, str], held: set[str]) -> bool:
        if self.gw.claims.shared:
            return self.turn_of(node, which) in held
        return self._owner_alive(node.properties.get("claimedBy"))

    def count(self) -> tuple[int, int, int]:
        """(unanswered turns, pending replies, busy) to do, read page by page (no batch taken yet)."""
        out = []
        busy = 0
        for which in (INBOUND, PENDING):
            where, order = which
            n, offset = 0, 0
            while True:
                rows = self.gw.store.find(guards=self.gw.guards(), labels=["Message"], where=where, order_by=order,
                                          descending=False, limit=COUNT_PAGE, offset=offset)
                offset += len(rows)
                held = self._held(rows, which)
                for node in rows:
                    p = node.properties
                    if (p.get(order) or 0) >= self.started_ns or p.get("scheduledEvent"):
                        continue
                    if self._busy(node, which, held):
                        busy += 1
                    else:
                        n += 1
                if len(rows) < COUNT_PAGE:
                    break
            out.append(n)
        self._alive.clear()  # a busy process may be gone by the time its turns come up
        return out[0], out[1], busy

    def take(self, want: int, which: tuple[JSONObject, str]) -> list[Node]:
        """Claim up to ``want`` rows of ``which`` (oldest first) for this process."""
        where, order = which
        gw = self.gw
        out: list[Node] = []
        with gw.claims.resume_lock():
            rows = gw.store.find(guards=gw.guards(), labels=["Message"], where=where, order_by=order,
                                 descending=False, limit=want + len(self.skip) + len(self.inflight))
            held = self._held(rows, which)
            for node in rows:
                if len(out) >= want:
                    break
                p = node.properties
                if (p.get(order) or 0) >= self.started_ns:
                    break  # newer than the resume: not backlog
                if node.id in self.skip or node.id in self.inflight:
                    continue
                if node.id in self.taken or p.get("scheduledEvent"):
                    self.skip.add(node.id)  # provenance is never re-created; a taken one is not taken twice
                    continue
                if self._busy(node, which, held):
                    self.busy += 1
                    self.skip.add(node.id)
                    continue
                if which is PENDING and self._rerun(p.get("inReplyTo")):
                    self.skip.add(node.id)  # its turn runs again and records this same reply: sending it too doubles it
                    continue
                if gw.claims.shared and not self._take_shared(node, which):
                    self.busy += 1
                    self.skip.add(node.id)
                    continue
                gw.store.upsert_node(["Message"], {"claimedBy": gw.claims.token},
                                     guards=gw.system_guards(),
                                     node_id=node.id)
                self.taken.add(node.id)
                self.inflight.add(node.id)
                out.append(node)
        self._alive.clear()
        return out

    def _take_shared(self, node: Node, which: tuple[JSONObject, str]) -> bool:
        """Take the turn's lease (a takeover when its holder's ran out), then check the row is still
        to do: another server may have finished it between the read and the take."""
        gw, turn = self.gw, self.turn_of(node, which)
        if not gw.claims.take_backlog(turn):
            return False
        fresh = gw.store.get(node.id, guards=gw.guards())
        if fresh is None or any(fresh.properties.get(k) != v for k, v in which[0].items()):
            gw.claims.finish_turn(turn)
            return False
        return True

    def _rerun(self, inbound_id: JSON) -> bool:
        if not isinstance(inbound_id, str):
            return False
        node = self.gw.store.get(inbound_id, guards=self.gw.guards())
        return node is not None and node.properties.get("status") == "received"


def _reply_inbound(node: Node) -> Inbound:
    p = node.properties
    return Inbound(channel=str(p.get("channel")), sender=str(p.get("recipient")), text="",
                   platform_id=f"resume:{node.id}", target=stored_target(p.get("target")))


async def _deliver_taken(gw: Gateway, msg: Inbound, node: Node, turn: str) -> Delivery:
    """Deliver a pending reply the resume took; on a shared store its turn's lease then goes."""
    try:
        return await gw.deliver(msg, node.id, str(node.properties.get("text") or ""))
    finally:
        await gw.finish_turn(turn)


def _status(task: Job) -> str:
    if task.cancelled():
        return "not-started"  # the process is stopping: the next start resumes it
    if task.exception() is not None:
        return "failed"
    outcome = task.result()
    if isinstance(outcome, Turn):
        return outcome.status
    return "sent" if outcome.get("ok") else "send-failed"


async def resume(host: Host, *, batch: int | None = None, quiet: bool = False) -> JSONObject:
    """Run every unfinished turn of a gone process, oldest first, ``batch`` at a time; the counts.

    Pending replies are delivered first (only delivered), then the turns run from the start
    (identity, screening, the agent), each in its sender's lane so a sender's turns keep their
    order. The next batch is taken once at most half a batch is still running, so a backlog
    of any size goes through while the server takes new traffic; a stopping process takes no
    more (what it took and did not start stays ``received`` for the next start).
    Lines: ``op=resume`` (what is to do) at the start, ``op=resume-batch`` per batch with what is
    ``left``, ``op=resumed`` with the outcomes at the end. ``quiet`` (a shared store's periodic
    sweep): no lines when there is nothing to take, only turns other live servers hold.
    """
    gw = gateway(host)
    stop = stop_of(host)
    size = batch or batch_size(host.env)
    started = time.monotonic()
    backlog = Backlog(gw, time.time_ns())
    unanswered, pending, busy = await asyncio.to_thread(backlog.count)
    if not (unanswered or pending or (busy and not quiet)):
        return {"resumed": 0, "delivered": 0, "busy": busy, "statuses": {}}
    log("channels", "op=resume", unanswered=unanswered, pending=pending, busy=busy, batch=size)
    counts = {"resumed": 0, "delivered": 0}
    statuses: dict[str, int] = {}
    tasks: set[Job] = set()
    room = asyncio.Event()

    def finished(node_id: str, task: Job) -> None:
        backlog.inflight.discard(node_id)
        tasks.discard(task)
        status = _status(task)
        statuses[status] = statuses.get(status, 0) + 1
        if len(backlog.inflight) <= size // 2:
            room.set()

    batches = 0
    for which in (PENDING, INBOUND):
        while not stop.is_set and not gw.stopping:
            while len(backlog.inflight) > size // 2:
                room.clear()
                await room.wait()
            if stop.is_set or gw.stopping:
                break
            nodes = await asyncio.to_thread(backlog.take, size, which)
            if not nodes:
                break
            batches += 1
            for node in nodes:
                task: Job
                if which is INBOUND:
                    msg = inbound_from_node(node.properties)
                    task = gw.lanes.submit(msg.sender_key, functools.partial(gw.process, msg, node.id))
                else:
                    msg = _reply_inbound(node)
                    task = gw.lanes.submit(f"{msg.channel}:{msg.sender}", functools.partial(
                        _deliver_taken, gw, msg, node, Backlog.turn_of(node, PENDING)))
                tasks.add(task)
                task.add_done_callback(functools.partial(finished, node.id))
            key = "resumed" if which is INBOUND else "delivered"
            counts[key] += len(nodes)
            log("channels", "op=resume-batch", batch=batches, **{key: len(nodes)},
                left=max(0, (unanswered if which is INBOUND else pending) - counts[key]))
    if tasks:
        await asyncio.wait(list(tasks))
    outcome = {**counts, "busy": backlog.busy or busy}
    log("channels", "op=resumed", **outcome, **dict(sorted(statuses.items())), batches=batches,
        ms=round((time.monotonic() - started) * 1000))
    return {**outcome, "statuses": statuses}


async def resume_unanswered(host: Host, *, batch: int | None = None) -> JSONObject:
    """``plughost channels retry``: resume and wait until every taken turn ran and the lanes drained."""
    try:
        return await resume(host, batch=batch)
    finally:
        await drain(host)


RESUME: StateKey[asyncio.Future[None]] = StateKey("channels.resume")


def start_resume(host: Host) -> None:
    """``plughost_startup``: queue the unfinished turns on the serving loop (from the hook's worker thread)."""
    import anyio.from_thread

    if not host.principal.account:
        return
    if not CHANNELS_RESUME.read(host.env):
        log("channels", "op=resume-skipped", reason="PLUGHOST_CHANNELS_RESUME=0")
        return

    async def go() -> None:
        try:
            await resume(host)
        except Exception as exc:  # a resume that fails is a line, never a server that does not start
            log("channels", "op=resume-failed", error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
        await sweep(host)

    def schedule() -> None:
        host.state.set(RESUME, asyncio.ensure_future(go()))

    try:
        anyio.from_thread.run_sync(schedule)
    except RuntimeError:  # not called from a serving loop's worker thread (a one-shot command)
        log("channels", "op=resume-skipped", reason="no-event-loop")


SWEEP_POLL_S = 0.5


async def sweep(host: Host) -> None:
    """On a shared store, resume again every half lease: turns a dead server held are taken over once
    their lease ran out, by whichever server sweeps first (``[lease] op=takeover``). Ends with the server."""
    shared = await asyncio.to_thread(leases, host)
    if shared is None:
        return
    gw, stop = gateway(host), stop_of(host)
    period = max(1.0, shared.ttl_s / 2)
    log("channels", "op=sweep-started", periodS=f"{period:g}", owner=shared.owner)
    while True:
        waited = 0.0
        while waited < period:
            if stop.is_set or gw.stopping:
                return
            await asyncio.sleep(SWEEP_POLL_S)
            waited += SWEEP_POLL_S
        try:
            await resume(host, quiet=True)
        except Exception as exc:  # the next sweep tries again
            log("channels", "op=resume-failed", error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])


async def drain(host: Host) -> None:
    """Finish queued turns and close the shared HTTP client (the loop is still running)."""
    gw = host.state.get(GATEWAY)
    if gw is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(gw.drain(), 30)
    http = host.state.pop(HTTP_CLIENT)
    if http is not None:
        with contextlib.suppress(Exception):
            await http.aclose()
