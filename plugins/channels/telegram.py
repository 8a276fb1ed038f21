"""The Telegram adapter (SPEC 10.5): Bot API webhook in, ``sendMessage`` out.

Configuration (env): ``PLUGHOST_TELEGRAM_TOKEN`` (bot token), ``PLUGHOST_TELEGRAM_SECRET``
(the ``secret_token`` given to ``setWebhook``; every update must carry it in
``X-Telegram-Bot-Api-Secret-Token``), ``PLUGHOST_TELEGRAM_API_BASE`` (default
``https://api.telegram.org``). Telegram sender ids are opaque: a sender becomes an admin once
they share their contact (the phone joins the alias cache).
"""

from __future__ import annotations

import hmac
import json
from datetime import UTC, datetime
from typing import Any

from host.log import log
from host.types import ChannelAdapter, Route
from plugins.channels.compose import ReplyContext
from plugins.channels.outbound import chunks, post_json, send_parts
from plugins.channels.pipeline import Inbound, NotConfigured, gateway

CHANNEL = "telegram"
SECRET_HEADER = "x-telegram-bot-api-secret-token"
DEFAULT_BASE = "https://api.telegram.org"


def _error(status: int, error: str, detail: str) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": error, "detail": detail}, status_code=status)


def media_notes(message: dict[str, Any]) -> list[str]:
    notes = []
    if message.get("photo"):
        largest = message["photo"][-1] if isinstance(message["photo"], list) else {}
        notes.append(f"[media: photo id={largest.get('file_id', '?')}]")
    for kind in ("document", "audio", "voice", "video", "video_note", "sticker", "animation"):
        item = message.get(kind)
        if isinstance(item, dict):
            extra = f" name={item['file_name']}" if item.get("file_name") else ""
            mime = f" {item['mime_type']}" if item.get("mime_type") else ""
            notes.append(f"[media: {kind}{mime} id={item.get('file_id', '?')}{extra}]")
    if isinstance(message.get("location"), dict):
        loc = message["location"]
        notes.append(f"[location: {loc.get('latitude')},{loc.get('longitude')}]")
    return notes


def parse_update(update: Any) -> Inbound | None:
    """A Bot API ``Update`` → an :class:`Inbound` (None for updates that carry no message)."""
    if not isinstance(update, dict):
        raise ValueError("body: expected a Telegram Update object")
    message = update.get("message") or update.get("edited_message")
    if not isinstance(message, dict):
        return None
    sender = message.get("from") or {}
    chat = message.get("chat") or {}
    if not isinstance(sender, dict) or not isinstance(chat, dict) or "id" not in chat or "message_id" not in message:
        raise ValueError("message: expected from, chat.id and message_id")
    sender_id = str(sender.get("id", chat["id"]))
    text = message.get("text") or message.get("caption") or ""
    phone = None
    contact = message.get("contact")
    if isinstance(contact, dict) and str(contact.get("user_id")) == sender_id and contact.get("phone_number"):
        phone = str(contact["phone_number"])  # the sender shared their own contact
        text = text or "[shared their contact]"
    reply = None
    quoted = message.get("reply_to_message")
    if isinstance(quoted, dict):
        author = quoted.get("from") or {}
        reply = ReplyContext(id=str(quoted.get("message_id")), text=quoted.get("text") or quoted.get("caption"),
                             sender=author.get("username") or author.get("first_name"))
    sent_at = None
    if isinstance(message.get("date"), int):
        sent_at = datetime.fromtimestamp(message["date"], UTC).isoformat().replace("+00:00", "Z")
    edited = f":edit:{message.get('edit_date', '')}" if "message" not in update else ""
    return Inbound(
        channel=CHANNEL, sender=sender_id, text=text, platform_id=f"{chat['id']}:{message['message_id']}{edited}",
        sent_at=sent_at, phone=phone, name=sender.get("username") or sender.get("first_name"), reply=reply,
        media_notes=media_notes(message), target={"chat_id": chat["id"], "message_id": message["message_id"]},
    )


def routes(host: Any) -> tuple[Route, ...]:
    async def webhook(request: Any) -> Any:
        from starlette.responses import JSONResponse

        secret = host.env.get("PLUGHOST_TELEGRAM_SECRET", "")
        if not secret:
            return _error(503, "not-configured", "PLUGHOST_TELEGRAM_SECRET is not set")
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), secret.encode()):
            log("channels", "op=webhook-rejected", channel=CHANNEL, reason="bad-secret")
            return _error(401, "unauthorized", "X-Telegram-Bot-Api-Secret-Token: missing or wrong")
        try:
            msg = parse_update(json.loads(await request.body() or b"null"))
        except ValueError as exc:
            return _error(400, "invalid-update", str(exc).splitlines()[0])
        if msg is None:
            return JSONResponse({"ok": True, "ignored": True})
        try:
            mid, duplicate, _ = await gateway(host).accept(msg)
        except NotConfigured as exc:
            return _error(503, "not-configured", str(exc))
        return JSONResponse({"ok": True, "messageId": mid, "duplicate": duplicate})

    return (Route("/channels/telegram/webhook", endpoint=webhook, methods=("POST",), name="telegram-webhook"),)


async def send(host: Any, msg: Inbound, text: str) -> dict[str, Any]:
    """``sendMessage``; a reply longer than Telegram's 4096-unit limit goes out in parts, in order."""
    token = host.env.get("PLUGHOST_TELEGRAM_TOKEN", "")
    if not token:
        return {"ok": False, "reason": "not-configured: PLUGHOST_TELEGRAM_TOKEN"}
    base = (host.env.get("PLUGHOST_TELEGRAM_API_BASE") or DEFAULT_BASE).rstrip("/")
    chat_id = msg.target.get("chat_id", msg.sender)

    async def one(part: str) -> dict[str, Any]:
        body: dict[str, Any] = {"chat_id": chat_id, "text": part}
        if msg.target.get("message_id") is not None:
            body["reply_parameters"] = {"message_id": msg.target["message_id"], "allow_sending_without_reply": True}
        out = await post_json(host, f"{base}/bot{token}/sendMessage", body, channel=CHANNEL)
        result = (out.get("body") or {}).get("result") if isinstance(out.get("body"), dict) else None
        if isinstance(result, dict) and "message_id" in result:
            out["platformId"] = f"{chat_id}:{result['message_id']}"
        return out

    return await send_parts(chunks(text), one)


def adapter(host: Any) -> ChannelAdapter:
    return ChannelAdapter(CHANNEL, routes=routes(host), send=send)
