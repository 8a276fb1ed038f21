"""The Neo4j graph store (SPEC 8.2): the official driver, ``schema.cypher``, index discovery.

Every node the store writes carries the ``GraphNode`` label (the id constraint and account
index hang off it; it is hidden from the labels the port returns). Guards are one parameterised
WHERE fragment (:data:`GUARD` / :data:`RELATED_GUARD`), so no guard value is ever spliced into
query text; labels and relationship types, which Cypher cannot parameterise, are validated
identifiers (``plugins.graph.common.NAME_RE``) and backtick-quoted.

Vector search goes through ``db.index.vector.queryNodes``, which returns the nearest nodes of
the whole index *before* any WHERE clause: the store asks for ``k * OVERFETCH`` (at least
``MIN_FETCH``) candidates per index so that the guards, applied right after the procedure,
still leave k rows in all but pathological cases (e.g. an account holding a tiny share of an
index). Full-text search goes through ``db.index.fulltext.queryNodes`` on ``entity_search``
with Lucene special characters escaped; when that index is missing the search returns no rows
(the caller keeps its vector results) and logs it once.

Every Cypher statement this module can issue is listed by :func:`lint_statements` and checked
by Neo4j's own Cypher analyser in ``tests/graph/test_cypher_lint.py``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from host.errors import UserError
from host.graph import VECTOR_LABELS, Guards, Hit, Neighbor, Node
from host.log import log
from plugins.graph.common import (
    EXPAND_LIMIT,
    GRACE_DAYS,
    Prepared,
    check_account,
    check_embedding,
    check_labels,
    check_name,
    env_account,
    env_dimensions,
    guards_ok,
    iso,
    keywords_of,
    new_id,
    prepare,
    prepare_rows,
)

SCHEMA_FILE = Path(__file__).resolve().parent / "schema.cypher"
BASE_LABEL = "GraphNode"
FULLTEXT_INDEX = "entity_search"
OVERFETCH = 10
"""Vector candidates fetched per index = max(k * OVERFETCH, MIN_FETCH), capped at MAX_FETCH."""
MIN_FETCH = 100
MAX_FETCH = 10000
WARNING_STATUS = re.compile(r"^0[12]N5\d$")
LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')

GUARD = """n.accountId = $accountId AND n.deletedAt IS NULL
  AND ($allowedScopes IS NULL OR n.scope IS NULL OR n.scope IN $allowedScopes)
  AND ($agentSlug IS NULL OR (n.agents IS NOT NULL AND $agentSlug IN n.agents))"""
"""Guard layers 1, 2, 3 and 5 on ``n``."""

RELATED_GUARD = """m.accountId = $accountId AND m.deletedAt IS NULL
  AND ($allowedScopes IS NULL OR m.scope IS NULL OR m.scope IN $allowedScopes)
  AND ($agentSlug IS NULL OR m.agents IS NULL OR $agentSlug IN m.agents)"""
"""Guard layer 4 on an expanded neighbour ``m``."""

LABEL_FILTER = "(size($labels) = 0 OR any(l IN labels(n) WHERE l IN $labels))"
NODE_RETURN = "n.id AS id, labels(n) AS labels, n {.*, embedding: null} AS props, n.embedding IS NOT NULL AS hasEmbedding"

Q_GET = f"MATCH (n:{BASE_LABEL} {{id: $id}}) WHERE {GUARD} RETURN {NODE_RETURN}"
Q_GET_ANY = f"""MATCH (n:{BASE_LABEL} {{id: $id}})
WHERE n.accountId = $accountId
  AND ($allowedScopes IS NULL OR n.scope IS NULL OR n.scope IN $allowedScopes)
  AND ($agentSlug IS NULL OR (n.agents IS NOT NULL AND $agentSlug IN n.agents))
