"""Conversation search and conversation writes (docs/memory.md#conversations).

``conversation-search`` runs BM25 (and cosine, when an embedder exists) over Message nodes. A
process with a session (``SESSION_ID``, or the channels runner's ``PLUGHOST_SESSION_ID`` on a
non-admin turn: a public agent) is confined to its own conversation; the filter is a ``where`` equality on the
Message's ``conversationId`` applied by the store inside the guarded query, before the top-k
cut, so another conversation's messages can never fill or leak into the result. Without a
session (admin) every conversation of the account is searched. Read-only.

Scope alone cannot keep visitors apart (every webchat Message is ``public``), so a **narrowed**
process (scopes or an agent set) sees Message and Conversation nodes only of its own session's
conversation, and none without a session: ``conversation-search`` answers empty and
``memory-search`` drops the others' (results and related lines) through :meth:`Conversations.visible`.

``conversation-append`` writes a Message and MERGEs its Conversation with the ``HAS_MESSAGE``
edge in the shape the channels pipeline stores (see the conversation block of ``host/ports/graph.py``),
so channel-recorded and tool-recorded conversations are searched the same way.

The tools' arguments (roles, ``content`` at most 20,000 characters, limits) are checked against
their ``inputSchema`` in PLUGIN.md before a handler runs; the handlers check what a schema cannot
say (text that is only whitespace, a timestamp that does not parse, whose conversation it is).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost import Embedder, GraphStore, Guards, Node, Principal, Tool, UserError, WriteDenied, log
from plughost.api.credentials import conversation_secret, home_of
from plughost.api.principals import resolve
from plughost.api.store import (
    CHANNEL_MESSAGE_LABELS,
    CONVERSATION_LABEL,
    HAS_MESSAGE,
    MESSAGE_LABEL,
    confined_view,
    guarded_upsert_many,
    owns,
    resolve_conversation_id,
    session_conversation_id,
)
from plughost.api.util import parse_time
from plughost.plugins.memory.embedding.indexed_form import embedding_text as message_embedding_text
from plughost.plugins.memory.embedding.indexed_form import indexed_message
from plughost.plugins.memory.settings import SEARCH_RRF_K

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
OVERFETCH = 3  # each path fetches limit × 3 before fusion
"""Labels of the nodes that belong to one conversation (a narrowed process sees only its own)."""
_SESSION_CONVERSATIONS: dict[tuple[str, Guards, str], str] = {}  # (store, guards, session) -> Conversation id


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_of(env: Mapping[str, str]) -> str | None:
    """The process's session, if any: a process with one is confined to its own conversation
    (the rule lives in :func:`plughost.ports.principal.resolve`)."""
    return resolve(env).session


def message_view(hit_node: Any, score: float) -> dict[str, Any]:
    """What a caller sees of a Message (channels store ``text``; ``content`` is accepted too)."""
    p = hit_node.properties
    return {"id": hit_node.id, "conversationId": p.get("conversationId"), "role": p.get("role"),
            "content": p.get("text") if p.get("text") is not None else p.get("content"),
            "timestamp": p.get("sentAt") or p.get("receivedAt") or p.get("createdAt"),
            "channel": p.get("channel"), "score": round(float(score), 6)}


class Conversations:
    """Search and append over one account's conversations, for one process environment."""

    def __init__(self, store: GraphStore, embedder: Embedder | None, env: Mapping[str, str],
                 principal: Principal | None = None, home: Path | None = None) -> None:
        self.store, self.embedder, self.env = store, embedder, env
        self._principal = principal
        self.home = home

    def conversation_secret(self, account: str) -> bytes:
        """The account's conversation-id key (docs/channels.md#conversation-ids), from the host's home."""
        return conversation_secret(self.home if self.home is not None else home_of(self.env), account)

    @property
    def principal(self) -> Principal:
        """The process's call context, built once (raises naming ACCOUNT_ID when it is unset)."""
        if self._principal is None:
            self._principal = resolve(self.env)
        return self._principal

    def guards(self) -> Guards:
        return self.principal.guards

    def own_guards(self) -> Guards:
        """What a confined session reads and writes its own conversation under: that one
        conversation, whatever its scope (a visitor's stays admin until identity opens it), and
        nothing else, since every use is filtered to it (and the store refuses a write of any other:
        the guards carry the session). Anyone else: their guards."""
        return self.principal.own_guards

    # ------------------------------------------------------------------ session
    def session_conversation(self) -> str | None:
        """The session's Conversation id: the node named by the session, else the one whose
        ``sessionId`` is the session; None when the session has no conversation yet. A node is the
        session's only when its stored ``sessionId`` is (:func:`plughost.ports.graph.owns`): an id
        equal to the session is not enough.

        A found id is remembered for the process (a session's conversation never changes id),
        since the ``sessionId`` lookup scans the account's nodes.
        """
        session = self.principal.session
        if session is None:
            return None
        g = self.own_guards()
        key = (str(getattr(self.store, "path", id(self.store))), g, session)
        if key in _SESSION_CONVERSATIONS:
            return _SESSION_CONVERSATIONS[key]
        node = self.store.get(session, guards=g)
        if node is not None and CONVERSATION_LABEL in node.labels and owns(session, node.properties):
            found_id: str | None = node.id
        else:
            found = self.store.find(guards=g, labels=[CONVERSATION_LABEL], where={"sessionId": session}, limit=1)
            found_id = found[0].id if found else None
        if found_id is not None:
            _SESSION_CONVERSATIONS[key] = found_id
        return found_id

    def visible(self) -> Callable[[Node], bool] | None:
        """For a narrowed process, whether a node may be shown (:func:`plughost.ports.graph.confined_view`:
        a Message or Conversation only of the session's own conversation, never an Entity or Fact);
        None for an admin process (nothing to confine)."""
        if not self.guards().narrowed:
            return None
        return confined_view(True, self.session_conversation())

    # ------------------------------------------------------------------ search
    def search(self, *, query: str, limit: int = DEFAULT_LIMIT, conversationId: str | None = None,  # noqa: N803
               role: str | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        query = (query or "").strip()
        if not query:
            raise UserError("query: expected a non-empty string")
        limit = max(1, min(int(limit), MAX_LIMIT))
        guards = self.guards()
        where: dict[str, Any] = {}
        if self.principal.session is not None:
            own = self.session_conversation()
            if conversationId and conversationId != own:
                raise UserError("conversationId: not this session's conversation; a session searches only its own")
            if own is None:
                self._log("search", guards, started, hits=0, restricted=1)
                return {"results": [], "conversationId": None, "restricted": True}
            where["conversationId"] = own
            guards = self.own_guards()
        elif guards.narrowed:  # a narrowed process without a session has no conversation
            self._log("search", guards, started, hits=0, restricted=1)
            return {"results": [], "conversationId": None, "restricted": True}
        elif conversationId:
            where["conversationId"] = conversationId
        if role:
            where["role"] = role
        fused = self._hybrid(query, limit, guards, where)
        results = [message_view(node, score) for node, score in fused[:limit]]
        restricted = self.principal.session is not None or guards.narrowed
        self._log("search", guards, started, hits=len(results), restricted=int(restricted))
        return {"results": results, "conversationId": where.get("conversationId"), "restricted": restricted}

    def _hybrid(self, query: str, limit: int, guards: Guards, where: dict[str, Any]) -> list[tuple[Any, float]]:
        """Reciprocal-rank fusion of BM25 and (with an embedder) cosine, both filtered in the store.

        One conversation is selected twice, both inside the store query: through its
        ``HAS_MESSAGE`` edges (``within``, indexed: the FTS scan only ranks that conversation's
        rows) and by the Messages' ``conversationId`` (``where``).
        """
        fetch = limit * OVERFETCH
        conv = where.get("conversationId")
        filters: dict[str, Any] = {"where": where} if where else {}
        if conv:
            filters["within"] = (conv, HAS_MESSAGE)
        lists = [self.store.fulltext_search(query, fetch, guards=guards, labels=[MESSAGE_LABEL], **filters)]
        if self.embedder is not None:
            try:
                vector = self.embedder.embed([query])[0]
            except Exception as exc:  # noqa: BLE001 — BM25 still answers when the embedder is down
                log("conversations", "warn", reason="embed-failed", error=type(exc).__name__)
            else:
                lists.append(self.store.vector_search(vector, fetch, guards=guards, labels=[MESSAGE_LABEL],
                                                      **filters))
        rrf_k = SEARCH_RRF_K.read(self.env)
        scores: dict[str, float] = {}
        nodes: dict[str, Any] = {}
        for hits in lists:
            for rank, hit in enumerate(hits):
                nodes.setdefault(hit.node.id, hit.node)
                scores[hit.node.id] = scores.get(hit.node.id, 0.0) + 1.0 / (rrf_k + rank + 1)
        order = sorted(scores, key=lambda nid: (-scores[nid], nid))
        Node.read_all(nodes.values())  # their properties, one read per list
        return [(nodes[nid], scores[nid]) for nid in order if not nodes[nid].withdrawn]  # deleted or narrowed since

    # ------------------------------------------------------------------ append
    def append(self, *, role: str, content: str, conversationId: str | None = None,  # noqa: N803
               channel: str | None = None, sender: str | None = None, timestamp: str | None = None,
               messageId: str | None = None) -> dict[str, Any]:  # noqa: N803
        started = time.perf_counter()
        account = self.guards().account_id
        # role's values and content's length are PLUGIN.md's inputSchema, checked before the call
        if not content.strip():
            raise UserError("content: expected a non-empty string")
        if timestamp is not None:
            parse_time(timestamp, "timestamp")
        session = self.principal.session
        conversationId, guards = self._append_target(conversationId, channel, sender)
        existing = self._appendable(conversationId, guards)
        when = timestamp or _now_iso()
        scope = existing.properties.get("scope") if session is not None and existing is not None else self._scope()
        conv_channel = channel or (existing.properties.get("channel") if existing else None)
        msg_id = messageId or "msg-" + hashlib.sha256(
            "\x1f".join((account, conversationId, role, when, content)).encode("utf-8")).hexdigest()[:32]
        prior = self._prior_message(msg_id, conversationId, guards) if messageId is not None else None
        labels = [MESSAGE_LABEL] + ([CHANNEL_MESSAGE_LABELS[conv_channel]] if conv_channel in CHANNEL_MESSAGE_LABELS
                                    else [])
        props = {"role": role, "text": content, "conversationId": conversationId, "sentAt": when,
                 "channel": conv_channel, "sender": sender, "scope": scope, "sessionId": session}
        row: dict[str, Any] = {"id": msg_id, "labels": labels,
                               "properties": indexed_message(self.store, account, msg_id, props)}
        embedded = self._embed_message(row, content)
        conv_props: dict[str, Any] = {"lastMessageAt": when}
        if existing is None:
            conv_props.update(startedAt=when, scope=scope, channel=conv_channel, sender=sender,
                              sessionId=session, title=f"{conv_channel or 'conversation'} {sender or conversationId}")
        conv_row = {"id": conversationId, "labels": [CONVERSATION_LABEL],
                    "properties": {k: v for k, v in conv_props.items() if v is not None},
                    "edges": [{"type": HAS_MESSAGE, "to": msg_id}]}
        try:
            guarded_upsert_many(self.store, [row, conv_row], guards=guards)
        except WriteDenied as exc:
            raise UserError(f"conversation-append: {exc} ({exc.reason})") from None
        known = [s for s in (sender, existing.properties.get("sender") if existing else None) if s]
        self._message_entities(row, prior, guards, known)
        self._log("append", guards, started, conversationId=conversationId, messageId=msg_id, embedded=int(embedded))
        return {"messageId": msg_id, "conversationId": conversationId, "created": existing is None,
                "embedded": embedded, "timestamp": when}

    def _append_target(self, conversationId: str | None, channel: str | None,  # noqa: N803
                       sender: str | None) -> tuple[str, Guards]:
        """The conversation a turn goes to, and the guards it is written under: a session's own
        conversation only (under :meth:`own_guards`), else the given or derived one."""
        guards = self.guards()
        account = guards.account_id
        session = self.principal.session
        own = self.session_conversation() if session else None
        if conversationId is None and channel and sender:
            conversationId = resolve_conversation_id(self.store, self.conversation_secret(account), account,
                                                     channel, sender)
        if session is not None:
            mine = own or session_conversation_id(session, self.store.get(
                session, guards=Principal.owner(account).guards, include_deleted=True) is not None)
            if conversationId and conversationId != mine:
                raise UserError("conversationId: not this session's conversation; a session appends only to its own")
            conversationId = mine
            guards = self.own_guards()  # its own conversation only, from here on
        if not conversationId:
            raise UserError("conversationId: expected a conversation id, or channel and sender to derive one")
        return conversationId, guards

    def _appendable(self, conversationId: str, guards: Guards) -> Node | None:  # noqa: N803
        """The Conversation a turn is appended to (None when new). Under the process's guards: a
        conversation it cannot read looks absent here, and the store refuses the write
        (account-isolation); a deleted one is not appended to (nor revived)."""
        existing = self.store.get(conversationId, guards=guards, include_deleted=True)
        if existing is not None and CONVERSATION_LABEL not in existing.labels:
            raise UserError(f"conversationId: '{conversationId}' is not a Conversation")
        if existing is not None and existing.deleted:
            raise UserError(f"conversationId: '{conversationId}' was deleted; restore it (memory-restore) first")
        return existing

    def _prior_message(self, msg_id: str, conversationId: str, guards: Guards) -> Node | None:  # noqa: N803
        """The turn a caller-given ``messageId`` already names (None when new); refused when it
        names a node outside this conversation."""
        prior = self.store.get(msg_id, guards=guards, include_deleted=True)
        if prior is not None and (MESSAGE_LABEL not in prior.labels
                                  or prior.properties.get("conversationId") != conversationId):
            raise UserError(f"messageId: '{msg_id}' already names a node outside this conversation")
        return prior

    def _embed_message(self, row: dict[str, Any], content: str) -> bool:
        """Set the row's embedding when an embedder answers; whether it did."""
        if self.embedder is None:
            return False
        try:
            row["embedding"] = self.embedder.embed([message_embedding_text(row["properties"]) or content])[0]
        except Exception as exc:  # noqa: BLE001 — the message is stored; reindex embeds it later
            log("graph-write", "warn", reason="embed-failed", labels="Message", node=row["id"],
                error=type(exc).__name__)
            return False
        return True

    def _message_entities(self, row: dict[str, Any], prior: Node | None, guards: Guards, known: list[str]) -> None:
        """Withdraw what a changed turn said before, and extract what it says now (both best effort)."""
        # entities' patterns compile on import: loaded here, off the tool surface's path (plughost boot --check)
        from plughost.plugins.memory import entities

        msg_id = row["id"]
        if prior is not None and entities.derivation(prior.properties) != entities.derivation(row["properties"]):
            try:  # a turn appended again, changed: what it said before goes (docs/graph.md#entities)
                entities.withdraw(self.store, [msg_id], guards=guards, before={msg_id: prior.properties})
            except Exception as exc:  # noqa: BLE001 — reindex --entities sweeps it later
                log("memory-entities", "warn", reason="withdraw-failed", node=msg_id, error=type(exc).__name__)
        if entities.enabled(self.env):
            try:
                entities.write(self.store, [(msg_id, row["properties"])], guards=guards, known=known)
            except Exception as exc:  # noqa: BLE001 — the turn is stored; a reindex --entities extracts it later
                log("memory-entities", "warn", reason="extract-failed", node=msg_id, error=type(exc).__name__)

    def _scope(self) -> str | None:
        """Admin processes write admin-scoped messages; a scoped process writes into its first scope."""
        allowed = self.guards().allowed_scopes
        if allowed is None or "admin" in allowed:
            return "admin"
        return allowed[0] if allowed else None

    def _log(self, op: str, guards: Guards, started: float, **fields: Any) -> None:
        log("conversations", f"op={op}", account=guards.account_id,
            ms=round((time.perf_counter() - started) * 1000, 1), **fields)


def service(host: Host) -> Conversations:
    return Conversations(host.store(), host.embedder(), host.env, home=host.home)


def conversation_tools(host: Host) -> list[Tool]:
    def conversation_search(**args: Any) -> Any:
        return service(host).search(**args)

    def conversation_append(**args: Any) -> Any:
        return service(host).append(**args)

    return [Tool("conversation-search", conversation_search),
            Tool("conversation-append", conversation_append)]
