"""The inbound pipeline (docs/channels.md#pipeline): one entry point per message, each step a small function.

adapter parses → :meth:`Gateway.accept` persists first (MERGE the Conversation, write the
channel's Message label, idempotent on the platform message id) → in the sender's ordered lane:
identity → screening → route → compose → run → reply through the adapter.

``accept`` returns once the message is durable, so a webhook answers 200 (webchat 202) only for
a stored message, and the agent turn runs behind it. A sender's turns run strictly in arrival
order; different senders run in parallel. Every channel persists every inbound Message at once,
including ones never answered; webchat creates only its Conversation lazily, on the user's
second message, and links the Messages stored before it then.

Each stored inbound (and each reply) carries ``claimedBy``, the token of the process that took
it (:mod:`plughost.plugins.channels.claims`); a turn that process never finished is resumed by the next
one (on startup, or by ``plughost channels retry``) once that process is gone, exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import inspect
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeAlias

from plughost import AgentTurn, GraphStore, Guards, Host, Principal, StateKey, log
from plughost.api import hooks
from plughost.api.credentials import conversation_secret
from plughost.api.hooks import run_agent
from plughost.api.serving import stop_of
from plughost.api.store import (
    CHANNEL_MESSAGE_LABELS,
    HAS_MESSAGE,
    conversation_node_id,
    resolve_conversation_id,
    visitor_key,
)
from plughost.plugins.channels import compose as composing
from plughost.plugins.channels import identity as ident
from plughost.plugins.channels.claims import Claims, LeaseClaims
from plughost.plugins.channels.compose import ReplyContext, ScheduleProvenance, TurnInput, well_formed
from plughost.plugins.channels.runner import (
    KeyedSerializer,
    RunnerError,
    agent_session_for,
    session_id_for,
)
from plughost.plugins.channels.runner_choice import get_runner
from plughost.plugins.channels.screening import screen
from plughost.plugins.channels.settings import AGENT_CONCURRENCY
from plughost.plugins.channels.wire import JSON, JSONMapping, JSONObject

REFUSAL = "Sorry, I can't help with that request."
AGENT_UNAVAILABLE = "Sorry, I can't answer right now. Please try again in a little while."

Delivery: TypeAlias = JSONObject
"""A reply's delivery outcome: ``{"ok": bool, "reason"?, "attempts"?, "platformId"?}`` (an adapter's ``send``)."""
Send: TypeAlias = Callable[..., Awaitable[JSON] | JSON]
"""A channel adapter's ``send(host, msg: Inbound, text) -> Delivery`` (:class:`plughost.ChannelAdapter`)."""
BUSY = "I'm still answering your earlier messages; please wait for those replies before sending more."
DELIVERING: contextvars.ContextVar[str | None] = contextvars.ContextVar("channels_delivering", default=None)
"""The stored reply Message an adapter's ``send`` is delivering (webchat keys its events on it)."""
DELIVERING_KIND: contextvars.ContextVar[str | None] = contextvars.ContextVar("channels_delivering_kind", default=None)
"""Its ``kind`` (``agent``, ``held-notice`` ...): webchat shows a notice as the page's own line, not a reply."""
HELD_NOTICE = "A person from {business} will answer you here."
"""Told once when a visitor writes to a conversation the owner holds (not again until it is handed back)."""


class NotConfigured(Exception):
    """The gateway lacks what it needs (ACCOUNT_ID)."""


class TurnInterrupted(Exception):
    """The process is stopping: the turn's agent did not run (or was ended at the grace deadline).
    The inbound stays ``received`` under this process's claim, released at exit: the next start
    resumes it."""


POST_AGENT_S = 1.5  # after the grace, how long interrupted and finishing turns get to record their outcome


MAX_REPLY_CHARS = 16_000  # about four Telegram messages; a runaway agent must not flood a chat


