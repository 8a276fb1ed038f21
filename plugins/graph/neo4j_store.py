"""The Neo4j graph store (SPEC 8.2): the official driver, ``schema.cypher``, index discovery.

Every node the store writes carries the ``GraphNode`` label (the ``(accountId, id)`` uniqueness
constraint and the account index hang off it; it is hidden from the labels the port returns).
Ids are per account: two accounts may hold the same id, and nothing tells one that the other
does. Guards are one parameterised WHERE fragment (:data:`GUARD` / :data:`RELATED_GUARD`), so
no guard value is ever spliced into query text; labels and relationship types, which Cypher
cannot parameterise, are validated identifiers (``plugins.graph.common.NAME_RE``) and
backtick-quoted.

Transactions: every public write is one ``execute_write`` transaction (a whole ``upsert_many``
— an ingest hierarchy, a tool call — commits or rolls back as one), every read one
``execute_read``, so a cluster or Aura routes them (``neo4j://`` / ``neo4j+s://`` URIs).

Vector search is exact over the guards: ``db.index.vector.queryNodes`` returns the nearest
nodes of a whole index *before* any WHERE, so each wanted index whose label is in use is asked
for a window of k candidates, guarded, and the top k of the union (by the index's score) is
re-scored exactly with ``vector.similarity.cosine``. An index is done when its window held all
it has, k of its own guarded nodes, or nothing below its window's lowest score can beat the k-th;
only the others widen. Before widening, the guarded candidates are counted: few enough
(``EXACT_MAX``) and they are all scored exactly. The windows run in one query, or (when
``PLUGHOST_VECTOR_THREADS`` is set above 1) split over that many read transactions side by side. Scores are cosines in [-1, 1], as in the embedded store.

Full-text search asks ``db.index.fulltext.queryNodes`` for a window of its best matches, guards
them before the cut and widens the window until k guarded matches score above its lowest (or
the index has no more), so the top k are exact; user text is Lucene-escaped.

Schema DDL runs only for what ``SHOW INDEXES`` / ``SHOW CONSTRAINTS`` lack, and never from a
reader (``PLUGHOST_GRAPH_READ_ONLY=1``), which only logs what is missing.

Every Cypher statement this module can issue is listed by :func:`lint_statements` and checked
by Neo4j's own Cypher analyser in ``tests/plugins/graph/test_cypher_lint.py``.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from host.errors import StoreUnavailable, UserError
from host.graph import (
    VECTOR_LABELS,
    Guards,
    Hit,
    Neighbor,
    Node,
    WriteDenied,
    can_change,
    check_write,
    edge_denied,
    edge_guards,
    write_defaults,
)
from host.log import log
from plugins.graph.common import (
    EXPAND_LIMIT,
    GRACE_DAYS,
    Prepared,
    StoreEnv,
    check_account,
    check_embedding,
    check_labels,
    check_name,
    guards_ok,
    iso,
    keywords_of,
    new_id,
    prepare,
    prepare_rows,
    vector_threads,
)

SCHEMA_FILE = Path(__file__).resolve().parent / "schema.cypher"
BASE_LABEL = "GraphNode"
FULLTEXT_INDEX = "entity_search"
URI_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
MAX_RETRY_S = 5.0
"""``NEO4J_MAX_RETRY_S``: how long a transaction function retries a transient failure (the driver
default is 30 s; a person waiting on a chat answer should get a quick 503 instead)."""
OVERFETCH = 1
"""Vector candidates asked of each index at first = max(k * OVERFETCH, MIN_FETCH): the global top
k lies in the union of every index's top k, and an HNSW search costs about its window; an index
whose window the guards cut short is widened alone (exactness is kept)."""
MIN_FETCH = 10
EXACT_MAX = 5000
"""Guarded candidate sets up to this size are scored exactly when the first windows hold fewer than
k guarded nodes (Cypher reads each stored vector: ~40 µs a node, where widening an index is cheap)."""
WIDEN = 8
TEXT_OVERFETCH = 4
"""Full-text matches asked of the index at first = max(k * TEXT_OVERFETCH, TEXT_MIN_FETCH); the
window widens by WIDEN until k guarded matches beat its lowest score or the index has no more."""
TEXT_MIN_FETCH = 40
NEO4J_IMPORT_BATCH = 50000
"""Nodes per import transaction on Neo4j unless ``--batch-size`` says otherwise: an edge between two
batches changes a node an earlier transaction stored (its relationship chain, and its
``backlinkCount`` when it is the target), where an edge inside a batch only adds to the new nodes,
so fewer, bigger batches (:mod:`plugins.graph.neo4j_import`; at 20k nodes / 60k edges one batch
cost 4-6 server CPU-seconds, two 6-8, four 9-11, ten 11-13)."""
LEGACY_CONSTRAINT = "graph_node_id"
"""The old store-wide id constraint; a writer drops it once the per-account one is in place."""
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
       properties(r) AS rel, m.id AS id, labels(m) AS labels, m {{.*, embedding: null}} AS props,
       m.embedding IS NOT NULL AS hasEmbedding"""
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
RETURN n.id AS id, n {{.*, embedding: null, keywordsLower: null, id: null}} AS props"""
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
Q_WIPE = f"""MATCH (n:{BASE_LABEL} {{accountId: $accountId}})
CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF 10000 ROWS"""
Q_INDEXES = "SHOW INDEXES YIELD name, labelsOrTypes, type, options WHERE type = 'VECTOR' RETURN name, labelsOrTypes, options"
Q_INDEX_NAMES = "SHOW INDEXES YIELD name, labelsOrTypes, properties RETURN name, labelsOrTypes, properties"
Q_VECTOR_DEFS = """SHOW INDEXES YIELD name, type, labelsOrTypes, properties, options WHERE type = 'VECTOR'
RETURN name, labelsOrTypes, properties, options ORDER BY name"""
Q_LABELS_PRESENT = "CALL db.labels() YIELD label RETURN collect(label) AS labels"
Q_AWAIT_INDEXES = "CALL db.awaitIndexes($seconds)"
INDEX_GONE = "no such vector schema index"
"""The procedure's error for an index dropped since discovery (or mid-swap by a compaction)."""
Q_CONSTRAINT_NAMES = "SHOW CONSTRAINTS YIELD name RETURN name"
Q_EXPLAIN_PREFIX = "EXPLAIN "
Q_SCHEMA_LABELS = f"""MATCH (n:{BASE_LABEL}) WHERE {GUARD}
UNWIND labels(n) AS label WITH label WHERE label <> '{BASE_LABEL}'
RETURN label, count(*) AS c ORDER BY label"""
Q_SCHEMA_RELS = f"""MATCH (n:{BASE_LABEL})-[r]->(:{BASE_LABEL}) WHERE {GUARD}
RETURN type(r) AS type, count(*) AS c ORDER BY type"""
Q_SCHEMA_KEYS = f"""MATCH (n:{BASE_LABEL}) WHERE {GUARD}
WITH n LIMIT 2000 UNWIND keys(n) AS key
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


def q_fulltext(filters: str = "") -> str:
    """The index's best ``$fetch`` matches in its order (score, then its own order for ties),
    guarded and filtered; the first k that pass, and how many the index returned (``got``). The
    window is a prefix of the index's order, so once k pass they are the guarded top k: ties
    never widen it (a term every node of an account holds scores them all alike)."""
    hit = "{id: n.id, labels: labels(n), props: n {.*, embedding: null}, hasEmbedding: n.embedding IS NOT NULL, score: score}"
    return f"""CALL db.index.fulltext.queryNodes($index, $query, {{limit: $fetch}}) YIELD node AS n, score
