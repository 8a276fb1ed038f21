"""The graph store port (docs/graph.md): the one interface the memory and channels plugins use.

The port lives in ``host/`` because plugins never import each other: the graph plugin
provides an implementation through the ``plughost_store`` hook, and every other plugin types
against this protocol. ``Guards`` come from the call's principal (:mod:`plughost.ports.principal`) and are
applied by the store *inside* each query, before any top-k cut.

Reserved node properties: ``accountId`` (set by the store from the write's account),
``scope``, ``agents`` (list of agent slugs), ``deletedAt``, ``createdAt``, ``updatedAt``,
``backlinkCount``. Every other property is the caller's.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from plughost.ports import principal as principal_module
from plughost.ports.lease import Lease
from plughost.ports.principal import Guards, Principal  # noqa: F401  (their home is plughost.ports.principal; the port re-exports them)
from plughost.util.errors import UserError
from plughost.util.log import log

VECTOR_LABELS: tuple[str, ...] = (
    "Question", "DefinedTerm", "Review", "Service", "Person", "LocalBusiness",
    "PriceSpecification", "Task", "CreativeWork", "DigitalDocument", "KnowledgeDocument",
    "Section", "Chunk", "Conversation", "Message", "Event", "Workflow", "Preference", "Report",
)
"""Vector-indexed labels (docs/graph.md#labels). The schema-labels gate pins the schema files to this."""

FULLTEXT_EXTRA_LABELS: tuple[str, ...] = (
    "Organization", "Company", "Concept", "UserProfile", "AdminUser", "Product", "Place",
    "WebchatMessage", "TelegramMessage", "WhatsAppMessage",
)
"""Labels docs/graph.md#labels names for full-text search on top of the vector-indexed ones (both stores'
full-text search covers every label; the memory tools write these)."""

TEXT_PROPERTIES: tuple[str, ...] = (
    "name", "firstName", "lastName", "givenName", "familyName", "title", "summary", "body",
    "content", "description", "headline", "email", "subject", "bodyPreview", "compiledTruth",
    "keywords", "text", "value", "key", "category", "searchContext",
)
"""The canonical text-property union indexed for BM25 (docs/graph.md#full-text-search)."""

RESERVED_LABELS = frozenset({"GraphNode", "Lease"})
"""Labels the system owns: ``GraphNode`` marks every stored node, ``Lease`` the leases of servers
sharing a store. No write, import or tool may put them on a node (a ``Lease`` node one account
made would stop another's work)."""


def reserved_label_problem(labels: Iterable[Any], what: str = "labels") -> str | None:
    """The one line that refuses a reserved label among ``labels``, or None."""
    for i, label in enumerate(labels):
        if isinstance(label, str) and label in RESERVED_LABELS:
            return (f"{what}[{i}]: '{label}' is reserved for the system's own nodes "
                    f"(reserved: {', '.join(sorted(RESERVED_LABELS))})")
    return None


RESERVED_PROPERTIES = frozenset({"accountId", "createdAt", "updatedAt", "deletedAt", "backlinkCount", "embedding"})
"""Properties the store sets (the module docstring says which); a caller's value is dropped or refused."""


# write guards ------------------------------------------------------------------------------
# A process can change only what it can read, and only into something it can still read
# (docs/guards.md#write-guards). These functions are the one definition both store backends apply inside their
# write transaction, on the stored state they read there (so nothing changes between the check
# and the write). They look at the guarded properties only: ``scope`` and ``agents``.

ISOLATION = principal_module.ISOLATION
"""The outcome reason (docs/memory.md#writes) of a write the guards refuse."""


class WriteDenied(UserError):
    """A write outside what the process can read, or one that would move a node out of it.

    Raised before anything is written; ``reason`` is the outcome slug (``account-isolation``).
    """

    reason = ISOLATION


def _agents(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(a) for a in value]


def can_change(g: Guards, properties: Mapping[str, Any]) -> bool:
    """Whether a stored node (its properties) is within the guards, soft delete aside.

    The read guard layers 2 and 3 (scope, agent tag); deletion is the operation's business
    (restore acts on deleted nodes it could otherwise read).
    """
    scope = properties.get("scope")
    if g.allowed_scopes is not None and scope is not None and scope not in g.allowed_scopes:
        return False
    return g.agent_slug is None or g.agent_slug in _agents(properties.get("agents"))


OWNER_SCOPE = "admin"
"""The scope of knowledge an admin process writes without one: private to the owner. An
unscoped node is readable by every scope (the legacy read rule), so nothing new is stored
unscoped; public content says ``scope: public``."""


def default_scope(g: Guards | None) -> str | None:
    """The scope a new node that names none is stored in.

    A narrowed process's first allowed scope; an admin process's (or a write without guards,
    the admin-only imports) :data:`OWNER_SCOPE`; None only for ``ALLOWED_SCOPES=""``, which can
    read (so write) unscoped nodes alone.
    """
    if g is None or g.allowed_scopes is None:
        return OWNER_SCOPE
    return g.allowed_scopes[0] if g.allowed_scopes else None


def write_defaults(g: Guards, properties: Mapping[str, Any]) -> dict[str, Any]:
    """What a new node gets when it names no scope / agents (:func:`default_scope`; its own agent).

    Never unscoped: an unscoped node would be visible to every scope (a declassification). A
    process with ``AGENT_SLUG`` tags its own agent.
    """
    extra: dict[str, Any] = {}
    scope = default_scope(g)
    if scope is not None and properties.get("scope") is None:
        extra["scope"] = scope
    if g.agent_slug is not None and properties.get("agents") is None:
        extra["agents"] = [g.agent_slug]
    return extra


def _reject(node_id: str, rule: str) -> None:
    log("graph-write", "reject", reason=ISOLATION, node=node_id[:64], rule=rule)


def check_write(g: Guards, node_id: str, before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> None:
    """Refuse (``WriteDenied``) a write of node ``node_id`` from ``before`` (None: a new node) to ``after``.

    - ``before`` must be within the guards (:func:`can_change`);
    - with ``ALLOWED_SCOPES``, ``after.scope`` must be one of them (unscoped only if it was);
    - with ``AGENT_SLUG``, ``after.agents`` must hold it and gain no other agent's tag.
    """
    if before is not None and not can_change(g, before):
        _reject(node_id, "outside")
        raise WriteDenied(f"id: node '{node_id}' is outside what this process can read (ALLOWED_SCOPES / "
                          "AGENT_SLUG); nothing was written")
    if g.allowed_scopes is not None:
        scope = after.get("scope")
        kept_unscoped = scope is None and (before is not None and before.get("scope") is None
                                           or not g.allowed_scopes)  # ALLOWED_SCOPES="": unscoped only
        if not kept_unscoped and scope not in g.allowed_scopes:
            _reject(node_id, "scope")
            raise WriteDenied(f"properties.scope: {scope!r} is outside this process's ALLOWED_SCOPES "
                              f"({','.join(g.allowed_scopes) or 'none'}); nothing was written")
    if g.agent_slug is not None:
        agents = _agents(after.get("agents"))
        had = set(_agents(before.get("agents"))) if before is not None else set()
        gained = [a for a in agents if a != g.agent_slug and a not in had]
        if g.agent_slug not in agents or gained:
            _reject(node_id, "agents")
            raise WriteDenied(f"properties.agents: {agents!r} must keep this process's agent '{g.agent_slug}' "
                              "and add no other agent; nothing was written")


def write_guards(g: Guards) -> Guards | None:
    """The guards a node write checks: None for the host's own write (:meth:`Principal.system`),
    stored as written; any other principal's guards, applied with their defaults."""
    return None if g.system else g


def edge_guards(g: Guards | None) -> Guards | None:
    """The guards an edge write applies: a narrowed (or session-confined) process's (None for an
    admin process, whose edge writes keep their account-only reach: the importers link
    soft-deleted nodes too)."""
    return g if g is not None and g.confined else None


# confined writes ---------------------------------------------------------------------------
# Write guards are read guards: a narrowed process reads Conversation and Message nodes only of
# its own session's conversation (:func:`confined_view`), so it writes, links, deletes and
# restores only those too. Both stores run these checks on the stored state (and the state after
# the write) read inside their write transaction, for every node written and every edge end.


def owns(session: str | None, properties: Mapping[str, Any]) -> bool:
    """Whether a Conversation (its stored properties) is ``session``'s: its stored ``sessionId`` is the
    session. An id equal to the session is not enough: ids of older conversations derive from public
    facts (a Telegram chat id, a number), and a session id may be chosen (docs/guards.md#write-guards)."""
    return session is not None and properties.get("sessionId") == session


def session_conversation_id(session: str, taken: bool = False) -> str:
    """The id of the Conversation a session that has none would create: the session itself, unless
    that is a conversation id's shape (``conv-``) or a node already holds it (``taken``); then one
    derived from the session (``sess-`` + a hash), so a session never creates a node at an id a
    channel's conversation may have."""
    if not taken and not session.startswith("conv-"):
        return session
    return "sess-" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def own_conversation(session: str | None, candidates: Iterable[tuple[str, Any, bool]]) -> str | None:
    """The conversation a confined writer's ``session`` owns, given the account's Conversation
    nodes ``(id, sessionId, deleted)`` whose id is the session (or its :func:`session_conversation_id`)
    or whose ``sessionId`` is (the rule of :func:`session_conversation`): only one whose stored
    ``sessionId`` is the session (:func:`owns`): the one named by the session, else the first live one,
    else the conversation it would create (:func:`session_conversation_id`). None without a session."""
    if session is None:
        return None
    rows = list(candidates)
    mine = [(str(cid), deleted) for cid, sid, deleted in rows if sid == session]
    for preferred in (session, session_conversation_id(session, True)):
        if any(cid == preferred for cid, _ in mine):
            return preferred
    live = sorted(cid for cid, deleted in mine if not deleted)
    if live:
        return live[0]
    return session_conversation_id(session, taken=any(cid == session for cid, _, _ in rows))


def needs_own(g: Guards | None, labels: Iterable[str]) -> bool:
    """Whether a write of a node with ``labels`` under ``g`` is checked against the own conversation."""
    return g is not None and g.confined and bool(CONFINED_LABELS.intersection(labels))


def confined_ok(g: Guards | None, own: str | None, node_id: str, labels: Iterable[str],
                properties: Mapping[str, Any]) -> bool:
    """Whether a confined writer may write (or link to) this node: :func:`confined_view`'s rule for
    Conversation and Message nodes (its own conversation only), anything else as its guards allow."""
    if not needs_own(g, labels):
        return True
    return own is not None and (node_id == own or properties.get("conversationId") == own)


def check_confined(g: Guards | None, own: str | None, node_id: str, labels: Iterable[str],
                   properties: Mapping[str, Any], *, after: bool = False) -> None:
    """Refuse (``WriteDenied``) a write of a Conversation or Message outside the writer's own
    conversation, before (the stored node) or ``after`` (the node as it would be stored)."""
    labels = tuple(labels)
    if confined_ok(g, own, node_id, labels, properties):
        return
    _reject(node_id, "confined")
    if after:
        raise WriteDenied(f"properties.conversationId: node '{node_id}' would belong to a conversation this "
                          "process cannot read; a confined process writes only its own session's conversation; "
                          "nothing was written")
    raise WriteDenied(f"id: node '{node_id}' is outside what this process can read (ALLOWED_SCOPES / "
                      "AGENT_SLUG / its session's conversation); nothing was written")


def edge_denied(source_id: str, edge_type: str, target_id: str) -> WriteDenied:
    """The refusal of an edge write (create or delete) with an end the process cannot read.

    An absent end answers exactly as a hidden one, so an edge write never tells whether a node
    exists outside the guards (or in another account).
    """
    log("graph-write", "reject", reason=ISOLATION, edge=edge_type[:64], source=source_id[:64],
        target=target_id[:64], rule="edge")
    return WriteDenied(f"edge: {source_id!r} -[{edge_type}]-> {target_id!r}: both ends must be nodes this process "
                       "can read (ALLOWED_SCOPES / AGENT_SLUG); nothing was written")


def require_admin(principal: Principal, what: str) -> None:
    """Refuse an admin-only operation for anyone but an unnarrowed admin (:data:`plughost.ports.principal.ROLES`)."""
    try:
        principal.require_admin(what)
    except principal_module.AdminOnly as exc:
        raise WriteDenied(str(exc)) from None


def guarded_upsert_many(store: GraphStore, rows: list[dict[str, Any]], *, guards: Guards) -> int:
    """``store.upsert_many`` under ``guards``; fails closed on a backend that cannot apply write
    guards yet: an admin process (nothing to narrow) writes, a narrowed one is refused."""
    if "guards" in inspect.signature(store.upsert_many).parameters:
        return store.upsert_many(rows, guards=guards)
    if guards.narrowed:
        raise WriteDenied(f"the {getattr(store, 'backend', '?')} store cannot apply write guards; a narrowed "
                          "process (ALLOWED_SCOPES / AGENT_SLUG) cannot write through it")
    older: Any = store  # a backend written before the write guards: it takes the account alone
    return int(older.upsert_many(rows, account_id=guards.account_id))


def session_conversation(store: GraphStore, guards: Guards, session_ids: Sequence[str], *,
                         by_id: bool = False) -> tuple[str, bool]:
    """The Conversation of a session: the one whose stored ``sessionId`` is one of ``session_ids``
    (the node the session names first, :func:`owns`); else the first id's
    :func:`session_conversation_id`, to be created (``True``). The audit, the turn recorder and
    briefings hang their records from it, so one rule decides which conversation is a session's.
    A node whose id is the session but whose ``sessionId`` is not is someone else's, unless ``by_id``
    (an admin's own record, the tool-call audit: an admin names the conversation it records into)."""
    for sid in session_ids:
        node = store.get(sid, guards=guards)
        if node is not None and CONVERSATION_LABEL in node.labels and (by_id or owns(sid, node.properties)):
            return node.id, False
        found = store.find(guards=guards, labels=[CONVERSATION_LABEL], where={"sessionId": sid}, limit=1)
        if found:
            return found[0].id, False
    first = session_ids[0]
    taken = store.get(first, guards=Principal.owner(guards.account_id).guards, include_deleted=True) is not None
    return session_conversation_id(first, taken), True


@dataclass
class Node:
    """A node as the port returns it. ``properties`` never includes ``embedding``."""

    id: str
    labels: tuple[str, ...]
    properties: dict[str, Any]
    account_id: str
    has_embedding: bool = False

    @property
    def deleted(self) -> bool:
        return self.properties.get("deletedAt") is not None

    @property
    def withdrawn(self) -> bool:
        """Whether the store took the node back after the search that found it: a store may read a
        hit's properties after the search (:meth:`read_all`), under the guards that found it, and a
        node deleted or narrowed in between is not read. Its ``properties`` are then empty."""
        return False

    def deferred(self) -> Any:
        """What reads this node's properties when the store deferred them (an object with
        ``read(nodes)``), or None once they are built or when they never were deferred."""
        return None

    @staticmethod
    def read_all(nodes: Iterable[Node]) -> None:
        """Build the properties of ``nodes`` in one store read per search that found them, instead
        of a read per node on first use (or one of every hit the search found): a pipeline that
        keeps the best few of many hits reads just those."""
        groups: dict[int, tuple[Any, list[Node]]] = {}
        for node in nodes:
            reader = node.deferred()
            if reader is not None:
                groups.setdefault(id(reader), (reader, []))[1].append(node)
        for reader, members in groups.values():
            reader.read(members)


@dataclass
class Hit:
    """One search result: a node and the raw score of the path that found it."""

    node: Node
    score: float


@dataclass
class Neighbor:
    """One 1-hop neighbour: the edge type, its direction seen from the origin, and the node."""

    node: Node
    type: str
    direction: Literal["out", "in"]
    properties: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class GraphStore(Protocol):
    """What a store backend provides. Every read applies all guard layers inside the query."""

    backend: str

    # writes --------------------------------------------------------------------------
    def upsert_node(
        self,
        labels: Sequence[str],
        properties: Mapping[str, Any],
        *,
        guards: Guards,
        node_id: str | None = None,
        embedding: Sequence[float] | None = None,
    ) -> str:
        """Create or merge a node of ``guards.account_id`` (properties merge, labels union); returns its id.

        Ids are per account. The write runs under ``guards``: :func:`check_write` on the stored
        state read inside the write transaction, :func:`write_defaults` for a new node, ``WriteDenied``
        and nothing written otherwise; the host's own write (:meth:`Principal.system`) is stored as
        written (:func:`write_guards`).
        """
        ...

    def upsert_many(self, rows: Iterable[Mapping[str, Any]], *, guards: Guards) -> int:
        """Bulk upsert of ``{id?, labels, properties, embedding?, edges?}`` rows in one transaction.

        Under ``guards``: every row as in :meth:`upsert_node`, edges only to nodes they can read.
        """
        ...

    def create_edge(
        self,
        source_id: str,
        target_id: str,
        edge_type: str,
        properties: Mapping[str, Any] | None = None,
        *,
        guards: Guards,
    ) -> None:
        """MERGE a typed edge between two nodes of the account; maintains ``backlinkCount``.

        With narrowed ``guards`` both ends must be nodes they can read (live, in scope, tagged):
        else :func:`edge_denied` (``account-isolation``) and nothing written.
        """
        ...

    def create_edges(
        self,
        edges: Iterable[tuple[str, str, str, Mapping[str, Any] | None]],
        *,
        guards: Guards,
        validated: bool = False,
    ) -> list[int]:
        """Bulk MERGE of ``(source id, type, target id, properties)``; returns the positions whose end is unknown.

        With narrowed ``guards`` an end they cannot read refuses the whole batch (as in :meth:`create_edge`).
        """
        ...

    def delete_edge(self, source_id: str, target_id: str, edge_type: str, *, guards: Guards) -> int:
        """Remove a typed edge; returns how many went. Narrowed ``guards``: as in :meth:`create_edge`."""
        ...

    def set_embedding(self, node_id: str, vector: Sequence[float], *, account_id: str) -> None: ...

    def set_embeddings(self, items: Iterable[tuple[str, Sequence[float]]], *, account_id: str) -> int:
        """Bulk embedding write (reindex); returns how many nodes of the account were updated."""
        ...

    def soft_delete(self, node_id: str, *, guards: Guards) -> int:
        """Set ``deletedAt``, cascading KnowledgeDocument → Section → Chunk; returns nodes touched."""
        ...

    def restore(self, node_id: str, *, guards: Guards) -> int: ...

    def purge(self, *, older_than_days: float = 7.0, account_id: str | None = None) -> int:
        """Hard-delete nodes soft-deleted longer ago than the grace period; returns the count."""
        ...

    def delete_nodes(self, node_ids: Sequence[str], *, guards: Guards) -> int:
        """Hard-delete the nodes (live or soft-deleted) within ``guards`` and their edges at once;
        returns how many went. For derived data (the entity graph), never a user's delete."""
        ...

    def erase_nodes(self, node_ids: Sequence[str], *, account_id: str) -> dict[str, int]:
        """Hard-delete these nodes of the account now, soft-deleted or not, with their edges, embeddings
        and full-text terms (an erase request: no grace, no guards, so admin-only callers); returns
        ``{"nodes", "edges", "embeddings", "fulltext"}`` counts of what went (``fulltext``: nodes whose
        text left the full-text index). The embedded store also rewrites its full-text index and
        checkpoints its WAL, so the file keeps no copy of the text."""
        ...

    def scan_nodes(self, *, account_id: str, contains: str | None = None, after: str = "",
                   limit: int = 1000) -> list[Node]:
        """Every node of the account, soft-deleted too, by id after ``after``, at most ``limit``:
        one page of a full scan (admin-only callers: no guards). ``contains`` (lower-case ASCII) keeps
        only nodes whose stored properties hold it, ignoring case: a prefilter, callers match exactly."""
        ...

    def node_edges(self, node_ids: Sequence[str], *, account_id: str) -> list[tuple[str, str, str, dict[str, Any]]]:
        """Every edge touching these nodes, whatever their state: ``(source id, type, target id, properties)``."""
        ...

    # reads ---------------------------------------------------------------------------
    def get(self, node_id: str, *, guards: Guards, include_deleted: bool = False) -> Node | None: ...

    def get_embedding(self, node_id: str, *, guards: Guards) -> list[float] | None: ...

    def find(
        self,
        *,
        guards: Guards,
        labels: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        order_by: str | None = None,
        descending: bool = True,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Node]:
        """Exact-property lookup (``where`` is equality on properties), guarded and paginated."""
        ...

    def vector_search(
        self, vector: Sequence[float], k: int, *, guards: Guards, labels: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None, within: tuple[str, str] | None = None,
    ) -> list[Hit]:
        """Cosine top-k; ``where`` / ``within`` (optional, as in ``fulltext_search``) filter before the cut."""
        ...

    def fulltext_search(
        self, query: str, k: int, *, guards: Guards, labels: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None, within: tuple[str, str] | None = None, stemmed: bool = False,
    ) -> list[Hit]:
        """BM25 over the text-property union; user text is escaped, never raises on syntax.

        Optional filters applied before the top-k cut: ``where`` (property equality) and
        ``within`` (``(node id, edge type)``: only targets of that node's outgoing edges of that
        type, e.g. a Conversation's ``HAS_MESSAGE`` Messages). A backend that cannot apply
        them raises ``UserError`` when they are given (the Neo4j store today). ``stemmed`` ranks on
        a stemmed index where the backend keeps one (the embedded store); a backend whose analyzer
        is its own (Neo4j) ignores it.
        """
        ...

    def keyword_search(
        self, keyword: str, k: int, *, guards: Guards, labels: Sequence[str] | None = None
    ) -> list[Hit]:
        """Nodes whose ``keywords`` property holds ``keyword`` (case-insensitive), scored 1.0."""
        ...

    def expand(
        self, node_ids: Sequence[str], *, guards: Guards, limit: int = 20
    ) -> dict[str, list[Neighbor]]:
        """1-hop neighbours per node, both directions, at most ``limit`` per node, guard layer 4."""
        ...

    def linked(
        self, node_ids: Sequence[str], edge_type: str, *, guards: Guards, limit: int = 5000
    ) -> dict[str, list[Node]]:
        """Per origin, the nodes with an ``edge_type`` edge *into* it (e.g. the Messages that
        ``MENTIONS`` an Entity), ordered by id, at most ``limit`` (5,000 at most) each.

        Origin and sources are both read under the primary guard layers (1, 2, 3, 5): a source is
        returned exactly when the caller could ``get`` it; an origin outside the guards has none.
        """
        ...

    def missing_embeddings(
        self,
        *,
        account_id: str,
        labels: Sequence[str] | None = None,
        exclude: Iterable[str] = (),
        limit: int = 100,
    ) -> list[Node]: ...

    def vector_indexes(self) -> dict[str, int]:
        """Index discovery: vector-indexed label → dimensions (cached per process)."""
        ...

    def clear_index_cache(self) -> None:
        """Forget discovered indexes (``clearIndexCache``: after a reindex or a schema change)."""
        ...

    def schema(self, *, guards: Guards) -> dict[str, Any]:
        """Labels, relationship types and property keys in use in the account, and the vector indexes."""
        ...

    def query(
        self, text: str, params: Mapping[str, Any] | None = None, *, guards: Guards, read_only: bool = True
    ) -> Any:
        """Query passthrough for the graph tool: ``{"rows": [...], "warnings": [...]}`` on Neo4j
        (``$accountId`` is always the guards' account); the embedded store raises ``UserError``."""
        ...

    def count(self, *, guards: Guards, labels: Sequence[str] | None = None) -> int: ...

    # leases (host/ports/lease.py: who does a piece of work when several processes share the store)
    shared: bool
    """True when processes on other machines may use this store too (Neo4j); False for the embedded one."""

    def take_lease(self, name: str, owner: str, ttl_s: float) -> Lease | None: ...

    def renew_leases(self, names: Sequence[str], owner: str, ttl_s: float) -> list[str]: ...

    def release_leases(self, names: Sequence[str], owner: str) -> int: ...

    def lease_holders(self, names: Sequence[str]) -> dict[str, Lease]: ...

    def close(self) -> None: ...


# conversations ---------------------------------------------------------------------------
# The stored shape shared by the channels pipeline and the memory plugin's conversation tools
# (plugins never import each other, so the shape lives here):
#   (:Conversation {id, channel, sender, sessionId, scope, title, startedAt, lastMessageAt})
#     -[:HAS_MESSAGE]->
#   (:Message:<Channel>Message {role, text, conversationId, channel, sender, sessionId, scope,
#                               sentAt | receivedAt})
# ``conversationId`` on every Message is what conversation search filters on, inside the query.
CONVERSATION_LABEL = "Conversation"
MESSAGE_LABEL = "Message"
HAS_MESSAGE = "HAS_MESSAGE"
CHANNEL_MESSAGE_LABELS: dict[str, str] = {
    "webchat": "WebchatMessage", "telegram": "TelegramMessage", "whatsapp": "WhatsAppMessage",
}


def conversation_node_id(account_id: str, channel: str, sender: str) -> str:
    """The id conversations had before ids were keyed: derived from account + channel + sender, public
    facts (a Telegram chat id, a WhatsApp number). Only looked up, so existing installs keep their
    ids (:func:`resolve_conversation_id`); nothing new is stored under it."""
    joined = "\x1f".join((account_id, channel, sender))
    digest = hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:32]  # never raises
    return f"conv-{digest}"


def keyed_conversation_id(secret: bytes, account_id: str, channel: str, sender: str) -> str:
    """A new conversation's id: ``conv-`` + HMAC-SHA256(the account's conversation-id key,
    account|channel|sender), so it cannot be derived from public facts (docs/channels.md#conversation-ids)."""
    joined = "\x1f".join((account_id, channel, sender)).encode("utf-8", "surrogatepass")
    return "conv-" + hmac.new(secret, joined, hashlib.sha256).hexdigest()[:32]


KEY_LEASE_S = 100 * 365 * 86400
"""The conversation-id key's lease on the store: held by the key itself, for good."""


def shared_key(store: Any, account_id: str, local: bytes) -> bytes:
    """The account's conversation-id key as every server on this store uses it: the first server's
    own key (``local``, its home's file) is put on the store as a lease whose owner is the key, and
    every later server reads it from there, so one sender's conversation has one id on all of them
    (docs/channels.md#several-servers-on-one-store). A store without leases: ``local``."""
    take, holders = getattr(store, "take_lease", None), getattr(store, "lease_holders", None)
    if take is None or holders is None:
        return local
    name = f"{account_id}/conversation-id-key"
    try:
        held = holders([name]).get(name)
        if held is None:
            held = take(name, local.hex(), KEY_LEASE_S) or holders([name]).get(name)
        return bytes.fromhex(held.owner) if held is not None else local
    except (ValueError, AttributeError):  # not a key this code put there: the home's own
        return local


def resolve_conversation_id(store: GraphStore, secret: bytes, account_id: str, channel: str, sender: str) -> str:
    """The Conversation id of ``channel`` + ``sender``: the stored one first (the keyed id, else the
    id it had before ids were keyed, each only when the stored node's ``channel`` and ``sender`` are
    these, or, for webchat, Messages stored before their Conversation name it), else the keyed id of
    a new one. Existing installs keep their ids; nothing is renamed. ``secret``: this home's key;
    the store's shared one wins (:func:`shared_key`)."""
    keyed = keyed_conversation_id(shared_key(store, account_id, secret), account_id, channel, sender)
    legacy = conversation_node_id(account_id, channel, sender)
    g = Principal.owner(account_id).guards
    for cid in (keyed, legacy):
        node = store.get(cid, guards=g, include_deleted=True)
        if node is not None and CONVERSATION_LABEL in node.labels and (
                cid == keyed or (node.properties.get("channel"), node.properties.get("sender")) == (channel, sender)):
            return cid
    if store.find(guards=g, labels=[MESSAGE_LABEL], where={"conversationId": keyed}, limit=1):
        return keyed
    early = store.find(guards=g, labels=[MESSAGE_LABEL], where={"conversationId": legacy}, limit=1)
    if early and (early[0].properties.get("channel"), early[0].properties.get("sender")) == (channel, sender):
        return legacy
    return keyed


def visitor_key(account_id: str, token: str) -> str:
    """What a visitor's memory is keyed by: a hash of the token only their browser carries (webchat's
    ``visitor``) or of their number (Telegram, WhatsApp), never the token itself (docs/channels.md#visitor-memory)."""
    joined = "\x1f".join((account_id, "visitor", token))
    return "vk-" + hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:40]


