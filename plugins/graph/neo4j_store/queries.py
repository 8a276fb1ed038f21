"""The Neo4j store's Cypher: the guard layers as one parameterised WHERE fragment (:data:`GUARD` /
:data:`RELATED_GUARD`), every statement the store issues, the filters and the Lucene query text.

No guard value is ever spliced into query text; labels and relationship types, which Cypher
cannot parameterise, are validated identifiers (``plughost.plugins.graph.common.NAME_RE``) and
backtick-quoted. Every statement is listed by :func:`lint_statements` and checked by Neo4j's
own Cypher analyser in ``tests/plugins/graph/test_cypher_lint.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from plughost import Guards
from plughost.plugins.graph.analysis import INDEX_TEXT, query_terms
from plughost.plugins.graph.common import check_labels, check_name

BASE_LABEL = "GraphNode"
FULLTEXT_INDEX = "entity_search"
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
HIDDEN = f"embedding: null, {INDEX_TEXT}: null"
"""Stored properties no read returns (the vector, the analysed text): blanked in every projection."""
NODE_RETURN = f"n.id AS id, labels(n) AS labels, n {{.*, {HIDDEN}}} AS props, n.embedding IS NOT NULL AS hasEmbedding"
HAS_VECTOR = "n.embedding IS NOT NULL AND size(n.embedding) = $dims"
NODE_KEY = "{accountId: $accountId, id: $id}"
COSINE = ("CASE WHEN any(x IN n.embedding WHERE x <> 0) THEN vector.similarity.cosine(n.embedding, $vector) "
          "ELSE 0.5 END")
"""Neo4j's (1 + cos) / 2; a stored all-zero vector (which the function refuses) scores as cosine 0."""

Q_GET = f"MATCH (n:{BASE_LABEL} {NODE_KEY}) WHERE {GUARD} RETURN {NODE_RETURN}"
Q_GET_ANY = f"""MATCH (n:{BASE_LABEL} {NODE_KEY})
WHERE ($allowedScopes IS NULL OR n.scope IS NULL OR n.scope IN $allowedScopes)
  AND ($agentSlug IS NULL OR (n.agents IS NOT NULL AND $agentSlug IN n.agents))
RETURN {NODE_RETURN}"""
Q_EMBEDDING = f"MATCH (n:{BASE_LABEL} {NODE_KEY}) WHERE {GUARD} RETURN n.embedding AS embedding"
Q_COUNT = f"MATCH (n:{BASE_LABEL}) WHERE {GUARD} AND {LABEL_FILTER} RETURN count(n) AS c"
Q_KEYWORD = f"""MATCH (n:{BASE_LABEL}) WHERE $keyword IN n.keywordsLower AND {GUARD} AND {LABEL_FILTER}
RETURN {NODE_RETURN} ORDER BY n.updatedAt DESC, n.id LIMIT $k"""
Q_EXPAND = f"""UNWIND $ids AS oid
MATCH (o:{BASE_LABEL} {{accountId: $accountId, id: oid}}) WHERE o.deletedAt IS NULL
CALL (o) {{
  MATCH (o)-[r]-(m:{BASE_LABEL}) WHERE {RELATED_GUARD}
  RETURN r, m LIMIT $limit
}}
RETURN oid, type(r) AS type, CASE WHEN startNode(r) = o THEN 'out' ELSE 'in' END AS direction,
       properties(r) AS rel, m.id AS id, labels(m) AS labels, m {{.*, {HIDDEN}}} AS props,
       m.embedding IS NOT NULL AS hasEmbedding"""
