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

Reading the replies: ``GET /api/admin/chat?conversationId=<id>`` (default: the user's current
conversation; ``limit`` the latest N, default 100, at most 500) → 200 ``{conversation,
conversationId, messages: [{id, role, text, at, inReplyTo, status}]}`` oldest first. Only an admin
session token of this account reads, and only its own user's conversations: any other id (another
user's, another account's, one never used) is 404 ``not-found``, the same answer as an absent one.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from plughost import ChannelAdapter, Host, Principal, Route, StateKey, log
from plughost.api import credentials
from plughost.api.http import cookie_post_refusal, json_error, read_json_object
from plughost.api.store import MESSAGE_LABEL
from plughost.plugins.channels import session_levers
from plughost.plugins.channels.pipeline import Inbound, NotConfigured, gateway
from plughost.plugins.channels.pipeline import conversation_id as conversation_id_of
from plughost.plugins.channels.runner import agent_session_for
from plughost.plugins.channels.wire import JSONObject

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

CHANNEL = "admin"
MAX_BODY = 64 * 1024
MAX_TEXT = 16000
CONVERSATIONS_FILE = "admin-conversations.json"
SEEN: StateKey[set[str]] = StateKey("channels.admin-chat.seen")
_lock = threading.Lock()


def conversation(home: Path, account: str, user: str, *, new: bool) -> int:
    """The user's current conversation number; ``new`` starts (and records) the next one. The
    current one is the latest, or the one the user resumed (``owner_sessions``); a stopped one is
    never continued: the turn starts the next conversation."""
    path = home / "accounts" / account / CONVERSATIONS_FILE
    with session_levers.lock, _lock:  # the order owner_sessions takes them in
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        data = data if isinstance(data, dict) else {}
        stored = data.get(user)
        count: int = stored if isinstance(stored, int) and not isinstance(stored, bool) else 0
        if not new and user in data:
            current, ended = session_levers.current_of(home, account, user, count)
            if not ended:
                return current
            new = True
        current = count + 1 if new else 1
        data[user] = current
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, path)
        session_levers.made_current(home, account, user, current)
        return current


def _principal(host: Host, request: Request) -> Principal | None:
    """The principal the request runs as: built once where HTTP calls enter (the host's front door)."""
    from plughost.api.http import request_principal

    found = request_principal(request)
    return found if found is not None else host.principal


def _admin_session(host: Host, request: Request) -> tuple[str, credentials.Session] | None:
    """The serving account and the request's admin session of it, or None (the caller answers 401)."""
    principal = _principal(host, request)
    account = principal.account or "" if principal is not None else ""
    auth = request.headers.get("authorization", "")
    token = auth[7:].strip() if auth[:7].lower() == "bearer " else request.cookies.get("admin_session")
    session, _reason = credentials.check_session(host.home, token)
    if session is None or not account or session.account_id != account:
        return None
    return account, session


UNAUTHORIZED = "admin chat: expected an admin session token of this account"
NARROWED = ("admin chat: this server is narrowed (ALLOWED_SCOPES / AGENT_SLUG); an admin conversation is wider "
            "than it (account-isolation)")


def _narrowed(host: Host, request: Request) -> Response | None:
    """403 when the serving principal is narrowed: an admin turn (or its transcript) would widen past it."""
    principal = _principal(host, request)
    if principal is not None and not principal.is_admin:
        return json_error(403, "account-isolation", NARROWED)
    return None


def _admin_caller(host: Host, request: Request) -> Response | tuple[str, credentials.Session]:
    """``(account, admin session)`` of the request, or the 401 (no admin session of this account)
    or 403 (a narrowed server) that refuses it: the one door of every admin-chat route."""
    found = _admin_session(host, request)
    if found is None:
        return json_error(401, "unauthorized", UNAUTHORIZED)
    crossed = cookie_post_refusal(request)  # a POST carried by the cookie: this site's page only
    if crossed is not None:
        return crossed
    refused = _narrowed(host, request)
    return refused if refused is not None else found


_CONVERSATION_ID = re.compile(r"^conv-[0-9a-f]{32}$")
READ_LIMIT, READ_MAX = 100, 500


