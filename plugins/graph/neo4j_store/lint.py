"""Every statement the Neo4j store can issue, for the linter (``tests/plugins/graph/test_cypher_lint.py``
checks each one with Neo4j's own Cypher parser)."""

from __future__ import annotations

import re

from plughost.plugins.graph.neo4j_store import bulk, leases
from plughost.plugins.graph.neo4j_store.queries import (
    BASE_LABEL,
    Q_AWAIT_INDEXES,
    Q_CONFINED_ENDS,
    Q_CONSTRAINT_NAMES,
    Q_COUNT,
    Q_DELETE_EDGE_TMPL,
    Q_DELETE_NODES,
    Q_EMBEDDING,
    Q_ERASE,
    Q_ERASE_BACKLINKS,
    Q_ERASE_COUNTS,
    Q_EXPAND,
    Q_GET,
    Q_GET_ANY,
    Q_HIERARCHY_SET,
    Q_INDEX_NAMES,
    Q_INDEXES,
    Q_KEYWORD,
    Q_LABELS_PRESENT,
    Q_LINKED,
    Q_MISSING,
    Q_NODE_EDGES,
    Q_OWN_CONVERSATION,
    Q_PURGE,
    Q_REINGEST,
    Q_REINGEST_TREE,
    Q_SCAN,
    Q_SCHEMA_KEYS,
    Q_SCHEMA_LABELS,
    Q_SCHEMA_RELS,
    Q_SET_EMBEDDINGS,
    Q_SET_INDEX_TEXT,
    Q_STORED,
    Q_STORED_TEXT,
    Q_TEXT_HITS,
    Q_TEXT_PENDING,
    Q_TEXT_STATS,
    Q_VECTOR_DEFS,
    Q_WIPE,
    Q_WIPE_KEY,
    q_delete_edge_guarded,
    q_edges,
    q_find,
    q_fulltext,
    q_rebuild_vector_index,
    q_upsert,
    q_vector_count,
    q_vector_exact,
    q_vector_windows,
    where_cypher,
    within_cypher,
)
from plughost.plugins.graph.neo4j_store.schema import schema_statements


def lint_statements() -> list[str]:
    """Every statement the store can issue (templated ones with sample names), for the linter."""
    where, _ = where_cypher({"conversationId": "c", "role": None})
    within, _ = within_cypher(("c", "HAS_MESSAGE"))
    stmts = [Q_GET, Q_GET_ANY, Q_EMBEDDING, Q_COUNT, Q_KEYWORD, Q_EXPAND, Q_LINKED, Q_MISSING,
             Q_REINGEST_TREE, Q_STORED, Q_STORED_TEXT, Q_TEXT_PENDING, Q_TEXT_STATS, Q_TEXT_HITS, Q_SET_INDEX_TEXT, Q_OWN_CONVERSATION, Q_CONFINED_ENDS, Q_REINGEST, Q_HIERARCHY_SET, Q_PURGE, Q_DELETE_NODES, Q_ERASE, Q_ERASE_BACKLINKS, Q_ERASE_COUNTS, Q_NODE_EDGES, Q_SCAN, Q_SET_EMBEDDINGS, Q_WIPE, Q_WIPE_KEY, Q_INDEXES, Q_INDEX_NAMES, Q_CONSTRAINT_NAMES,
             Q_VECTOR_DEFS, Q_LABELS_PRESENT, Q_AWAIT_INDEXES, *q_rebuild_vector_index("chunk_embedding", "Chunk", "embedding"),
             Q_SCHEMA_LABELS, Q_SCHEMA_RELS, Q_SCHEMA_KEYS,
             Q_DELETE_EDGE_TMPL.format(base=BASE_LABEL, type="MENTIONS"), q_delete_edge_guarded("MENTIONS"),
             q_fulltext(), q_fulltext(where + within), q_vector_windows(), q_vector_windows(where + within),
             q_vector_count(), q_vector_exact(where + within),
             q_upsert(["Person"]), q_upsert(["KnowledgeDocument", "Report"]), q_edges("HAS_SECTION"),
             q_edges("HAS_CHUNK", guarded=True),
             q_edges("MENTIONS", props=False), q_edges("PART_OF", guarded=True, props=False),
             q_find([], None, True), q_find(["name", "channel"], "rank", False),
             bulk.Q_PRESENT, bulk.Q_FIX_BACKLINKS, bulk.q_import_create([]),
             bulk.q_import_create([("MENTIONS", False), ("PART_OF", True)]),
             leases.Q_TAKE, leases.Q_RENEW, leases.Q_RELEASE, leases.Q_HOLDERS]
    schema, shapes = [], set()
    for stmt in schema_statements(384):  # one vector index per label: lint each shape once
        shape = re.sub(r"CREATE VECTOR INDEX \w+ IF NOT EXISTS FOR \(n:\w+\)", "CREATE VECTOR INDEX", stmt)
        if shape not in shapes:
            shapes.add(shape)
            schema.append(stmt)
    return stmts + schema