VISITOR_SLICE_LABEL = "VisitorSlice"
"""What one ended conversation of a visitor told us, ``{sliceToken: <visitor_key>, scope: 'user'}``:
read back only by the slice-pinned read that composes that visitor's next turn."""
USER_SCOPE = principal_module.USER_SCOPE
"""The scope of a visitor's own memory: no public or session process reads it (their scopes are
``public`` at most), and :func:`confined_view` hides it from every narrowed one."""

CONFINED_LABELS = frozenset({CONVERSATION_LABEL, MESSAGE_LABEL, *CHANNEL_MESSAGE_LABELS.values()})
"""Nodes a narrowed process sees only of its own session's conversation (scope cannot keep visitors apart:
every webchat Message is ``public``)."""
DERIVED_LABELS = frozenset({"Entity", "Fact"})
"""Nodes derived from what was said (the memory plugin's entities and facts): each links every
conversation of its scope that mentions it, so a narrowed process is never shown one directly."""


def confined_view(narrowed: bool, own_conversation: str | None) -> Callable[[Node], bool] | None:
    """Whether a narrowed process may be shown a node: a Conversation or Message only of its own
    conversation (none without one), never an Entity, a Fact or a VisitorSlice, anything else as its guards allow.
    None for an unnarrowed process (nothing to confine). One rule for every read tool."""
    if not narrowed:
        return None

    def visible(node: Node) -> bool:
        if DERIVED_LABELS.intersection(node.labels) or VISITOR_SLICE_LABEL in node.labels:
            return False
        if not CONFINED_LABELS.intersection(node.labels):
            return True
        return own_conversation is not None and (
            node.id == own_conversation or node.properties.get("conversationId") == own_conversation)

    return visible
