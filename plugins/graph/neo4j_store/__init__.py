"""The Neo4j graph store (docs/graph.md#stores): the official driver, ``schema.cypher``, index discovery.

``store`` (the :class:`Neo4jStore` class: transactions, writes, deletes, reads), ``queries``
(the guard fragments and every Cypher statement), ``writes`` (node and edge writes inside a
transaction), ``search`` (vector, full-text and keyword search, vector indexes), ``nodes``
(records to nodes), ``schema`` (``schema.cypher`` by name), ``connection`` (the driver from
``NEO4J_*``, an unanswering server as ``StoreUnavailable``), ``bulk`` (``plughost graph import``).

Every node the store writes carries the ``GraphNode`` label (the ``(accountId, id)`` uniqueness
constraint and the account index hang off it; it is hidden from the labels the port returns).
Ids are per account: two accounts may hold the same id, and nothing tells one that the other
does. Importing this package does not import the driver: ``neo4j`` is imported by the functions
that talk to a server.
"""

from plughost.plugins.graph.neo4j_store.bulk import NEO4J_IMPORT_BATCH, Neo4jImport
from plughost.plugins.graph.neo4j_store.lint import lint_statements
from plughost.plugins.graph.neo4j_store.queries import BASE_LABEL, FULLTEXT_INDEX, lucene_query
from plughost.plugins.graph.neo4j_store.schema import fulltext_shape, schema_statements, statement_name
from plughost.plugins.graph.neo4j_store.store import Neo4jStore
from plughost.plugins.graph.neo4j_store.writes import clean_props

__all__ = ["BASE_LABEL", "FULLTEXT_INDEX", "NEO4J_IMPORT_BATCH", "Neo4jImport", "Neo4jStore", "clean_props",
           "fulltext_shape", "lint_statements", "lucene_query", "schema_statements", "statement_name"]
