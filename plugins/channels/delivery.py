"""Re-sending replies whose delivery failed (``plughost channels retry``)."""

from __future__ import annotations

import asyncio
from typing import Any

from host.log import log
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


async def resume_unanswered(host: Any, *, limit: int = 500) -> dict[str, Any]:
    """Run the turns of inbound Messages stored but never processed (a stop between persist and turn).

    Webhooks answer 200 once a message is stored, so a process stopped before the turn ran
    leaves ``status=received`` behind; this runs those turns, each sender's in receipt order.
    """
    gw = gateway(host)
    rows = await asyncio.to_thread(gw.store.find, guards=gw.guards(), labels=["Message"],
                                   where={"role": "user", "status": "received"}, order_by="receivedNs",
                                   descending=False, limit=limit)
    rows = [n for n in rows if not n.properties.get("scheduledEvent")]  # provenance is never re-created
    statuses: dict[str, int] = {}
    try:
        tasks = [gw.lanes.submit(inbound_from_node(n.properties).sender_key,
                                 lambda n=n: gw.process(inbound_from_node(n.properties), n.id)) for n in rows]
        for turn in await asyncio.gather(*tasks):
            statuses[turn.status] = statuses.get(turn.status, 0) + 1
    finally:
        from plugins.channels.server import drain

        await drain(host)
    log("channels", "op=resume", resumed=len(rows), **statuses)
    return {"resumed": len(rows), "statuses": statuses}
