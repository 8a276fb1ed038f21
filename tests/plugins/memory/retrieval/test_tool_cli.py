"""The memory-search MCP tool (in-process and over stdio), the CLI, and the retrieval hooks."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import anyio
import pytest

from plughost import Principal
from plughost.runtime import hooktable
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import RetrievalBoost

ACCOUNT = "acct0001-tool"
ENV = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}


def seed(host):
    store = host.store()
    store.upsert_node(["Service"], {"name": "Haircut", "description": "short haircut", "scope": "public",
                                    "agents": ["sales"]}, guards=Principal.system(ACCOUNT).guards, node_id="n1")
    store.upsert_node(["Service"], {"name": "Haircut deluxe", "description": "haircut and wash", "scope": "admin"},
                      guards=Principal.system(ACCOUNT).guards, node_id="n2")
    store.upsert_node(["Concept"], {"name": "Pricing", "keywords": ["tariff"], "scope": "public"},
                      guards=Principal.system(ACCOUNT).guards, node_id="n3")
    store.upsert_node(["PriceSpecification"], {"price": 30},
                      guards=Principal.system(ACCOUNT).guards, node_id="p1")
    store.create_edge("n1", "p1", "HAS_PRICE", guards=Principal.system(ACCOUNT).guards)


def call(host, name, args):
    import mcp

    from plughost.mcp.server import build_server

    async def go():
        async with mcp.Client(build_server(host, "memory")) as client:
            tools = await client.list_tools()
            result = await client.call_tool(name, args)
            return tools, result

    return anyio.run(go)


def test_tool_listed_eager_and_answers(make_host):
    host = make_host(**ENV)
    seed(host)
    tools, result = call(host, "memory-search", {"query": "haircut", "limit": 5})
    tool = next(t for t in tools.tools if t.name == "memory-search")
    assert tool.meta and tool.meta.get("anthropic/alwaysLoad") is True
    assert set(tool.input_schema["properties"]) == {"query", "limit", "labels", "fields", "expandHops",
                                                    "retrievalClass"}
    assert not result.is_error
    text = result.content[0].text
    assert "[Service] (id: n1) (score: " in text and "(id: n2)" in text
    assert "--[HAS_PRICE]--> [PriceSpecification] {" in text


def test_the_declared_schema_meets_the_pipelines_limits() -> None:
    """PLUGIN.md is the schema's one home; the pipeline's own bounds are what it must say."""
    from plughost.plugins.memory.retrieval.pipeline import MAX_LIMIT
    from plughost.plugins.memory.retrieval.route import RETRIEVAL_CLASSES
    from plughost.plugins.memory.retrieval.tool import search_tool
    from plughost.runtime.manifest import load_manifest

    manifest = load_manifest(Path(__file__).resolve().parents[4] / "plugins" / "memory" / "PLUGIN.md")
    (decl,) = [t for t in manifest.tools if t.name == "memory-search"]
    props = decl.input_schema["properties"]
    assert props["limit"]["maximum"] == MAX_LIMIT and props["retrievalClass"]["enum"] == list(RETRIEVAL_CLASSES)
    tool = search_tool(None)  # the handler only: nothing PLUGIN.md declares
    assert (tool.description, tool.input_schema, tool.admin_allowlist, tool.eager) == (None, None, None, None)


@pytest.mark.parametrize(("args", "needle"), [
    ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "retrievalClass": "bogus"}, "retrievalClass"),
    ({"query": "x", "expandHops": 3}, "expandHops"),
    ({"limit": 3}, "query"),
    ({"query": "x", "accountId": "other"}, "accountId"),
])
def test_tool_bad_arguments_are_is_error(make_host, args, needle):
    host = make_host(**ENV)
    _, result = call(host, "memory-search", args)
    assert result.is_error and needle in result.content[0].text


def test_tool_without_account_is_a_clear_error(make_host, monkeypatch):
    host = make_host(PLUGHOST_EMBEDDER="none")
    _, result = call(host, "memory-search", {"query": "x"})
    assert result.is_error and "ACCOUNT_ID" in result.content[0].text


def test_tool_over_stdio_applies_the_process_guards_and_subscriptions(make_host, plughost_home):
    from mcp import Client, StdioServerParameters

    host = make_host(**ENV)
    seed(host)
    account = plughost_home / "accounts" / ACCOUNT / "account.json"
    account.parent.mkdir(parents=True)
    account.write_text(json.dumps({"agents": {"sales": {"knowledgeKeywords": ["tariff"]}}}))
    env = dict(os.environ, **ENV, ALLOWED_SCOPES="public", AGENT_SLUG="sales")
    params = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"], env=env)

    async def go():
        async with Client(params) as client:
            return await client.call_tool("memory-search", {"query": "haircut", "fields": ["name"]})

    result = anyio.run(go)
    text = result.content[0].text
    assert not result.is_error, text
    assert "(id: n1)" in text and "(id: n2)" not in text      # admin scope hidden
    assert "(id: n3)" in text                                  # keyword subscription, not agent-tagged
    assert "description:" not in text and "name: Haircut" in text
    log = (plughost_home / "logs" / "server.log").read_text()
    assert "[graph-search:hybrid] accountId=acct0001" in log
    assert "[memory-search] accountId=acct0001 fields=[name] returnedProps=2 droppedProps=" in log


def test_cli_search_text_json_and_bad_input(make_host):
    from tests.conftest import run_cli

    host = make_host(**ENV)
    seed(host)
    host.close()
    res = run_cli("memory", "search", "haircut", "--json", "--limit", "2", env=ENV)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [r["id"] for r in data["results"]] == ["n1", "n2"] or len(data["results"]) == 2
    assert data["stats"]["final"] == 2 and data["stats"]["mode"] == "weighted"
    assert "accountId" not in data["results"][0]["properties"]
    res = run_cli("memory", "search", "haircut", "--expand-hops", "0", "--fields", "name", "--full", env=ENV)
    assert res.returncode == 0 and "name: Haircut" in res.stdout and "Related:" not in res.stdout
    bad = run_cli("memory", "search", "haircut", "--limit", "500", env=ENV)
    assert bad.returncode == 2 and "'limit'" in bad.stderr and "Traceback" not in bad.stderr
    assert len([x for x in bad.stderr.splitlines() if x.startswith("plughost:")]) == 1


def test_cli_search_is_compact_by_default_and_full_behind_a_flag(make_host):
    """A person at a shell: two lines a result and a footer; --full is the tool's whole text."""
    from tests.conftest import run_cli

    host = make_host(**ENV)
    seed(host)
    host.close()
    brief = run_cli("memory", "search", "haircut", env=ENV)
    full = run_cli("memory", "search", "haircut", "--full", env=ENV)
    assert brief.returncode == 0 and full.returncode == 0, brief.stderr + full.stderr
    lines = brief.stdout.splitlines()
    results = [line for line in lines if re.match(r"^\d+\. \[", line)]
    assert results and results[0].startswith("1. [") and "(score " in results[0] and ", id " in results[0]
    assert len(lines) <= 2 * len(results) + 1 and all(len(line) < 240 for line in lines)
    assert lines[-1] == f"({len(results)} results; --full for every property and the related nodes, --json for the rows)"
    assert "Related:" in full.stdout and "(id: " in full.stdout and len(full.stdout.splitlines()) > len(lines)
    nothing = run_cli("memory", "search", "zzzqqq-nothing-like-it", "--labels", "Nope", env=ENV)
    assert nothing.returncode == 0 and nothing.stdout.strip() == "No results."