def cap_reply(text: str, message_id: str, limit: int) -> str:
    """Cut an over-long reply at a word boundary with an ellipsis, and say so in the log."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ", limit // 2)
    cut = (cut[:space] if space > 0 else cut).rstrip()
    log("channels", "op=reply-truncated", messageId=message_id, chars=len(text), limit=limit)
    return cut + "…"


@dataclass
class Inbound:
    """One parsed inbound message, channel-neutral."""

    channel: str
    sender: str
    text: str
    platform_id: str
    sent_at: str | None = None
    phone: str | None = None
    name: str | None = None
    reply: ReplyContext | None = None
    media_notes: Sequence[str] = ()
    target: JSONMapping = field(default_factory=dict)  # how to address the reply (chat id ...)
    provenance: ScheduleProvenance | None = None  # only the scheduler's dispatcher sets this
    visitor_key: str | None = None  # webchat: the hash of the browser's visitor token (never the token)

    def __post_init__(self) -> None:
        """Lone surrogates (JSON ``\\ud83d`` escapes) cannot be stored as UTF-8: make every field well formed."""
        self.text = well_formed(self.text)
        self.sender = well_formed(self.sender)  # it names the Conversation and the session (UTF-8 hashes)
        self.name = well_formed(self.name) if self.name else self.name
        self.media_notes = tuple(well_formed(n) for n in self.media_notes)
        if self.reply is not None:
            self.reply = ReplyContext(id=self.reply.id, sender=well_formed(self.reply.sender) if self.reply.sender else None,
                                      text=well_formed(self.reply.text) if self.reply.text else self.reply.text)

    @property
    def sender_key(self) -> str:
        return f"{self.channel}:{self.sender}"


@dataclass
class Turn:
    """What one turn produced (returned by :meth:`Gateway.process`)."""

    message_id: str
    role: str  # the turn's role word, as in log lines: admin | public | unknown
    status: str  # answered | refused | agent-failed | held (the owner holds the conversation)
    reply: str | None = None
    payload: str | None = None
    delivery: Delivery | None = None


def _well_formed_value(value: JSON) -> JSON:
    """``value`` with every string in it well formed, nested ones (a reply target's ids) included:
    the embedded store keeps JSON escapes of lone surrogates, Neo4j's driver cannot encode them."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, Mapping):
        return {well_formed(str(k)): _well_formed_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_well_formed_value(v) for v in value]
    return value


def _h(*parts: str) -> str:
    # surrogatepass: a platform id may carry a lone surrogate (valid JSON escape); the hash must not raise
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def message_id(account: str, channel: str, platform_id: str) -> str:
    """Deterministic Message id from the platform message id: a re-delivery maps onto the same node."""
    return f"msg-{_h(account, channel, platform_id)}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_KEYED: dict[tuple[str, str, str, str], str] = {}
"""Resolved keyed conversation ids, ``(home, account, channel, sender)`` → id: a keyed id never changes
(an id from before ids were keyed is looked up each time)."""


def conversation_id(host: Host, account: str, channel: str, sender: str) -> str:
    """The Conversation id of a channel's sender (docs/channels.md#conversation-ids): the stored one
    (keyed, or from before ids were keyed), else the keyed id under the account's conversation-id
    key, created 0600 in its credentials folder on first use."""
    key = (str(host.home), account, channel, sender)
    found = _KEYED.get(key)
    if found is not None:
        return found
    store = host.store()
    conv = resolve_conversation_id(store, conversation_secret(host.home, account), account, channel, sender)
    if conv != conversation_node_id(account, channel, sender):
        if len(_KEYED) > 50_000:
            _KEYED.clear()
        _KEYED[key] = conv
    return conv


class Gateway:
    """The per-host pipeline state: the store, the sender lanes, the adapters' senders."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.account_id = host.principal.account or ""
        self._persist_lock = threading.Lock()
        self._claims: Claims | LeaseClaims | None = None
        self.queued = 0  # turns accepted by this process and not finished yet
        self._lanes: KeyedSerializer | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # where the turns run (set by the first accept)
        self.aliases = ident.AliasCache(host.home, self.account_id) if self.account_id else None
        self.senders: dict[str, Send | None] = {}
        self._slots: asyncio.Semaphore | None = None
        # the webhook's critical path (persist) never queues behind turn work in the default pool
        self._persist_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="channels-persist")
        self.stopping = False
        self._agents: set[asyncio.Future[str]] = set()  # agent runs in progress
        self._interrupting = False
        self.interrupted = 0  # turns a stopping process left `received`
        self.wound_down: asyncio.Future[None] | None = None
        stop_of(host).on_stop(self._on_stop)

    @property
    def agent_slots(self) -> asyncio.Semaphore:
        """At most ``PLUGHOST_AGENT_CONCURRENCY`` agent runs at once (default 8): agents are heavy processes."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(AGENT_CONCURRENCY.read(self.host.env))
        return self._slots

    # ---------------------------------------------------------------- plumbing
    def require_account(self) -> str:
        if not self.account_id:
            raise NotConfigured("ACCOUNT_ID is not set; the channels gateway needs the account it serves")
        return self.account_id

    @property
    def store(self) -> GraphStore:
        return self.host.store()

    def guards(self) -> Guards:
        """What the pipeline reads under: the account's owner."""
        return Principal.owner(self.require_account()).guards

    def system_guards(self) -> Guards:
        """What the pipeline writes its records under: the host itself (stored as written)."""
        return Principal.system(self.account_id).guards

    def turn_principal(self, msg: Inbound, who: ident.Identity) -> Principal:
        """The one place a turn's principal is decided: an admin's session for an admin sender, the
        admin chat or a scheduled message (the owner's), else a public visitor confined to the
        sender's conversation; never wider than the serving process."""
        admin = msg.provenance is not None or msg.channel == "admin" or who.role == "admin"
        conversation = session_id_for(self.require_account(), msg.sender_key)
        return self.host.principal.for_turn("admin" if admin else "public", conversation)

    @property
    def claims(self) -> Claims | LeaseClaims:
        """This process's claim on the turns it accepts (taken on first use): a lease per turn on a
        shared store (several servers on one Neo4j), else the local claim file."""
        if self._claims is None:
            from plughost.api.serving import leases

            account = self.require_account()
            shared = leases(self.host)
            self._claims = LeaseClaims(shared) if shared is not None else Claims(self.host.home, account)
        return self._claims

    @property
    def lanes(self) -> KeyedSerializer:
        if self._lanes is None:
            self._lanes = KeyedSerializer()
        return self._lanes

    def conversation_of(self, msg: Inbound) -> str:
        """The Conversation id of the message's channel and sender (:func:`conversation_id`)."""
        return conversation_id(self.host, self.require_account(), msg.channel, msg.sender)

    def sender_for(self, channel: str) -> Send | None:
        if channel not in self.senders:

            for c in self.host.collect(hooks.CHANNEL_ADAPTERS):
                self.senders.setdefault(c.item.name, c.item.send)
        return self.senders.get(channel)

    # ---------------------------------------------------------------- step 1: persist first
    def persist(self, msg: Inbound) -> tuple[str, bool]:
        """Store the inbound Message (and MERGE its Conversation); (message id, was it a re-delivery)."""
        account = self.require_account()
        mid = message_id(account, msg.channel, msg.platform_id)
        conv = self.conversation_of(msg)
        claims = self.claims
        if not claims.take_turn(mid, lambda: self.store.get(mid, guards=self.guards(), include_deleted=True)
                                is not None):  # a shared store: another server took it (or it is ours in flight)
            log("channels", "op=duplicate", channel=msg.channel, platformId=msg.platform_id)
            return mid, True
        with self._persist_lock:
            if self.store.get(mid, guards=self.guards(), include_deleted=True) is not None:
                claims.finish_turn(mid)
                log("channels", "op=duplicate", channel=msg.channel, platformId=msg.platform_id)
                return mid, True
            props = {
                "role": "user", "channel": msg.channel, "sender": msg.sender, "text": msg.text,
                "platformMessageId": msg.platform_id, "conversationId": conv, "sentAt": msg.sent_at,
                "receivedAt": now_iso(), "receivedNs": time.time_ns(), "status": "received",
                "quotedId": msg.reply.id if msg.reply else None, "scope": "admin",
                "quotedText": msg.reply.text if msg.reply else None,
                "quotedSender": msg.reply.sender if msg.reply else None,
                "target": dict(msg.target) or None, "senderPhone": msg.phone, "senderName": msg.name,
                "scheduledEvent": msg.provenance.event if msg.provenance else None,
                "mediaNotes": list(msg.media_notes) or None,
                "sessionId": session_id_for(account, msg.sender_key), "claimedBy": claims.token,
                "visitorKey": msg.visitor_key,
            }
            labels = ["Message", CHANNEL_MESSAGE_LABELS.get(msg.channel, "Message")]
            self._write_message(msg, mid, conv, labels, props)
        log("channels", "op=persisted", channel=msg.channel, messageId=mid)
        self._stored(mid)
        return mid, False

    def _stored(self, mid: str) -> None:
        """Say a Message was stored (the memory plugin embeds it off this path; the write stands
        whatever the hook does)."""
        self.host.call_each(hooks.MESSAGES_STORED, account_id=self.account_id, message_ids=[mid])

    def _write_message(self, msg: Inbound, mid: str, conv: str, labels: list[str], props: JSONObject) -> None:
        """One transaction: the Message, the Conversation MERGE and the HAS_MESSAGE edge.

        Webchat stores the Message alone until the user's second message; that one creates the
        Conversation and links every Message of the session stored before it.
        """
        # every stored string well formed: a platform id or sender may carry a lone surrogate escape
        clean = {k: _well_formed_value(v) for k, v in props.items() if v is not None}
        row: JSONObject = {"id": mid, "labels": labels, "properties": clean}
        targets = [mid]
        if msg.channel == "webchat" and not self._conversation_exists(conv):
            earlier = self.store.find(guards=self.guards(), labels=labels[-1:], where={"conversationId": conv},
                                      limit=10_000)
            if props.get("role") != "user" or not any(n.properties.get("role") == "user" for n in earlier):
                self.store.upsert_many([row], guards=self.system_guards())
                return
            targets += [n.id for n in earlier if n.id != mid]
        conv_row = self._conversation_row(msg, conv)
        conv_row["edges"] = [{"type": HAS_MESSAGE, "to": target} for target in targets]
        self.store.upsert_many([row, conv_row], guards=self.system_guards())

    def _conversation_exists(self, conv: str) -> bool:
        return self.store.get(conv, guards=self.guards()) is not None

    def _conversation_row(self, msg: Inbound, conv: str) -> JSONObject:
        props: JSONObject = {"channel": msg.channel, "sender": msg.sender, "lastMessageAt": now_iso()}
        if not self._conversation_exists(conv):
            props.update(startedAt=now_iso(), scope="admin", title=f"{msg.channel} {msg.name or msg.sender}",
                         sessionId=session_id_for(self.account_id, msg.sender_key))
        return {"id": conv, "labels": ["Conversation"], "properties": _well_formed_value(props)}

    def update_message(self, msg: Inbound, mid: str, props: JSONMapping) -> None:
        """Change a stored Message."""
        with self._persist_lock:
            if self.store.get(mid, guards=self.guards(), include_deleted=True) is not None:
                self.store.upsert_node(["Message"], dict(props),
                                       guards=self.system_guards(), node_id=mid)

    def visitor_of(self, msg: Inbound, who: ident.Identity) -> str | None:
        """Whose per-visitor memory a non-admin sender's turn reads and feeds (docs/channels.md#visitor-memory):
        webchat's browser token, else their number, else the platform's sender id, always hashed."""
        if msg.visitor_key:
            return msg.visitor_key
        if msg.channel == "webchat":
            return None  # a page that sent no visitor token: this conversation alone
        return visitor_key(self.account_id, f"phone:{who.phone}" if who.phone else f"{msg.channel}:{msg.sender}")

    def set_public(self, msg: Inbound, mid: str, visitor: str | None = None) -> None:
        """Messages are stored admin-scoped until identity says public; then the Conversation and Message open up
        (and the Message waits for its visitor's slice: ``slicePending``)."""
        self.update_message(msg, mid, {"scope": "public", **({"visitorKey": visitor, "slicePending": True}
                                                             if visitor else {})})
        conv = self.conversation_of(msg)
        with self._persist_lock:
            node = self.store.get(conv, guards=self.guards())
            if node is not None and node.properties.get("scope") != "public":
                self.store.upsert_node(["Conversation"], {"scope": "public"},
                                       guards=self.system_guards(), node_id=conv)

    def held_by_owner(self, msg: Inbound) -> bool:
        """The owner took this conversation over (the console sets ``ownerHolds`` on its Conversation
        when replying and clears it on "hand back"): the agent does not answer it meanwhile."""
        conv = self.store.get(self.conversation_of(msg), guards=self.guards())
        return bool(conv is not None and conv.properties.get("ownerHolds"))

    def hold_notice_due(self, msg: Inbound) -> bool:
        """True once per hold: the Conversation's ``heldNoticed`` is set here and cleared when the
        console hands the conversation back."""
        conv = self.conversation_of(msg)
        with self._persist_lock:
            node = self.store.get(conv, guards=self.guards())
            if node is None or not node.properties.get("ownerHolds") or node.properties.get("heldNoticed"):
                return False
            self.store.upsert_node(["Conversation"], {"heldNoticed": True},
                                   guards=self.system_guards(), node_id=conv)
        return True

    def record_reply(self, msg: Inbound, inbound_id: str, text: str, kind: str, public: bool = False) -> str:
        account = self.require_account()
        rid = message_id(account, msg.channel, f"reply:{msg.platform_id}")
        conv = self.conversation_of(msg)
        props = {"role": "assistant", "channel": msg.channel, "sender": "agent", "recipient": msg.sender,
                 "text": text, "inReplyTo": inbound_id, "conversationId": conv, "kind": kind,
                 "createdAt": now_iso(), "createdNs": time.time_ns(), "deliveryStatus": "pending",
                 "target": dict(msg.target) or None, "scope": "public" if public else "admin",
                 "sessionId": session_id_for(account, msg.sender_key), "claimedBy": self.claims.token}
        with self._persist_lock:
            self._write_message(msg, rid, conv, ["Message", CHANNEL_MESSAGE_LABELS.get(msg.channel, "Message")], props)
        self._stored(rid)
        return rid

    # ---------------------------------------------------------------- entry point
    async def accept(self, msg: Inbound, *, max_turns: int | None = None) -> tuple[str, bool, asyncio.Task[Turn] | None]:
        """Persist, then queue the turn in the sender's lane. Returns (message id, duplicate, task).

        ``max_turns`` bounds the sender's queued turns: a message beyond it is stored and answered
        once, in order, with :data:`BUSY` and no agent run (``op=turn-capped``)."""
        if msg.phone and self.aliases is not None and msg.channel != "whatsapp":
            self.aliases.remember(msg.channel, msg.sender, msg.phone)
        self.loop = asyncio.get_running_loop()
        mid, duplicate = await self.loop.run_in_executor(self._persist_pool, self.persist, msg)
        if duplicate:
            return mid, True, None
        if max_turns is not None and self.lanes.queued(msg.sender_key) >= max_turns:
            log("channels", "op=turn-capped", channel=msg.channel, messageId=mid, queued=max_turns)
            task = self.lanes.submit(msg.sender_key, lambda: self.answer_busy(msg, mid))
        else:
            task = self.lanes.submit(msg.sender_key, lambda: self.process(msg, mid))
        self.queued += 1
        task.add_done_callback(self._turn_done)
        return mid, False, task

    async def rerun_stored(self, msg: Inbound, mid: str) -> asyncio.Task[Turn] | None:
        """Run a stored turn left ``received`` (a stop interrupted it) that nobody alive holds, for the
        scheduler's dispatcher, which alone may stamp its provenance again (the resume skips those)."""
        if not await asyncio.to_thread(self._claim_stored, mid):
            return None
        log("channels", "op=rerun", channel=msg.channel, messageId=mid)
        task = self.lanes.submit(msg.sender_key, lambda: self.process(msg, mid))
        self.queued += 1
        task.add_done_callback(self._turn_done)
        return task

    def _claim_stored(self, mid: str) -> bool:
        claims = self.claims

        def todo() -> bool:
            node = self.store.get(mid, guards=self.guards())
            return node is not None and node.properties.get("status") == "received" and (
                claims.shared or not (node.properties.get("claimedBy") == claims.token
                                      or claims.alive(node.properties.get("claimedBy"))))

        with claims.resume_lock():
            if not todo():
                return False
            if claims.shared and not claims.take_backlog(mid):
                return False
            if not todo():
                claims.finish_turn(mid)
                return False
            self.update_message_by_id(mid, {"claimedBy": claims.token})
        return True

    def update_message_by_id(self, mid: str, props: JSONMapping) -> None:
        with self._persist_lock:
            self.store.upsert_node(["Message"], dict(props),
                                   guards=self.system_guards(), node_id=mid)

    def _turn_done(self, _task: asyncio.Future[Turn]) -> None:
        self.queued -= 1

    # ---------------------------------------------------------------- bounded stop
    def _on_stop(self) -> None:
        """The host began its stop (on the loop): start no turn, wind the running ones down by the deadline."""
        self.stopping = True
        if self._lanes is not None:
            self._lanes.stopping = True
        if self.wound_down is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # begun off the loop (no turn runs here): the stop's other paths wind down
                return
            self.wound_down = loop.create_task(self._wind_down())

    async def _wind_down(self) -> None:
        """Let running turns finish until the grace deadline, then end their agents (the turns stay
        ``received``); every turn not started stays ``received`` too. One ``op=stop-turns`` line."""
        stop = stop_of(self.host)
        started, queued, running = time.monotonic(), self.queued, len(self._agents)
        interrupted = 0
        if self._lanes is not None:
            try:
                await asyncio.wait_for(self._lanes.drain(), stop.remaining())
            except TimeoutError:
                self._interrupting = True
                interrupted = len(self._agents)
                for task in list(self._agents):
                    task.cancel()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._lanes.drain(), POST_AGENT_S)
        skipped = self._lanes.skipped if self._lanes is not None else 0
        log("channels", "op=stop-turns", queued=queued, running=running, interrupted=interrupted,
            left=self.interrupted + skipped, ms=round((time.monotonic() - started) * 1000))

    async def _run_agent(self, session: str, turn: AgentTurn) -> str:
        """One agent run in a slot; a stopping process starts none, and ends its own at the deadline."""
        if self.stopping:
            raise TurnInterrupted("stopping")
        async with self.agent_slots:
            if self.stopping:
                raise TurnInterrupted("stopping")
            task = asyncio.ensure_future(run_agent(get_runner(self.host), session, turn))
            self._agents.add(task)
            try:
                return str(await task or "")
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if self._interrupting and task.cancelled() and not (current and current.cancelling()):
                    raise TurnInterrupted("grace-deadline") from None
                raise
            finally:
                self._agents.discard(task)

    async def process(self, msg: Inbound, mid: str) -> Turn:
        """identity → screening → route → compose → run → reply, for one stored message."""
        try:
            return await self._process(msg, mid)
        except TurnInterrupted:
            self.interrupted += 1
            return Turn(mid, "unknown", "interrupted")  # still `received`: the next start resumes it
        except Exception as exc:  # a turn's failure is logged and recorded, never lost
            reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            log("channels", "op=turn-failed", channel=msg.channel, messageId=mid, reason=reason)
            await asyncio.to_thread(self.update_message, msg, mid, {"status": "failed", "error": reason})
            return Turn(mid, "unknown", "failed")
        finally:
            await self.finish_turn(mid)

    async def finish_turn(self, mid: str) -> None:
        """The turn is over (or left ``received`` for the next resumer): its lease, on a shared store, goes."""
        if self.claims.shared:
            with contextlib.suppress(Exception):  # a store gone: the lease expires on its own
                await asyncio.to_thread(self.claims.finish_turn, mid)

    async def answer_busy(self, msg: Inbound, mid: str) -> Turn:
        """The sender has enough turns queued: this message gets the fixed :data:`BUSY` reply, no agent."""
        try:
            who = await asyncio.to_thread(ident.resolve, self.host.home, self.account_id, channel=msg.channel,
                                          sender=msg.sender, phone=msg.phone, aliases=self.aliases)
            principal = self.turn_principal(msg, who)
            if principal.is_public:
                await asyncio.to_thread(self.set_public, msg, mid, self.visitor_of(msg, who))
            delivery = await self.reply(msg, mid, BUSY, kind="busy", principal=principal,
                                        status={"status": "answered", "capped": True})
            return Turn(mid, AgentTurn.role_of(principal), "capped", BUSY, None, delivery)
        except Exception as exc:
            reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            log("channels", "op=turn-failed", channel=msg.channel, messageId=mid, reason=reason)
            await asyncio.to_thread(self.update_message, msg, mid, {"status": "failed", "error": reason})
            return Turn(mid, "unknown", "failed")
        finally:
            await self.finish_turn(mid)

    async def _process(self, msg: Inbound, mid: str) -> Turn:
        who = await asyncio.to_thread(
            ident.resolve, self.host.home, self.account_id, channel=msg.channel, sender=msg.sender,
            phone=msg.phone, aliases=self.aliases)
        if msg.provenance is not None:
            who = ident.Identity("admin", msg.provenance.owner_user_id, who.phone)
        if msg.channel == "admin":  # only the admin chat's route makes these, after checking the session token
            who = ident.Identity("admin", msg.sender.rsplit("~", 1)[0], None)
        principal = self.turn_principal(msg, who)
        role = AgentTurn.role_of(principal)  # the wire's and the log lines' word for it
        visitor = self.visitor_of(msg, who) if principal.is_public else None
        if principal.is_public:
            await asyncio.to_thread(self.set_public, msg, mid, visitor)
        verdict = await asyncio.to_thread(screen, self.host, channel=msg.channel, text=msg.text,
                                          sender=msg.sender, role=role)
        if principal.is_public and verdict.verdict == "DISCARD":
            delivery = await self.reply(msg, mid, REFUSAL, kind="refusal", principal=principal,
                                        status={"status": "refused", "verdict": verdict.verdict})
            return Turn(mid, role, "refused", REFUSAL, None, delivery)
        if principal.is_public and await asyncio.to_thread(self.held_by_owner, msg):
            await asyncio.to_thread(self.update_message, msg, mid, {"status": "held", "heldBy": "owner"})
            log("channels", "op=held-by-owner", channel=msg.channel, messageId=mid)
            if await asyncio.to_thread(self.hold_notice_due, msg):  # once a hold: a person answers, not the agent
                from plughost.plugins.channels.brand import product_name

                notice = HELD_NOTICE.format(business=product_name(self.host.env))
                delivery = await self.reply(msg, mid, notice, kind="held-notice", principal=principal)
                return Turn(mid, role, "held", notice, None, delivery)
            return Turn(mid, role, "held")
        remembered: tuple[str, ...] = ()
        if visitor:
            conv = self.conversation_of(msg)
            remembered = tuple(await asyncio.to_thread(composing.fetch_visitor_memory, self.host, self.account_id,
                                                       msg.channel, visitor, conv))
        composed = TurnInput(channel=msg.channel, role=role, text=msg.text, account_id=self.account_id,
                             media_notes=tuple(msg.media_notes), reply=msg.reply, provenance=msg.provenance,
                             visitor_memory=remembered)
        rules = await asyncio.to_thread(composing.fetch_rules, self.host, composed)
        text = composing.compose(composed, rules)
        scheduled = msg.provenance is not None
        session = agent_session_for(self.account_id, msg.sender_key, AgentTurn.kind_of(principal, scheduled))
        turn = AgentTurn(principal, session_id_for(self.account_id, msg.sender_key), session, msg.channel, msg.sender,
                         mid, text, msg.text, user_id=who.user_id, screening=verdict.as_dict(), scheduled=scheduled,
                         visitor_key=visitor, visitor_memory=remembered if visitor else ())
        try:
            answer = (await self._run_agent(session, turn)).strip()
            if not answer:  # a person waiting on nothing is worse than the polite fallback
                raise RunnerError("empty-reply: the agent answered nothing")
        except (RunnerError, OSError) as exc:
            log("channels", "op=agent-failed", channel=msg.channel, messageId=mid, reason=str(exc)[:200])
            delivery = await self.reply(msg, mid, AGENT_UNAVAILABLE, kind="agent-unavailable", principal=principal,
                                        status={"status": "agent-failed", "error": str(exc)[:200]})
            return Turn(mid, role, "agent-failed", AGENT_UNAVAILABLE, text, delivery)
        answer = cap_reply(answer, mid, MAX_REPLY_CHARS)
        delivery = await self.reply(msg, mid, answer, kind="agent", principal=principal, status={"status": "answered"})
        return Turn(mid, role, "answered", answer, text, delivery)

    async def reply(self, msg: Inbound, inbound_id: str, text: str, *, kind: str, principal: Principal | None = None,
                    status: JSONMapping | None = None) -> Delivery:
        """Record the reply (pending), mark the inbound done, then send it and record the outcome.

        That order leaves no gap where a stop loses an answer: until the inbound's status moves on
        the turn is resumed, and a recorded reply still ``pending`` is delivered by the resume. A
        reply to a public principal's turn is public; any other (an admin's, the owner's) is not.
        """
        public = principal is not None and principal.is_public
        rid = await asyncio.to_thread(self.record_reply, msg, inbound_id, text, kind, public)
        if status:
            await asyncio.to_thread(self.update_message, msg, inbound_id, status)
        token = DELIVERING_KIND.set(kind)
        try:
            return await self.deliver(msg, rid, text)
        finally:
            DELIVERING_KIND.reset(token)

    async def deliver(self, msg: Inbound, rid: str, text: str) -> Delivery:
        send = self.sender_for(msg.channel)
        if send is None:
            outcome: JSONObject = {"ok": False, "reason": f"no-adapter:{msg.channel}"}
        else:
            token = DELIVERING.set(rid)
            try:
                sent = send(self.host, msg, text)
                outcome = await sent if inspect.isawaitable(sent) else sent
            except Exception as exc:
                outcome = {"ok": False, "reason": f"send-error:{str(exc).splitlines()[0][:200]}"}
            finally:
                DELIVERING.reset(token)
        outcome = outcome if isinstance(outcome, dict) else {"ok": bool(outcome)}
        props: JSONObject = {"deliveryStatus": "sent" if outcome.get("ok") else "failed",
                                 "deliveryAttempts": outcome.get("attempts"),
                                 "platformMessageId": outcome.get("platformId"),
                                 "failureReason": None if outcome.get("ok") else outcome.get("reason", "unknown")}
        if outcome.get("ok"):
            props["sentAt"] = now_iso()
        else:
            log("channels", "op=send-failed", channel=msg.channel, messageId=rid, reason=outcome.get("reason"))
        await asyncio.to_thread(self.update_message, msg, rid, props)
        return outcome

    def quoted_text(self, channel: str, platform_id: str) -> str | None:
        """The stored text of a message a sender replied to (inbound or our own reply)."""
        rows = self.store.find(guards=self.guards(), labels=[CHANNEL_MESSAGE_LABELS.get(channel, "Message")],
                               where={"platformMessageId": well_formed(platform_id)}, limit=1)
        return str(rows[0].properties.get("text")) if rows else None

    async def drain(self) -> None:
        if self._lanes is not None:
            await self._lanes.drain()

    def stop_turns(self, timeout: float = 30) -> None:
        """From a shutdown hook's thread: start no new turn, and let the running ones finish and
        record their outcome before the store closes (a reply sent but not recorded as sent would
        be sent again by the next start). Turns not yet started stay ``received`` for the resume.

        Under ``plughost serve`` the host's stop already began the wind-down (bounded by the
        grace); this waits for it. Otherwise (a channels-only server, a test) the running turns
        get ``timeout`` seconds."""
        loop, lanes = self.loop, self._lanes
        if loop is None or lanes is None or not loop.is_running():
            return
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is loop:
            return
        stop = stop_of(self.host)
        if stop.is_set:
            budget = stop.remaining() + POST_AGENT_S + 1
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._await_wind_down(), loop).result(budget)
            return
        lanes.stopping = True
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(asyncio.wait_for(lanes.drain(), timeout), loop).result(timeout + 5)

    async def _await_wind_down(self) -> None:
        if self.wound_down is None:
            self._on_stop()
        if self.wound_down is not None:
            await self.wound_down

    def close(self) -> None:
        self._persist_pool.shutdown(wait=False)
        if self._claims is not None:
            self._claims.release()