WITH count(*) AS got,
     collect(CASE WHEN {GUARD} AND {LABEL_FILTER}{filters} THEN {{n: n, score: score}} END)[0..$k] AS passed
CALL (passed) {{
  UNWIND passed AS p
  WITH p.n AS n, p.score AS score
  RETURN collect({hit}) AS hits
}}
RETURN got, hits"""


def q_vector_windows(filters: str = "") -> str:
    """The wanted indexes' windows in one query: per index how many it returned (``got``), its
    lowest score (``floor``) and how many of them pass the guards (``passed``); and the top k of
    the passing ones by the index's score, re-scored exactly (the index's scores are quantized).

    ``$indexes`` is ``[{label, name, fetch}]`` (each index its own window); an index whose label
    the database has no token for (``db.labels()``) is not asked. Neo4j 5.26 lists every label
    token there, the schema's included, so the empty indexes of unused labels are asked too:
    measured at 20k nodes, 13 of them add about 0.3 ms of server CPU to a search."""
    hit = ("{id: n.id, labels: labels(n), props: n {.*, embedding: null}, hasEmbedding: n.embedding IS NOT NULL, "
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


def statement_name(statement: str) -> str:
    """The index or constraint name a schema statement creates."""
    found = re.match(r"CREATE\s+(?:\w+\s+)*?(?:INDEX|CONSTRAINT)\s+(\w+)", statement, re.I)
    if not found:
        raise ValueError(f"schema.cypher: statement without a name: {statement[:60]}")
    return found.group(1)


def fulltext_shape(statement: str) -> tuple[list[str], list[str]]:
    """(labels, properties) a CREATE FULLTEXT INDEX statement names, sorted (for drift checks)."""
    labels = re.search(r"FOR \(n:([\w|]+)\)", statement)
    props = re.findall(r"n\.(\w+)", statement.split("ON EACH", 1)[-1])
    return sorted(labels.group(1).split("|")) if labels else [], sorted(props)


def lucene_query(text: str) -> str:
    """User text as a Lucene query: every special character escaped, words OR-ed."""
    words = [LUCENE_SPECIAL.sub(r"\\\1", w) for w in str(text).split()]
    words = [w for w in words if w.upper() not in ("AND", "OR", "NOT", "TO")] or \
        [f'"{w}"' for w in words if w]
    return " OR ".join(words[:32])


def lint_statements() -> list[str]:
    """Every statement the store can issue (templated ones with sample names), for the linter."""
    from plugins.graph import neo4j_import

    where, _ = where_cypher({"conversationId": "c", "role": None})
    within, _ = within_cypher(("c", "HAS_MESSAGE"))
    stmts = [Q_GET, Q_GET_ANY, Q_EMBEDDING, Q_COUNT, Q_KEYWORD, Q_EXPAND, Q_MISSING,
             Q_REINGEST_TREE, Q_STORED, Q_REINGEST, Q_HIERARCHY_SET, Q_PURGE, Q_SET_EMBEDDINGS, Q_WIPE, Q_INDEXES, Q_INDEX_NAMES, Q_CONSTRAINT_NAMES,
             Q_VECTOR_DEFS, Q_LABELS_PRESENT, Q_AWAIT_INDEXES, *q_rebuild_vector_index("chunk_embedding", "Chunk", "embedding"),
             Q_SCHEMA_LABELS, Q_SCHEMA_RELS, Q_SCHEMA_KEYS,
             Q_DELETE_EDGE_TMPL.format(base=BASE_LABEL, type="MENTIONS"), q_delete_edge_guarded("MENTIONS"),
             q_fulltext(), q_fulltext(where + within), q_vector_windows(), q_vector_windows(where + within),
             q_vector_count(), q_vector_exact(where + within),
             q_upsert(["Person"]), q_upsert(["KnowledgeDocument", "Report"]), q_edges("HAS_SECTION"),
             q_edges("HAS_CHUNK", guarded=True),
             q_edges("MENTIONS", props=False), q_edges("PART_OF", guarded=True, props=False),
             q_find([], None, True), q_find(["name", "channel"], "rank", False),
             neo4j_import.Q_PRESENT, neo4j_import.Q_FIX_BACKLINKS, neo4j_import.q_import_create([]),
             neo4j_import.q_import_create([("MENTIONS", False), ("PART_OF", True)])]
    schema, shapes = [], set()
    for stmt in schema_statements(384):  # one vector index per label: lint each shape once
        shape = re.sub(r"CREATE VECTOR INDEX \w+ IF NOT EXISTS FOR \(n:\w+\)", "CREATE VECTOR INDEX", stmt)
        if shape not in shapes:
            shapes.add(shape)
            schema.append(stmt)
    return stmts + schema


_ARRAY_ITEMS = frozenset({str, int, float, bool})


def _storable_list(value: list[Any]) -> bool:
    """Whether Neo4j can store the list as an array property: items of one scalar type, no null."""
    kinds = {type(v) for v in value}
    return len(kinds) <= 1 and kinds <= _ARRAY_ITEMS


def clean_props(props: Mapping[str, Any]) -> dict[str, Any]:
    """Neo4j properties hold scalars and arrays of one scalar type only: nested objects, and lists
    of mixed types or with nulls (which the embedded store keeps as they are), are stored as JSON
    text rather than failing the whole write."""
    out = {}
    for key, value in props.items():
        kind = type(value)
        if kind is str or kind is int or kind is float or kind is bool or value is None:  # the usual, cheaply
            out[key] = value
        elif isinstance(value, Mapping) or (isinstance(value, list) and not _storable_list(value)):
            out[key] = json.dumps(value, ensure_ascii=False)
        else:
            out[key] = value
    return out


class Neo4jStore(StoreEnv):
    """:class:`host.graph.GraphStore` on Neo4j through the official driver."""

    backend = "neo4j"
    import_batch_size = NEO4J_IMPORT_BATCH
    overfetch = OVERFETCH
    min_fetch = MIN_FETCH
    exact_max = EXACT_MAX
    text_overfetch = TEXT_OVERFETCH
    text_min_fetch = TEXT_MIN_FETCH
    """Vector-search tunables (per instance; the guard property test narrows them to reach every path)."""

    def __init__(self, driver: Any, *, env: Mapping[str, str], database: str | None = None,
                 apply_schema: bool = True) -> None:
        self.driver = driver
        self.env = dict(env)
        self.database = database or None
        self._indexes: dict[str, tuple[str, int]] | None = None
        self._fulltext_warned = False
        self._executor: Any = None
        # One query per search unless PLUGHOST_VECTOR_THREADS asks for more: on the shared 2-core
        # bench machine the split was slower (20k, load 2.6: 34.7 ms against 17.6 ms p50).
        self.vector_threads = vector_threads(self.env) if (self.env.get("PLUGHOST_VECTOR_THREADS") or "").strip() else 1
        if apply_schema:
            self.ensure_schema()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Neo4jStore:
        import neo4j

        uri = (env.get("NEO4J_URI") or "").strip()
        if not uri:
            raise UserError("NEO4J_URI: not set; expected the Neo4j server's Bolt URI, e.g. bolt://127.0.0.1:7687")
        scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
        if scheme not in URI_SCHEMES:
            raise UserError(f"NEO4J_URI: {uri}: expected a Bolt URI ({', '.join(s + '://' for s in URI_SCHEMES)}), "
                            "e.g. bolt://127.0.0.1:7687 or neo4j+s://xxxx.databases.neo4j.io")
        user = env.get("NEO4J_USER") or env.get("NEO4J_USERNAME") or "neo4j"
        password = env.get("NEO4J_PASSWORD") or ""
        retry_s = _seconds(env, "NEO4J_MAX_RETRY_S", MAX_RETRY_S)
        # The driver's own log lines (notifications on the store's queries, "will be retried in")
        # are not the host's interface: a store that does not answer becomes one StoreUnavailable.
        logging.getLogger("neo4j").setLevel(logging.ERROR)
        try:
            # Notifications are the Cypher tools' warning block, not the driver's log lines.
            driver = neo4j.GraphDatabase.driver(uri, auth=(user, password), connection_timeout=10.0,
                                                connection_acquisition_timeout=10.0,
                                                max_transaction_retry_time=retry_s,
                                                warn_notification_severity=neo4j.NotificationMinimumSeverity.OFF)
            driver.verify_connectivity()  # fails fast; a transaction function would retry for up to retry_s
            return cls(driver, env=env, database=env.get("NEO4J_DATABASE"))
        except _unavailable_errors(OSError) as exc:  # down or unreachable: not bad input, and no
            raise _unavailable(exc, uri) from None   # hint to switch stores (an install's other one is empty)
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, ValueError, ImportError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UserError(f"NEO4J_URI: cannot use {uri} ({reason}); check NEO4J_URI/NEO4J_USER/NEO4J_PASSWORD"
                            ) from None

    def ping(self) -> None:
        """Ask the server (``/healthz``): :class:`StoreUnavailable` when it does not answer."""

        try:
            self.driver.verify_connectivity()
        except _unavailable_errors(OSError) as exc:
            raise _unavailable(exc) from None

    # ------------------------------------------------------------------ plumbing
    def read(self, work: Callable[[Any], Any]) -> Any:
        """``work(tx)`` in one read transaction (``execute_read``: routed to a reader, retried on transient errors)."""
        import neo4j

        try:
            with self.driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session:
                return session.execute_read(work)
        except _unavailable_errors() as exc:
            raise _unavailable(exc) from None

    def write(self, work: Callable[[Any], Any]) -> Any:
        """``work(tx)`` in one write transaction (``execute_write``): it commits whole or not at all."""

        try:
            with self.driver.session(database=self.database) as session:
                return session.execute_write(work)
        except _unavailable_errors() as exc:
            raise _unavailable(exc) from None

    def _rows(self, query: str, params: Mapping[str, Any] | None = None, *, read: bool = True) -> list[Any]:
        def work(tx: Any) -> list[Any]:
            return list(tx.run(query, dict(params or {})))

        return self.read(work) if read else self.write(work)

    def _auto(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        """A statement that manages its own transactions (schema DDL, ``IN TRANSACTIONS``)."""

        try:
            with self.driver.session(database=self.database) as session:
                session.run(query, dict(params or {})).consume()
        except _unavailable_errors() as exc:
            raise _unavailable(exc) from None

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

    def ensure_schema(self) -> list[str]:
        """Create what ``schema.cypher`` names and the database lacks; returns the names created.

        Nothing runs when everything is there, so a read-only database user can start a store;
        a reader (``PLUGHOST_GRAPH_READ_ONLY=1``) never runs DDL and only logs what is missing.
        """
        indexes = {r["name"]: (sorted(r["labelsOrTypes"] or []), sorted(r["properties"] or []))
                   for r in self._rows(Q_INDEX_NAMES)}
        present = set(indexes) | {r["name"] for r in self._rows(Q_CONSTRAINT_NAMES)}
        wanted = [(statement_name(s), s) for s in schema_statements(self.dimensions)]
        missing = [(name, s) for name, s in wanted if name not in present]
        changed = [(name, s) for name, s in wanted if name in indexes and name == FULLTEXT_INDEX
                   and indexes[name] != fulltext_shape(s)]
        if changed and not self.read_only:  # the text-property union grew: rebuild the BM25 index
            for name, _ in changed:
                self._auto(f"DROP INDEX {name} IF EXISTS")
                log("graph-store", "schema-dropped", name=name, reason="definition-changed")
            missing += changed
        if missing and self.read_only:
            log("graph-store", "schema-missing", count=len(missing), names=",".join(n for n, _ in missing[:5]),
                action="none", reason="read-only")
            return []
        for name, statement in missing:
            self._auto(statement)
            log("graph-store", "schema-created", name=name)
        if LEGACY_CONSTRAINT in present and not self.read_only:
            self._auto(f"DROP CONSTRAINT {LEGACY_CONSTRAINT} IF EXISTS")
            log("graph-store", "schema-dropped", name=LEGACY_CONSTRAINT, reason="ids are per account")
        if missing:
            self._auto("CALL db.awaitIndexes(300)")  # new indexes answer queries once online
            self.clear_index_cache()
        return [name for name, _ in missing]

    apply_schema = ensure_schema

    # ------------------------------------------------------------------ writes
    def upsert_node(self, labels: Sequence[str], properties: Mapping[str, Any], *, account_id: str,
                    node_id: str | None = None, embedding: Sequence[float] | None = None,
                    guards: Guards | None = None) -> str:
        """Create or merge a node; with ``guards`` (every write tool passes the process's) the
        write runs under them (:func:`host.graph.check_write`), checked in its transaction."""
        check_account(self.account_id, account_id, node=node_id)
        _same_account(guards, account_id)
        item = prepare(labels, properties, account_id=account_id, node_id=node_id, embedding=embedding)
        return self.write(lambda tx: self.write_nodes(tx, [item], account_id, guards))[0]

    def upsert_many(self, rows: Iterable[Mapping[str, Any]], *, account_id: str, guards: Guards | None = None) -> int:
        """All rows and their edges in one transaction: an invalid row, an unknown (or, with
        ``guards``, unreadable) edge target or a guarded node rolls back everything."""
        check_account(self.account_id, account_id)
        _same_account(guards, account_id)
        items, edges = prepare_rows(rows, account_id)
        if not items:
            return 0

        def work(tx: Any) -> list[str]:
            ids, missing = self.write_batch(tx, items, edges, account_id, guards)
            if missing:
                i, j, _, to, _ = edges[missing[0]]
                raise UserError(f"rows[{i}].edges[{j}].to: node '{to}' not found in account '{account_id}'")
            return ids

        return len(self.write(work))

    def import_session(self, account_id: str) -> Any:
        """A ``plughost graph import`` into this store (:class:`plugins.graph.neo4j_import.Neo4jImport`)."""
        from plugins.graph.neo4j_import import Neo4jImport

        check_account(self.account_id, account_id)
        return Neo4jImport(self, account_id)

    def write_batch(self, tx: Any, items: list[Prepared], edges: list[tuple[int, int, str, str, Any]],
                    account_id: str, guards: Guards | None = None) -> tuple[list[str], list[int]]:
        """Prepared nodes and their edges ``(item, edge, type, to, properties)`` in the caller's
        transaction ``tx``; returns the node ids and the positions in ``edges`` with an unknown end."""
        ids = self.write_nodes(tx, items, account_id, guards)
        missing = self.write_edges(tx, [(ids[i], t, to, p) for i, _, t, to, p in edges], account_id, guards,
                                   known=ids)
        return ids, missing

    def write_nodes(self, tx: Any, items: list[Prepared], account_id: str, guards: Guards | None = None) -> list[str]:
        """MERGE prepared nodes in the caller's transaction ``tx`` (a re-ingest replaces its document's
        hierarchy); with ``guards`` every node is checked against its stored state first. Returns their ids."""
        now = iso(time.time())
        for item in items:
            if item.id is None and "KnowledgeDocument" in item.labels and item.properties.get("attachmentId"):
                params = {"accountId": account_id, "attachmentId": item.properties["attachmentId"]}
                if guards is not None:
                    found = tx.run(Q_REINGEST_TREE, params).single()
                    if found and not all(can_change(guards, props) for props in found["guarded"]):
                        raise WriteDenied(f"attachmentId: document '{found['id']}' (or part of it) is outside what "
                                          "this process can read (ALLOWED_SCOPES / AGENT_SLUG); nothing was written")
                rows = list(tx.run(Q_REINGEST, params))
                item.id = rows[0]["id"] if rows else None
        ids = [item.id or new_id() for item in items]
        props_of = [clean_props(item.properties) for item in items]
        if guards is not None:
            self._check_guards(tx, guards, ids, props_of, account_id)
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for nid, item, props in zip(ids, items, props_of, strict=True):
            groups.setdefault(item.labels, []).append({
                "id": nid, "props": props, "keywords": keywords_of(item.properties) or None,
                "embedding": item.embedding,
            })
        for labels, rows in groups.items():
            tx.run(q_upsert(labels), {"rows": rows, "accountId": account_id, "now": now}).consume()
        return ids

    @staticmethod
    def _check_guards(tx: Any, guards: Guards, ids: list[str], props_of: list[dict[str, Any]],
                      account_id: str) -> None:
        """Every node of one write, from its stored state (read in this transaction) to the merged
        one, under the guards; a new node gets its default scope / agent when it names none."""
        stored = {r["id"]: {k: v for k, v in dict(r["props"]).items() if v is not None}
                  for r in tx.run(Q_STORED, {"accountId": account_id, "ids": list(dict.fromkeys(ids))})}
        after: dict[str, dict[str, Any]] = {}
        for nid, props in zip(ids, props_of, strict=True):
            before = stored.get(nid)
            merged = after.get(nid, dict(before) if before is not None else {})
            merged.update(props)
            merged = {k: v for k, v in merged.items() if v is not None}
            if before is None and nid not in after:
                extra = write_defaults(guards, merged)
                props.update(extra)
                merged.update(extra)
            check_write(guards, nid, before, merged)
            after[nid] = merged

    def create_edge(self, source_id: str, target_id: str, edge_type: str,
                    properties: Mapping[str, Any] | None = None, *, account_id: str,
                    guards: Guards | None = None) -> None:
        if self.create_edges([(source_id, edge_type, target_id, properties)], account_id=account_id, guards=guards):
            raise UserError(f"edge: node '{source_id}' or '{target_id}' not found in account '{account_id}'")

    def create_edges(self, edges: Iterable[tuple[str, str, str, Mapping[str, Any] | None]], *,
                     account_id: str, validated: bool = False, guards: Guards | None = None) -> list[int]:
        """Bulk MERGE; narrowed ``guards``: an end they cannot read refuses the whole batch
        (``WriteDenied``, one transaction rolled back)."""
        from plugins.graph.common import check_edge

        check_account(self.account_id, account_id)
        _same_account(guards, account_id)
        g = edge_guards(guards)
        wanted = []
        for i, (src, etype, dst, props) in enumerate(edges):
            t, d, p = check_edge({"type": etype, "to": dst, "properties": props}, f"edges[{i}]")
            wanted.append((src, t, d, p))
        if g is not None:
            def guarded(tx: Any) -> list[int]:
                missing = self.write_edges(tx, wanted, account_id, g)
                if missing:
                    src, etype, dst, _ = wanted[missing[0]]
                    raise edge_denied(src, etype, dst)
                return missing

            return self.write(guarded)
        if not validated:
            return self.write(lambda tx: self.write_edges(tx, wanted, account_id))
        missing: list[int] = []  # an import's late edges: committed a batch at a time, like its nodes
        for start in range(0, len(wanted), self.import_batch_size):
            part = wanted[start:start + self.import_batch_size]
            missing += [start + pos for pos in self.write(functools.partial(self.write_edges, wanted=part,
                                                                             account_id=account_id))]
        return missing

    def write_edges(self, tx: Any, wanted: list[tuple[str, str, str, Any]], account_id: str,
                    guards: Guards | None = None, known: Sequence[str] = ()) -> list[int]:
        """MERGE edges by node ids in ``tx``; returns the positions with an unknown end (with
        ``guards``, an end this write did not make counts only if the guards can read it)."""
        by_shape: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        for pos, (src, etype, dst, props) in enumerate(wanted):
            by_shape.setdefault((etype, bool(props)), []).append(
                {"pos": pos, "source": src, "target": dst, "props": clean_props(props or {})})
        done: set[int] = set()
        params: dict[str, Any] = {"accountId": account_id}
        if guards is not None:
            params.update(self._guard_params(guards), known=list(known))
        for (etype, with_props), rows in by_shape.items():
            query = q_edges(etype, guarded=guards is not None, props=with_props)
            done.update(tx.run(query, {**params, "rows": rows}).single()["done"])
        return [pos for pos in range(len(wanted)) if pos not in done]

    def delete_edge(self, source_id: str, target_id: str, edge_type: str, *, account_id: str,
                    guards: Guards | None = None) -> int:
        check_account(self.account_id, account_id)
        _same_account(guards, account_id)
        g = edge_guards(guards)
        if g is not None:
            rows = self._rows(q_delete_edge_guarded(edge_type), {**self._guard_params(g), "source": source_id,
                                                                "target": target_id}, read=False)
            if not rows:
                raise edge_denied(source_id, edge_type, target_id)
            return rows[0]["deleted"]
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
        rows = self._rows(Q_HIERARCHY_SET, {**self._guard_params(g), "id": node_id, "deletedAt": when,
                                            "now": iso(time.time())}, read=False)
        return rows[0]["touched"] if rows else 0

    def purge(self, *, older_than_days: float = GRACE_DAYS, account_id: str | None = None) -> int:
        cutoff = iso(time.time() - older_than_days * 86400.0)
        rows = self._rows(Q_PURGE, {"cutoff": cutoff, "accountId": account_id}, read=False)
        return rows[0]["purged"] if rows else 0

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
        """Remove every node of an account (tests and account deletion), in batches of 10,000."""
        self._auto(Q_WIPE, {"accountId": account_id})

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

    def fulltext_search(self, query: str, k: int, *, guards: Guards, labels: Sequence[str] | None = None,
                        where: Mapping[str, Any] | None = None,
                        within: tuple[str, str] | None = None, stemmed: bool = False) -> list[Hit]:
        """BM25, guards and filters before the cut, in one query over a window of the index's best
        matches, widened until k pass or the index has no more (ties keep the index's order, as the
        embedded store's keep its scan's)."""
        import neo4j

        g = guards_ok(guards)
        lucene = lucene_query(query)
        if not lucene or k <= 0:
            return []
        wh, wparams = where_cypher(where)
        inside, iparams = within_cypher(within)
        params = {**self._guard_params(g), "labels": list(check_labels(labels)) if labels else [],
                  "index": FULLTEXT_INDEX, "query": lucene, "k": int(k), **wparams, **iparams}
        query = q_fulltext(wh + inside)

        def work(tx: Any) -> list[Any]:
            fetch = max(k * self.text_overfetch, self.text_min_fetch)
            while True:
                found = tx.run(query, {**params, "fetch": fetch}).single()
                hits = found["hits"]
                if found["got"] < fetch or len(hits) >= k:
                    return hits  # the index had no more, or k passed within the window's prefix
                fetch *= WIDEN

        try:
            rows = self.read(work)
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

    def vector_search(self, vector: Sequence[float], k: int, *, guards: Guards, labels: Sequence[str] | None = None,
                      where: Mapping[str, Any] | None = None, within: tuple[str, str] | None = None) -> list[Hit]:
        """Exact guarded cosine top-k (see the module docstring for the window and the exact fallback).

        An index dropped since discovery (another process's :meth:`compact_vector_indexes`
        swaps each one in a single transaction) fails the procedure: the indexes are
        discovered again and the search runs once more."""
        import neo4j

        try:
            return self._vector_search(vector, k, guards=guards, labels=labels, where=where, within=within)
        except neo4j.exceptions.ClientError as exc:
            if INDEX_GONE not in str(exc):
                raise
            log("graph-search", "op=index-gone", action="rediscover")
            self.clear_index_cache()
            return self._vector_search(vector, k, guards=guards, labels=labels, where=where, within=within)

    def _vector_search(self, vector: Sequence[float], k: int, *, guards: Guards, labels: Sequence[str] | None,
                       where: Mapping[str, Any] | None, within: tuple[str, str] | None) -> list[Hit]:
        g = guards_ok(guards)
        vec = check_embedding(vector, "vector")
        if k <= 0 or not vec or not any(vec):
            return []
        k = int(k)
        indexes = self._index_map()
        wanted = [lab for lab in (check_labels(labels) if labels else indexes)
                  if lab in indexes and indexes[lab][1] in (0, len(vec))]
        wh, wparams = where_cypher(where)
        inside, iparams = within_cypher(within)
        filters = wh + inside
        params = {**self._guard_params(g), "labels": list(check_labels(labels)) if labels else [], "vector": vec,
                  "k": k, "dims": len(vec), "wanted": wanted or list(check_labels(labels) if labels else VECTOR_LABELS),
                  **wparams, **iparams}
        if not wanted:  # no index holds vectors of this length: the guarded nodes, exactly
            return self._hits(self._rows(q_vector_exact(filters), params))
        fetch = {indexes[lab][0]: max(k * self.overfetch, self.min_fetch) for lab in wanted}
        label_of = {indexes[lab][0]: lab for lab in wanted}
        query = q_vector_windows(filters)
        best: dict[str, Any] = {}  # node id -> its hit (the highest index score of any window)

        def windows(names: list[str]) -> list[Any]:
            """The windows of ``names`` (their current sizes), on parallel read transactions."""
            groups = [names[i::self.vector_threads] for i in range(min(self.vector_threads, len(names)))]

            def one(group: list[str]) -> Any:
                ixs = [{"label": label_of[n], "name": n, "fetch": fetch[n]} for n in group]
                return self.read(lambda tx: tx.run(query, {**params, "indexes": ixs}).single())

            if len(groups) == 1:
                return [one(groups[0])]
            return list(self._pool().map(one, groups))

        todo = list(fetch)
        eligible: int | None = None
        while True:
            stats = []
            for found in windows(todo):
                stats += found["stats"]
                for hit in found["hits"]:
                    if hit["id"] not in best or hit["approx"] > best[hit["id"]]["approx"]:
                        best[hit["id"]] = hit
            top = sorted(best.values(), key=lambda h: (-h["approx"], h["id"]))[:k]
            kth = top[-1]["approx"] if len(top) >= k else None
            # An index is done when its window held all it has, k of its own guarded nodes, or
            # nothing below its window can beat the k-th: then the union holds the guarded top k.
            todo = [st["name"] for st in stats
                    if st["got"] >= fetch[st["name"]] and st["passed"] < k
                    and (kth is None or kth <= st["floor"])]
            if len(top) < k and eligible is None:
                eligible = self.read(lambda tx: tx.run(q_vector_count(filters), params).single()["c"])
            if not todo:
                if len(top) < k and eligible is not None and len(best) < eligible:  # an index returned less than it holds (HNSW
                    return self._hits(self._rows(q_vector_exact(filters), params))  # after deletions)
                return self._hits(sorted(top, key=lambda h: (-h["score"], h["id"])))
            if len(top) < k and eligible is not None:  # selective guards: few enough candidates are scored exactly
                if len(best) >= eligible:
                    return self._hits(sorted(top, key=lambda h: (-h["score"], h["id"])))
                if eligible <= self.exact_max:
                    return self._hits(self._rows(q_vector_exact(filters), params))
            for name in todo:
                fetch[name] *= WIDEN

    def _pool(self) -> Any:
        """Threads that run one search's index windows side by side (``PLUGHOST_VECTOR_THREADS``)."""
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(self.vector_threads, thread_name_prefix="neo4j-vector")
        return self._executor

    def _hits(self, rows: list[Any]) -> list[Hit]:
        """Records (or hit maps) to hits; Neo4j's cosine is (1 + cos) / 2, the port's is the cosine."""
        return [Hit(self._node(r), 2.0 * float(r["score"]) - 1.0) for r in rows]

    def expand(self, node_ids: Sequence[str], *, guards: Guards, limit: int = EXPAND_LIMIT) -> dict[str, list[Neighbor]]:
        """Guarded 1-hop neighbours of every node in one query (at most ``limit`` each)."""
        g = guards_ok(guards)
        limit = max(0, min(int(limit), EXPAND_LIMIT))
        ids = list(dict.fromkeys(node_ids))
        out: dict[str, list[Neighbor]] = {nid: [] for nid in ids}
        if not ids or limit == 0:
            return out
        for r in self._rows(Q_EXPAND, {**self._guard_params(g), "ids": ids, "limit": limit}):
            out[r["oid"]].append(Neighbor(self._node(r), r["type"], r["direction"], dict(r["rel"])))
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

    def compact_vector_indexes(self, labels: Sequence[str] | None = None, *, wait_s: int = 3600) -> list[str]:
        """Rebuild the vector indexes of the labels in use (or of ``labels``) from the stored vectors.

        Neo4j writes each committed transaction's vectors into a new Lucene segment of every
        index it touches and merges vector segments only 50 at a time, and a query searches
        each segment's HNSW graph on its own: after a bulk load (20 transactions of 5,000
        vectors at 100k nodes) a top-10 costs about 4x what it costs on an index built in
        one pass. Each index is dropped and created again under its name, label, property and
        options, all in one transaction (a search meanwhile sees the old index or waits for
        the new one; one started between the two re-discovers and runs again), then populated
        from the store (one segment). Returns the rebuilt names; a reader refuses.
        """
        if self.read_only:
            raise UserError("PLUGHOST_GRAPH_READ_ONLY=1: a reader never rebuilds indexes")
        present = set(self._rows(Q_LABELS_PRESENT)[0]["labels"])
        chosen = set(check_labels(labels)) if labels else present
        defs = [r for r in self._rows(Q_VECTOR_DEFS)
                if len(r["labelsOrTypes"] or []) == 1 and len(r["properties"] or []) == 1
                and r["labelsOrTypes"][0] in chosen]
        if not defs:
            return []
        statements = [(q_rebuild_vector_index(r["name"], r["labelsOrTypes"][0], r["properties"][0]),
                       {"indexConfig": dict((r["options"] or {}).get("indexConfig") or {})}) for r in defs]

        def swap(tx: Any) -> None:
            for (drop, create), options in statements:
                tx.run(drop).consume()
                tx.run(create, {"options": options}).consume()

        t0 = time.perf_counter()
        self.write(swap)
        self._auto(Q_AWAIT_INDEXES, {"seconds": int(wait_s)})
        self.clear_index_cache()
        names = [r["name"] for r in defs]
        log("graph-store", "op=vectors-compacted", indexes=len(names), names=",".join(names[:8]),
            seconds=f"{time.perf_counter() - t0:.1f}")
        return names

    def vector_indexes(self) -> dict[str, int]:
        return {label: dims for label, (_, dims) in sorted(self._index_map().items())}

    def clear_index_cache(self) -> None:
        """Forget discovered indexes (after a reindex or a schema change)."""
        self._indexes = None

    def query(self, text: str, params: Mapping[str, Any] | None = None, *, guards: Guards,
              read_only: bool = True) -> dict[str, Any]:
        """Cypher passthrough for the graph tools (:mod:`plugins.graph.cypher`): ``{rows, warnings}``."""
        from plugins.graph.cypher import run_query

        return run_query(self, text, params, guards=guards_ok(guards), read_only=read_only)

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
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None
        self.driver.close()


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 600:
        raise UserError(f"{name}={raw}: expected seconds between 0 and 600")
    return value


def _unavailable_errors(*extra: type[BaseException]) -> tuple[type[BaseException], ...]:
    """What a server that stopped or is not there raises: gone (``ServiceUnavailable``), its
    connection lost mid-session (``SessionExpired``), or its database shutting down under a
    running statement (``DatabaseUnavailable``, e.g. ``compact``'s wait for the indexes)."""
    import neo4j

    errors = neo4j.exceptions
    return errors.ServiceUnavailable, errors.SessionExpired, errors.DatabaseUnavailable, *extra


def _unavailable(exc: BaseException, uri: str | None = None) -> StoreUnavailable:
    reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    log("graph", "op=unavailable", backend="neo4j", error=type(exc).__name__)
    where = f"the server at {uri} (NEO4J_URI)" if uri else "the server at NEO4J_URI"
    return StoreUnavailable(f"graph store: Neo4j does not answer ({reason}); check that {where} is running")


def _same_account(guards: Guards | None, account_id: str) -> None:
    if guards is not None and guards.account_id != account_id:
        raise WriteDenied(f"accountId: '{account_id}' is not the guards' account; writes must target ACCOUNT_ID")
