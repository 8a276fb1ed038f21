"""The admin chat (``POST /api/admin/chat``): an admin's turn over HTTP, carried by an admin session token.

Body ``{text, newConversation?}`` → 202 ``{conversation, conversationId, sessionId, messageId, duplicate}``; the
turn runs through the gateway like any channel's (persist first, then the agent), as an admin
turn of the token's user. The host's guard already refused a request without a credential;
this route also needs the credential to be an admin session (it names the user).

Restart survival: a user's conversations are numbered in
``<home>/accounts/<id>/admin-conversations.json`` (``{userId: n}``); a turn continues the user's
latest one (sender ``<userId>~<n>``, so the same deterministic session id, which the claude runner
resumes with ``--resume``) unless the body says ``"newConversation": true``. The first time a
process sees a session token (after a restart, say) it logs ``[session-rehydrate-from-token]``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from host import credentials
from host.graph import conversation_node_id
from host.http import json_error, parse_json, read_body
from host.log import log
from host.state import StateKey
from host.types import ChannelAdapter, Route
from plugins.channels.pipeline import Inbound, NotConfigured, gateway
from plugins.channels.runner import session_id_for

CHANNEL = "admin"
MAX_BODY = 64 * 1024
MAX_TEXT = 16000
CONVERSATIONS_FILE = "admin-conversations.json"
SEEN: StateKey[set[str]] = StateKey("channels.admin-chat.seen")
_lock = threading.Lock()


def admin_user(sender: str) -> str:
    """The userId an admin-chat sender (``<userId>~<n>``) belongs to."""
    return sender.rsplit("~", 1)[0]


def conversation(home: Path, account: str, user: str, *, new: bool) -> int:
    """The user's current conversation number; ``new`` starts (and records) the next one."""
    path = home / "accounts" / account / CONVERSATIONS_FILE
    with _lock:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        data = data if isinstance(data, dict) else {}
        stored = data.get(user)
        current: int = stored if isinstance(stored, int) and not isinstance(stored, bool) else 0
        if new or user not in data:
            current = current + 1 if new else 1
            data[user] = current
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(tmp, path)
        return current


def routes(host: Any) -> tuple[Route, ...]:
    async def chat(request: Any) -> Any:
        from starlette.responses import JSONResponse

        account = (host.env.get("ACCOUNT_ID") or "").strip()
        auth = request.headers.get("authorization", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else request.cookies.get("admin_session")
        session, _reason = credentials.validate(credentials.load_secret(host.home), token)
        if session is None or not account or session.account_id != account:
            return json_error(401, "unauthorized", "admin chat: expected an admin session token of this account")
        seen = host.state.setdefault(SEEN, set)
        if session.nonce not in seen:
            seen.add(session.nonce)
            log("session-rehydrate-from-token", accountId=account[:8], userId=session.user_id,
                ageMs=session.age_ms())
        raw = await read_body(request, MAX_BODY)
        if raw is None:
            return json_error(413, "payload-too-large", f"body: larger than {MAX_BODY} bytes")
        try:
            body = parse_json(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return json_error(400, "invalid-body", "body: expected a JSON object {text, newConversation?}")
        text, new = body.get("text"), body.get("newConversation", False)
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
            return json_error(400, "invalid-text", f"text: expected a non-empty string of at most {MAX_TEXT} characters")
        if not isinstance(new, bool):
            return json_error(400, "invalid-newConversation", "newConversation: expected true or false")
        number = conversation(host.home, account, session.user_id, new=new)
        sender = f"{session.user_id}~{number}"
        msg = Inbound(channel=CHANNEL, sender=sender, text=text, platform_id=f"{sender}:{time.time_ns()}",
                      target={"sender": sender})
        try:
            mid, duplicate, _task = await gateway(host).accept(msg)
        except NotConfigured as exc:
            return json_error(503, "not-configured", str(exc))
        return JSONResponse({"conversation": number, "conversationId": conversation_node_id(account, CHANNEL, sender),
                             "sessionId": session_id_for(account, msg.sender_key),
                             "messageId": mid, "duplicate": duplicate}, status_code=202)

    return (Route("/api/admin/chat", endpoint=chat, methods=("POST",), name="admin-chat"),)


async def send(host: Any, msg: Inbound, text: str) -> dict[str, Any]:
    """The reply is stored with the turn (the admin reads it there); nothing to push."""
    return {"ok": True, "attempts": 1, "platformId": f"{msg.sender}:reply"}


def adapter(host: Any) -> ChannelAdapter:
    return ChannelAdapter(CHANNEL, routes=routes(host), send=send)