Q_LINKED = f"""UNWIND $ids AS oid
MATCH (o:{BASE_LABEL} {{accountId: $accountId, id: oid}})
WHERE o.deletedAt IS NULL
  AND ($allowedScopes IS NULL OR o.scope IS NULL OR o.scope IN $allowedScopes)
  AND ($agentSlug IS NULL OR (o.agents IS NOT NULL AND $agentSlug IN o.agents))
CALL (o) {{
  MATCH (o)<-[r]-(n:{BASE_LABEL}) WHERE type(r) = $type AND {GUARD}
  RETURN n ORDER BY n.id LIMIT $limit
}}
RETURN oid, {NODE_RETURN}"""
"""The primary-guarded sources of one edge type into each guarded origin (:meth:`GraphStore.linked`)."""
Q_MISSING = f"""MATCH (n:{BASE_LABEL})
WHERE n.accountId = $accountId AND n.deletedAt IS NULL AND n.embedding IS NULL
  AND any(l IN labels(n) WHERE l IN $labels) AND NOT n.id IN $exclude
RETURN {NODE_RETURN} ORDER BY n.createdAt, n.id LIMIT $limit"""
Q_REINGEST_TREE = f"""MATCH (n:{BASE_LABEL}:KnowledgeDocument)
WHERE n.accountId = $accountId AND n.attachmentId = $attachmentId
WITH n ORDER BY n.deletedAt IS NOT NULL, n.updatedAt DESC LIMIT 1
OPTIONAL MATCH (n)-->(s:Section) WHERE s.accountId = $accountId
OPTIONAL MATCH (s)-->(c:Chunk) WHERE c.accountId = $accountId
WITH n, [n] + collect(DISTINCT s) + collect(DISTINCT c) AS tree
RETURN n.id AS id, [x IN tree | x {{.scope, .agents}}] AS guarded"""
"""A re-ingest's document and hierarchy, for the write guards to check before it is replaced."""
Q_STORED = f"""MATCH (n:{BASE_LABEL}) WHERE n.accountId = $accountId AND n.id IN $ids
RETURN n.id AS id, labels(n) AS labels, n {{.*, {HIDDEN}, keywordsLower: null, id: null}} AS props"""
Q_STORED_TEXT = f"""MATCH (n:{BASE_LABEL}) WHERE n.accountId = $accountId AND n.id IN $ids
SET n.`_textLock` = true REMOVE n.`_textLock`
RETURN n.id AS id, [k IN keys(n) WHERE k IN $textKeys | [k, n[k]]] AS pairs"""
"""The stored text properties of a write's nodes, what their analysed text is made from, read
under the nodes' write locks (taken by the SET): a concurrent write of another text property
of one node waits for this one to commit, so neither analyses a text the other has changed."""
Q_TEXT_PENDING = f"""MATCH (n:{BASE_LABEL}) WHERE n.{INDEX_TEXT} IS NULL AND any(k IN keys(n) WHERE k IN $textKeys)
RETURN elementId(n) AS e, [k IN keys(n) WHERE k IN $textKeys | [k, n[k]]] AS pairs LIMIT $limit"""
"""A page of the nodes whose analysed text is missing (stores written before it existed)."""
Q_SET_INDEX_TEXT = f"""UNWIND $rows AS row
MATCH (n:{BASE_LABEL}) WHERE elementId(n) = row.e
SET n.{INDEX_TEXT} = row.t"""
Q_OWN_CONVERSATION = f"""MATCH (n:{BASE_LABEL}:Conversation) WHERE n.accountId = $accountId
  AND (n.id = $session OR n.sessionId = $session)
RETURN n.id AS id, n.sessionId AS sessionId, n.deletedAt IS NOT NULL AS deleted"""
"""The Conversation nodes a confined writer's session may own (:func:`plughost.ports.graph.own_conversation`)."""
Q_CONFINED_ENDS = f"""MATCH (n:{BASE_LABEL}) WHERE n.accountId = $accountId AND n.id IN $ids
  AND (n:Conversation OR n:Message OR n:WebchatMessage OR n:TelegramMessage OR n:WhatsAppMessage)
RETURN n.id AS id, labels(n) AS labels, n.conversationId AS conversationId"""
"""The Conversation and Message nodes among ``$ids``: what a confined write checks against its own conversation."""
Q_REINGEST = f"""MATCH (n:{BASE_LABEL}:KnowledgeDocument)
WHERE n.accountId = $accountId AND n.attachmentId = $attachmentId
WITH n ORDER BY n.deletedAt IS NOT NULL, n.updatedAt DESC LIMIT 1
OPTIONAL MATCH (n)-->(s:Section) WHERE s.accountId = $accountId
OPTIONAL MATCH (s)-->(c:Chunk) WHERE c.accountId = $accountId
WITH n, collect(DISTINCT s) + collect(DISTINCT c) AS old
FOREACH (x IN old | DETACH DELETE x)
RETURN n.id AS id"""
Q_HIERARCHY_SET = f"""MATCH (n:{BASE_LABEL} {NODE_KEY})
WHERE ($allowedScopes IS NULL OR n.scope IS NULL OR n.scope IN $allowedScopes)
  AND ($agentSlug IS NULL OR (n.agents IS NOT NULL AND $agentSlug IN n.agents))
OPTIONAL MATCH (n)-->(s:Section) WHERE n:KnowledgeDocument AND s.accountId = $accountId
OPTIONAL MATCH (s)-->(c:Chunk) WHERE c.accountId = $accountId
OPTIONAL MATCH (n)-->(d:Chunk) WHERE n:Section AND NOT n:KnowledgeDocument AND d.accountId = $accountId
WITH n, collect(DISTINCT s) + collect(DISTINCT c) + collect(DISTINCT d) AS kids
UNWIND [n] + kids AS t
WITH DISTINCT t
WHERE (($deletedAt IS NULL AND t.deletedAt IS NOT NULL) OR ($deletedAt IS NOT NULL AND t.deletedAt IS NULL))
  AND ($allowedScopes IS NULL OR t.scope IS NULL OR t.scope IN $allowedScopes)
  AND ($agentSlug IS NULL OR (t.agents IS NOT NULL AND $agentSlug IN t.agents))
SET t.deletedAt = $deletedAt, t.updatedAt = $now
RETURN count(t) AS touched"""
Q_PURGE = f"""MATCH (n:{BASE_LABEL})
WHERE n.deletedAt IS NOT NULL AND n.deletedAt <= $cutoff AND ($accountId IS NULL OR n.accountId = $accountId)
OPTIONAL MATCH (n)-->(m:{BASE_LABEL}) WHERE NOT (m.deletedAt IS NOT NULL AND m.deletedAt <= $cutoff)
WITH n, collect(m) AS targets
FOREACH (m IN targets | SET m.backlinkCount = coalesce(m.backlinkCount, 1) - 1)
DETACH DELETE n
RETURN count(*) AS purged"""
Q_DELETE_NODES = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}}) WHERE n.id IN $ids
  AND {GUARD.replace("AND n.deletedAt IS NULL", "")}
