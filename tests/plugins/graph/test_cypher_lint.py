"""No Cypher ships unparsed: every statement the Neo4j store can issue goes through Neo4j's own
Cypher parser and semantic analyser (@neo4j-cypher/language-support, run by a small Node script),
with the procedure and function signatures it ships so `db.index.*` calls are checked too.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from plughost.plugins.graph import neo4j_store
from plughost.plugins.graph.analysis import INDEX_TEXT
from plughost.plugins.graph.cypher import check_text
from plughost.ports.graph import VECTOR_LABELS
from tests.conftest import node_tool

pytestmark = pytest.mark.external  # needs Node and @neo4j-cypher/language-support

HERE = Path(__file__).resolve().parent
PACKAGE_INDEX = ("@neo4j-cypher", "language-support", "dist", "esm", "project", "language-support", "src", "index.js")


CONTROLS = [  # the linter must really reject bad Cypher (guards against one that accepts everything)
    ("MATC (n) RETURN n", True),
    ("MATCH (n) RETURN m", True),
    ("CALL db.index.vector.queryNodes($index, $k) YIELD node RETURN node", True),
    ("CALL db.index.fulltext.queryNodes($index, $q) YIELD node, score RETURN node, score", False),
]


def lint(statements: list[str]) -> list[dict]:
    index = node_tool(*PACKAGE_INDEX)
    res = subprocess.run(["node", str(HERE / "cypher_lint.mjs"), str(index)], input=json.dumps(statements),
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def linted() -> tuple[list[str], list[dict]]:
    """One Node run for everything: the analyser costs about a second per statement."""
    statements = neo4j_store.lint_statements() + [q for q, _ in CONTROLS]
    return statements, lint(statements)


def errors_of(result: dict) -> list[str]:
    return [d["message"] for d in result["diagnostics"] if d["severity"] == "error"]


def test_every_store_statement_parses_and_passes_semantic_analysis(linted) -> None:
    statements, results = linted
    own = len(statements) - len(CONTROLS)
    assert own > 25
    errors = [(statements[r["index"]].splitlines()[0][:80], errors_of(r)) for r in results[:own] if errors_of(r)]
    assert errors == []


def test_the_linter_really_rejects_bad_cypher(linted) -> None:
    _, results = linted
    assert [bool(errors_of(r)) for r in results[-len(CONTROLS):]] == [bad for _, bad in CONTROLS]


def test_index_options_are_pinned() -> None:
    """The linter does not check values inside OPTIONS; pin them here."""
    stmts = neo4j_store.schema_statements(768)
    vector = [s for s in stmts if s.startswith("CREATE VECTOR INDEX")]
    assert len(vector) == len(VECTOR_LABELS)
    for label, stmt in zip(VECTOR_LABELS, vector, strict=True):
        assert f"FOR (n:{label}) ON (n.embedding)" in stmt
        assert "IF NOT EXISTS" in stmt
        assert re.search(r"`vector\.dimensions`: 768\b", stmt)
        assert "`vector.similarity_function`: 'cosine'" in stmt
    assert "{{dimensions}}" not in " ".join(stmts)
    fulltext = [s for s in stmts if s.startswith("CREATE FULLTEXT INDEX entity_search IF NOT EXISTS")]
    assert len(fulltext) == 1
    labels = re.search(r"FOR \(n:([^)]*)\)", fulltext[0]).group(1).split("|")
    assert labels == ["GraphNode"]  # every node: the base label the store gives each one
    props = re.findall(r"n\.(\w+)", fulltext[0].split("ON EACH", 1)[1])
    assert props == [INDEX_TEXT]  # the text-property union, analysed as the embedded store's stemmed index
    assert "`fulltext.analyzer`: 'whitespace'" in fulltext[0]  # the terms are written analysed


@pytest.mark.parametrize("query", [
    "MATCH (n) SET n.x = 1", "create (n)", "MATCH (n) DETACH DELETE n", "MERGE (n:A)", "MATCH (n) REMOVE n.x",
    "LOAD CSV FROM 'x' AS row RETURN row", "CALL apoc.create.node(['A'], {}) YIELD node RETURN node",
    "MATCH (n) CALL { WITH n SET n.x = 1 } IN TRANSACTIONS RETURN n", "DROP INDEX x",
    "FOREACH (x IN [1] | CREATE (:A))",
])
def test_read_cypher_rejects_write_clauses(query: str) -> None:
    from plughost.util.errors import UserError

    with pytest.raises(UserError, match="write clause|not allowed"):
        check_text(query, "read-cypher", read_only=True)


@pytest.mark.parametrize("query", [
    "MATCH (n:Person) WHERE n.name = 'CREATE me' RETURN n.name",
    "MATCH (n) RETURN n.`set` // DELETE in a comment",
    "MATCH (n) WHERE n.accountId = $accountId RETURN count(n)",
    "MATCH (n) RETURN n.createdAt, n.settings",
])
def test_read_cypher_allows_reads(query: str) -> None:
    check_text(query, "read-cypher", read_only=True)


def test_lucene_query_is_the_embedded_stores_terms() -> None:
    assert neo4j_store.lucene_query('INV-2024-0042') == '"inv 2024 0042"'
    assert neo4j_store.lucene_query('a:b (c) "d" w5 3.12') == '"a b" OR c OR d OR w5 OR "3 12"'
    assert neo4j_store.lucene_query("AND OR Gluten-free Breads") == 'and OR or OR "gluten free" OR bread'
    assert neo4j_store.lucene_query("   ") == ""