def read_replies(host: Host, account: str, user: str, conversation_id: str | None, limit: int) -> JSONObject | None:
    """The user's admin conversation (its current one when ``conversation_id`` is None) and its
    latest ``limit`` Messages, oldest first; None when it is not one of this user's conversations."""
    try:  # read only: a read records no conversation
        data = json.loads((host.home / "accounts" / account / CONVERSATIONS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    stored = data.get(user) if isinstance(data, dict) else None
    current = stored if isinstance(stored, int) and not isinstance(stored, bool) and 0 < stored < 1_000_000 else 0
    owned = {conversation_id_of(host, account, CHANNEL, f"{user}~{n}"): n for n in range(1, current + 1)}
    conv = conversation_id or conversation_id_of(host, account, CHANNEL, f"{user}~{current}")
    if conv not in owned:
        return None
    rows = host.store().find(guards=Principal.owner(account).guards, labels=[MESSAGE_LABEL],
                             where={"conversationId": conv, "channel": CHANNEL}, limit=10_000)
    rows.sort(key=lambda n: n.properties.get("receivedNs") or n.properties.get("createdNs") or 0)
    messages = [{"id": n.id, "role": n.properties.get("role"), "text": n.properties.get("text"),
                 "at": n.properties.get("receivedAt") or n.properties.get("createdAt"),
                 "inReplyTo": n.properties.get("inReplyTo"),
                 "status": n.properties.get("status") or n.properties.get("deliveryStatus")}
                for n in rows[-limit:]]
    return {"conversation": owned[conv], "conversationId": conv, "messages": messages}


def routes(host: Host) -> tuple[Route, ...]:
    async def read(request: Request) -> Response:
        from starlette.responses import JSONResponse

        from plughost.api.http import int_param

        caller = _admin_caller(host, request)
        if not isinstance(caller, tuple):
            return caller  # 401 or 403
        account, session = caller
        conv = request.query_params.get("conversationId")
        if conv is not None and not _CONVERSATION_ID.match(conv):
            return json_error(400, "invalid-conversationId", "conversationId: expected conv- and 32 hex characters "
                                                             "(the conversationId POST /api/admin/chat answered)")
        limit = int_param(request.query_params.get("limit"), default=READ_LIMIT, maximum=READ_MAX)
        if not limit:
            return json_error(400, "invalid-limit", f"limit: expected an integer from 1 to {READ_MAX}")
        result = await asyncio.to_thread(read_replies, host, account, session.user_id, conv, limit)
        if result is None:
            return json_error(404, "not-found", "conversationId: no such admin conversation of this user")
        return JSONResponse(result)

    async def chat(request: Request) -> Response:
        from starlette.responses import JSONResponse

        caller = _admin_caller(host, request)
        if not isinstance(caller, tuple):
            return caller  # 401 or 403
        account, session = caller
        seen = host.state.setdefault(SEEN, set)
        if session.nonce not in seen:
            seen.add(session.nonce)
            log("session-rehydrate-from-token", accountId=account[:8], userId=session.user_id,
                ageMs=session.age_ms())
        body, refused = await read_json_object(request, MAX_BODY, "{text, newConversation?}")
        if body is None:
            return refused
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
        return JSONResponse({"conversation": number, "conversationId": conversation_id_of(host, account, CHANNEL, sender),
                             "sessionId": agent_session_for(account, msg.sender_key, "admin"),  # the agent session its turns run in
                             "messageId": mid, "duplicate": duplicate}, status_code=202)

    return (Route("/api/admin/chat", endpoint=chat, methods=("POST",), name="admin-chat"),
            Route("/api/admin/chat", endpoint=read, methods=("GET",), name="admin-chat-read"))


async def send(host: Host, msg: Inbound, text: str) -> JSONObject:
    """The reply is stored with the turn (the admin reads it there); nothing to push."""
    return {"ok": True, "attempts": 1, "platformId": f"{msg.sender}:reply"}


def adapter(host: Host) -> ChannelAdapter:
    return ChannelAdapter(CHANNEL, routes=routes(host), send=send)
