"""The webchat adapter (docs/channels.md#webchat): send a message, poll for replies, or stream them with SSE.

Routes (mounted on the host's ASGI app through the channel-adapter hook):

- ``GET  /channels/webchat`` — the chat page (the brand's productName and greeting filled in);
- ``POST /channels/webchat/messages`` ``{session?, visitor?, text, id?}`` → 202 ``{session, visitor, messageId, duplicate}``;
- ``GET  /channels/webchat/messages?session=S&after=N`` → ``{events: [{seq, role, text, at}]}``;
- ``GET  /channels/webchat/stream?session=S`` → ``text/event-stream`` of the same events
  (``Last-Event-ID`` or ``after`` resumes).

Webchat visitors are public. The session token is the sender id (one conversation, one browser tab);
the visitor token (kept by the page in the browser's local storage, minted here when a message
brings none) names the visitor across their conversations: only its hash is stored, as the key
of their own memory (docs/channels.md#visitor-memory). Every accepted message is
stored before the 202 (the Conversation itself is created from the second message on); the
events of a session are those stored Messages, re-read from the store on every read (a bounded
in-process cache, never the truth), numbered in the store's order, so every server sharing the
store shows one conversation alike and a reply written by another server or a resumed turn
reaches the visitor (docs/channels.md#several-servers-on-one-store). Bodies are capped at :data:`MAX_BODY` bytes; ``after``, ``wait`` and
``Last-Event-ID`` are ASCII decimals of at most 18 digits.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from importlib import resources
from typing import TYPE_CHECKING

from plughost import ChannelAdapter, Host, Principal, Route, StateKey, log
from plughost.api.http import client_address, int_param, parse_json, read_body
from plughost.api.http import throttle_check as check
from plughost.api.serving import stop_of
from plughost.api.store import CHANNEL_MESSAGE_LABELS, visitor_key
from plughost.plugins.channels.brand import product_name
from plughost.plugins.channels.pipeline import (
    DELIVERING,
    DELIVERING_KIND,
    Inbound,
    NotConfigured,
    conversation_id,
    gateway,
    now_iso,
)
from plughost.plugins.channels.settings import (
    CHANNELS_MAX_QUEUED,
    RATE_WEBCHAT_ADDRESS,
    RATE_WEBCHAT_VISITOR,
    WEBCHAT_MAX_TURNS,
)
from plughost.plugins.channels.wire import JSONMapping, JSONObject

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

CHANNEL = "webchat"
SESSION_RE = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
VISITOR_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
MAX_TEXT = 4000
KEEPALIVE_S = 15.0
STREAM_MAX_S = 60.0  # a stream ends after this; EventSource reconnects with Last-Event-ID (no event lost)
MAX_EVENTS = 200  # per session, in memory (older ones are still in the store)
MAX_SESSIONS = 2_000  # least recently active sessions are forgotten beyond this (and re-read on demand)
MAX_BODY = 64 * 1024
MAX_CACHED_EVENTS = 20_000  # over all sessions: the cache stays a few MB whatever visitors do
MAX_WAIT_S = 30
LIVE_S = 3.0  # a session read this recently (or being waited on) has its page open: a reply shows at once
MAX_SCAN = 5_000  # a conversation's Messages read to number them (a webchat conversation stays far below)
REFRESH_S = 1.0  # a waiting page's server re-reads the store this often (another server may have stored a reply)
OWNER_SCAN = 500  # owner replies read to find the one a returning visitor has not seen


class Sessions:
    """Per-session event logs, a cache of the stored Messages re-read from the store on every read
    (docs/channels.md#several-servers-on-one-store: any server shows the whole conversation), and
    the waiters this process wakes when it stores a message of the session."""

    def __init__(self) -> None:
        self.events: dict[str, list[JSONObject]] = {}
        self.waiters: dict[str, list[asyncio.Future[None]]] = {}
        self.read_at: dict[str, float] = {}  # session -> when a page last read it (monotonic)
        self.delivered: dict[str, None] = {}  # ids of replies this process delivered live (ordered, bounded)

    def reading(self, session: str) -> None:
        self.read_at[session] = time.monotonic()
        if len(self.read_at) > MAX_SESSIONS * 2:
            for stale in list(self.read_at)[:MAX_SESSIONS]:
                self.read_at.pop(stale, None)

    def live(self, session: str) -> bool:
        """Is a page reading this session now (a long poll or stream open, or a read a moment ago)?"""
        return bool(self.waiters.get(session)) or time.monotonic() - self.read_at.get(session, -1e9) < LIVE_S

    def wake_all(self) -> None:
        """The server is stopping: every long poll and stream answers now (the client reconnects)."""
        for waiting in list(self.waiters.values()):
            for fut in waiting:
                if not fut.done():
                    fut.set_result(None)

    def wake(self, session: str) -> None:
        """This process stored a message of the session: its readers re-read the store now."""
        for fut in self.waiters.pop(session, []):
            if not fut.done():
                fut.set_result(None)

    def mark_delivered(self, message_id: str) -> None:
        """A reply this process delivers live: the page turns its http(s) links into anchors."""
        self.delivered[message_id] = None
        if len(self.delivered) > MAX_CACHED_EVENTS:
            for old in list(self.delivered)[:MAX_CACHED_EVENTS // 2]:
                self.delivered.pop(old, None)

    def put(self, session: str, events: list[JSONObject]) -> list[JSONObject]:
        """The session's events as the store holds them now (the newest :data:`MAX_EVENTS`)."""
        for event in events:
            if event.get("id") in self.delivered and event.get("role") == "assistant":
                event["links"] = True
        self.events.pop(session, None)
        self.events[session] = events[-MAX_EVENTS:]  # most recently read last
        self.trim()
        return self.events.get(session, [])

    def push(self, session: str, role: str, text: str, message_id: str | None = None,
             extra: JSONObject | None = None, links: bool = False) -> JSONObject:
        """An event added to the cache alone (tests and tools; the routes re-read the store)."""
        log = self.events.pop(session, [])
        self.events[session] = log
        for event in log:
            if message_id and event.get("id") == message_id:
                return event
        event = {"seq": (log[-1]["seq"] if log else 0) + 1, "role": role, "text": text, "at": time.time(),
                 **(extra or {})}
        if links and role == "assistant":
            event["links"] = True
        if message_id:
            event["id"] = message_id
        log.append(event)
        del log[:-MAX_EVENTS]
        self.trim()
        self.wake(session)
        return event

    def trim(self) -> None:
        """Forget the least recently active sessions beyond the session and event budgets (re-read on demand)."""
        total = sum(len(log) for log in self.events.values())
        while self.events and (len(self.events) > MAX_SESSIONS or total > MAX_CACHED_EVENTS):
            total -= len(self.events.pop(next(iter(self.events))))

    def after(self, session: str, seq: int) -> list[JSONObject]:
        return [e for e in self.events.get(session, []) if e["seq"] > seq]

    async def wait(self, session: str, timeout: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.setdefault(session, []).append(fut)
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            pass
        finally:
            waiting = self.waiters.get(session)
            if waiting and fut in waiting:
                waiting.remove(fut)
                if not waiting:
                    del self.waiters[session]


def _stamp(props: JSONMapping) -> int:
    return int(props.get("receivedNs") or props.get("createdNs") or 0)


def stored_events(host: Host, session: str) -> list[JSONObject]:
    """The session's stored Messages as events in the store's order (when each was stored, then its
    id): ``seq`` is the message's place in the conversation, so every server numbers it alike."""
    gw = gateway(host)
    account = gw.require_account()
    rows = gw.store.find(guards=Principal.owner(account).guards, labels=[CHANNEL_MESSAGE_LABELS[CHANNEL]],
                         where={"conversationId": conversation_id(host, account, CHANNEL, session)}, limit=MAX_SCAN)
    rows.sort(key=lambda n: (_stamp(n.properties), n.id))
    events = []
    first = max(0, len(rows) - MAX_EVENTS)
    for seq, node in enumerate(rows[first:], start=first + 1):
        p = node.properties
        events.append({"seq": seq, "role": str(p.get("role")), "text": str(p.get("text") or ""),
                       "at": _stamp(p) / 1e9, "id": node.id, **marks(host, p)})
    return events


def marks(host: Host, props: JSONMapping) -> JSONObject:
    """How the page shows a stored reply: the owner's as the owner's (``from``, ``by`` the business's
    name; ``seen`` once a page read it), a notice as the page's own line (role ``notice``)."""
    if props.get("kind") == "held-notice":
        return {"role": "notice"}
    if props.get("sender") == "owner" and props.get("role") == "assistant":
        return {"from": "owner", "by": product_name(host.env), "seen": bool(props.get("seenAt"))}
    return {}


async def mark_seen(host: Host, events: list[JSONObject]) -> None:
    """An owner's reply handed to the visitor's page is seen: ``seenAt`` on its Message (the console shows it)."""
    unseen = [e for e in events if e.get("from") == "owner" and not e.get("seen") and e.get("id")]
    for event in unseen:
        event["seen"] = True
    if not unseen:
        return
    gw = gateway(host)
    stamp = now_iso()
    for event in unseen:
        await asyncio.to_thread(gw.update_message_by_id, event["id"], {"seenAt": stamp})
    log("webchat", "op=owner-reply-seen", replies=len(unseen))


def returning_session(host: Host, key: str) -> str | None:
    """The conversation a returning browser (visitor key ``key``) should reopen: the one holding
    an owner's reply it has not seen, else its latest one while the owner holds it; else None
    (a new conversation starts)."""
    gw = gateway(host)
    account = gw.require_account()
    label = [CHANNEL_MESSAGE_LABELS[CHANNEL]]
    owner = gw.store.find(guards=Principal.owner(account).guards, labels=label, where={"visitorKey": key, "sender": "owner"},
                          limit=OWNER_SCAN)
    waiting = [n for n in owner if n.properties.get("visitorKey") == key and not n.properties.get("seenAt")]
    if waiting:
        newest = max(waiting, key=lambda n: n.properties.get("createdNs") or 0)
        session = str(newest.properties.get("recipient") or "")
        return session if SESSION_RE.match(session) else None
    mine = gw.store.find(guards=Principal.owner(account).guards, labels=label, where={"visitorKey": key, "role": "user"},
                         order_by="receivedNs", descending=True, limit=1)
    if mine and mine[0].properties.get("visitorKey") == key:
        session = str(mine[0].properties.get("sender") or "")
        conv = gw.store.get(conversation_id(host, account, CHANNEL, session), guards=Principal.owner(account).guards)
        if conv is not None and conv.properties.get("ownerHolds") and SESSION_RE.match(session):
            return session
    return None


def forget(host: Host, senders: set[str]) -> int:
    """Drop erased visitors' cached events (``plughost erase`` in this process); how many sessions went."""
    store = host.state.get(SESSIONS)
    if store is None:
        return 0
    gone = [s for s in list(store.events) if s in senders]
    for session in gone:
        store.events.pop(session, None)
    return len(gone)


async def hydrate(host: Host, session: str, fresh: bool = False) -> Sessions:
    """The session's cache, re-read from the store (every read: a message another server stored,
    or erased, shows here too). ``fresh`` is kept for callers; every read is fresh now."""
    store = sessions(host)
    try:
        events = await asyncio.to_thread(stored_events, host, session)
    except NotConfigured:
        events = list(store.events.get(session, []))
    store.put(session, events)
    return store


SESSIONS: StateKey[Sessions] = StateKey("channels.webchat")


def sessions(host: Host) -> Sessions:
    def make() -> Sessions:
        made = Sessions()
        stop_of(host).on_stop(made.wake_all)
        return made

    return host.state.setdefault(SESSIONS, make)


def _error(status: int, error: str, detail: str) -> JSONResponse:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": error, "detail": detail}, status_code=status)


def _session_param(request: Request) -> str | None:
    value = request.query_params.get("session", "")
    return value if SESSION_RE.match(value) else None


def _after_param(request: Request) -> int | None:
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    return int_param(raw)


def _public(events: list[JSONObject]) -> list[JSONObject]:
    return [{k: v for k, v in e.items() if k != "id"} for e in events]


PAGE: StateKey[str] = StateKey("channels.webchat-page")


def page_html(host: Host) -> str:
    """The chat page with the brand's ``productName`` and greeting filled in (escaped), built once per host."""
    cached = host.state.get(PAGE)
    if cached is None:
        import html

        from plughost.plugins.channels.brand import greeting, product_name

        page = resources.files("plughost.plugins.channels").joinpath("webchat.html").read_text(encoding="utf-8")
        cached = (page.replace("__PRODUCT__", html.escape(product_name(host.env, host.plugins_dir)))
                  .replace("__GREETING__", html.escape(greeting(host.env, host.plugins_dir))))
        host.state.set(PAGE, cached)
    return cached


def routes(host: Host) -> tuple[Route, ...]:
    async def page(request: Request) -> Response:
        from starlette.responses import HTMLResponse

        return HTMLResponse(page_html(host), headers={"Cache-Control": "no-cache"})

    async def post_message(request: Request) -> Response:
        from starlette.responses import JSONResponse

        refused = check(host, RATE_WEBCHAT_ADDRESS, client_address(request),
                        "too many messages from this address; wait a little before sending more")
        if refused is not None:
            return refused
        raw = await read_body(request, MAX_BODY)
        if raw is None:
            return _error(413, "payload-too-large", f"body: larger than {MAX_BODY} bytes")
        try:
            body = parse_json(raw)
        except ValueError as exc:
            return _error(400, "invalid-json", f"{exc}; expected a JSON object {{session?, text}}")
        if not isinstance(body, dict):
            return _error(400, "invalid-body", "body: expected a JSON object {session?, text}")
        text = body.get("text")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
            return _error(400, "invalid-text", f"text: expected a non-empty string of at most {MAX_TEXT} characters")
        session = body.get("session") or secrets.token_urlsafe(16)
        if not isinstance(session, str) or not SESSION_RE.match(session):
            return _error(400, "invalid-session", "session: expected 8-64 characters of [A-Za-z0-9_-]")
        visitor = body.get("visitor") or secrets.token_urlsafe(24)
        if not isinstance(visitor, str) or not VISITOR_RE.match(visitor):
            return _error(400, "invalid-visitor", "visitor: expected 16-64 characters of [A-Za-z0-9_-]")
        client_id = body.get("id") or uuid.uuid4().hex
        if not isinstance(client_id, str) or len(client_id) > 128:
            return _error(400, "invalid-id", "id: expected a string of at most 128 characters")
        refused = check(host, RATE_WEBCHAT_VISITOR, session,
                        "too many messages in this chat; wait a little before sending more")
        if refused is not None:
            return refused
        account = gateway(host).account_id
        msg = Inbound(channel=CHANNEL, sender=session, text=text, platform_id=f"{session}:{client_id}",
                      target={"session": session}, visitor_key=visitor_key(account, f"webchat:{visitor}") if account else None)
        if gateway(host).queued >= CHANNELS_MAX_QUEUED.read(host.env):
            return JSONResponse({"error": "too-many-requests", "detail": "the chat is busy; try again shortly"},
                                status_code=429, headers={"Retry-After": "5"})
        try:
            mid, duplicate, _task = await gateway(host).accept(msg, max_turns=WEBCHAT_MAX_TURNS.read(host.env))
        except NotConfigured as exc:
            return _error(503, "not-configured", str(exc))
        if not duplicate:
            sessions(host).wake(session)  # this server's readers re-read the store now
        held = await asyncio.to_thread(gateway(host).held_by_owner, msg)  # a person answers: no "typing…"
        return JSONResponse({"session": session, "visitor": visitor, "messageId": mid, "duplicate": duplicate,
                             "held": held}, status_code=202)

    async def resume(request: Request) -> Response:
        """``POST /channels/webchat/resume {visitor}``: a browser coming back (a new tab, the browser
        reopened) learns which of its conversations to reopen, the one with the owner's reply it has
        not seen yet ({session}, or null). The visitor token is the browser's own, so only its
        conversations are ever named."""
        from starlette.responses import JSONResponse

        refused = check(host, RATE_WEBCHAT_ADDRESS, client_address(request),
                        "too many requests from this address; wait a little")
        if refused is not None:
            return refused
        raw = await read_body(request, MAX_BODY)
        if raw is None:
            return _error(413, "payload-too-large", f"body: larger than {MAX_BODY} bytes")
        try:
            body = parse_json(raw)
        except ValueError as exc:
            return _error(400, "invalid-json", f"{exc}; expected a JSON object {{visitor}}")
        visitor = body.get("visitor") if isinstance(body, dict) else None
        if not isinstance(visitor, str) or not VISITOR_RE.match(visitor):
            return _error(400, "invalid-visitor", "visitor: expected 16-64 characters of [A-Za-z0-9_-]")
        account = gateway(host).account_id
        if not account:
            return _error(503, "not-configured", "ACCOUNT_ID is not set")
        session = await asyncio.to_thread(returning_session, host, visitor_key(account, f"webchat:{visitor}"))
        log("webchat", "op=resume", reopened=session is not None)
        return JSONResponse({"session": session})

    async def poll(request: Request) -> Response:
        from starlette.responses import JSONResponse

        session, after = _session_param(request), _after_param(request)
        if session is None:
            return _error(400, "invalid-session", "session: expected 8-64 characters of [A-Za-z0-9_-]")
        if after is None:
            return _error(400, "invalid-after", "after: expected a non-negative integer")
        wait = int_param(request.query_params.get("wait"), maximum=MAX_WAIT_S)
        if wait is None:
            return _error(400, "invalid-wait", f"wait: expected a non-negative integer of seconds (at most {MAX_WAIT_S})")
        store = await hydrate(host, session)
        store.reading(session)
        events = store.after(session, after)
        ends = time.monotonic() + wait
        while not events and not stop_of(host).is_set and (left := ends - time.monotonic()) > 0:
            await store.wait(session, min(REFRESH_S, left))  # woken at once by this server's own writes
            await hydrate(host, session)  # and re-reading the store sees the other servers'
            events = store.after(session, after)
        if await request.is_disconnected():  # the tab closed during the long poll: nothing was seen
            return JSONResponse({"session": session, "events": []})
        store.reading(session)
        await mark_seen(host, events)
        return JSONResponse({"session": session, "events": _public(events)})

    async def stream(request: Request) -> Response:
        from starlette.responses import StreamingResponse

        session, after = _session_param(request), _after_param(request)
        if session is None:
            return _error(400, "invalid-session", "session: expected 8-64 characters of [A-Za-z0-9_-]")
        if after is None:
            return _error(400, "invalid-after", "after / Last-Event-ID: expected a non-negative integer")
        store = await hydrate(host, session)

        async def events() -> AsyncIterator[str]:
            last = after
            ends = time.monotonic() + STREAM_MAX_S
            yield "retry: 1000\n\n"
            stop = stop_of(host)
            while time.monotonic() < ends and not stop.is_set:
                store.reading(session)
                fresh = store.after(session, last)
                await mark_seen(host, fresh)
                for event in fresh:
                    last = event["seq"]
                    data = json.dumps(_public([event])[0], ensure_ascii=False)
                    yield f"id: {event['seq']}\nevent: message\ndata: {data}\n\n"
                if await request.is_disconnected() or stop.is_set:
                    return
                quiet = min(ends, time.monotonic() + KEEPALIVE_S)
                while not stop.is_set and (left := quiet - time.monotonic()) > 0:
                    await store.wait(session, min(REFRESH_S, left))
                    await hydrate(host, session)
                    if store.after(session, last):
                        break
                else:
                    yield ": keepalive\n\n"

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return (
        Route("/channels/webchat", endpoint=page, methods=("GET",), name="webchat-page"),
        Route("/channels/webchat/messages", endpoint=post_message, methods=("POST",), name="webchat-send"),
        Route("/channels/webchat/messages", endpoint=poll, methods=("GET",), name="webchat-poll"),
        Route("/channels/webchat/stream", endpoint=stream, methods=("GET",), name="webchat-stream"),
        Route("/channels/webchat/resume", endpoint=resume, methods=("POST",), name="webchat-resume"),
    )


async def send(host: Host, msg: Inbound, text: str) -> JSONObject:
    """Deliver a reply to the visitor's session (poll and SSE read it)."""
    session = str(msg.target.get("session") or msg.sender)
    owner = msg.platform_id[6:] if msg.platform_id.startswith("owner:") else None  # the console's reply id
    store = sessions(host)
    live = store.live(session)  # the visitor's page is open now: the reply shows at once
    rid = DELIVERING.get() or owner  # the reply is stored (pending) before it is sent
    if rid:
        store.mark_delivered(rid)
    await hydrate(host, session)
    event = next((e for e in store.events.get(session, []) if rid and e.get("id") == rid), None)
    if event is None:  # not in the store (a caller that stored nothing): this process's page shows it
        if owner:
            extra: JSONObject = {"from": "owner", "by": product_name(host.env), "seen": False}
        else:
            extra = {"role": "notice"} if DELIVERING_KIND.get() == "held-notice" else {}
        role = extra.pop("role", "assistant")
        event = store.push(session, role, text, rid, extra, links=True)
    store.wake(session)
    return {"ok": True, "attempts": 1, "platformId": f"{session}:reply:{event['seq']}", "live": live}


def adapter(host: Host) -> ChannelAdapter:
    return ChannelAdapter(CHANNEL, routes=routes(host), send=send)
