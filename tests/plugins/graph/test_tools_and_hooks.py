"""The graph plugin's hooks: store selection, MCP tools over a real MCP client, gates, cheap import."""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path

import anyio
import pytest
from mcp import Client

from plughost import Principal
from plughost.mcp.server import EAGER_META_KEY, build_server
from plughost.plugins.graph import gates
from plughost.plugins.graph.backend import backend_name
from plughost.ports.graph import VECTOR_LABELS
from plughost.runtime import hooktable
from plughost.runtime.types import GateContext
from plughost.util.errors import UserError
from tests.backends import wipe

ACCOUNT = "acct-tools"


def call(server, name: str, **args):
    async def go():
        async with Client(server) as client:
            return await client.call_tool(name, args)

    return anyio.run(go)


def list_tools(server):
    async def go():
        async with Client(server) as client:
            return (await client.list_tools()).tools

    return anyio.run(go)


def text(result) -> str:
    return result.content[0].text


@pytest.fixture
def seeded(make_host, plughost_home: Path, monkeypatch: pytest.MonkeyPatch, graph_backend: str):
    """A small guarded graph, on each backend (the Neo4j database is shared: the account is wiped)."""
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    host = make_host(ACCOUNT_ID=ACCOUNT)
    store = host.store()
    wipe(store, ACCOUNT)
    store.upsert_node(["Service"], {"name": "Tyre fitting", "scope": "public", "agents": ["bot"]},
                      guards=Principal.system(ACCOUNT).guards, node_id="svc", embedding=[0.5] * 384)
    store.upsert_node(["PriceSpecification"], {"price": 40},
                      guards=Principal.system(ACCOUNT).guards, node_id="price")
    store.upsert_node(["Person"], {"name": "Admin only", "scope": "admin"},
                      guards=Principal.system(ACCOUNT).guards, node_id="boss")
    store.create_edge("svc", "price", "HAS_PRICE", guards=Principal.system(ACCOUNT).guards)
    store.create_edge("boss", "svc", "MANAGES", guards=Principal.system(ACCOUNT).guards)
    yield host
    wipe(store, ACCOUNT)


def test_hook_store_defaults_to_embedded_sqlite(make_host, plughost_home: Path) -> None:
    host = make_host(ACCOUNT_ID=ACCOUNT)
    store = host.store()
    assert store.backend == "sqlite"
    assert Path(store.path) == plughost_home / "graph.sqlite"
    assert (plughost_home / "graph.sqlite").exists()


def test_backend_selection() -> None:
    assert backend_name({}) == "sqlite"
    assert backend_name({"NEO4J_URI": "bolt://127.0.0.1:7687"}) == "neo4j"
    assert backend_name({"NEO4J_URI": "bolt://x", "PLUGHOST_STORE": "sqlite"}) == "sqlite"
    assert backend_name({"PLUGHOST_STORE": "NEO4J"}) == "neo4j"
    with pytest.raises(UserError, match="PLUGHOST_STORE"):
        backend_name({"PLUGHOST_STORE": "postgres"})


