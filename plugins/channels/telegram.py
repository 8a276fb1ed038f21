"""The Telegram adapter (docs/channels.md#telegram): Bot API webhook in, ``sendMessage`` out.

Configuration (env): ``PLUGHOST_TELEGRAM_TOKEN`` (bot token), ``PLUGHOST_TELEGRAM_SECRET``
(the ``secret_token`` given to ``setWebhook``; every update must carry it in
``X-Telegram-Bot-Api-Secret-Token``), ``PLUGHOST_TELEGRAM_API_BASE`` (default
``https://api.telegram.org``). Telegram sender ids are opaque: a sender becomes an admin once
they share their contact (the phone joins the alias cache).
"""

from __future__ import annotations

import hmac
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from plughost import ChannelAdapter, Host, Route, log
from plughost.api.http import parse_json, read_body
from plughost.plugins.channels.compose import ReplyContext
from plughost.plugins.channels.outbound import chunks, post_json, send_parts
from plughost.plugins.channels.pipeline import Inbound, NotConfigured, gateway
from plughost.plugins.channels.settings import TELEGRAM_API_BASE, TELEGRAM_SECRET, TELEGRAM_TOKEN
from plughost.plugins.channels.wire import JSON, JSONObject

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

CHANNEL = "telegram"
SECRET_HEADER = "x-telegram-bot-api-secret-token"


def _error(status: int, error: str, detail: str) -> JSONResponse:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": error, "detail": detail}, status_code=status)


MAX_BODY = 1024 * 1024  # Bot API updates are a few KiB; a big one is not from Telegram


def _text(value: JSON, limit: int = 200) -> str:
    """A scalar field as short text ('?' for anything else): a hostile update cannot make a note huge."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return "?"
    return str(value)[:limit]


def _str_or_none(value: JSON) -> str | None:
    return value if isinstance(value, str) and value else None


def media_notes(message: JSONObject) -> list[str]:
    notes = []
    photo = message.get("photo")
    if isinstance(photo, list) and photo:
        largest = photo[-1] if isinstance(photo[-1], dict) else {}
        notes.append(f"[media: photo id={_text(largest.get('file_id', '?'))}]")
    for kind in ("document", "audio", "voice", "video", "video_note", "sticker", "animation"):
        item = message.get(kind)
        if isinstance(item, dict):
            extra = f" name={_text(item['file_name'])}" if item.get("file_name") else ""
            mime = f" {_text(item['mime_type'])}" if item.get("mime_type") else ""
            notes.append(f"[media: {kind}{mime} id={_text(item.get('file_id', '?'))}{extra}]")
    if isinstance(message.get("location"), dict):
        loc = message["location"]
        notes.append(f"[location: {_text(loc.get('latitude'))},{_text(loc.get('longitude'))}]")
    return notes


def sent_at_of(stamp: JSON) -> str | None:
    """A Unix time as ISO-8601 UTC; None for anything that is not a plausible one (1e20, bools, text)."""
    if isinstance(stamp, bool) or not isinstance(stamp, int) or not 0 <= stamp < 32_503_680_000:  # < year 3000
        return None
    return datetime.fromtimestamp(stamp, UTC).isoformat().replace("+00:00", "Z")


def _scalar_id(value: JSON, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or len(str(value)) > 64:
        raise ValueError(f"{field}: expected an integer or string id")
    return str(value)


def parse_update(update: JSON) -> Inbound | None:
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
    chat_id = _scalar_id(chat["id"], "message.chat.id")
    message_id = _scalar_id(message["message_id"], "message.message_id")
    sender_id = _scalar_id(sender.get("id", chat["id"]), "message.from.id")
    text = _str_or_none(message.get("text")) or _str_or_none(message.get("caption")) or ""
    phone = None
    contact = message.get("contact")
    if (isinstance(contact, dict) and str(contact.get("user_id")) == sender_id
            and isinstance(contact.get("phone_number"), str) and contact["phone_number"]):
        phone = contact["phone_number"][:64]  # the sender shared their own contact
        text = text or "[shared their contact]"
    reply = None
    quoted = message.get("reply_to_message")
    if isinstance(quoted, dict):
        sent_by = quoted.get("from")
        author = sent_by if isinstance(sent_by, dict) else {}
        reply = ReplyContext(id=_text(quoted.get("message_id"), 64),
                             text=_str_or_none(quoted.get("text")) or _str_or_none(quoted.get("caption")),
                             sender=_str_or_none(author.get("username")) or _str_or_none(author.get("first_name")))
    edited = f":edit:{_text(message.get('edit_date', ''), 32)}" if "message" not in update else ""
    return Inbound(
        channel=CHANNEL, sender=sender_id, text=text, platform_id=f"{chat_id}:{message_id}{edited}",
        sent_at=sent_at_of(message.get("date")), phone=phone,
        name=_str_or_none(sender.get("username")) or _str_or_none(sender.get("first_name")), reply=reply,
        media_notes=media_notes(message), target={"chat_id": chat["id"], "message_id": message["message_id"]},
    )


def routes(host: Host) -> tuple[Route, ...]:
    async def webhook(request: Request) -> Response:
        from starlette.responses import JSONResponse

        secret = TELEGRAM_SECRET.read(host.env) or ""
        if not secret:
            return _error(503, "not-configured", "PLUGHOST_TELEGRAM_SECRET is not set")
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), secret.encode()):
            log("channels", "op=webhook-rejected", channel=CHANNEL, reason="bad-secret")
            return _error(401, "unauthorized", "X-Telegram-Bot-Api-Secret-Token: missing or wrong")
        raw = await read_body(request, MAX_BODY)
        if raw is None:
            return _error(413, "payload-too-large", f"body: larger than {MAX_BODY} bytes")
        try:
            msg = parse_update(parse_json(raw))
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


async def send(host: Host, msg: Inbound, text: str) -> JSONObject:
    """``sendMessage``; a reply longer than Telegram's 4096-unit limit goes out in parts, in order."""
    token = TELEGRAM_TOKEN.read(host.env) or ""
    if not token:
        return {"ok": False, "reason": "not-configured: PLUGHOST_TELEGRAM_TOKEN"}
    base = TELEGRAM_API_BASE.read(host.env).rstrip("/")
    chat_id = msg.target.get("chat_id", msg.sender)

    async def one(part: str) -> JSONObject:
        body: JSONObject = {"chat_id": chat_id, "text": part}
        if msg.target.get("message_id") is not None:
            body["reply_parameters"] = {"message_id": msg.target["message_id"], "allow_sending_without_reply": True}
        out = await post_json(host, f"{base}/bot{token}/sendMessage", body, channel=CHANNEL)
        result = (out.get("body") or {}).get("result") if isinstance(out.get("body"), dict) else None
        if isinstance(result, dict) and "message_id" in result:
            out["platformId"] = f"{chat_id}:{result['message_id']}"
        return out

    return await send_parts(chunks(text), one)


def adapter(host: Host) -> ChannelAdapter:
    return ChannelAdapter(CHANNEL, routes=routes(host), send=send)
