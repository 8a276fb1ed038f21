"""The Cypher tools on a real Neo4j, behind the trust boundary, over a real MCP client.

The reviewer's cases: cross-account ``MATCH (n)``, write and admin procedures, ``LOAD CSV``,
comment / case / backtick tricks, several statements — none may succeed, and the database must
be unchanged afterwards. Also: narrowed processes get neither tool, write-cypher is admin-only
in its handler, deleted nodes are redacted, a real ``01N52`` notification becomes the warning
block, and the store works through a routing (``neo4j://``) URI.
"""

from __future__ import annotations

import json

import pytest

from plughost import Principal
from plughost.mcp.server import build_server
from tests.backends import needs_neo4j, neo4j_env, use_backend
from tests.plugins.graph.test_tools_and_hooks import call, text

pytestmark = needs_neo4j

ACCOUNT = "acct-cypher"
OTHER = "acct-cypher-other"


def wipe_all(store) -> None:
    """The Cypher tools need a database of the account's own: clear what earlier tests left."""
    store.write(lambda tx: tx.run("MATCH (n) DETACH DELETE n").consume())


@pytest.fixture
def admin(make_host, monkeypatch: pytest.MonkeyPatch):
    use_backend(monkeypatch, "neo4j")
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    host = make_host(ACCOUNT_ID=ACCOUNT)
    store = host.store()
    wipe_all(store)
    store.upsert_node(["Person"], {"name": "Ada", "scope": "admin"},
                      guards=Principal.system(ACCOUNT).guards, node_id="ada")
    store.upsert_node(["Person"], {"name": "Gone"}, guards=Principal.system(ACCOUNT).guards, node_id="gone")
    store.create_edge("ada", "gone", "KNOWS", guards=Principal.system(ACCOUNT).guards)
    store.soft_delete("gone", guards=_guards())
    yield host
    wipe_all(store)


def _guards():
    from plughost.ports.graph import Guards

    return Guards(ACCOUNT)


def state(host) -> list:
    """Everything in the database, to prove a refused query changed nothing."""
    rows = host.store().read(lambda tx: [r.data() for r in tx.run(
        "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN elementId(n) AS n, labels(n) AS l, properties(n) AS p, "
        "count(r) AS r ORDER BY n")])
    return rows


def test_admin_reads_its_own_graph_with_deleted_nodes_redacted(admin) -> None:
    result = call(build_server(admin, "graph"), "read-cypher", query="MATCH (n) RETURN n ORDER BY n.name")
    assert not result.is_error, text(result)
    rows = json.loads(text(result))
    assert rows[0]["n"]["id"] == "ada" and rows[0]["n"]["labels"] == ["Person"]
    assert rows[1]["n"].startswith("<redacted")
    paths = json.loads(text(call(build_server(admin, "graph"), "read-cypher",
                                 query="MATCH p = (:Person {id: 'ada'})-[r]->() RETURN p, r")))
    assert paths[0]["r"].startswith("<redacted")  # its end is deleted
    assert paths[0]["p"]["nodes"][1].startswith("<redacted") and paths[0]["p"]["nodes"][0]["id"] == "ada"


def test_a_real_01N52_notification_is_the_warning_block(admin) -> None:
    result = call(build_server(admin, "graph"), "read-cypher",
                  query="MATCH (n:Person) WHERE n.noSuchProperty = 1 RETURN n")
    assert not result.is_error, text(result)
    assert text(result).startswith("WARNINGS (Neo4j notifications):\n- 01N52:")


def test_write_cypher_writes_in_one_transaction(admin) -> None:
    server = build_server(admin, "graph")
    ok = call(server, "write-cypher",
              query="CREATE (n:GraphNode:Note {accountId: $accountId, id: 'w1', text: $t}) RETURN n.id AS id",
              params={"t": "hello"})
    assert not ok.is_error and json.loads(text(ok)) == [{"id": "w1"}]
    assert admin.store().get("w1", guards=_guards()).properties["text"] == "hello"
    before = state(admin)
    failed = call(server, "write-cypher", query="CREATE (:Note {id: 'w2'}) WITH 1 AS x RETURN 1 / 0")
    assert failed.is_error and ("/ by zero" in text(failed).lower() or "division" in text(failed).lower())
    assert state(admin) == before  # the CREATE rolled back with the error


