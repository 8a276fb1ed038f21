"""The local MiniLM embedder against reference vectors of the full-precision model (docs/memory.md#embeddings).

The fixture was computed once with sentence-transformers + torch in a throwaway environment
(``tests/plugins/memory/data/make_reference_vectors.py``); here only onnxruntime + tokenizers run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require_local_model

REFERENCE = Path(__file__).parents[1] / "data" / "minilm_reference_vectors.json"


def _require_model() -> None:
    require_local_model()


@pytest.fixture(scope="module")
def local():
    _require_model()
    from plughost.plugins.memory.embedding.local import LocalEmbedder

    return LocalEmbedder(batch_size=4)


def test_cosine_against_full_precision_reference(local) -> None:
    ref = json.loads(REFERENCE.read_text())
    got = np.array(local.embed(ref["sentences"]))
    want = np.array(ref["vectors"])
    assert got.shape == want.shape == (len(ref["sentences"]), 384)
    cosines = (got * want).sum(axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    assert cosines.min() >= 0.999, cosines


def test_unit_length_order_and_batching_do_not_change_vectors(local) -> None:
    texts = ["short", "a somewhat longer sentence about invoices and payments", "x " * 400]
    one_by_one = np.array([local.embed([t])[0] for t in texts])
    batched = np.array(local.embed(texts))  # padded to the batch's longest
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert np.allclose(one_by_one, batched, atol=1e-4)
    assert local.embed([]) == []


def test_long_input_is_truncated_not_an_error(local) -> None:
    [vector] = local.embed(["word " * 5000])
    assert len(vector) == 384


def test_tokenizer_ships_with_its_notice() -> None:
    import hashlib

    from plughost.plugins.memory.embedding.local import TOKENIZER_PATH

    assert hashlib.sha256(TOKENIZER_PATH.read_bytes()).hexdigest().startswith("be50c362")
    assert (TOKENIZER_PATH.parent / "NOTICE").is_file() and (TOKENIZER_PATH.parent / "LICENSE").is_file()


def test_hook_selects_local_when_installed(make_host) -> None:
    _require_model()
    host = make_host(PLUGHOST_EMBEDDER="local")
    embedder = host.embedder()
    assert embedder is not None and embedder.name == "local" and embedder.dimensions == 384


def test_memory_write_embeds_with_the_local_model(make_host) -> None:
    """The default provider end to end: a Person written through the tool gets a 384-d MiniLM vector."""
    _require_model()
    from memory_support import call_tool

    from plughost.ports.graph import Guards

    host = make_host(ACCOUNT_ID="a1", PLUGHOST_EMBEDDER="local", EMBED_DIMENSIONS="384")
    is_error, text = call_tool(host, "memory-write", {"labels": ["Person"], "properties": {"name": "Ada"}})
    assert not is_error and json.loads(text)["embedded"] is True
    vector = host.store().get_embedding(json.loads(text)["elementId"], guards=Guards("a1"))
    assert len(vector) == 384 and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
    hits = host.store().vector_search(host.embedder().embed(["Person named Ada"])[0], 1, guards=Guards("a1"))
    assert hits and hits[0].node.properties["name"] == "Ada"