def test_hooks_module_imports_cheaply() -> None:
    code = ("import sys, plughost.plugins.graph.hookimpls; "
            "print(sorted(m for m in ('numpy', 'neo4j', 'mcp', 'sqlite3') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().replace("'", '"')) == []


def test_the_neo4j_store_package_imports_without_the_driver() -> None:
    """``plughost.plugins.graph.neo4j_store`` (every module of it) leaves ``neo4j`` to the calls that reach a server."""
    code = ("import sys, pkgutil, importlib, plughost.plugins.graph.neo4j_store as p; "
            "[importlib.import_module(f'{p.__name__}.{m.name}') for m in pkgutil.iter_modules(p.__path__)]; "
            "print(p.Neo4jStore.__module__, 'neo4j' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["plughost.plugins.graph.neo4j_store.store", "False"]


CYPHER = ["graph-neighbors", "graph-schema", "read-cypher", "write-cypher"]
EMBEDDED = ["graph-neighbors", "graph-schema"]


def test_tools_list_is_eager_and_served_by_the_store(seeded, graph_backend: str) -> None:
    """The Cypher tools are listed only on a store that runs Cypher."""
    tools = list_tools(build_server(seeded, "graph"))
    assert sorted(t.name for t in tools) == (CYPHER if graph_backend == "neo4j" else EMBEDDED)
    assert all((t.meta or {}).get(EAGER_META_KEY) is True for t in tools)


def admin_tools(host) -> list[str]:
    return sorted(n.rsplit("__", 1)[1] for n in host.surface.admin if n.startswith("mcp__plugin_graph_graph__"))


def test_the_admin_allowlist_matches_what_is_served(make_host, monkeypatch: pytest.MonkeyPatch) -> None:
    """graph-schema, graph-neighbors and read-cypher are on it when served, neither Cypher tool on
    the embedded store."""
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    embedded = make_host(ACCOUNT_ID=ACCOUNT)
    assert admin_tools(embedded) == ["graph-neighbors", "graph-schema"]
    assert sorted(n.rsplit("__", 1)[1] for n in embedded.surface.withheld) == ["read-cypher", "write-cypher"]
    assert embedded.surface.all["mcp__plugin_graph_graph__read-cypher"].withheld  # still declared: no typo
    neo4j = make_host(ACCOUNT_ID=ACCOUNT, NEO4J_URI="bolt://127.0.0.1:9")  # tools/list opens no connection
    assert admin_tools(neo4j) == ["graph-neighbors", "graph-schema", "read-cypher", "write-cypher"]
    assert not neo4j.surface.withheld
    reader = make_host(ACCOUNT_ID=ACCOUNT, NEO4J_URI="bolt://127.0.0.1:9", PLUGHOST_GRAPH_READ_ONLY="1")
    assert admin_tools(reader) == ["graph-neighbors", "graph-schema", "read-cypher"]


def test_write_cypher_is_absent_when_read_only(make_host, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_GRAPH_READ_ONLY="1", NEO4J_URI="bolt://127.0.0.1:9")
    tools = list_tools(build_server(host, "graph"))
    assert sorted(t.name for t in tools) == ["graph-neighbors", "graph-schema", "read-cypher"]
    with pytest.raises(BaseException) as info:  # a withheld tool is unknown: a JSON-RPC -32602 error
        call(build_server(host, "graph"), "write-cypher", query="CREATE (n)")
    assert "Unknown tool: write-cypher" in "".join(traceback.format_exception(info.value))


def test_graph_neighbors_is_guarded(seeded, monkeypatch: pytest.MonkeyPatch) -> None:
    result = call(build_server(seeded, "graph"), "graph-neighbors", node_id="svc")
    assert not result.is_error, text(result)
    body = json.loads(text(result))[0]
    assert body["node"]["id"] == "svc" and "embedding" not in body["node"]["properties"]
    assert sorted((n["direction"], n["type"], n["node"]["id"]) for n in body["neighbors"]) == [
        ("in", "MANAGES", "boss"), ("out", "HAS_PRICE", "price")]
    narrowed = json.loads(text(call(build_server(seeded, "graph"), "graph-neighbors", node_id="svc",
                                    scopes=["public"], agent="bot")))[0]
    assert [n["node"]["id"] for n in narrowed["neighbors"]] == ["price"]  # admin-scoped boss filtered (layer 4)


def test_graph_neighbors_never_widens_env_guards(make_host, seeded) -> None:
    host = make_host(ACCOUNT_ID=ACCOUNT, ALLOWED_SCOPES="public", AGENT_SLUG="bot")
    server = build_server(host, "graph")
    body = json.loads(text(call(server, "graph-neighbors", node_id="svc", scopes=["public", "admin"])))[0]
    assert [n["node"]["id"] for n in body["neighbors"]] == ["price"]
    other = call(server, "graph-neighbors", node_id="svc", agent="intruder")
    assert other.is_error and "AGENT_SLUG" in text(other)
    hidden = call(server, "graph-neighbors", node_id="boss")
    assert hidden.is_error and "no visible node 'boss'" in text(hidden)
    bad = call(server, "graph-neighbors", node_id="svc", limit=99)
    assert bad.is_error and "limit" in text(bad)


def test_cypher_on_embedded_is_an_unknown_tool(seeded, graph_backend: str) -> None:
    if graph_backend != "sqlite":
        pytest.skip("the embedded store's answer")
    for name in ("read-cypher", "write-cypher"):
        with pytest.raises(BaseException) as info:  # withheld: not listed, a JSON-RPC -32602 error
            call(build_server(seeded, "graph"), name, query="MATCH (n) RETURN n")
        assert f"Unknown tool: {name}" in "".join(traceback.format_exception(info.value))


def test_graph_schema_reports_labels_and_indexes(seeded, graph_backend: str) -> None:
    body = json.loads(text(call(build_server(seeded, "graph"), "graph-schema")))[0]
    assert body["backend"] == graph_backend
    assert body["labels"] == {"Person": 1, "PriceSpecification": 1, "Service": 1}
    assert body["relationshipTypes"] == {"HAS_PRICE": 1, "MANAGES": 1}
    assert set(body["vectorIndexes"]) == set(VECTOR_LABELS)


def test_output_budget_and_embedding_stripping() -> None:
    from plughost.plugins.graph.tools import budgeted, strip_embeddings

    rows = [{"i": i, "embedding": [0.1] * 384, "nested": {"vec": [0.5] * 100}} for i in range(500)]
    clean = strip_embeddings(rows)
    assert "embedding" not in clean[0] and clean[0]["nested"]["vec"] == "<vector of 100 floats stripped>"
    out = budgeted(clean, 2000, warnings=["01N52: property does not exist"])
    assert len(out) <= 2000
    assert out.startswith("WARNINGS") and "01N52" in out
    assert "truncated:" in out and "of 500 rows shown" in out


def test_schema_labels_gate_ok_and_drift(tmp_path: Path) -> None:
    ok = gates.check_schema_labels()
    assert ok.status == "ok" and ok.lines == [f"startup-self-test schema-labels=ok inspected={2 * len(VECTOR_LABELS)}"]
    cypher = tmp_path / "schema.cypher"
    cypher.write_text(gates.CYPHER_SCHEMA.read_text().replace("(n:Report)", "(n:Rapport)"))
    drift = gates.check_schema_labels(sources={"schema.cypher": gates.cypher_vector_labels(cypher),
                                               "schema.sql": gates.sqlite_vector_labels()})
    assert drift.status == "fail"
    assert drift.lines == ["[graph-health] schema-labels FATAL source=schema.cypher "
                           "missing-in-schema=[Report] not-in-code=[Rapport]"]


def test_account_id_env_gate(make_host, plughost_home: Path) -> None:
    """The graph plugin contributes the host's one account-id-env gate (host/runtime/accounts.py)."""
    from plughost.runtime.accounts import create_account

    host = make_host()
    [gate] = [g for g in gates.gates() if g.name == "account-id-env"]
    unset = gate.check(GateContext(host, {"PLUGHOST_HOME": str(plughost_home)}))
    assert unset.status == "fail" and unset.lines[0].startswith("[graph-health] account-id-env FATAL reason=unset")
    env = {"PLUGHOST_HOME": str(plughost_home), "ACCOUNT_ID": "0123456789abcdef"}
    missing = gate.check(GateContext(host, env))
    assert missing.status == "fail"
    assert missing.lines[0].startswith("[graph-health] account-id-env FATAL reason=not-on-disk id=01234567")
    account = plughost_home / "accounts" / "0123456789abcdef"
    account.mkdir(parents=True)
    (account / "account.json").write_text("{}")
    stub = gate.check(GateContext(host, env))  # the stricter check: account.json must be valid
    assert stub.status == "fail" and "reason=invalid-account-json" in stub.lines[0]
    create_account("0123456789abcdef", plughost_home, force=True)
    ok = gate.check(GateContext(host, env))
    assert ok.status == "ok"
    assert ok.lines == ["[graph-health] account-id-env present=true id=01234567 matches-on-disk=true",
                        "startup-self-test account-id-env=ok inspected=1"]


def test_gates_are_contributed(make_host) -> None:

    names = {c.item.name for c in make_host().collect(hooktable.BOOT_GATES) if c.plugin == "graph"}
    assert names == {"schema-labels", "account-id-env"}


def test_store_env_guards_roundtrip(make_host, monkeypatch: pytest.MonkeyPatch, graph_backend: str) -> None:
    """What the memory plugin does: store from the hook, guards from the env."""
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    host = make_host(ACCOUNT_ID=ACCOUNT, ALLOWED_SCOPES="public")
    store = host.store()
    wipe(store, ACCOUNT)
    store.upsert_node(["Question"], {"name": "visible", "scope": "public"},
                      guards=Principal.system(ACCOUNT).guards, node_id="v")
    store.upsert_node(["Question"], {"name": "hidden", "scope": "admin"},
                      guards=Principal.system(ACCOUNT).guards, node_id="h")
    g = host.principal.guards
    assert [n.id for n in store.find(guards=g, labels=["Question"])] == ["v"]
    wipe(store, ACCOUNT)


def test_shared_lib_mcp_block_serves_over_stdio(make_host, plughost_home: Path) -> None:
    """The PLUGIN.md `mcp` block, as Claude Code would run it, answers tools/list over stdio."""

    from mcp import StdioServerParameters

    record = make_host().plugin("graph")
    block = record.manifest.mcp
    folder = Path(record.manifest.path).parent
    args = [a.replace("${CLAUDE_PLUGIN_ROOT}", str(folder)) for a in block["args"]]
    env = {"PATH": "/usr/bin:/bin", "PLUGHOST_HOME": str(plughost_home), "ACCOUNT_ID": ACCOUNT,
           "PLUGHOST_PYTHON": sys.executable, "PLUGHOST_EMBEDDER": "none"}
    params = StdioServerParameters(command=block["command"], args=args, env=env)
    tools = list_tools(params)
    assert sorted(t.name for t in tools) == EMBEDDED  # the embedded store: no Cypher tools


def test_unreachable_neo4j_is_one_clear_error(plughost_home: Path) -> None:
    import socket

    from tests.conftest import run_cli

    with socket.socket() as sock:  # a free port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    res = run_cli("graph", "purge", env={"ACCOUNT_ID": ACCOUNT, "NEO4J_URI": f"bolt://127.0.0.1:{port}",
                                         "NEO4J_PASSWORD": "x"})
    assert res.returncode == 1, res.stderr  # the store is unavailable: not bad input
    assert res.stderr.count("[graph] op=unavailable backend=neo4j error=ServiceUnavailable") == 1, res.stderr
    assert "plughost: graph store: Neo4j does not answer (" in res.stderr, res.stderr
    assert f"check that the server at bolt://127.0.0.1:{port} (NEO4J_URI) is running" in res.stderr
    assert "Traceback" not in res.stderr and "PLUGHOST_STORE=sqlite" not in res.stderr  # an empty store


