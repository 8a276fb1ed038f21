"""The Neo4j store's :class:`Neo4jStore`: the driver's transactions, node and edge writes, deletes
and reads (search is :mod:`.search`, the statements :mod:`.queries`, the write steps :mod:`.writes`,
the schema :mod:`.schema`, ``plughost graph import`` :mod:`.bulk`).

Transactions: every public write is one ``execute_write`` transaction (a whole ``upsert_many``
— an ingest hierarchy, a tool call — commits or rolls back as one), every read one
``execute_read``, so a cluster or Aura routes them (``neo4j://`` / ``neo4j+s://`` URIs).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from plughost import Guards, Neighbor, Node, UserError
from plughost.api.store import (
    TEXT_PROPERTIES,
    VECTOR_LABELS,
    check_confined,
    edge_denied,
    edge_guards,
    write_guards,
)
from plughost.plugins.graph.bm25 import TextStats
from plughost.plugins.graph.common import (
    EXPAND_LIMIT,
    GRACE_DAYS,
    LINKED_LIMIT,
    StoreEnv,
    check_account,
    check_edge,
    check_embedding,
    check_labels,
    check_name,
    guards_ok,
    iso,
    prepare,
    prepare_rows,
    vector_threads,
)
from plughost.plugins.graph.cypher import run_query
from plughost.plugins.graph.neo4j_store import schema
from plughost.plugins.graph.neo4j_store.bulk import NEO4J_IMPORT_BATCH, Neo4jImport
from plughost.plugins.graph.neo4j_store.connection import (
    connect_errors,
    driver_settings,
    open_driver,
    unavailable,
    unavailable_errors,
)
from plughost.plugins.graph.neo4j_store.leases import Neo4jLeases
from plughost.plugins.graph.neo4j_store.nodes import node_of
from plughost.plugins.graph.neo4j_store.queries import (
    BASE_LABEL,
    Q_COUNT,
    Q_DELETE_EDGE_TMPL,
    Q_DELETE_NODES,
    Q_EDGE_COUNT,
    Q_EMBEDDING,
    Q_ERASE,
    Q_ERASE_BACKLINKS,
    Q_ERASE_COUNTS,
    Q_EXPAND,
    Q_EXPORT_EMBEDDINGS,
    Q_GET,
    Q_GET_ANY,
    Q_HIERARCHY_SET,
    Q_LABEL_COUNTS,
    Q_LINKED,
    Q_MISSING,
    Q_NODE_EDGES,
    Q_PURGE,
    Q_RESTORE_STAMPS,
    Q_SCAN,
    Q_SCHEMA_KEYS,
    Q_SCHEMA_LABELS,
    Q_SCHEMA_RELS,
    Q_SET_EMBEDDINGS,
    Q_STAMP_SCOPE,
    Q_UNSCOPED,
    Q_WIPE,
    Q_WIPE_KEY,
    guard_params,
    q_delete_edge_guarded,
    q_find,
)
from plughost.plugins.graph.neo4j_store.search import Search
from plughost.plugins.graph.neo4j_store.writes import confined_hidden, write_batch, write_edges, write_nodes
from plughost.plugins.graph.settings import VECTOR_THREADS


class Neo4jStore(StoreEnv, Search, Neo4jLeases):
    """:class:`plughost.ports.graph.GraphStore` on Neo4j through the official driver."""

    backend = "neo4j"
    import_batch_size = NEO4J_IMPORT_BATCH

    def __init__(self, driver: Any, *, env: Mapping[str, str], database: str | None = None,
                 apply_schema: bool = True) -> None:
        self.driver = driver
        self.env = dict(env)
        self.database = database or None
        self._indexes: dict[str, tuple[str, int]] | None = None
        self._fulltext_warned = False
        self._text_stats: dict[str, tuple[float, int, TextStats]] = {}
        self._writes = 0  # this process's writes: an account's text statistics kept before one are not reused
        self._executor: Any = None
        # One query per search unless PLUGHOST_VECTOR_THREADS asks for more: on the shared 2-core
        # bench machine the split was slower (20k, load 2.6: 34.7 ms against 17.6 ms p50).
        self.vector_threads = vector_threads(self.env) if VECTOR_THREADS.is_set(self.env) else 1
        if apply_schema:
            self.ensure_schema()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Neo4jStore:
        uri, auth, retry_s = driver_settings(env)
        with connect_errors(uri):
            return cls(open_driver(uri, auth, retry_s), env=env, database=env.get("NEO4J_DATABASE"))

    def ping(self) -> None:
        """Ask the server (``/healthz``): :class:`StoreUnavailable` when it does not answer."""

        try:
            self.driver.verify_connectivity()
        except unavailable_errors(OSError) as exc:
            raise unavailable(exc) from None

    # ------------------------------------------------------------------ plumbing
    def read(self, work: Callable[[Any], Any]) -> Any:
        """``work(tx)`` in one read transaction (``execute_read``: routed to a reader, retried on transient errors)."""
        import neo4j

        try:
            with self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session:
                return session.execute_read(work)
        except unavailable_errors() as exc:
            raise unavailable(exc) from None

    def write(self, work: Callable[[Any], Any]) -> Any:
        """``work(tx)`` in one write transaction (``execute_write``): it commits whole or not at all."""

        try:
            with self.driver.session(database=self.database) as session:
                return session.execute_write(work)
        except unavailable_errors() as exc:
            raise unavailable(exc) from None
        finally:
            self._writes += 1

    def _rows(self, query: str, params: Mapping[str, Any] | None = None, *, read: bool = True) -> list[Any]:
        def work(tx: Any) -> list[Any]:
            return list(tx.run(query, dict(params or {})))

        return self.read(work) if read else self.write(work)

    def _auto(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        """A statement that manages its own transactions (schema DDL, ``IN TRANSACTIONS``)."""

        try:
            with self.driver.session(database=self.database) as session:
                session.run(query, dict(params or {})).consume()
        except unavailable_errors() as exc:
            raise unavailable(exc) from None
        finally:
            self._writes += 1

    def ensure_schema(self) -> list[str]:
        """Create what ``schema.cypher`` names and the database lacks (:func:`.schema.ensure_schema`);
        returns the names created. A reader (``PLUGHOST_GRAPH_READ_ONLY=1``) never runs DDL."""
        def backfill() -> int:
            return schema.backfill_index_text(lambda query, params: self._rows(query, params, read=False))

        created = schema.ensure_schema(self._rows, self._auto, dimensions=self.dimensions, read_only=self.read_only,
                                       backfill=backfill)
        if created:
            self.clear_index_cache()
        return created

    # ------------------------------------------------------------------ writes
    def upsert_node(self, labels: Sequence[str], properties: Mapping[str, Any], *, guards: Guards,
                    node_id: str | None = None, embedding: Sequence[float] | None = None) -> str:
        """Create or merge a node; with ``guards`` (every write tool passes the process's) the
        write runs under them (:func:`plughost.ports.graph.check_write`), checked in its transaction."""
        account_id, checked = guards.account_id, write_guards(guards)
        check_account(self.account_id, account_id, node=node_id)
        item = prepare(labels, properties, account_id=account_id, node_id=node_id, embedding=embedding)
        return self.write(lambda tx: write_nodes(tx, [item], account_id, checked))[0]

    def upsert_many(self, rows: Iterable[Mapping[str, Any]], *, guards: Guards) -> int:
        """All rows and their edges in one transaction: an invalid row, an unknown (or, with
        ``guards``, unreadable) edge target or a guarded node rolls back everything."""
        account_id, checked = guards.account_id, write_guards(guards)
        check_account(self.account_id, account_id)
        items, edges = prepare_rows(rows, account_id)
        if not items:
            return 0

        def work(tx: Any) -> list[str]:
            ids, missing = write_batch(tx, items, edges, account_id, checked)
            if missing:
                i, j, _, to, _ = edges[missing[0]]
                raise UserError(f"rows[{i}].edges[{j}].to: node '{to}' not found in account '{account_id}'")
            return ids

        return len(self.write(work))

    def import_session(self, account_id: str) -> Neo4jImport:
        """A ``plughost graph import`` into this store (:class:`.bulk.Neo4jImport`)."""
        check_account(self.account_id, account_id)
        return Neo4jImport(self, account_id)

    @contextlib.contextmanager
    def import_writer(self, account_id: str) -> Iterator[Neo4jImport]:
        """The batch write of an import session (:class:`plughost.api.store.ImportSession`)."""
        yield self.import_session(account_id)

    def create_edge(self, source_id: str, target_id: str, edge_type: str,
                    properties: Mapping[str, Any] | None = None, *, guards: Guards) -> None:
        if self.create_edges([(source_id, edge_type, target_id, properties)], guards=guards):
            raise UserError(f"edge: node '{source_id}' or '{target_id}' not found in account '{guards.account_id}'")

    def create_edges(self, edges: Iterable[tuple[str, str, str, Mapping[str, Any] | None]], *,
                     guards: Guards, validated: bool = False) -> list[int]:
        """Bulk MERGE; narrowed ``guards``: an end they cannot read refuses the whole batch
        (``WriteDenied``, one transaction rolled back)."""
        account_id = guards.account_id
        check_account(self.account_id, account_id)
        g = edge_guards(guards)
        wanted = []
        for i, (src, etype, dst, props) in enumerate(edges):
            t, d, p = check_edge({"type": etype, "to": dst, "properties": props}, f"edges[{i}]")
            wanted.append((src, t, d, p))
        if g is not None:
            def guarded(tx: Any) -> list[int]:
                missing = write_edges(tx, wanted, account_id, g)
                if missing:
                    src, etype, dst, _ = wanted[missing[0]]
                    raise edge_denied(src, etype, dst)
                return missing

            return self.write(guarded)
        if not validated:
            return self.write(lambda tx: write_edges(tx, wanted, account_id))
        missing: list[int] = []  # an import's late edges: committed a batch at a time, like its nodes
        for start in range(0, len(wanted), self.import_batch_size):
            part = wanted[start:start + self.import_batch_size]
            missing += [start + pos for pos in self.write(functools.partial(write_edges, wanted=part,
                                                                             account_id=account_id))]
        return missing

    def delete_edge(self, source_id: str, target_id: str, edge_type: str, *, guards: Guards) -> int:
        account_id = guards.account_id
        check_account(self.account_id, account_id)
        g = edge_guards(guards)
        if g is not None:
            query = q_delete_edge_guarded(edge_type)

            def guarded(tx: Any) -> int:
                if confined_hidden(tx, g, [source_id, target_id]):
                    raise edge_denied(source_id, edge_type, target_id)
                rows = list(tx.run(query, {**guard_params(g), "source": source_id, "target": target_id}))
                if not rows:
                    raise edge_denied(source_id, edge_type, target_id)
                return int(rows[0]["deleted"])

            return int(self.write(guarded))
        q = Q_DELETE_EDGE_TMPL.format(base=BASE_LABEL, type=check_name(edge_type, "edge.type"))
        rows = self._rows(q, {"source": source_id, "target": target_id, "accountId": account_id}, read=False)
        return rows[0]["deleted"] if rows else 0

    def set_embedding(self, node_id: str, vector: Sequence[float], *, account_id: str) -> None:
        if self.set_embeddings([(node_id, vector)], account_id=account_id) == 0:
            raise UserError(f"node: '{node_id}' not found in account '{account_id}'")

    def set_embeddings(self, items: Iterable[tuple[str, Sequence[float]]], *, account_id: str) -> int:
        check_account(self.account_id, account_id)
        rows = [{"id": nid, "embedding": check_embedding(v, f"embeddings[{i}]")} for i, (nid, v) in enumerate(items)]
        return self._rows(Q_SET_EMBEDDINGS, {"rows": rows, "accountId": account_id}, read=False)[0]["updated"]

    def soft_delete(self, node_id: str, *, guards: Guards) -> int:
        return self._set_deleted(node_id, guards, iso(time.time()))

    def restore(self, node_id: str, *, guards: Guards) -> int:
        return self._set_deleted(node_id, guards, None)

    def _set_deleted(self, node_id: str, guards: Guards, when: str | None) -> int:
        g = guards_ok(guards)
        check_account(self.account_id, g.account_id, node=node_id)
        params = {**guard_params(g), "id": node_id, "deletedAt": when, "now": iso(time.time())}

        def work(tx: Any) -> int:
            if confined_hidden(tx, g, [node_id]):  # another conversation's node: refused, as a write into it is
                check_confined(g, None, node_id, ["Conversation"], {})
            rows = list(tx.run(Q_HIERARCHY_SET, params))
            return int(rows[0]["touched"]) if rows else 0

        return int(self.write(work))

    def purge(self, *, older_than_days: float = GRACE_DAYS, account_id: str | None = None) -> int:
        cutoff = iso(time.time() - older_than_days * 86400.0)
        rows = self._rows(Q_PURGE, {"cutoff": cutoff, "accountId": account_id}, read=False)
        return rows[0]["purged"] if rows else 0

    def delete_nodes(self, node_ids: Sequence[str], *, guards: Guards) -> int:
        """Hard-delete the nodes within the guards, soft delete aside, with their edges (``backlinkCount`` follows)."""
        g = guards_ok(guards)
        check_account(self.account_id, g.account_id)
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return 0
        def work(tx: Any) -> int:
            hidden = set(confined_hidden(tx, g, ids))  # only nodes it could read under its confined view
            keep = [nid for nid in ids if nid not in hidden]
            rows = list(tx.run(Q_DELETE_NODES, {**guard_params(g), "ids": keep})) if keep else []
            return int(rows[0]["deleted"]) if rows else 0

        return int(self.write(work))

    def erase_nodes(self, node_ids: Sequence[str], *, account_id: str) -> dict[str, int]:
        """Hard-delete these nodes of the account now (an erase request), whatever their state:
        ``DETACH DELETE`` in one write transaction per 1,000, so the full-text and vector indexes
        forget them; surviving targets' ``backlinkCount`` follows."""
        check_account(self.account_id, account_id)
        ids = list(dict.fromkeys(str(i) for i in node_ids))
        counts = {"nodes": 0, "edges": 0, "embeddings": 0, "fulltext": 0}
        for start in range(0, len(ids), 1000):
            params = {"accountId": account_id, "ids": ids[start:start + 1000], "textKeys": list(TEXT_PROPERTIES)}

            def work(tx: Any, params: dict[str, Any] = params) -> dict[str, int]:
                row = tx.run(Q_ERASE_COUNTS, params).single()
                tx.run(Q_ERASE_BACKLINKS, params).consume()
                tx.run(Q_ERASE, params).consume()
                return {k: int(row[k]) for k in counts}

            for key, value in self.write(work).items():
                counts[key] += value
        return counts

    def scan_nodes(self, *, account_id: str, contains: str | None = None, after: str = "",
                   limit: int = 1000) -> list[Node]:
        """One page of every node of the account (soft-deleted too) by id; ``contains``: a prefilter on
        the string properties and the id, case folded."""
        rows = self._rows(Q_SCAN, {"accountId": account_id, "after": after, "contains": contains or None,
                                   "limit": max(0, int(limit))})
        return [node_of(r) for r in rows]

    def node_edges(self, node_ids: Sequence[str], *, account_id: str) -> list[tuple[str, str, str, dict[str, Any]]]:
        """Every edge touching these nodes of the account, whatever their state."""
        rows = self._rows(Q_NODE_EDGES, {"accountId": account_id, "ids": list(dict.fromkeys(node_ids))})
        return sorted((r["source"], r["type"], r["target"], dict(r["props"])) for r in rows)

    def export_embeddings(self, node_ids: Sequence[str], *, account_id: str) -> dict[str, list[float]]:
        """The stored vectors of these nodes of the account, whatever their state (export)."""
        rows = self._rows(Q_EXPORT_EMBEDDINGS, {"accountId": account_id, "ids": list(dict.fromkeys(node_ids))})
        return {r["id"]: list(r["embedding"]) for r in rows}

    def restore_stamps(self, rows: Sequence[tuple[str, float, float, float | None]], *, account_id: str) -> int:
        """Set ``(id, createdAt, updatedAt, deletedAt)`` (epoch seconds) on nodes of the account, as an
        export recorded them; returns the nodes updated."""
        check_account(self.account_id, account_id)
        params = {"accountId": account_id,
                  "rows": [{"id": nid, "c": iso(c), "u": iso(u), "d": iso(d)} for nid, c, u, d in rows]}
        found = self._rows(Q_RESTORE_STAMPS, params, read=False)
        return int(found[0]["updated"]) if found else 0

    def label_counts(self, *, account_id: str) -> dict[str, int]:
        """Nodes of the account per label, soft-deleted too (``graph migrate`` verifies them)."""
        return {r["label"]: r["n"] for r in self._rows(Q_LABEL_COUNTS, {"accountId": account_id})}

    def edge_count(self, *, account_id: str) -> int:
        """Edges from nodes of the account."""
        rows = self._rows(Q_EDGE_COUNT, {"accountId": account_id})
        return int(rows[0]["n"]) if rows else 0

    def unscoped(self, *, account_id: str, sample: int = 5) -> dict[str, tuple[int, list[str]]]:
        """The account's nodes without a scope (soft-deleted too): a label → (count, up to
        ``sample`` ids). Legacy nodes every scope can read; ``plughost memory audit`` lists them."""
        check_account(self.account_id, account_id)
        rows = self._rows(Q_UNSCOPED, {"accountId": account_id, "sample": sample})
        return {r["label"]: (r["total"], list(r["ids"])) for r in rows}

    def stamp_scope(self, scope: str, *, account_id: str) -> int:
        """Give every unscoped node of the account ``scope`` (``memory audit --fix-scope``); returns how many."""
        check_account(self.account_id, account_id)
        rows = self._rows(Q_STAMP_SCOPE, {"accountId": account_id, "scope": scope}, read=False)
        return rows[0]["stamped"] if rows else 0

    def wipe_account(self, account_id: str) -> None:
        """Remove every node of an account (tests and account deletion), in batches of 10,000, and its
        conversation-id key (a lease): a new account of that name keys its conversations anew."""
        self._auto(Q_WIPE, {"accountId": account_id})
        self._rows(Q_WIPE_KEY, {"name": f"{account_id}/conversation-id-key"}, read=False)
    # ------------------------------------------------------------------ reads
    def get(self, node_id: str, *, guards: Guards, include_deleted: bool = False) -> Node | None:
        g = guards_ok(guards)
        rows = self._rows(Q_GET_ANY if include_deleted else Q_GET, {**guard_params(g), "id": node_id})
        return node_of(rows[0]) if rows else None

    def get_embedding(self, node_id: str, *, guards: Guards) -> list[float] | None:
        rows = self._rows(Q_EMBEDDING, {**guard_params(guards_ok(guards)), "id": node_id})
        return list(rows[0]["embedding"]) if rows and rows[0]["embedding"] is not None else None

    def find(self, *, guards: Guards, labels: Sequence[str] | None = None, where: Mapping[str, Any] | None = None,
             order_by: str | None = None, descending: bool = True, limit: int = 100, offset: int = 0) -> list[Node]:
        g = guards_ok(guards)
        keys = [check_name(k, "property") for k in (where or {})]
        params = {**guard_params(g), "labels": list(check_labels(labels)) if labels else [],
                  "limit": max(0, int(limit)), "offset": max(0, int(offset))}
        for i, key in enumerate(keys):
            params[f"v{i}"] = (where or {})[key]
        if order_by:
            params["orderKey"] = check_name(order_by, "order_by")
        return [node_of(r) for r in self._rows(q_find(keys, order_by, descending), params)]

    def count(self, *, guards: Guards, labels: Sequence[str] | None = None) -> int:
        params = {**guard_params(guards_ok(guards)), "labels": list(check_labels(labels)) if labels else []}
        return self._rows(Q_COUNT, params)[0]["c"]

    def expand(self, node_ids: Sequence[str], *, guards: Guards, limit: int = EXPAND_LIMIT) -> dict[str, list[Neighbor]]:
        """Guarded 1-hop neighbours of every node in one query (at most ``limit`` each)."""
        g = guards_ok(guards)
        limit = max(0, min(int(limit), EXPAND_LIMIT))
        ids = list(dict.fromkeys(node_ids))
        out: dict[str, list[Neighbor]] = {nid: [] for nid in ids}
        if not ids or limit == 0:
            return out
        for r in self._rows(Q_EXPAND, {**guard_params(g), "ids": ids, "limit": limit}):
            out[r["oid"]].append(Neighbor(node_of(r), r["type"], r["direction"], dict(r["rel"])))
        return out

    def linked(self, node_ids: Sequence[str], edge_type: str, *, guards: Guards,
               limit: int = LINKED_LIMIT) -> dict[str, list[Node]]:
        """The guarded nodes with an ``edge_type`` edge into each guarded origin, in one query."""
        g = guards_ok(guards)
        check_name(edge_type, "edge type")
        limit = max(0, min(int(limit), LINKED_LIMIT))
        ids = list(dict.fromkeys(node_ids))
        out: dict[str, list[Node]] = {nid: [] for nid in ids}
        if not ids or limit == 0:
            return out
        for r in self._rows(Q_LINKED, {**guard_params(g), "ids": ids, "type": edge_type, "limit": limit}):
            out[r["oid"]].append(node_of(r))
        return out

    def missing_embeddings(self, *, account_id: str, labels: Sequence[str] | None = None,
                           exclude: Iterable[str] = (), limit: int = 100) -> list[Node]:
        labs = list(check_labels(labels) if labels else VECTOR_LABELS)
        rows = self._rows(Q_MISSING, {"accountId": account_id, "labels": labs, "exclude": list(exclude),
                                      "limit": max(0, int(limit))})
        return [node_of(r) for r in rows]

    def query(self, text: str, params: Mapping[str, Any] | None = None, *, guards: Guards,
              read_only: bool = True) -> dict[str, Any]:
        """Cypher passthrough for the graph tools (:mod:`plughost.plugins.graph.cypher`): ``{rows, warnings}``."""
        return run_query(self, text, params, guards=guards_ok(guards), read_only=read_only)

    def schema(self, *, guards: Guards) -> dict[str, Any]:
        p = guard_params(guards_ok(guards))
        return {
            "backend": self.backend,
            "labels": {r["label"]: r["c"] for r in self._rows(Q_SCHEMA_LABELS, p)},
            "relationshipTypes": {r["type"]: r["c"] for r in self._rows(Q_SCHEMA_RELS, p)},
            "propertyKeys": [r["key"] for r in self._rows(Q_SCHEMA_KEYS, p) if r["key"] not in ("embedding",)],
            "vectorIndexes": self.vector_indexes(),
        }

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None
        self.driver.close()