class Reverser:
    @hookimpl
    def plughost_rerank(self, host, query, rows):
        return list(reversed(rows))


class Expander:
    calls: list[str] = []

    @hookimpl
    def plughost_query_expansions(self, host, query, retrieval_class):
        self.calls.append(query)
        return ["pricing", "tariff", "deluxe"]


class Booster:
    @hookimpl
    def plughost_retrieval_boosts(self, host):
        return [RetrievalBoost("concepts", lambda row: 1.0 if "Concept" in row["labels"] else 0.0)]


def _search(host, query="haircut", **env):
    from plughost.plugins.memory.retrieval.pipeline import SearchRequest
    from plughost.plugins.memory.retrieval.service import run_search

    return run_search(host, SearchRequest(query, limit=10), dict(host.env, **env))


def test_hook_plughost_rerank(make_host):
    host = make_host(**ENV)
    seed(host)
    before = [r.id for r in _search(host).rows]
    with host.temporary_plugin(Reverser(), "reverser"):
        after = [r.id for r in _search(host).rows]
    assert after == list(reversed(before))


def test_hook_plughost_query_expansions(make_host):
    host = make_host(**ENV)
    seed(host)
    builtin = host.first(hooktable.QUERY_EXPANSIONS, query="haircut prices", retrieval_class=None)
    assert builtin and "haircut cost" in builtin
    off = _search(host)
    assert off.queries == ["haircut"]
    with host.temporary_plugin(Expander(), "expander"):
        out = _search(host, "haircut shop", PLUGHOST_GS_EXPANSION="1")
    assert out.queries == ["haircut shop", "pricing", "tariff", "deluxe"]
    assert "n3" in {r.id for r in out.rows}


