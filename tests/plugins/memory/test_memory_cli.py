"""`plughost memory write|ingest|import|reindex` through the CLI, isolated as a fresh process (docs/cli.md)."""

from __future__ import annotations

import json

import pytest
from memory_support import ACCOUNT, cli, server_log

from plughost.ports.graph import Guards


def test_memory_write_cli_ok_and_bad_input(plughost_home) -> None:
    done = cli("memory", "write", "--labels", "Event", "--properties", '{"name": "Launch", "when": "2026-01-02"}')
    assert done.returncode == 0, done.stderr
    node_id = json.loads(done.stdout)["elementId"]
    assert f"result=ok elementId={node_id}" in done.stderr
    bad = cli("memory", "write", "--labels", "Event", "--properties", "{not json")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith(
        "plughost: --properties: invalid JSON") and "Traceback" not in bad.stderr
    unknown = cli("memory", "write", "--labels", "Spaceship", "--properties", "{}")
    assert unknown.returncode == 2 and "reason=schema-unknown-label" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_memory_ingest_cli(plughost_home, tmp_path) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\n\nFirst.\n\n## More\n\nSecond part.\n")
    done = cli("memory", "ingest", str(doc))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sections"] == 2
    missing = cli("memory", "ingest", str(tmp_path / "nope.md"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_memory_import_embeds_and_reports_bad_lines(plughost_home, tmp_path, fake_ollama) -> None:
    fake_ollama.dims = 8
    lines = [
        json.dumps({"id": "p1", "labels": ["Person"], "properties": {"name": "Ann"},
                    "edges": [{"type": "KNOWS", "to": "p2"}]}),
        "{broken json",
        json.dumps({"id": "p2", "labels": ["Person"], "properties": {"name": "Ben"}}),
        json.dumps({"labels": [], "properties": {}}),
        json.dumps({"id": "c1", "labels": ["Company"], "properties": {"name": "Acme"},
                    "edges": [{"type": "OWNS", "to": "ghost"}]}),
        "",
        json.dumps({"id": "e1", "labels": ["Event"], "properties": {"name": "Given"}, "embedding": [0.5] * 8}),
    ]
    path = tmp_path / "nodes.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = cli("memory", "import", str(path), "--batch-size", "2", PLUGHOST_EMBEDDER="ollama",
               OLLAMA_URL=fake_ollama.url, EMBED_SUBBATCH_COOLDOWN_MS="0")
    assert done.returncode == 2, done.stderr  # some lines were bad
    assert "[memory-import] skip line=2 " in done.stderr
    assert "[memory-import] skip line=4 reason=\"labels: expected a non-empty list of labels, got []\"" in done.stderr
    assert "[memory-import] skip line=5 reason=\"edge OWNS -> 'ghost'" in done.stderr
    assert "import: nodes=4 edges=1 skipped=2 embedded=2" in done.stdout
    assert ("import: not embedded: 1 whose labels have no vector index (Company=1; the vector-indexed labels: "
            "docs/graph.md#labels); 1 with their own embedding (stored as given)") in done.stdout
    sent = sorted(t for r in fake_ollama.requests for t in r.body["input"])
    assert sent == ["Person\nname: Ann", "Person\nname: Ben"]  # Company is not vector-indexed; e1 came with one
    from plughost.runtime.host import Host

    host = Host(env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(plughost_home), "EMBED_DIMENSIONS": "8",
                     "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        store = host.store()
        assert store.missing_embeddings(account_id=ACCOUNT) == []
        assert [n.node.id for n in store.expand(["p1"], guards=Guards(ACCOUNT))["p1"]] == ["p2"]
    finally:
        host.close()


def test_memory_import_without_embedder_then_reindex(plughost_home, tmp_path, fake_ollama) -> None:
    fake_ollama.dims = 8
    path = tmp_path / "nodes.jsonl"
    path.write_text("".join(json.dumps({"labels": ["Event"], "properties": {"name": f"e{i}"}}) + "\n"
                            for i in range(7)))
    done = cli("memory", "import", str(path), "--no-embed")
    assert done.returncode == 0 and "embedded=0" in done.stdout, done.stderr
    assert ("import: not embedded: 7 not embedded because --no-embed (plughost memory reindex embeds them later)"
            in done.stdout)
    again = cli("memory", "reindex", "--batch-size", "3", PLUGHOST_EMBEDDER="ollama", OLLAMA_URL=fake_ollama.url,
                EMBED_SUBBATCH_COOLDOWN_MS="0")
    assert again.returncode == 0, again.stderr
    assert "reindex: processed=7 skipped=0" in again.stdout
    assert "[reindex] op=done processed=7 skipped=0" in again.stderr
    assert sum("[reindex] op=embedded" in line for line in server_log(plughost_home)) == 7


def test_memory_import_says_why_nothing_was_embedded(plughost_home, tmp_path) -> None:
    """embedded=0 is explained: the labels without a vector index by name, and no embedder configured."""
    path = tmp_path / "nodes.jsonl"
    path.write_text("".join(json.dumps({"labels": [label], "properties": {"name": f"n{i}"}}) + "\n"
                            for i, label in enumerate(["Widget", "Widget", "Gadget", "Person"])))
    done = cli("memory", "import", str(path), PLUGHOST_EMBEDDER="none")
    assert done.returncode == 0 and "embedded=0" in done.stdout, done.stderr
    why = [line for line in done.stdout.splitlines() if line.startswith("import: not embedded: ")]
    assert why == ["import: not embedded: 3 whose labels have no vector index (Gadget=1, Widget=2; the vector-indexed "
                   "labels: docs/graph.md#labels); 1 not embedded because there is no embedder "
                   "(PLUGHOST_EMBEDDER; the [embed] warn line says why) (plughost memory reindex embeds them later)"]


def test_reindex_cli_without_account_is_one_line(plughost_home) -> None:
    done = cli("memory", "reindex", ACCOUNT_ID="")
    assert done.returncode == 2
    assert done.stderr.strip() == "plughost: ACCOUNT_ID: not set; expected the id of the account to write to"


@pytest.mark.parametrize("narrowed", [{"PLUGHOST_SESSION_ROLE": "public", "SESSION_ID": "visitor-1"},
                                      {"ALLOWED_SCOPES": "public"}, {"AGENT_SLUG": "support"}])
@pytest.mark.parametrize("form", [[], ["--context"], ["--entities"]])
def test_reindex_cli_is_admin_only_as_the_tool_is(plughost_home, narrowed, form) -> None:
    done = cli("memory", "reindex", *form, PLUGHOST_EMBEDDER="none", **narrowed)
    assert done.returncode != 0 and "memory reindex" in done.stderr and "Traceback" not in done.stderr
    assert "reindex:" not in done.stdout  # nothing read, nothing counted


def test_memory_stdio_server_serves_write_tools(plughost_home) -> None:
    """The plugin's own mcp/__main__.py over stdio with a real MCP client."""
    import os
    import sys

    import anyio
    from mcp import Client, StdioServerParameters

    from tests.conftest import REPO as REPO_ROOT

    env = dict(os.environ, ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none")
    params = StdioServerParameters(command=sys.executable,
                                   args=[str(REPO_ROOT / "plugins" / "memory" / "mcp" / "__main__.py")], env=env)

    async def go() -> tuple[list[str], str]:
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("memory-write", {"labels": ["Event"], "properties": {"name": "x"}})
            return names, "".join(c.text for c in result.content)

    names, text = anyio.run(go)
    assert "memory-write" in names and json.loads(text)["elementId"]


def test_memory_audit_counts(plughost_home, tmp_path) -> None:
    path = tmp_path / "nodes.jsonl"
    rows = [{"id": "e1", "labels": ["Event"], "properties": {"name": "no vector yet"}},
            {"id": "s-orphan", "labels": ["Section"], "properties": {"body": "lost section"}},
            {"id": "owner", "labels": ["AdminUser"], "properties": {"userId": "u1", "role": "owner"}},
            {"id": "prof", "labels": ["UserProfile"], "properties": {"userId": "u1"},
             "edges": [{"type": "HAS_PREFERENCE", "to": "pref"}]},
            {"id": "pref", "labels": ["Preference"],
             "properties": {"category": "a", "key": "k", "value": "Be brief", "confidence": 0.7, "scope": "admin"}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("memory", "import", str(path), "--no-embed").returncode == 0
    doc = tmp_path / "d.md"
    doc.write_text("# D\n\nBody.\n")
    assert cli("memory", "ingest", str(doc)).returncode == 0
    done = cli("memory", "audit", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["nullEmbedding"] == {"Event": 1, "KnowledgeDocument": 1, "Preference": 1, "Section": 2, "Chunk": 1}
    assert report["orphanSections"] == 1 and report["orphanChunks"] == 0
    assert report["activeRules"] == {"stored": 1, "injected": 1, "source": "owner"}
    assert "[preference-inject] op=reconcile accountId=acct-a stored=1 injected=1 drifted=0" in done.stderr
    assert "[embed-audit] null-embedding labels=" in done.stderr
