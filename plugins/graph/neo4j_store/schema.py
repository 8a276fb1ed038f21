"""The Neo4j store's schema: ``plugins/graph/schema.cypher``, created by name for what
``SHOW INDEXES`` / ``SHOW CONSTRAINTS`` lack, never from a reader (``PLUGHOST_GRAPH_READ_ONLY=1``),
which only logs what is missing.

The full-text index holds one property, the analysed text (:data:`~plughost.plugins.graph.analysis.INDEX_TEXT`).
Before it is created (a new database, or an index of another definition, which is dropped), the
nodes with text properties and no analysed text get theirs (:func:`backfill_index_text`), a page
at a time, each page its own transaction: a run stopped midway leaves the old index in place,
and the next writer to start carries on where it stopped (nodes done keep their text), so the
migration is idempotent."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from plughost import log
from plughost.api.store import TEXT_PROPERTIES
from plughost.plugins.graph.analysis import index_texts
from plughost.plugins.graph.neo4j_store.queries import (
    FULLTEXT_INDEX,
    Q_CONSTRAINT_NAMES,
    Q_INDEX_NAMES,
    Q_SET_INDEX_TEXT,
    Q_TEXT_PENDING,
)

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema.cypher"
LEGACY_CONSTRAINT = "graph_node_id"
"""The old store-wide id constraint; a writer drops it once the per-account one is in place."""
BACKFILL_PAGE = 5000
"""Nodes given their analysed text per transaction by :func:`backfill_index_text`."""


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


FULLTEXT_DEFAULT_ANALYZER = "standard-no-stop-words"
"""Neo4j's analyzer for a full-text index created without ``fulltext.analyzer``: no stemming."""


def fulltext_shape(statement: str) -> tuple[list[str], list[str], str]:
    """(labels, properties, analyzer) a CREATE FULLTEXT INDEX statement names, sorted (for drift checks)."""
    labels = re.search(r"FOR \(n:([\w|]+)\)", statement)
    on_each = statement.split("ON EACH", 1)[-1]
    props = re.findall(r"n\.(\w+)", on_each.split("OPTIONS", 1)[0])
    analyzer = re.search(r"`fulltext\.analyzer`\s*:\s*'([\w-]+)'", statement)
    return (sorted(labels.group(1).split("|")) if labels else [], sorted(props),
            analyzer.group(1) if analyzer else FULLTEXT_DEFAULT_ANALYZER)


def index_shape(row: Any) -> tuple[list[str], list[str], str]:
    """(labels, properties, analyzer) of a ``SHOW INDEXES`` row (the analyzer only for full-text ones)."""
    config = ((row.get("options") if hasattr(row, "get") else None) or {}).get("indexConfig") or {}
    return (sorted(row["labelsOrTypes"] or []), sorted(row["properties"] or []),
            str(config.get("fulltext.analyzer") or FULLTEXT_DEFAULT_ANALYZER))


def backfill_index_text(write: Callable[[str, Mapping[str, Any]], list[Any]], page: int = BACKFILL_PAGE) -> int:
    """The analysed text on every node with text properties that lacks it (an empty text when its
    text analyses to nothing, so each page makes progress); returns how many nodes got one.
    ``write`` runs a query in a write transaction of its own."""
    done = 0
    while True:
        rows = write(Q_TEXT_PENDING, {"textKeys": list(TEXT_PROPERTIES), "limit": page})
        if not rows:
            break
        texts = index_texts([dict(r["pairs"]) for r in rows])
        write(Q_SET_INDEX_TEXT, {"rows": [{"e": r["e"], "t": t} for r, t in zip(rows, texts, strict=True)]})
        done += len(rows)
        log("graph-store", "schema-backfill", property="ftsText", nodes=done)
    return done


def ensure_schema(rows: Callable[[str], list[Any]], auto: Callable[[str], None], *, dimensions: int,
                  read_only: bool, backfill: Callable[[], int] | None = None) -> list[str]:
    """Create what ``schema.cypher`` names and the database lacks; returns the names created.

    ``rows`` runs a read query, ``auto`` a statement that manages its own transaction (DDL).
    Nothing runs when everything is there, so a read-only database user can start a store;
    a reader (``read_only``) never runs DDL and only logs what is missing. ``backfill`` runs before
    the full-text index is (re)created (:func:`backfill_index_text`).
    """
    indexes = {r["name"]: index_shape(r) for r in rows(Q_INDEX_NAMES)}
    present = set(indexes) | {r["name"] for r in rows(Q_CONSTRAINT_NAMES)}
    wanted = [(statement_name(s), s) for s in schema_statements(dimensions)]
    missing = [(name, s) for name, s in wanted if name not in present]
    changed = [(name, s) for name, s in wanted if name in indexes and name == FULLTEXT_INDEX
               and indexes[name] != fulltext_shape(s)]
    rebuilt = any(name == FULLTEXT_INDEX for name, _ in missing + changed)
    if rebuilt and backfill is not None and not read_only:  # first: a stop midway keeps the old index
        backfill()
    if changed and not read_only:  # the indexed property or the analyzer changed: rebuild the BM25 index
        for name, _ in changed:
            auto(f"DROP INDEX {name} IF EXISTS")
            log("graph-store", "schema-dropped", name=name, reason="definition-changed")
        missing += changed
    if missing and read_only:
        log("graph-store", "schema-missing", count=len(missing), names=",".join(n for n, _ in missing[:5]),
            action="none", reason="read-only")
        return []
    for name, statement in missing:
        auto(statement)
        log("graph-store", "schema-created", name=name)
    if LEGACY_CONSTRAINT in present and not read_only:
        auto(f"DROP CONSTRAINT {LEGACY_CONSTRAINT} IF EXISTS")
        log("graph-store", "schema-dropped", name=LEGACY_CONSTRAINT, reason="ids are per account")
    if missing:
        auto("CALL db.awaitIndexes(300)")  # new indexes answer queries once online
    return [name for name, _ in missing]