def test_hook_plughost_retrieval_boosts(make_host):
    host = make_host(**ENV)
    seed(host)
    with host.temporary_plugin(Booster(), "booster"):
        plain = {r.id: r.score for r in _search(host, "haircut pricing").rows}
        boosted = {r.id: r.score for r in _search(host, "haircut pricing", PLUGHOST_GS_BOOSTS="1").rows}
    assert boosted["n3"] == pytest.approx(plain["n3"] * 2.0)


def test_cli_memory_without_subcommand_is_usage_error():
    from tests.conftest import run_cli

    res = run_cli("memory", env=ENV)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    listed = run_cli("memory", "--help", env=ENV)
    assert listed.returncode == 0 and "search" in listed.stdout
    helped = run_cli("memory", "search", "--help", env=ENV)
    assert helped.returncode == 0 and "--retrieval-class" in helped.stdout


def test_hook_plughost_memory_search(make_host) -> None:
    """The pipeline's rows for a plugin that shows them: the owner's view and a visitor's differ
    by the guards alone, and a brand's provider registered first wins."""
    host = make_host(**ENV)
    seed(host)
    owner = host.first(hooktable.MEMORY_SEARCH, query="haircut", principal=host.principal, limit=5)
    assert [r["id"] for r in owner][:2] == ["n1", "n2"] or {"n1", "n2"} <= {r["id"] for r in owner}
    assert set(owner[0]) == {"id", "labels", "score", "properties"} and owner[0]["labels"] == ["Service"]
    public = host.first(hooktable.MEMORY_SEARCH, query="haircut", principal=host.principal.visitor(), limit=5)
    assert [r["id"] for r in public] == ["n1"]  # the admin-scoped deluxe service is not a visitor's
    assert all(r["properties"].get("scope") == "public" for r in public)

    class Brand:
        @hookimpl
        def plughost_memory_search(self, query, principal, limit):
            return [{"id": "brand", "labels": ["Note"], "score": 1.0, "properties": {"text": query}}]

    with host.temporary_plugin(Brand(), "brand-search"):
        assert host.first(hooktable.MEMORY_SEARCH, query="q", principal=host.principal, limit=1)[0]["id"] == "brand"


def test_host_memory_search_typed_rows_under_a_principal(make_host) -> None:
    """``host.memory_search`` (the plugin API's typed call over the hook): MemoryHit rows as the
    principal given; a public visitor's principal never sees the admin-scoped node."""
    from plughost import MemoryHit

    host = make_host(**ENV)
    seed(host)
    owner = host.memory_search("haircut", host.principal, limit=5)
    assert all(isinstance(h, MemoryHit) for h in owner) and {"n1", "n2"} <= {h.id for h in owner}
    assert owner[0].labels == ("Service",) and isinstance(owner[0].score, float)
    public = host.memory_search("haircut", host.principal.visitor(), limit=5)
    assert [h.id for h in public] == ["n1"]
    assert all(h.properties.get("scope") == "public" for h in public)
    assert len(host.memory_search("haircut", host.principal, limit=1)) == 1


def test_host_memory_search_never_wider_than_the_process(make_host) -> None:
    """A process scoped to ``public`` handing ``host.memory_search`` its owner's principal still sees
    public memory only; another account's principal is refused, not searched."""
    from plughost import UserError

    host = make_host(**ENV)
    seed(host)
    scoped = make_host(**ENV, ALLOWED_SCOPES="public")
    hits = scoped.memory_search("haircut", Principal.owner(ACCOUNT), limit=5)
    assert "n2" not in {h.id for h in hits} and "n1" in {h.id for h in hits}
    with pytest.raises(UserError, match=r"^memory_search: parameter 'principal': account 'other' is not"):
        scoped.memory_search("haircut", Principal.owner("other"), limit=5)
