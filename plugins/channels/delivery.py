"""Finishing what a stopped process left: failed replies re-sent, unfinished turns resumed.

``plughost channels retry`` does both; a starting server resumes (``plughost_startup``).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from host.log import log
from host.state import StateKey
from plugins.channels.pipeline import Inbound, gateway, inbound_from_node


async def retry_failed(host: Any, *, limit: int = 500) -> dict[str, Any]:
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
                          platform_id=f"retry:{node.id}", target=dict(p.get("target") or {}))
            outcome = await gw.deliver(msg, node.id, str(p.get("text") or ""))
            sent += bool(outcome.get("ok"))
            failed += not outcome.get("ok")
    finally:
        from plugins.channels.server import drain

        await drain(host)
    log("channels", "op=retry", retried=len(rows), sent=sent, failed=failed)
    return {"retried": len(rows), "sent": sent, "failed": failed}


def claim_unfinished(host: Any, *, limit: int = 500) -> tuple[list[Any], list[Any], int]:
    """Take over the turns and replies left by processes that are gone: (inbound, pending replies, busy).

    Inbound Messages still ``status=received`` and replies still ``deliveryStatus=pending`` whose
    ``claimedBy`` process no longer holds its claim are re-claimed by this process (under the
    resume lock, so a starting server and ``channels retry`` never take the same one); those of a
    live process are left to it and counted as busy.
    """
    gw = gateway(host)
    claims = gw.claims
    with claims.resume_lock():
        inbound = gw.store.find(guards=gw.guards(), labels=["Message"], where={"role": "user", "status": "received"},
                                order_by="receivedNs", descending=False, limit=limit)
        replies = gw.store.find(guards=gw.guards(), labels=["Message"], where={"deliveryStatus": "pending"},
                                order_by="createdNs", descending=False, limit=limit)
        taken: tuple[list[Any], list[Any]] = ([], [])
        busy = 0
        rerun: set[str] = set()
        for rows, out in ((inbound, taken[0]), (replies, taken[1])):
            for node in rows:
                if node.properties.get("scheduledEvent"):
                    continue  # provenance is never re-created
                if node.properties.get("inReplyTo") in rerun:
                    continue  # its turn runs again and records this same reply: sending it here too would double it
                if claims.alive(node.properties.get("claimedBy")):
                    busy += 1
                    continue
                gw.store.upsert_node(["Message"], {"claimedBy": claims.token}, account_id=gw.account_id,
                                     node_id=node.id)
                out.append(node)
                if out is taken[0]:
                    rerun.add(node.id)
    return taken[0], taken[1], busy


def _reply_inbound(node: Any) -> Inbound:
    p = node.properties
    return Inbound(channel=str(p.get("channel")), sender=str(p.get("recipient")), text="",
                   platform_id=f"resume:{node.id}", target=dict(p.get("target") or {}))


async def resume(host: Any, *, limit: int = 500) -> tuple[list[asyncio.Future[Any]], dict[str, Any]]:
    """Queue every unfinished turn of a gone process in its sender's lane; (tasks, counts).

    Called on startup (``plughost_startup``) and by ``plughost channels retry``; a turn runs
    from the start (identity, screening, the agent), a pending reply is only delivered.
    """
    gw = gateway(host)
    inbound, replies, busy = await asyncio.to_thread(claim_unfinished, host, limit=limit)
    tasks: list[asyncio.Future[Any]] = []
    for node in inbound:
        msg = inbound_from_node(node.properties)
        tasks.append(gw.lanes.submit(msg.sender_key, functools.partial(gw.process, msg, node.id)))
    for node in replies:
        msg = _reply_inbound(node)
        key = f"{msg.channel}:{msg.sender}"
        tasks.append(gw.lanes.submit(key, functools.partial(gw.deliver, msg, node.id,
                                                             str(node.properties.get("text") or ""))))
    counts = {"resumed": len(inbound), "delivered": len(replies), "busy": busy}
    if inbound or replies or busy:
        log("channels", "op=resume", **counts)
    return tasks, counts


async def resume_unanswered(host: Any, *, limit: int = 500) -> dict[str, Any]:
    """Resume and wait: every taken turn runs (each sender's in receipt order), then the lanes drain."""
    statuses: dict[str, int] = {}
    try:
        tasks, counts = await resume(host, limit=limit)
        for outcome in await asyncio.gather(*tasks):
            status = getattr(outcome, "status", None) or ("sent" if outcome.get("ok") else "send-failed")
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        from plugins.channels.server import drain

        await drain(host)
    log("channels", "op=resumed", **counts, **statuses)
    return {**counts, "statuses": statuses}


RESUME: StateKey[Any] = StateKey("channels.resume")


def start_resume(host: Any) -> None:
    """``plughost_startup``: queue the unfinished turns on the serving loop (from the hook's worker thread)."""
    import anyio.from_thread

    if not host.principal.account:
        return
    if host.env.get("PLUGHOST_CHANNELS_RESUME", "1") == "0":
        log("channels", "op=resume-skipped", reason="PLUGHOST_CHANNELS_RESUME=0")
        return

    async def go() -> None:
        try:
            await resume(host)
        except Exception as exc:  # a resume that fails is a line, never a server that does not start
            log("channels", "op=resume-failed", error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])

    def schedule() -> None:
        host.state.set(RESUME, asyncio.ensure_future(go()))

    try:
        anyio.from_thread.run_sync(schedule)
    except RuntimeError:  # not called from a serving loop's worker thread (a one-shot command)
        log("channels", "op=resume-skipped", reason="no-event-loop")