OPTIONAL MATCH (n)-->(m:{BASE_LABEL}) WHERE NOT m.id IN $ids
WITH n, collect(m) AS targets
FOREACH (m IN targets | SET m.backlinkCount = coalesce(m.backlinkCount, 1) - 1)
DETACH DELETE n
RETURN count(*) AS deleted"""
Q_ERASE_COUNTS = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}}) WHERE n.id IN $ids
OPTIONAL MATCH (n)-[r]-()
WITH collect(DISTINCT n) AS ns, collect(DISTINCT r) AS rs
RETURN size(ns) AS nodes, size(rs) AS edges, size([x IN ns WHERE x.embedding IS NOT NULL]) AS embeddings,
  size([x IN ns WHERE any(k IN $textKeys WHERE x[k] IS NOT NULL)]) AS fulltext"""
Q_ERASE_BACKLINKS = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}})-->(m:{BASE_LABEL})
WHERE n.id IN $ids AND NOT m.id IN $ids
SET m.backlinkCount = coalesce(m.backlinkCount, 1) - 1"""
Q_ERASE = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}}) WHERE n.id IN $ids
DETACH DELETE n"""
Q_SCAN = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}}) WHERE n.id > $after
  AND ($contains IS NULL OR toLower(n.id) CONTAINS $contains OR any(k IN keys(n) WHERE NOT k IN ['embedding', '{INDEX_TEXT}']
    AND any(x IN CASE WHEN n[k] IS :: LIST<ANY> THEN n[k] ELSE [n[k]] END
            WHERE x IS :: STRING AND toLower(x) CONTAINS $contains)))