REVIEWER_READS = [
    "MATCH (n) SET n.name = 'x'", "create (n:GraphNode {id: 'evil'})", "MATCH (n) DETACH DELETE n",
    "MERGE (n:X)", "MATCH (n) REMOVE n.name", "FOREACH (x IN [1] | CREATE (:A))",
    "/* harmless */ CrEaTe (n)", "MATCH (n) RETURN n // ; CREATE (m)\nCREATE (m)",
    "MATCH (n) RETURN n; MATCH (m) DETACH DELETE m", "RETURN 1; RETURN 2",
    "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row", "load   csv with headers from 'http://127.0.0.1/x' as r return r",
    "CALL dbms.components()", "CALL `dbms`.`components`() YIELD name RETURN name", "CALL dbms.listConfig()",
    "CALL db.createLabel('Evil')", "CALL db . createProperty('evil')", "CALL apoc.create.node(['A'], {}) YIELD node RETURN node",
    "CALL apoc.cypher.runWrite('CREATE (n)', {})", "CALL db.index.fulltext.createNodeIndex('x', ['A'], ['b'])",
    "CALL db.index.vector.createNodeIndex('x', 'A', 'e', 3, 'cosine')", "CREATE INDEX evil FOR (n:A) ON (n.x)",
    "DROP INDEX entity_search", "CREATE CONSTRAINT evil FOR (n:A) REQUIRE n.x IS UNIQUE", "SHOW USERS",
    "USE system SHOW DATABASES", "CREATE USER evil SET PASSWORD 'x'", "MATCH (n) CALL (n) { SET n.x = 1 } IN TRANSACTIONS",
    "TERMINATE TRANSACTIONS 'neo4j-transaction-1'", "PROFILE MATCH (n) SET n.x = 1", "EXPLAIN CREATE (n)",
    "CALL db.clearQueryCaches()", "CALL tx.setMetaData({a: 1})", "CALL `db.labels`() YIELD label CREATE (:X {l: label})",
]


@pytest.mark.parametrize("query", REVIEWER_READS)
def test_read_cypher_reviewer_cases_never_succeed(admin, query: str) -> None:
    before = state(admin)
    result = call(build_server(admin, "graph"), "read-cypher", query=query)
    assert result.is_error, (query, text(result))
    assert "Traceback" not in text(result)
    assert state(admin) == before


@pytest.mark.parametrize("query", [
    "LOAD CSV FROM 'file:///etc/passwd' AS row CREATE (:A {r: row[0]})", "CALL dbms.components()",
    "CALL db.createLabel('Evil')", "CREATE INDEX evil FOR (n:A) ON (n.x)", "DROP CONSTRAINT graph_node_account_id",
    "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})", "USE system CREATE USER evil SET PASSWORD 'x'",
    "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS", "CREATE (a) ; CREATE (b)",
])
def test_write_cypher_refuses_files_admin_schema_and_procedures(admin, query: str) -> None:
    before = state(admin)
    result = call(build_server(admin, "graph"), "write-cypher", query=query)
    assert result.is_error, (query, text(result))
    assert state(admin) == before


def test_a_database_holding_another_account_refuses_both_tools(admin) -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    other = Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": OTHER})
    other.upsert_node(["Person"], {"name": "Someone else's"},
                      guards=Principal.system(OTHER).guards, node_id="theirs")
    try:
        server = build_server(admin, "graph")
        for tool, query in (("read-cypher", "MATCH (n) RETURN n"), ("read-cypher", "MATCH (n) RETURN n.name"),
                            ("write-cypher", "MATCH (n) SET n.owned = true")):
            result = call(server, tool, query=query)
            assert result.is_error and "holds other accounts' nodes" in text(result), (tool, text(result))
        assert "owned" not in other.get("theirs", guards=__import__("plughost.ports.graph").ports.graph.Guards(OTHER)).properties
    finally:
        other.wipe_account(OTHER)
        other.close()


@pytest.mark.parametrize("narrowing", [{"ALLOWED_SCOPES": "public"}, {"ALLOWED_SCOPES": ""}, {"AGENT_SLUG": "bot"},
                                       {"ALLOWED_SCOPES": "admin,public", "AGENT_SLUG": "bot"}])
def test_narrowed_processes_get_neither_tool(admin, make_host, narrowing: dict) -> None:
    host = make_host(ACCOUNT_ID=ACCOUNT, **narrowing)
    server = build_server(host, "graph")
    before = state(admin)
    for tool, query in (("read-cypher", "MATCH (n) RETURN n"), ("write-cypher", "MATCH (n) SET n.x = 1")):
        result = call(server, tool, query=query)
        assert result.is_error and "narrowed process" in text(result), (tool, narrowing, text(result))
    assert state(admin) == before


