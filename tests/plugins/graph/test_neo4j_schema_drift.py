"""The Neo4j full-text index is rebuilt by the first writer that starts when its definition
drifted from ``schema.cypher``: the indexed property, or the analyzer (an index made before the
analysed text ranks each text property apart, unlike the embedded store); the analysed text is
backfilled first."""

from __future__ import annotations

from typing import Any

from plughost.plugins.graph.neo4j_store import (
    FULLTEXT_INDEX,
    fulltext_shape,
    schema_statements,
    statement_name,
)
from plughost.plugins.graph.neo4j_store.queries import Q_CONSTRAINT_NAMES
from plughost.plugins.graph.neo4j_store.schema import ensure_schema


def _present(analyzer: str | None, props: list[str] | None = None) -> list[dict[str, Any]]:
    rows = []
    for s in schema_statements(384):
        name = statement_name(s)
        if "CONSTRAINT" in s.split("IF NOT EXISTS")[0]:
            continue
        labels, indexed, _ = fulltext_shape(s) if name == FULLTEXT_INDEX else ([], [], "")
        if name == FULLTEXT_INDEX and props is not None:
            indexed = props
        config = {"fulltext.analyzer": analyzer} if name == FULLTEXT_INDEX and analyzer else {}
        rows.append({"name": name, "labelsOrTypes": labels, "properties": indexed, "options": {"indexConfig": config}})
    return rows


def _run(analyzer: str | None, *, read_only: bool = False, props: list[str] | None = None) -> list[str]:
    indexes = _present(analyzer, props)
    constraints = [{"name": statement_name(s)} for s in schema_statements(384) if "CONSTRAINT" in s.split("IF NOT EXISTS")[0]]
    ran: list[str] = []

    def rows(query: str) -> list[Any]:
        return constraints if query == Q_CONSTRAINT_NAMES else indexes

    ensure_schema(rows, ran.append, dimensions=384, read_only=read_only, backfill=lambda: ran.append("backfill") or 0)
    return ran


def test_an_index_without_the_analyzer_is_rebuilt_with_it_after_the_backfill() -> None:
    ran = _run("standard-no-stop-words")
    assert ran[:2] == ["backfill", f"DROP INDEX {FULLTEXT_INDEX} IF EXISTS"]
    assert "`fulltext.analyzer`: 'whitespace'" in ran[2] and "ON EACH [n.ftsText]" in ran[2]
    assert _run(None)[1] == f"DROP INDEX {FULLTEXT_INDEX} IF EXISTS"  # no indexConfig: Neo4j's default analyzer
    old = _run("english", props=["body", "name", "title"])  # the per-field index of the english analyzer
    assert old[:2] == ["backfill", f"DROP INDEX {FULLTEXT_INDEX} IF EXISTS"]


def test_an_index_with_the_analyzer_is_left_alone_and_a_reader_never_rebuilds() -> None:
    assert [s for s in _run("whitespace") if "entity_search" in s or s == "backfill"] == []
    assert _run("standard-no-stop-words", read_only=True) == []