RETURN {NODE_RETURN} ORDER BY n.id LIMIT $limit"""
Q_NODE_EDGES = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}})-[r]-(:{BASE_LABEL}) WHERE n.id IN $ids
WITH DISTINCT r
RETURN startNode(r).id AS source, type(r) AS type, endNode(r).id AS target, properties(r) AS props"""
Q_EXPORT_EMBEDDINGS = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}}) WHERE n.id IN $ids AND n.embedding IS NOT NULL
RETURN n.id AS id, n.embedding AS embedding"""
Q_RESTORE_STAMPS = f"""UNWIND $rows AS row
MATCH (n:{BASE_LABEL} {{accountId: $accountId, id: row.id}})
SET n.createdAt = row.c, n.updatedAt = row.u, n.deletedAt = row.d
RETURN count(n) AS updated"""
Q_LABEL_COUNTS = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}})
UNWIND labels(n) AS label
WITH label WHERE label <> '{BASE_LABEL}'
RETURN label, count(*) AS n ORDER BY label"""
Q_EDGE_COUNT = f"""MATCH (:{BASE_LABEL} {{accountId: $accountId}})-[r]->(:{BASE_LABEL})
RETURN count(r) AS n"""
Q_UNSCOPED = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}}) WHERE n.scope IS NULL
WITH coalesce(head([l IN labels(n) WHERE l <> '{BASE_LABEL}']), '{BASE_LABEL}') AS label, n.id AS id ORDER BY id
RETURN label, count(*) AS total, collect(id)[..$sample] AS ids ORDER BY label"""
Q_STAMP_SCOPE = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}}) WHERE n.scope IS NULL
SET n.scope = $scope
RETURN count(n) AS stamped"""
Q_SET_EMBEDDINGS = f"""UNWIND $rows AS row
MATCH (n:{BASE_LABEL} {{accountId: $accountId, id: row.id}})
SET n.embedding = row.embedding
RETURN count(n) AS updated"""
Q_WIPE_KEY = "MATCH (l:Lease {name: $name}) DELETE l"
"""An account's conversation-id key (a lease named ``<account>/conversation-id-key``), wiped with it."""
Q_WIPE = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}})
CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF 10000 ROWS"""
Q_INDEXES = "SHOW INDEXES YIELD name, labelsOrTypes, type, options WHERE type = 'VECTOR' RETURN name, labelsOrTypes, options"
Q_INDEX_NAMES = ("SHOW INDEXES YIELD name, labelsOrTypes, properties, options "
                 "RETURN name, labelsOrTypes, properties, options")
Q_VECTOR_DEFS = """SHOW INDEXES YIELD name, type, labelsOrTypes, properties, options WHERE type = 'VECTOR'
RETURN name, labelsOrTypes, properties, options ORDER BY name"""
Q_LABELS_PRESENT = "CALL db.labels() YIELD label RETURN collect(label) AS labels"
Q_AWAIT_INDEXES = "CALL db.awaitIndexes($seconds)"
Q_CONSTRAINT_NAMES = "SHOW CONSTRAINTS YIELD name RETURN name"
Q_SCHEMA_LABELS = f"""MATCH (n:{BASE_LABEL}) WHERE {GUARD}
UNWIND labels(n) AS label WITH label WHERE label <> '{BASE_LABEL}'
RETURN label, count(*) AS c ORDER BY label"""
Q_SCHEMA_RELS = f"""MATCH (n:{BASE_LABEL})-[r]->(:{BASE_LABEL}) WHERE {GUARD}
RETURN type(r) AS type, count(*) AS c ORDER BY type"""
Q_SCHEMA_KEYS = f"""MATCH (n:{BASE_LABEL}) WHERE {GUARD}
WITH n LIMIT 2000 UNWIND keys(n) AS key
WITH key WHERE key <> '{INDEX_TEXT}'
RETURN DISTINCT key ORDER BY key"""
Q_DELETE_EDGE_TMPL = """MATCH (a:{base} {{accountId: $accountId, id: $source}})-[r:`{type}`]->(b:{base} {{accountId: $accountId, id: $target}})
DELETE r
SET b.backlinkCount = coalesce(b.backlinkCount, 1) - 1
RETURN count(*) AS deleted"""

def q_delete_edge_guarded(edge_type: str) -> str:
    """Remove a typed edge whose two ends the guards can read: no row when one is not such a node."""
    t = check_name(edge_type, "edge.type")
    return f"""MATCH (a:{BASE_LABEL} {{accountId: $accountId, id: $source}}) WHERE {GUARD.replace('n.', 'a.')}