def stored_target(value: JSON) -> JSONObject:
    """A stored Message's ``target`` as a map: Neo4j keeps a nested map as JSON text (the embedded
    store keeps the map), so a turn resumed from Neo4j still knows where its reply goes."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return dict(value) if isinstance(value, Mapping) else {}


def inbound_from_node(props: JSONMapping) -> Inbound:
    """Rebuild a stored inbound Message as an :class:`Inbound` (to resume a turn that never ran)."""
    reply = None
    if props.get("quotedId") or props.get("quotedText"):
        reply = ReplyContext(id=props.get("quotedId"), text=props.get("quotedText"), sender=props.get("quotedSender"))
    return Inbound(channel=str(props.get("channel")), sender=str(props.get("sender")), text=str(props.get("text") or ""),
                   platform_id=str(props.get("platformMessageId")), sent_at=props.get("sentAt"),
                   phone=props.get("senderPhone"), name=props.get("senderName"), reply=reply,
                   media_notes=tuple(props.get("mediaNotes") or ()), target=stored_target(props.get("target")),
                   visitor_key=props.get("visitorKey") if isinstance(props.get("visitorKey"), str) else None)


GATEWAY: StateKey[Gateway] = StateKey("channels.gateway")


def gateway(host: Host) -> Gateway:
    """The host's gateway (one per host)."""
    return host.state.setdefault(GATEWAY, lambda: Gateway(host))


