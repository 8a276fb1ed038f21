"""The webchat adapter (SPEC 10.5): send a message, poll for replies, or stream them with SSE.

Routes (mounted on the host's ASGI app through the channel-adapter hook):

- ``GET  /channels/webchat`` — a minimal HTML chat page;
- ``POST /channels/webchat/messages`` ``{session?, text, id?}`` → 202 ``{session, messageId, duplicate}``;
- ``GET  /channels/webchat/messages?session=S&after=N`` → ``{events: [{seq, role, text, at}]}``;
- ``GET  /channels/webchat/stream?session=S`` → ``text/event-stream`` of the same events
  (``Last-Event-ID`` or ``after`` resumes).

Webchat visitors are public. The session token is the sender id; the events of a session
live in this process (the Conversation itself is persisted from the second message on).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
import uuid
from importlib import resources
from typing import Any

from host.types import ChannelAdapter, Route
from plugins.channels.pipeline import Inbound, NotConfigured, gateway

CHANNEL = "webchat"
SESSION_RE = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
MAX_TEXT = 4000
KEEPALIVE_S = 15.0
STREAM_MAX_S = 60.0  # a stream ends after this; EventSource reconnects with Last-Event-ID (no event lost)
MAX_EVENTS = 500  # per session, in memory
MAX_SESSIONS = 10_000  # least recently active sessions are forgotten beyond this


class Sessions:
    """Per-session event logs and waiters (in-process)."""

    def __init__(self) -> None:
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.waiters: dict[str, list[asyncio.Future[None]]] = {}

    def push(self, session: str, role: str, text: str) -> dict[str, Any]:
        log = self.events.pop(session, [])
        self.events[session] = log  # most recently active last
        event = {"seq": (log[-1]["seq"] if log else 0) + 1, "role": role, "text": text, "at": time.time()}
        log.append(event)
        del log[:-MAX_EVENTS]
        while len(self.events) > MAX_SESSIONS:
            self.events.pop(next(iter(self.events)))
        for fut in self.waiters.pop(session, []):
            if not fut.done():
                fut.set_result(None)
        return event

    def after(self, session: str, seq: int) -> list[dict[str, Any]]:
        return [e for e in self.events.get(session, []) if e["seq"] > seq]

    async def wait(self, session: str, timeout: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.setdefault(session, []).append(fut)
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            pass


def sessions(host: Any) -> Sessions:
    return host.state.setdefault("channels.webchat", Sessions())


def _error(status: int, error: str, detail: str) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": error, "detail": detail}, status_code=status)


def _session_param(request: Any) -> str | None:
    value = request.query_params.get("session", "")
    return value if SESSION_RE.match(value) else None


def _after_param(request: Any) -> int | None:
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    return int(raw) if raw.isdigit() else None


def routes(host: Any) -> tuple[Route, ...]:
    async def page(request: Any) -> Any:
        from starlette.responses import HTMLResponse

        html = resources.files("plugins.channels").joinpath("webchat.html").read_text(encoding="utf-8")
        return HTMLResponse(html, headers={"Cache-Control": "no-cache"})

    async def post_message(request: Any) -> Any:
        from starlette.responses import JSONResponse

        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            return _error(400, "invalid-json", "body: expected a JSON object {session?, text}")
        if not isinstance(body, dict):
            return _error(400, "invalid-body", "body: expected a JSON object {session?, text}")
        text = body.get("text")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
            return _error(400, "invalid-text", f"text: expected a non-empty string of at most {MAX_TEXT} characters")
        session = body.get("session") or secrets.token_urlsafe(16)
        if not isinstance(session, str) or not SESSION_RE.match(session):
            return _error(400, "invalid-session", "session: expected 8-64 characters of [A-Za-z0-9_-]")
        client_id = body.get("id") or uuid.uuid4().hex
        if not isinstance(client_id, str) or len(client_id) > 128:
            return _error(400, "invalid-id", "id: expected a string of at most 128 characters")
        msg = Inbound(channel=CHANNEL, sender=session, text=text, platform_id=f"{session}:{client_id}",
                      target={"session": session})
        try:
            mid, duplicate, _task = await gateway(host).accept(msg)
        except NotConfigured as exc:
            return _error(503, "not-configured", str(exc))
        if not duplicate:
            sessions(host).push(session, "user", text)
        return JSONResponse({"session": session, "messageId": mid, "duplicate": duplicate}, status_code=202)

    async def poll(request: Any) -> Any:
        from starlette.responses import JSONResponse

        session, after = _session_param(request), _after_param(request)
        if session is None:
            return _error(400, "invalid-session", "session: expected 8-64 characters of [A-Za-z0-9_-]")
        if after is None:
            return _error(400, "invalid-after", "after: expected a non-negative integer")
        wait = request.query_params.get("wait", "0")
        events = sessions(host).after(session, after)
        if not events and wait.isdigit() and int(wait) > 0:
            await sessions(host).wait(session, min(int(wait), 30))
            events = sessions(host).after(session, after)
        return JSONResponse({"session": session, "events": events})

    async def stream(request: Any) -> Any:
        from starlette.responses import StreamingResponse

        session, after = _session_param(request), _after_param(request)
        if session is None:
            return _error(400, "invalid-session", "session: expected 8-64 characters of [A-Za-z0-9_-]")
        if after is None:
            return _error(400, "invalid-after", "after / Last-Event-ID: expected a non-negative integer")
        store = sessions(host)

        async def events() -> Any:
            last = after
            ends = time.monotonic() + STREAM_MAX_S
            yield "retry: 1000\n\n"
            while time.monotonic() < ends:
                for event in store.after(session, last):
                    last = event["seq"]
                    yield f"id: {event['seq']}\nevent: message\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
                if await request.is_disconnected():
                    return
                before = len(store.events.get(session, []))
                await store.wait(session, max(0.0, min(KEEPALIVE_S, ends - time.monotonic())))
                if len(store.events.get(session, [])) == before:
                    yield ": keepalive\n\n"

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return (
        Route("/channels/webchat", endpoint=page, methods=("GET",), name="webchat-page"),
        Route("/channels/webchat/messages", endpoint=post_message, methods=("POST",), name="webchat-send"),
        Route("/channels/webchat/messages", endpoint=poll, methods=("GET",), name="webchat-poll"),
        Route("/channels/webchat/stream", endpoint=stream, methods=("GET",), name="webchat-stream"),
    )


async def send(host: Any, msg: Inbound, text: str) -> dict[str, Any]:
    """Deliver a reply to the visitor's session (poll and SSE read it)."""
    session = str(msg.target.get("session") or msg.sender)
    event = sessions(host).push(session, "assistant", text)
    return {"ok": True, "attempts": 1, "platformId": f"{session}:reply:{event['seq']}"}


def adapter(host: Any) -> ChannelAdapter:
    return ChannelAdapter(CHANNEL, routes=routes(host), send=send)