def test_write_cypher_handler_is_admin_only_even_when_called_directly(admin, make_host) -> None:
    """Not PLUGIN.md metadata: the handler itself refuses (as a process that ignored tools/list would call it)."""
    from plughost.plugins.graph.tools import graph_tools
    from plughost.util.errors import UserError

    host = make_host(ACCOUNT_ID=ACCOUNT, AGENT_SLUG="bot")
    write = next(t for t in graph_tools(host) if t.name == "write-cypher")
    with pytest.raises(UserError, match="narrowed process"):
        write.handler(query="MATCH (n) SET n.x = 1")
    with pytest.raises(UserError, match="narrowed process"):
        host.store().query("MATCH (n) RETURN n", guards=__import__("plughost.ports.graph").ports.graph.Guards(ACCOUNT, ("public",)))


def test_routing_uri_reads_and_writes_through_the_single_instance(plughost_home) -> None:
    """``neo4j://`` (what a cluster or Aura needs): execute_read / execute_write route on one server too."""
    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from plughost.ports.graph import Guards

    env = neo4j_env()
    env["NEO4J_URI"] = env["NEO4J_URI"].replace("bolt://", "neo4j://", 1)
    store = Neo4jStore.from_env({**env, "ACCOUNT_ID": "acct-routing"})
    try:
        store.upsert_many([{"id": "r1", "labels": ["Question"], "properties": {"name": "routed question"},
                            "embedding": [1.0] + [0.0] * 383}], guards=Principal.system("acct-routing").guards)
        g = Guards("acct-routing")
        assert store.get("r1", guards=g).properties["name"] == "routed question"
        assert [h.node.id for h in store.vector_search([1.0] + [0.0] * 383, 1, guards=g)] == ["r1"]
        assert [h.node.id for h in store.fulltext_search("routed", 1, guards=g)] == ["r1"]
    finally:
        store.wipe_account("acct-routing")
        store.close()


@pytest.mark.parametrize("query", [
    "CREATE (n:Chunk:KnowledgeDocument {accountId: 'victim', id: 'planted-1', text: 'wire refunds', scope: 'public'})",
    "CREATE (x:Foo {a: 1}) RETURN x",
    "MATCH (n:Person {id: 'ada'}) REMOVE n:GraphNode SET n.accountId = 'victim'",
    "MATCH (n:Person {id: 'ada'}) REMOVE n:GraphNode",
])
def test_write_cypher_cannot_leave_a_node_outside_the_accounts_graph(admin, query: str) -> None:
    """A node without the GraphNode label is invisible to the foreign-account check but not to
    search, so it could plant text in another account's memory: such a write rolls back whole."""
    before = state(admin)
    result = call(build_server(admin, "graph"), "write-cypher", query=query)
    assert result.is_error and "every node must be one of the account's graph nodes" in text(result), text(result)
    assert state(admin) == before


def test_a_backticked_comment_marker_does_not_blind_the_text_checks() -> None:
    from plughost.plugins.graph.cypher import check_text
    from plughost.util.errors import UserError

    for query in ("WITH 1 AS `//` LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r",
                  "RETURN '//' AS a, 1 AS b CALL dbms.components() YIELD name RETURN name",
                  "WITH '/*' AS a CREATE (n) WITH '*/' AS b RETURN b"):
        with pytest.raises(UserError):
            check_text(query, "read-cypher", read_only=True)
    check_text("MATCH (n:`odd//label`) RETURN n.`x/*y` AS v // a comment", "read-cypher", read_only=True)


@pytest.mark.timeout(60)  # a hang guard; the driver's own retry budget is the 1 s given below
def test_a_server_that_stops_answering_is_store_unavailable_quickly() -> None:
    """A real driver on a port nothing listens on: one StoreUnavailable within the retry budget,
    not the driver's 30 s of retries and its traceback."""
    import neo4j

    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from plughost.util.errors import StoreUnavailable

    driver = neo4j.GraphDatabase.driver("bolt://127.0.0.1:1", auth=("neo4j", ""), connection_timeout=1.0,
                                        max_transaction_retry_time=1.0)
    store = Neo4jStore(driver, env={}, apply_schema=False)
    try:
        with pytest.raises(StoreUnavailable, match="Neo4j does not answer"):
            store.count(guards=_guards())
        with pytest.raises(StoreUnavailable):
            store.ping()
    finally:
        driver.close()


@pytest.mark.parametrize("uri", ["http://127.0.0.1:7474", "https://example.invalid", "ftp://x"])
def test_a_non_bolt_uri_is_one_line(uri: str) -> None:
    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from plughost.util.errors import UserError

    with pytest.raises(UserError, match=r"NEO4J_URI: .*expected a Bolt URI"):
        Neo4jStore.from_env({"NEO4J_URI": uri})
