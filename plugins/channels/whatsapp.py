"""The WhatsApp Cloud API adapter (docs/channels.md#whatsapp).

- ``GET /channels/whatsapp/webhook``: verification (``hub.mode=subscribe``,
  ``hub.verify_token`` equal to ``PLUGHOST_WHATSAPP_VERIFY_TOKEN``) answers ``hub.challenge``.
- ``POST /channels/whatsapp/webhook``: ``X-Hub-Signature-256: sha256=<hex>`` is the HMAC-SHA256
  of the raw body with ``PLUGHOST_WHATSAPP_APP_SECRET``, compared in constant time before
  the body is parsed. Text, reply context (``context.id`` → the quoted message's stored text)
  and media notes reach the pipeline.
- Replies: ``POST {PLUGHOST_WHATSAPP_API_BASE}/{PLUGHOST_WHATSAPP_PHONE_ID}/messages`` with
  ``Authorization: Bearer PLUGHOST_WHATSAPP_TOKEN`` (base default ``https://graph.facebook.com/v21.0``).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from plughost import ChannelAdapter, Host, Route, log
from plughost.api.http import parse_json, read_body
from plughost.plugins.channels.compose import ReplyContext
from plughost.plugins.channels.outbound import chunks, post_json, send_parts
from plughost.plugins.channels.pipeline import Inbound, NotConfigured, gateway
from plughost.plugins.channels.settings import (
    WHATSAPP_API_BASE,
    WHATSAPP_APP_SECRET,
    WHATSAPP_PHONE_ID,
    WHATSAPP_TOKEN,
    WHATSAPP_VERIFY_TOKEN,
)
from plughost.plugins.channels.wire import JSON, JSONObject

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

CHANNEL = "whatsapp"
MEDIA_TYPES = ("image", "audio", "video", "document", "sticker", "voice")


def _error(status: int, error: str, detail: str) -> JSONResponse:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": error, "detail": detail}, status_code=status)


def signature(secret: str, raw: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), raw, hashlib.sha256).hexdigest()


def signature_ok(secret: str, raw: bytes, header: str | None) -> bool:
    return bool(header) and hmac.compare_digest(signature(secret, raw).encode(), (header or "").strip().encode())


MAX_BODY = 1024 * 1024


def _obj(value: JSON) -> JSONObject:
    """``value`` when it is a JSON object, else an empty one (a hostile payload's odd shapes read as absent)."""
    return value if isinstance(value, dict) else {}


def _list(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []


def _short(value: JSON, limit: int = 200) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return "?"
    return str(value)[:limit]


def _message_text(m: JSONObject) -> tuple[str, list[str]]:
    text, notes = _message_text_raw(m)
    return (text if isinstance(text, str) else ""), notes


def _message_text_raw(m: JSONObject) -> tuple[str, list[str]]:
    kind = m.get("type")
    if not isinstance(kind, str):
        kind = str(kind)[:40]
    for key in ("text", "button", "interactive", "reaction", "location", *MEDIA_TYPES):
        if key in m and not isinstance(m[key], dict):
            m = {**m, key: {}}
    notes: list[str] = []
    text = ""
    if kind == "text":
        text = str((m.get("text") or {}).get("body") or "")
    elif kind in MEDIA_TYPES:
        media = m.get(kind) or {}
        caption = media.get("caption")
        text = caption if isinstance(caption, str) else ""
        mime = f" {_short(media['mime_type'])}" if media.get("mime_type") else ""
        name = f" name={_short(media['filename'])}" if media.get("filename") else ""
        notes.append(f"[media: {kind}{mime} id={_short(media.get('id', '?'))}{name}]")
    elif kind == "location":
        loc = m.get("location") or {}
        where = f"{_short(loc.get('latitude'))},{_short(loc.get('longitude'))} {_short(loc.get('name') or '')}"
        notes.append(f"[location: {where}]".replace(" ?]", "]").rstrip())
    elif kind == "button":
        text = str((m.get("button") or {}).get("text") or "")
    elif kind == "interactive":
        inter = m.get("interactive") or {}
        chosen = _obj(inter.get("button_reply")) or _obj(inter.get("list_reply"))
        text = str(chosen.get("title") or "")
    elif kind == "reaction":
        text = f"[reaction {_short((m.get('reaction') or {}).get('emoji', ''), 16)}]"
    else:
        notes.append(f"[unsupported message type: {_short(kind, 40)}]")
    return text, notes


def parse_payload(body: JSON) -> list[tuple[Inbound, str | None]]:
    """Webhook JSON → [(inbound, quoted platform id)]; statuses and other fields are skipped."""
    if not isinstance(body, dict) or not isinstance(body.get("entry"), list):
        raise ValueError("body: expected a WhatsApp webhook object with entry[]")
    out: list[tuple[Inbound, str | None]] = []
    for entry in body["entry"]:
        for change in _list(_obj(entry).get("changes")):
            value = _obj(_obj(change).get("value"))
            names = {str(c.get("wa_id")): _obj(c.get("profile")).get("name") for c in _list(value.get("contacts"))
                     if isinstance(c, dict)}
            for m in _list(value.get("messages")):
                if not isinstance(m, dict) or not m.get("from") or not m.get("id"):
                    raise ValueError("messages[]: expected from and id")
                sender, wamid = _short(m["from"], 64), _short(m["id"], 256)
                if "?" in (sender, wamid):
                    raise ValueError("messages[]: expected from and id as strings")
                text, notes = _message_text(m)
                context = _obj(m.get("context"))
                quoted = _short(context["id"], 256) if context.get("id") else None
                name = names.get(sender)
                msg = Inbound(channel=CHANNEL, sender=sender, text=text, platform_id=wamid,
                              sent_at=sent_at_of(m.get("timestamp")), phone=sender,
                              name=name if isinstance(name, str) else None,
                              media_notes=notes, target={"to": sender, "message_id": wamid})
                out.append((msg, quoted))
    return out


def sent_at_of(stamp: JSON) -> str | None:
    """The Cloud API's Unix-time string as ISO-8601 UTC; None for a value that is not one (30 digits, text)."""
    text = stamp if isinstance(stamp, str) else str(stamp) if isinstance(stamp, int) and not isinstance(stamp, bool) else ""
    if not (text.isascii() and text.isdigit()) or len(text) > 11 or int(text) >= 32_503_680_000:
        return None
    return datetime.fromtimestamp(int(text), UTC).isoformat().replace("+00:00", "Z")


def routes(host: Host) -> tuple[Route, ...]:
    async def verify(request: Request) -> Response:
        from starlette.responses import PlainTextResponse

        expected = WHATSAPP_VERIFY_TOKEN.read(host.env) or ""
        q = request.query_params
        given = q.get("hub.verify_token", "")
        if (q.get("hub.mode") == "subscribe" and expected
                and hmac.compare_digest(given.encode(), expected.encode())):
            return PlainTextResponse(q.get("hub.challenge", ""))
        return _error(403, "forbidden", "hub.verify_token: does not match; hub.mode: expected subscribe")

    async def webhook(request: Request) -> Response:
        from starlette.responses import JSONResponse

        secret = WHATSAPP_APP_SECRET.read(host.env) or ""
        if not secret:
            return _error(503, "not-configured", "PLUGHOST_WHATSAPP_APP_SECRET is not set")
        raw = await read_body(request, MAX_BODY)
        if raw is None:
            return _error(413, "payload-too-large", f"body: larger than {MAX_BODY} bytes")
        if not signature_ok(secret, raw, request.headers.get("x-hub-signature-256")):
            log("channels", "op=webhook-rejected", channel=CHANNEL, reason="bad-signature")
            return _error(401, "unauthorized", "X-Hub-Signature-256: missing or does not match the body")
        try:
            parsed = parse_payload(parse_json(raw))
        except ValueError as exc:
            return _error(400, "invalid-payload", str(exc).splitlines()[0])
        gw = gateway(host)
        results = []
        try:
            for msg, quoted in parsed:
                if quoted:
                    text = await asyncio.to_thread(gw.quoted_text, CHANNEL, quoted)
                    msg.reply = ReplyContext(id=quoted, text=text)
                mid, duplicate, _ = await gw.accept(msg)
                results.append({"messageId": mid, "duplicate": duplicate})
        except NotConfigured as exc:
            return _error(503, "not-configured", str(exc))
        return JSONResponse({"ok": True, "messages": results})

    return (
        Route("/channels/whatsapp/webhook", endpoint=verify, methods=("GET",), name="whatsapp-verify"),
        Route("/channels/whatsapp/webhook", endpoint=webhook, methods=("POST",), name="whatsapp-webhook"),
    )


async def send(host: Host, msg: Inbound, text: str) -> JSONObject:
    """The Cloud API messages endpoint; a reply over the 4096-character body limit goes out in parts."""
    token = WHATSAPP_TOKEN.read(host.env) or ""
    phone_id = WHATSAPP_PHONE_ID.read(host.env) or ""
    if not token or not phone_id:
        return {"ok": False, "reason": "not-configured: PLUGHOST_WHATSAPP_TOKEN / PLUGHOST_WHATSAPP_PHONE_ID"}
    base = WHATSAPP_API_BASE.read(host.env).rstrip("/")

    async def one(part: str) -> JSONObject:
        body: JSONObject = {"messaging_product": "whatsapp", "recipient_type": "individual",
                                "to": msg.target.get("to", msg.sender), "type": "text",
                                "text": {"preview_url": False, "body": part}}
        if msg.target.get("message_id"):
            body["context"] = {"message_id": msg.target["message_id"]}
        out = await post_json(host, f"{base}/{phone_id}/messages", body, channel=CHANNEL,
                              headers={"Authorization": f"Bearer {token}"})
        resp = out.get("body")
        if isinstance(resp, dict) and resp.get("messages"):
            out["platformId"] = str(resp["messages"][0].get("id"))
        return out

    return await send_parts(chunks(text), one)


def adapter(host: Host) -> ChannelAdapter:
    return ChannelAdapter(CHANNEL, routes=routes(host), send=send)