RETURN {NODE_RETURN}"""
Q_EMBEDDING = f"MATCH (n:{BASE_LABEL} {{id: $id}}) WHERE {GUARD} RETURN n.embedding AS embedding"
Q_COUNT = f"MATCH (n:{BASE_LABEL}) WHERE {GUARD} AND {LABEL_FILTER} RETURN count(n) AS c"
Q_FULLTEXT = f"""CALL db.index.fulltext.queryNodes($index, $query) YIELD node AS n, score
WHERE {GUARD} AND {LABEL_FILTER}
RETURN {NODE_RETURN}, score ORDER BY score DESC LIMIT $k"""
Q_VECTOR = f"""CALL db.index.vector.queryNodes($index, $fetch, $vector) YIELD node AS n, score
WHERE {GUARD} AND {LABEL_FILTER}
RETURN {NODE_RETURN}, score ORDER BY score DESC LIMIT $k"""
Q_KEYWORD = f"""MATCH (n:{BASE_LABEL}) WHERE $keyword IN n.keywordsLower AND {GUARD} AND {LABEL_FILTER}
RETURN {NODE_RETURN} ORDER BY n.updatedAt DESC, n.id LIMIT $k"""
Q_EXPAND = f"""MATCH (o:{BASE_LABEL} {{id: $id}}) WHERE o.accountId = $accountId AND o.deletedAt IS NULL
MATCH (o)-[r]-(m:{BASE_LABEL}) WHERE {RELATED_GUARD}
RETURN type(r) AS type, CASE WHEN startNode(r) = o THEN 'out' ELSE 'in' END AS direction,
       properties(r) AS rel, m.id AS id, labels(m) AS labels, m {{.*, embedding: null}} AS props,
       m.embedding IS NOT NULL AS hasEmbedding
LIMIT $limit"""
Q_MISSING = f"""MATCH (n:{BASE_LABEL})
WHERE n.accountId = $accountId AND n.deletedAt IS NULL AND n.embedding IS NULL
  AND any(l IN labels(n) WHERE l IN $labels) AND NOT n.id IN $exclude
RETURN {NODE_RETURN} ORDER BY n.createdAt, n.id LIMIT $limit"""
Q_EXISTING = f"MATCH (n:{BASE_LABEL}) WHERE n.id IN $ids RETURN n.id AS id, n.accountId AS accountId"
Q_REINGEST = f"""MATCH (n:{BASE_LABEL}:KnowledgeDocument)
WHERE n.accountId = $accountId AND n.attachmentId = $attachmentId
WITH n ORDER BY n.deletedAt IS NOT NULL, n.updatedAt DESC LIMIT 1
OPTIONAL MATCH (n)-->(s:Section) WHERE s.accountId = $accountId
OPTIONAL MATCH (s)-->(c:Chunk) WHERE c.accountId = $accountId
WITH n, collect(DISTINCT s) + collect(DISTINCT c) AS old
FOREACH (x IN old | DETACH DELETE x)
RETURN n.id AS id"""
Q_HIERARCHY_SET = f"""MATCH (n:{BASE_LABEL} {{id: $id}})
WHERE n.accountId = $accountId
  AND ($allowedScopes IS NULL OR n.scope IS NULL OR n.scope IN $allowedScopes)
  AND ($agentSlug IS NULL OR (n.agents IS NOT NULL AND $agentSlug IN n.agents))