MATCH (b:{BASE_LABEL} {{accountId: $accountId, id: $target}}) WHERE {GUARD.replace('n.', 'b.')}
OPTIONAL MATCH (a)-[r:`{t}`]->(b)
WITH b, collect(r) AS gone
FOREACH (r IN gone | DELETE r)
SET b.backlinkCount = coalesce(b.backlinkCount, size(gone)) - size(gone)
RETURN size(gone) AS deleted"""


def q_rebuild_vector_index(name: str, label: str, prop: str) -> tuple[str, str]:
    """DROP and CREATE of one vector index under its own name, label and property; the options
    (dimensions, similarity, HNSW and quantization settings) are the ``$options`` parameter."""
    n, lab, p = check_name(name, "index name"), check_name(label, "index label"), check_name(prop, "index property")
    return (f"DROP INDEX `{n}` IF EXISTS",
            f"CREATE VECTOR INDEX `{n}` IF NOT EXISTS FOR (n:`{lab}`) ON (n.`{p}`) OPTIONS $options")


def q_upsert(labels: Sequence[str]) -> str:
    """MERGE nodes of one label set on (accountId, id): another account's node is never touched."""
    extra = "".join(f":`{label}`" for label in check_labels(labels))
    return f"""UNWIND $rows AS row
MERGE (n:{BASE_LABEL} {{accountId: $accountId, id: row.id}})
ON CREATE SET n.createdAt = $now, n.backlinkCount = 0
SET n += row.props, n.keywordsLower = row.keywords, n.updatedAt = $now, n.deletedAt = null
SET n{extra}
FOREACH (v IN CASE WHEN row.embedding IS NULL THEN [] ELSE [row.embedding] END | SET n.embedding = v)"""


def q_edges(edge_type: str, guarded: bool = False, props: bool = True) -> str:
    """MERGE typed edges between two nodes of the account; backlinkCount follows new edges.

    ``guarded``: an end the batch did not write (``$known``) must be one the guards can read.
    ``props=False``: no row sets properties (the ``SET r +=`` would make the plan eager).
    """
    t = check_name(edge_type, "edge.type")
    ends = ""
    if guarded:
        ends = (f"\nWITH row, a, b WHERE (a.id IN $known OR ({GUARD.replace('n.', 'a.')}))"
                f"\n  AND (b.id IN $known OR ({GUARD.replace('n.', 'b.')}))")
    set_props = "\nSET r += row.props" if props else ""
    return f"""UNWIND $rows AS row
MATCH (a:{BASE_LABEL} {{accountId: $accountId, id: row.source}})
MATCH (b:{BASE_LABEL} {{accountId: $accountId, id: row.target}}){ends}
MERGE (a)-[r:`{t}`]->(b)
ON CREATE SET b.backlinkCount = coalesce(b.backlinkCount, 0) + 1{set_props}
RETURN collect(row.pos) AS done"""