def test_graph_neighbors_confines_a_narrowed_process_as_memory_search_does(make_host, seeded) -> None:
    """A public Entity links every conversation that mentions it: a narrowed process never opens one,
    and sees Messages of its own session's conversation only (admin sees all)."""
    store = seeded.store()
    for conv, sender in (("conv-a", "ana"), ("conv-b", "ben")):
        store.upsert_node(["Conversation"], {"sessionId": f"s-{sender}", "scope": "public"},
                          guards=Principal.system(ACCOUNT).guards,
                          node_id=conv)
        store.upsert_node(["Message"], {"text": f"{sender} loves Lisbon", "conversationId": conv, "scope": "public"},
                          guards=Principal.system(ACCOUNT).guards, node_id=f"m-{sender}")
        store.create_edge(conv, f"m-{sender}", "HAS_MESSAGE", guards=Principal.system(ACCOUNT).guards)
        store.create_edge(f"m-{sender}", "svc", "MENTIONS", guards=Principal.system(ACCOUNT).guards)
    store.upsert_node(["Entity"], {"entityName": "Lisbon", "scope": "public"},
                      guards=Principal.system(ACCOUNT).guards, node_id="ent")
    store.create_edge("m-ana", "ent", "MENTIONS", guards=Principal.system(ACCOUNT).guards)
    store.create_edge("m-ben", "ent", "MENTIONS", guards=Principal.system(ACCOUNT).guards)
    admin = json.loads(text(call(build_server(seeded, "graph"), "graph-neighbors", node_id="ent")))[0]
    assert sorted(n["node"]["id"] for n in admin["neighbors"]) == ["m-ana", "m-ben"]
    for env in ({"PLUGHOST_SESSION_ROLE": "public", "SESSION_ID": "s-ana"}, {"ALLOWED_SCOPES": "public"}):
        server = build_server(make_host(ACCOUNT_ID=ACCOUNT, **env), "graph")
        refused = call(server, "graph-neighbors", node_id="ent")
        assert refused.is_error and "no visible node 'ent'" in text(refused)
        seen = json.loads(text(call(server, "graph-neighbors", node_id="svc")))[0]
        ids = {n["node"]["id"] for n in seen["neighbors"]}
        assert "m-ben" not in ids and ("m-ana" in ids) == ("SESSION_ID" in env)
        other = call(server, "graph-neighbors", node_id="m-ben")
        assert other.is_error