OPTIONAL MATCH (n)-->(s:Section) WHERE n:KnowledgeDocument AND s.accountId = $accountId
OPTIONAL MATCH (s)-->(c:Chunk) WHERE c.accountId = $accountId
OPTIONAL MATCH (n)-->(d:Chunk) WHERE n:Section AND NOT n:KnowledgeDocument AND d.accountId = $accountId
WITH n, collect(DISTINCT s) + collect(DISTINCT c) + collect(DISTINCT d) AS kids
UNWIND [n] + kids AS t
WITH DISTINCT t
WHERE ($deletedAt IS NULL AND t.deletedAt IS NOT NULL) OR ($deletedAt IS NOT NULL AND t.deletedAt IS NULL)
SET t.deletedAt = $deletedAt, t.updatedAt = $now
RETURN count(t) AS touched"""
Q_PURGE = f"""MATCH (n:{BASE_LABEL})
WHERE n.deletedAt IS NOT NULL AND n.deletedAt <= $cutoff AND ($accountId IS NULL OR n.accountId = $accountId)
OPTIONAL MATCH (n)-->(m:{BASE_LABEL}) WHERE NOT (m.deletedAt IS NOT NULL AND m.deletedAt <= $cutoff)
WITH n, collect(m) AS targets
FOREACH (m IN targets | SET m.backlinkCount = coalesce(m.backlinkCount, 1) - 1)
DETACH DELETE n
RETURN count(*) AS purged"""
Q_SET_EMBEDDINGS = f"""UNWIND $rows AS row
MATCH (n:{BASE_LABEL} {{id: row.id}}) WHERE n.accountId = $accountId
SET n.embedding = row.embedding
RETURN count(n) AS updated"""
Q_WIPE = f"MATCH (n:{BASE_LABEL} {{accountId: $accountId}}) DETACH DELETE n"
Q_INDEXES = "SHOW INDEXES YIELD name, labelsOrTypes, type, options WHERE type = 'VECTOR' RETURN name, labelsOrTypes, options"
Q_FULLTEXT_EXISTS = "SHOW INDEXES YIELD name, type WHERE type = 'FULLTEXT' AND name = $index RETURN count(*) AS n"
Q_EXPLAIN_PREFIX = "EXPLAIN "
Q_SCHEMA_LABELS = f"""MATCH (n:{BASE_LABEL}) WHERE {GUARD}
UNWIND labels(n) AS label WITH label WHERE label <> '{BASE_LABEL}'
RETURN label, count(*) AS c ORDER BY label"""
Q_SCHEMA_RELS = f"""MATCH (n:{BASE_LABEL})-[r]->(:{BASE_LABEL}) WHERE {GUARD}
RETURN type(r) AS type, count(*) AS c ORDER BY type"""
Q_SCHEMA_KEYS = f"""MATCH (n:{BASE_LABEL}) WHERE {GUARD}
WITH n LIMIT 2000 UNWIND keys(n) AS key
RETURN DISTINCT key ORDER BY key"""
Q_DELETE_EDGE_TMPL = """MATCH (a:{base} {{id: $source}})-[r:`{type}`]->(b:{base} {{id: $target}})
WHERE a.accountId = $accountId AND b.accountId = $accountId
DELETE r
SET b.backlinkCount = coalesce(b.backlinkCount, 1) - 1
RETURN count(*) AS deleted"""


def q_upsert(labels: Sequence[str]) -> str:
    """MERGE nodes of one label set; a node of another account is left alone and reported."""
    extra = "".join(f":`{label}`" for label in check_labels(labels))
    return f"""UNWIND $rows AS row
MERGE (n:{BASE_LABEL} {{id: row.id}})
ON CREATE SET n.accountId = $accountId, n.createdAt = $now, n.backlinkCount = 0
WITH n, row WHERE n.accountId = $accountId
SET n += row.props, n.keywordsLower = row.keywords, n.updatedAt = $now, n.deletedAt = null
SET n{extra}
FOREACH (v IN CASE WHEN row.embedding IS NULL THEN [] ELSE [row.embedding] END | SET n.embedding = v)
RETURN n.id AS id"""


def q_edges(edge_type: str) -> str:
    """MERGE typed edges between two nodes of the account; backlinkCount follows new edges."""
    t = check_name(edge_type, "edge.type")
    return f"""UNWIND $rows AS row