async def dispatch_scheduled(host: Host, *, channel: str, sender: str, event: str, text: str,
                             owner_user_id: str | None = None, target: JSONMapping | None = None,
                             platform_id: str | None = None) -> Turn:
    """The scheduler's dispatcher: the only code that stamps a :class:`ScheduleProvenance`.

    ``platform_id`` names the dispatch (the schedule entry's id): dispatching it again maps onto
    the stored message and runs no second turn (status ``duplicate``), unless that turn was never
    answered: then it runs again when nobody holds it, and is ``held`` while somebody does (a
    server that died holding it keeps its lease until the lease expires).
    """
    gw = gateway(host)
    account = gw.require_account()
    stamp = now_iso()
    provenance = ScheduleProvenance(account, event, owner_user_id, stamp)
    msg = Inbound(channel=channel, sender=sender, text=text, platform_id=platform_id or f"schedule:{event}:{stamp}",
                  sent_at=stamp, target=dict(target or {}), provenance=provenance)
    log("channels", "op=schedule-dispatch", channel=channel, event=event)
    mid, duplicate, task = await gw.accept(msg)
    if duplicate or task is None:
        task = await gw.rerun_stored(msg, mid)
        if task is None:
            node = await asyncio.to_thread(gw.store.get, mid, guards=gw.guards())
            if node is not None and node.properties.get("status") == "received":
                return Turn(mid, "admin", "held")  # unanswered, its turn held by another (perhaps dead) server
            return Turn(mid, "admin", "duplicate")
    return await task
