"""Re-sending replies whose delivery failed (``plughost channels retry``)."""

from __future__ import annotations

import asyncio
from typing import Any

from host.log import log
from plugins.channels.pipeline import Inbound, gateway


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
