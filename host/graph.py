"""The graph store port (SPEC 8.1): the one interface the memory and channels plugins use.

The port lives in ``host/`` because plugins never import each other: the graph plugin
provides an implementation through the ``plughost_store`` hook, and every other plugin types
against this protocol. ``Guards`` is built from the process environment and applied by the
store *inside* each query, before any top-k cut.

Reserved node properties: ``accountId`` (set by the store from the write's account),
``scope``, ``agents`` (list of agent slugs), ``deletedAt``, ``createdAt``, ``updatedAt``,
``backlinkCount``. Every other property is the caller's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from host import config
from host.errors import UserError

VECTOR_LABELS: tuple[str, ...] = (
    "Question", "DefinedTerm", "Review", "Service", "Person", "LocalBusiness",
    "PriceSpecification", "Task", "CreativeWork", "DigitalDocument", "KnowledgeDocument",
    "Section", "Chunk", "Conversation", "Message", "Event", "Workflow", "Preference", "Report",
)
"""Vector-indexed labels (SPEC 8.3). The schema-labels gate pins the schema files to this."""

FULLTEXT_EXTRA_LABELS: tuple[str, ...] = (
    "Organization", "Company", "Concept", "UserProfile", "AdminUser", "Product", "Place",
    "WebchatMessage", "TelegramMessage", "WhatsAppMessage",
)
"""Labels covered by full-text search on top of the vector-indexed ones."""

TEXT_PROPERTIES: tuple[str, ...] = (
    "name", "firstName", "lastName", "givenName", "familyName", "title", "summary", "body",
    "content", "description", "headline", "email", "subject", "bodyPreview", "compiledTruth",
    "keywords", "text", "value", "key", "category",
)
"""The canonical text-property union indexed for BM25 (SPEC 8.2)."""

RESERVED_PROPERTIES = frozenset({"accountId", "deletedAt", "createdAt", "updatedAt", "embedding"})


@dataclass(frozen=True)
class Guards:
    """The guard layers' inputs for one read (SPEC 8.1).

    ``allowed_scopes`` None means admin (no scope filter); ``agent_slug`` None means no agent filter.
    The account always comes from the process's ``ACCOUNT_ID``, never from a tool parameter.
    """

    account_id: str
    allowed_scopes: tuple[str, ...] | None = None
    agent_slug: str | None = None

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        scopes: Sequence[str] | None = None,
        agent: str | None = None,
    ) -> Guards:
        """Guards from ``ACCOUNT_ID`` / ``ALLOWED_SCOPES`` / ``AGENT_SLUG``, narrowed by tool parameters.

        ``scopes`` may only narrow: scopes outside ``ALLOWED_SCOPES`` are dropped. ``agent``
        may only set an agent filter when ``AGENT_SLUG`` is unset; naming another agent while it
        is set is rejected.
        """
        env = os.environ if env is None else env
        account = env.get("ACCOUNT_ID", "").strip()
        if not account:
            raise UserError("ACCOUNT_ID: not set; expected the id of an account under PLUGHOST_HOME/accounts/")
        allowed = config.csv_list(env.get("ALLOWED_SCOPES"))
        if scopes is not None:
            wanted = [s for s in scopes if s]
            allowed = [s for s in wanted if s in allowed] if allowed is not None else wanted
        slug = env.get("AGENT_SLUG", "").strip() or None
        if agent:
            if slug and agent != slug:
                raise UserError(f"agent: '{agent}' is not this process's agent; AGENT_SLUG is '{slug}'")
            slug = agent
        return cls(account, tuple(allowed) if allowed is not None else None, slug)


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
        account_id: str,
        node_id: str | None = None,
        embedding: Sequence[float] | None = None,
    ) -> str:
        """Create or merge a node (properties merge, labels union); returns its id."""
        ...

    def upsert_many(self, rows: Iterable[dict[str, Any]], *, account_id: str) -> int:
        """Bulk upsert of ``{id?, labels, properties, embedding?, edges?}`` rows in one transaction."""
        ...

    def create_edge(
        self,
        source_id: str,
        target_id: str,
        edge_type: str,
        properties: Mapping[str, Any] | None = None,
        *,
        account_id: str,
    ) -> None:
        """MERGE a typed edge between two nodes of the account; maintains ``backlinkCount``."""
        ...

    def create_edges(
        self,
        edges: Iterable[tuple[str, str, str, Mapping[str, Any] | None]],
        *,
        account_id: str,
        validated: bool = False,
    ) -> list[int]:
        """Bulk MERGE of ``(source id, type, target id, properties)``; returns the positions whose end is unknown."""
        ...

    def delete_edge(self, source_id: str, target_id: str, edge_type: str, *, account_id: str) -> int: ...

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
        where: Mapping[str, Any] | None = None, within: tuple[str, str] | None = None,
    ) -> list[Hit]:
        """BM25 over the text-property union; user text is escaped, never raises on syntax.

        Optional filters applied before the top-k cut: ``where`` (property equality) and
        ``within`` (``(node id, edge type)``: only targets of that node's outgoing edges of that
        type, e.g. a Conversation's ``HAS_MESSAGE`` Messages). A backend without them (the Neo4j
        store today) does not accept the keywords.
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
    """Deterministic Conversation id from account + channel + sender (the channels pipeline's rule)."""
    import hashlib

    digest = hashlib.sha256("\x1f".join((account_id, channel, sender)).encode("utf-8")).hexdigest()[:32]
    return f"conv-{digest}"