MATCH (a:{BASE_LABEL} {{id: row.source}}) WHERE a.accountId = $accountId
MATCH (b:{BASE_LABEL} {{id: row.target}}) WHERE b.accountId = $accountId
MERGE (a)-[r:`{t}`]->(b)
ON CREATE SET b.backlinkCount = coalesce(b.backlinkCount, 0) + 1
SET r += row.props
RETURN row.pos AS pos"""


def q_find(where_keys: Sequence[str], order_by: str | None, descending: bool) -> str:
    conds = "".join(f" AND n[$k{i}] = $v{i}" for i in range(len(where_keys)))
    order = "n[$orderKey]" if order_by else "n.updatedAt"
    return (f"MATCH (n:{BASE_LABEL}) WHERE {GUARD} AND {LABEL_FILTER}{conds}\n"
            f"RETURN {NODE_RETURN} ORDER BY {order} {'DESC' if descending else 'ASC'}, n.id SKIP $offset LIMIT $limit")


def schema_statements(dimensions: int) -> list[str]:
    """``schema.cypher`` split into statements, with the configured dimensions filled in."""
    text = "\n".join(line for line in SCHEMA_FILE.read_text(encoding="utf-8").splitlines()
                     if not line.strip().startswith("//"))
    text = text.replace("{{dimensions}}", str(int(dimensions)))
    return [s.strip() for s in re.split(r";\s*$", text, flags=re.M) if s.strip()]


def lucene_query(text: str) -> str:
    """User text as a Lucene query: every special character escaped, words OR-ed."""
    words = [LUCENE_SPECIAL.sub(r"\\\1", w) for w in str(text).split()]
    words = [w for w in words if w.upper() not in ("AND", "OR", "NOT", "TO")] or \
        [f'"{w}"' for w in words if w]
    return " OR ".join(words[:32])


def lint_statements() -> list[str]:
    """Every statement the store can issue (templated ones with sample names), for the linter."""
    stmts = [Q_GET, Q_GET_ANY, Q_EMBEDDING, Q_COUNT, Q_FULLTEXT, Q_VECTOR, Q_KEYWORD, Q_EXPAND, Q_MISSING, Q_EXISTING,
             Q_REINGEST, Q_HIERARCHY_SET, Q_PURGE, Q_SET_EMBEDDINGS, Q_WIPE, Q_INDEXES, Q_FULLTEXT_EXISTS,
             Q_SCHEMA_LABELS, Q_SCHEMA_RELS, Q_SCHEMA_KEYS,
             Q_DELETE_EDGE_TMPL.format(base=BASE_LABEL, type="MENTIONS"),
             q_upsert(["Person"]), q_upsert(["KnowledgeDocument", "Report"]), q_edges("HAS_SECTION"),
             q_find([], None, True), q_find(["name", "channel"], "rank", False)]
    schema, shapes = [], set()
    for stmt in schema_statements(384):  # one vector index per label: lint each shape once
        shape = re.sub(r"CREATE VECTOR INDEX \w+ IF NOT EXISTS FOR \(n:\w+\)", "CREATE VECTOR INDEX", stmt)
        if shape not in shapes:
            shapes.add(shape)
            schema.append(stmt)
    return stmts + schema


def _clean_props(props: Mapping[str, Any]) -> dict[str, Any]:
    """Neo4j properties cannot hold maps: nested objects are stored as JSON text."""
    out = {}
    for key, value in props.items():
        if isinstance(value, Mapping) or (isinstance(value, list) and any(isinstance(v, (Mapping, list)) for v in value)):
            out[key] = json.dumps(value, ensure_ascii=False)
        else:
            out[key] = value
    return out


class Neo4jStore:
    """:class:`host.graph.GraphStore` on Neo4j through the official driver."""

    backend = "neo4j"

    def __init__(self, driver: Any, *, env: Mapping[str, str], database: str | None = None,
                 apply_schema: bool = True) -> None:
        self.driver = driver
        self.env = dict(env)
        self.database = database or None
        self._indexes: dict[str, tuple[str, int]] | None = None
        self._fulltext_warned = False
        if apply_schema:
            self.apply_schema()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Neo4jStore:
        import neo4j

        uri = (env.get("NEO4J_URI") or "").strip()
        if not uri:
            raise UserError("NEO4J_URI: not set; expected e.g. bolt://127.0.0.1:7687 (or PLUGHOST_STORE=sqlite)")
        user = env.get("NEO4J_USER") or env.get("NEO4J_USERNAME") or "neo4j"
        password = env.get("NEO4J_PASSWORD") or ""
        try:
            driver = neo4j.GraphDatabase.driver(uri, auth=(user, password), connection_timeout=10.0)
            driver.verify_connectivity()  # fails fast; execute_query would retry for ~30 s
            return cls(driver, env=env, database=env.get("NEO4J_DATABASE"))
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, ValueError, OSError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UserError(f"NEO4J_URI: cannot use {uri} ({reason}); check NEO4J_URI/NEO4J_USER/NEO4J_PASSWORD "
                            "or set PLUGHOST_STORE=sqlite") from None

    # ------------------------------------------------------------------ plumbing
    @property
    def account_id(self) -> str | None:
        return env_account(self.env)

    @property
    def dimensions(self) -> int:
        return env_dimensions(self.env)

    def _run(self, query: str, params: Mapping[str, Any] | None = None, *, read: bool = False) -> Any:
        import neo4j

        routing = neo4j.RoutingControl.READ if read else neo4j.RoutingControl.WRITE
        return self.driver.execute_query(query, dict(params or {}), routing_=routing, database_=self.database)

    def _rows(self, query: str, params: Mapping[str, Any] | None = None, *, read: bool = True) -> list[Any]:
        return list(self._run(query, params, read=read).records)

    @staticmethod
    def _guard_params(g: Guards) -> dict[str, Any]:
        return {"accountId": g.account_id,
                "allowedScopes": list(g.allowed_scopes) if g.allowed_scopes is not None else None,
                "agentSlug": g.agent_slug}

    @staticmethod
    def _node(record: Any) -> Node:
        props = dict(record["props"])
        props.pop("embedding", None)
        props.pop("keywordsLower", None)
        props.pop("id", None)
        labels = tuple(label for label in record["labels"] if label != BASE_LABEL)
        return Node(record["id"], labels, props, props.get("accountId", ""), bool(record["hasEmbedding"]))

    def apply_schema(self) -> None:
        """``schema.cypher`` (every statement is IF NOT EXISTS, so this is idempotent)."""
        for statement in schema_statements(self.dimensions):
            self._run(statement)
        self.clear_index_cache()

    # ------------------------------------------------------------------ writes
    def upsert_node(self, labels: Sequence[str], properties: Mapping[str, Any], *, account_id: str,
                    node_id: str | None = None, embedding: Sequence[float] | None = None) -> str:
        check_account(self.account_id, account_id, node=node_id)
        item = prepare(labels, properties, account_id=account_id, node_id=node_id, embedding=embedding)
        return self._upsert([item], account_id)[0]

    def upsert_many(self, rows: Iterable[Mapping[str, Any]], *, account_id: str) -> int:
        check_account(self.account_id, account_id)
        items, edges = prepare_rows(rows, account_id)
        ids, missing = self.import_batch(items, edges, account_id=account_id)
        if missing:
            i, j, _, to, _ = edges[missing[0]]
            raise UserError(f"rows[{i}].edges[{j}].to: node '{to}' not found in account '{account_id}'")
        return len(ids)

    def import_batch(self, items: list[Prepared], edges: list[tuple[int, int, str, str, Any]], *,
                     account_id: str) -> tuple[list[str], list[int]]:
        check_account(self.account_id, account_id)
        ids = self._upsert(items, account_id)
        missing = self._edges([(ids[i], t, to, p) for i, _, t, to, p in edges], account_id)
        return ids, missing

    def _upsert(self, items: list[Prepared], account_id: str) -> list[str]:
        now = iso(time.time())
        for item in items:
            if item.id is None and "KnowledgeDocument" in item.labels and item.properties.get("attachmentId"):
                rows = self._rows(Q_REINGEST, {"accountId": account_id,
                                               "attachmentId": item.properties["attachmentId"]}, read=False)
                item.id = rows[0]["id"] if rows else None
        ids = [item.id or new_id() for item in items]
        explicit = [i for i, item in zip(ids, items, strict=True) if item.id is not None]
        if explicit:
            for rec in self._rows(Q_EXISTING, {"ids": explicit}):
                if rec["accountId"] != account_id:
                    log("graph-write", "reject", reason="invalid-account-id", node=rec["id"])
                    raise UserError(f"id: node '{rec['id']}' belongs to another account; writes must target ACCOUNT_ID")
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for nid, item in zip(ids, items, strict=True):
            groups.setdefault(item.labels, []).append({
                "id": nid, "props": _clean_props(item.properties), "keywords": keywords_of(item.properties) or None,
                "embedding": item.embedding,
            })
        for labels, rows in groups.items():
            self._run(q_upsert(labels), {"rows": rows, "accountId": account_id, "now": now})
        return ids

    def create_edge(self, source_id: str, target_id: str, edge_type: str,
                    properties: Mapping[str, Any] | None = None, *, account_id: str) -> None:
        if self.create_edges([(source_id, edge_type, target_id, properties)], account_id=account_id):
            raise UserError(f"edge: node '{source_id}' or '{target_id}' not found in account '{account_id}'")

    def create_edges(self, edges: Iterable[tuple[str, str, str, Mapping[str, Any] | None]], *,
                     account_id: str, validated: bool = False) -> list[int]:
        from plugins.graph.common import check_edge

        check_account(self.account_id, account_id)
        wanted = []
        for i, (src, etype, dst, props) in enumerate(edges):
            t, d, p = check_edge({"type": etype, "to": dst, "properties": props}, f"edges[{i}]")
            wanted.append((src, t, d, p))
        return self._edges(wanted, account_id)

    def _edges(self, wanted: list[tuple[str, str, str, Any]], account_id: str) -> list[int]:
        by_type: dict[str, list[dict[str, Any]]] = {}
        for pos, (src, etype, dst, props) in enumerate(wanted):
            by_type.setdefault(etype, []).append({"pos": pos, "source": src, "target": dst,
                                                  "props": _clean_props(props or {})})
        done: set[int] = set()
        for etype, rows in by_type.items():
            for rec in self._rows(q_edges(etype), {"rows": rows, "accountId": account_id}, read=False):
                done.add(rec["pos"])
        return [pos for pos in range(len(wanted)) if pos not in done]

    def delete_edge(self, source_id: str, target_id: str, edge_type: str, *, account_id: str) -> int:
        check_account(self.account_id, account_id)
        q = Q_DELETE_EDGE_TMPL.format(base=BASE_LABEL, type=check_name(edge_type, "edge.type"))
        return self._rows(q, {"source": source_id, "target": target_id, "accountId": account_id},
                          read=False)[0]["deleted"]

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
        rows = self._rows(Q_HIERARCHY_SET, {**self._guard_params(g), "id": node_id, "deletedAt": when,
                                            "now": iso(time.time())}, read=False)
        return rows[0]["touched"] if rows else 0

    def purge(self, *, older_than_days: float = GRACE_DAYS, account_id: str | None = None) -> int:
        cutoff = iso(time.time() - older_than_days * 86400.0)
        rows = self._rows(Q_PURGE, {"cutoff": cutoff, "accountId": account_id}, read=False)
        return rows[0]["purged"] if rows else 0

    def wipe_account(self, account_id: str) -> None:
        """Remove every node of an account (tests and account deletion)."""
        self._run(Q_WIPE, {"accountId": account_id})

    # ------------------------------------------------------------------ reads
    def get(self, node_id: str, *, guards: Guards, include_deleted: bool = False) -> Node | None:
        g = guards_ok(guards)
        rows = self._rows(Q_GET_ANY if include_deleted else Q_GET, {**self._guard_params(g), "id": node_id})
        return self._node(rows[0]) if rows else None

    def get_embedding(self, node_id: str, *, guards: Guards) -> list[float] | None:
        rows = self._rows(Q_EMBEDDING, {**self._guard_params(guards_ok(guards)), "id": node_id})
        return list(rows[0]["embedding"]) if rows and rows[0]["embedding"] is not None else None

    def find(self, *, guards: Guards, labels: Sequence[str] | None = None, where: Mapping[str, Any] | None = None,
             order_by: str | None = None, descending: bool = True, limit: int = 100, offset: int = 0) -> list[Node]:
        g = guards_ok(guards)
        keys = [check_name(k, "property") for k in (where or {})]
        params = {**self._guard_params(g), "labels": list(check_labels(labels)) if labels else [],
                  "limit": max(0, int(limit)), "offset": max(0, int(offset))}
        for i, key in enumerate(keys):
            params[f"k{i}"] = key
            params[f"v{i}"] = (where or {})[key]
        if order_by:
            params["orderKey"] = check_name(order_by, "order_by")
        return [self._node(r) for r in self._rows(q_find(keys, order_by, descending), params)]

    def count(self, *, guards: Guards, labels: Sequence[str] | None = None) -> int:
        params = {**self._guard_params(guards_ok(guards)), "labels": list(check_labels(labels)) if labels else []}
        return self._rows(Q_COUNT, params)[0]["c"]

    def fulltext_search(self, query: str, k: int, *, guards: Guards,
                        labels: Sequence[str] | None = None) -> list[Hit]:
        import neo4j

        lucene = lucene_query(query)
        if not lucene or k <= 0:
            return []
        params = {**self._guard_params(guards_ok(guards)), "labels": list(check_labels(labels)) if labels else [],
                  "index": FULLTEXT_INDEX, "query": lucene, "k": int(k)}
        try:
            rows = self._rows(Q_FULLTEXT, params)
        except neo4j.exceptions.ClientError as exc:
            if "fulltext" in str(exc).lower() or "index" in str(exc).lower():
                if not self._fulltext_warned:
                    log("graph-search", "fulltext-index-missing", index=FULLTEXT_INDEX, fallback="vector-only")
                    self._fulltext_warned = True
                return []
            raise
        return [Hit(self._node(r), float(r["score"])) for r in rows]

    def keyword_search(self, keyword: str, k: int, *, guards: Guards,
                       labels: Sequence[str] | None = None) -> list[Hit]:
        tag = str(keyword).strip().lower()
        if not tag or k <= 0:
            return []
        params = {**self._guard_params(guards_ok(guards)), "labels": list(check_labels(labels)) if labels else [],
                  "keyword": tag, "k": int(k)}
        return [Hit(self._node(r), 1.0) for r in self._rows(Q_KEYWORD, params)]

    def vector_search(self, vector: Sequence[float], k: int, *, guards: Guards,
                      labels: Sequence[str] | None = None) -> list[Hit]:
        g = guards_ok(guards)
        vec = check_embedding(vector, "vector")
        if k <= 0 or not any(vec):
            return []
        indexes = self._index_map()
        wanted = [lab for lab in (check_labels(labels) if labels else indexes) if lab in indexes]
        fetch = min(max(int(k) * OVERFETCH, MIN_FETCH), MAX_FETCH)
        hits: dict[str, Hit] = {}
        for label in wanted:
            name, dims = indexes[label]
            if dims and dims != len(vec):
                continue
            params = {**self._guard_params(g), "labels": list(labels) if labels else [], "index": name,
                      "fetch": fetch, "vector": vec, "k": int(k)}
            for r in self._rows(Q_VECTOR, params):
                hit = Hit(self._node(r), float(r["score"]))
                if hit.node.id not in hits or hits[hit.node.id].score < hit.score:
                    hits[hit.node.id] = hit
        return sorted(hits.values(), key=lambda h: -h.score)[: int(k)]

    def expand(self, node_ids: Sequence[str], *, guards: Guards, limit: int = EXPAND_LIMIT) -> dict[str, list[Neighbor]]:
        g = guards_ok(guards)
        limit = max(0, min(int(limit), EXPAND_LIMIT))
        out: dict[str, list[Neighbor]] = {}
        for nid in dict.fromkeys(node_ids):
            rows = self._rows(Q_EXPAND, {**self._guard_params(g), "id": nid, "limit": limit})
            out[nid] = [Neighbor(self._node(r), r["type"], r["direction"], dict(r["rel"])) for r in rows]
        return out

    def missing_embeddings(self, *, account_id: str, labels: Sequence[str] | None = None,
                           exclude: Iterable[str] = (), limit: int = 100) -> list[Node]:
        labs = list(check_labels(labels) if labels else VECTOR_LABELS)
        rows = self._rows(Q_MISSING, {"accountId": account_id, "labels": labs, "exclude": list(exclude),
                                      "limit": max(0, int(limit))})
        return [self._node(r) for r in rows]

    def _index_map(self) -> dict[str, tuple[str, int]]:
        """Index discovery: label → (vector index name, dimensions), cached per process."""
        if self._indexes is None:
            found: dict[str, tuple[str, int]] = {}
            for r in self._rows(Q_INDEXES):
                config = (r["options"] or {}).get("indexConfig") or {}
                dims = int(config.get("vector.dimensions") or 0)
                for label in r["labelsOrTypes"] or []:
                    found[label] = (r["name"], dims)
            self._indexes = found
        return self._indexes

    def vector_indexes(self) -> dict[str, int]:
        return {label: dims for label, (_, dims) in sorted(self._index_map().items())}

    def clear_index_cache(self) -> None:
        """Forget discovered indexes (after a reindex or a schema change)."""
        self._indexes = None

    def query(self, text: str, params: Mapping[str, Any] | None = None, *, guards: Guards,
              read_only: bool = True) -> dict[str, Any]:
        """Cypher passthrough for the graph tool: ``{rows, warnings}``; ``$accountId`` is the process's."""
        import neo4j

        g = guards_ok(guards)
        if not isinstance(text, str) or not text.strip():
            raise UserError("query: expected a non-empty Cypher string")
        merged = {**dict(params or {}), **self._guard_params(g)}
        try:
            if read_only:
                reject_write_clauses(text)
                plan = self._run(Q_EXPLAIN_PREFIX + text, merged, read=True)
                kind = getattr(plan.summary, "query_type", "r")
                if kind not in ("r", None):
                    raise UserError(f"read-cypher: the query would write (query type '{kind}'); use write-cypher")
            result = self._run(text, merged, read=read_only)
        except neo4j.exceptions.Neo4jError as exc:
            raise UserError(f"cypher: {exc.code}: {str(exc.message or exc).splitlines()[0]}") from None
        warnings = []
        for status in getattr(result.summary, "gql_status_objects", []) or []:
            code = getattr(status, "gql_status", "")
            if WARNING_STATUS.match(code or ""):
                warnings.append(f"{code}: {getattr(status, 'status_description', '')}")
        return {"rows": [r.data() for r in result.records], "warnings": warnings}

    def schema(self, *, guards: Guards) -> dict[str, Any]:
        p = self._guard_params(guards_ok(guards))
        return {
            "backend": self.backend,
            "labels": {r["label"]: r["c"] for r in self._rows(Q_SCHEMA_LABELS, p)},
            "relationshipTypes": {r["type"]: r["c"] for r in self._rows(Q_SCHEMA_RELS, p)},
            "propertyKeys": [r["key"] for r in self._rows(Q_SCHEMA_KEYS, p) if r["key"] not in ("embedding",)],
            "vectorIndexes": self.vector_indexes(),
        }

    def close(self) -> None:
        self.driver.close()


_WRITE_CLAUSE = re.compile(
    r"\b(CREATE|MERGE|DELETE|DETACH|SET|REMOVE|DROP|FOREACH|LOAD\s+CSV|ALTER|RENAME|GRANT|DENY|REVOKE|"
    r"START\s+DATABASE|STOP\s+DATABASE|TERMINATE|INSERT)\b|\bIN\s+TRANSACTIONS\b|"
    r"\bCALL\s+(db\.create|db\.index\.fulltext\.create|apoc\.(create|merge|refactor|periodic|do|cypher\.run(?!Read)))",
    re.I,
)
_STRINGS_AND_COMMENTS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|//[^\n]*|/\*.*?\*/", re.S)


def reject_write_clauses(text: str) -> None:
    """Refuse a read-only query with a write clause (strings, names and comments ignored)."""
    bare = _STRINGS_AND_COMMENTS.sub(" ", text)
    found = _WRITE_CLAUSE.search(bare)
    if found:
        raise UserError(f"read-cypher: write clause '{found.group(0).strip()}' is not allowed; use write-cypher")