def where_cypher(where: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """Property equality filters (``None``: absent) on ``n``; keys are validated names, values parameters."""
    text, params = "", {}
    for i, (key, value) in enumerate((where or {}).items()):
        name = check_name(str(key), "where")
        if value is None:
            text += f" AND n.`{name}` IS NULL"
        else:
            text += f" AND n.`{name}` = $w{i}"
            params[f"w{i}"] = value
    return text, params


def within_cypher(within: tuple[str, str] | None) -> tuple[str, dict[str, Any]]:
    """``(node id, edge type)``: only targets of that node's outgoing edges of that type."""
    if not within:
        return "", {}
    node_id, edge_type = within
    t = check_name(str(edge_type), "edge type")
    return (f" AND EXISTS {{ MATCH (:{BASE_LABEL} {{accountId: $accountId, id: $withinId}})-[:`{t}`]->(n) }}",
            {"withinId": str(node_id)})


Q_TEXT_STATS = f"""MATCH (n:{BASE_LABEL}) WHERE n.accountId = $accountId AND n.{INDEX_TEXT} <> ''
RETURN count(n) AS docs, sum(size(n.{INDEX_TEXT}) - size(replace(n.{INDEX_TEXT}, ' ', '')) + 1) AS tokens"""
"""An account's full-text statistics: its nodes with analysed text and their total length in terms
(the text's terms are joined by single spaces)."""
Q_TEXT_HITS = f"""UNWIND $elements AS e
MATCH (n:{BASE_LABEL}) WHERE elementId(n) = e
RETURN {NODE_RETURN}"""
"""The rows of the hits a full-text search chose (by element id, in its read transaction)."""


def q_fulltext(filters: str = "") -> str:
    """Every match of the index among the account's nodes (all of them: their counts are the
    phrases' document counts), with its analysed text and whether the guards and filters pass it,
    as parallel lists in one record (one record per match costs several times more); the store
    counts the phrases and scores them (:mod:`plughost.plugins.graph.bm25`)."""
    return f"""CALL db.index.fulltext.queryNodes($index, $query) YIELD node AS n
WITH n WHERE n.accountId = $accountId
RETURN collect(elementId(n)) AS e, collect(n.id) AS id, collect(n.{INDEX_TEXT}) AS text,
       collect({GUARD} AND {LABEL_FILTER}{filters}) AS passed"""


def q_vector_windows(filters: str = "") -> str:
    """The wanted indexes' windows in one query: per index how many it returned (``got``), its
    lowest score (``floor``) and how many of them pass the guards (``passed``); and the top k of
    the passing ones by the index's score, re-scored exactly (the index's scores are quantized).

    ``$indexes`` is ``[{label, name, fetch}]`` (each index its own window); an index whose label
    the database has no token for (``db.labels()``) is not asked. Neo4j 5.26 lists every label
    token there, the schema's included, so the empty indexes of unused labels are asked too:
    measured at 20k nodes, 13 of them add about 0.3 ms of server CPU to a search."""
    hit = (f"{{id: n.id, labels: labels(n), props: n {{.*, {HIDDEN}}}, hasEmbedding: n.embedding IS NOT NULL, "
           f"approx: approx, score: {COSINE}}}")
    return f"""CALL db.labels() YIELD label WITH collect(label) AS present
UNWIND [i IN $indexes WHERE i.label IN present] AS ix
CALL (ix) {{
  CALL db.index.vector.queryNodes(ix.name, ix.fetch, $vector) YIELD node AS n, score
  WITH count(*) AS got, min(score) AS floor,
       collect(CASE WHEN {GUARD} AND {LABEL_FILTER}{filters} THEN {{n: n, s: score}} END) AS passed
  RETURN got, floor, passed
}}
WITH collect({{name: ix.name, got: got, floor: floor, passed: size(passed)}}) AS stats, collect(passed) AS lists
CALL (lists) {{
  UNWIND lists AS list UNWIND list AS p
  WITH p.n AS n, max(p.s) AS approx
  WITH n, approx ORDER BY approx DESC, n.id LIMIT $k
  RETURN collect({hit}) AS hits
}}
RETURN stats, hits"""


def q_vector_count(filters: str = "") -> str:
    return f"""MATCH (n:{BASE_LABEL}) WHERE {GUARD} AND {HAS_VECTOR}
  AND any(l IN labels(n) WHERE l IN $wanted) AND {LABEL_FILTER}{filters}
RETURN count(n) AS c"""


def q_vector_exact(filters: str = "") -> str:
    """Exact cosine over the guarded candidates (through the account index)."""
    return f"""MATCH (n:{BASE_LABEL}) WHERE {GUARD} AND {HAS_VECTOR}
  AND any(l IN labels(n) WHERE l IN $wanted) AND {LABEL_FILTER}{filters}
WITH n, {COSINE} AS score ORDER BY score DESC, n.id LIMIT $k
RETURN {NODE_RETURN}, score"""


def q_find(where_keys: Sequence[str], order_by: str | None, descending: bool) -> str:
    # static property names (validated identifiers, backtick-quoted) so a property index can serve them
    conds = "".join(f" AND n.`{check_name(k, 'property')}` = $v{i}" for i, k in enumerate(where_keys))
    order = "n[$orderKey]" if order_by else "n.updatedAt"
    return (f"MATCH (n:{BASE_LABEL}) WHERE {GUARD} AND {LABEL_FILTER}{conds}\n"
            f"RETURN {NODE_RETURN} ORDER BY {order} {'DESC' if descending else 'ASC'}, n.id SKIP $offset LIMIT $limit")



def guard_params(g: Guards) -> dict[str, Any]:
    """The parameters of :data:`GUARD` / :data:`RELATED_GUARD` for the guards ``g``."""
    return {"accountId": g.account_id,
            "allowedScopes": list(g.allowed_scopes) if g.allowed_scopes is not None else None,
            "agentSlug": g.agent_slug}


def lucene_query(text: str) -> str:
    """User text as a Lucene query over :data:`~plughost.plugins.graph.analysis.INDEX_TEXT`: the
    terms the embedded store searches (:func:`~plughost.plugins.graph.analysis.query_terms`,
    stemmed alike), OR-ed, a term of several tokens (``gluten-free``) a phrase as FTS5 matches it."""
    words = []
    for tokens in query_terms(text)[:32]:
        escaped = [LUCENE_SPECIAL.sub(r"\\\1", t) for t in tokens]
        words.append(escaped[0] if len(escaped) == 1 else '"' + " ".join(escaped) + '"')
    return " OR ".join(words)
