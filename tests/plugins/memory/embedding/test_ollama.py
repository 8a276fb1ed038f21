"""The Ollama embedder's pacing contract against a fake Ollama on loopback (docs/memory.md#embeddings)."""

from __future__ import annotations

import types

import pytest
from memory_support import FakeOllama, VirtualClock, fake_vector

from plughost.plugins.memory.embedding import ollama
from plughost.plugins.memory.embedding.ollama import EmbedError, OllamaEmbedder, PacingState, plan_next
from plughost.plugins.memory.embedding.settings import EmbedSettings


def settings(url: str, **over: object) -> EmbedSettings:
    base = dict(provider="ollama", ollama_url=url, dimensions=8, request_timeout_ms=2000,
                subbatch_size=4, subbatch_cooldown_ms=30, ms_per_input=6000, input_max_chars=8000)
    base.update(over)
    return EmbedSettings(**base)  # type: ignore[arg-type]


@pytest.fixture
def paced(fake_ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> FakeOllama:
    """The fake on a virtual clock the embedder times its posts with: the batch sizes follow the
    simulated ms per character alone, however long the loopback round trip takes on a busy machine."""
    fake_ollama.clock = VirtualClock()
    monkeypatch.setattr(ollama, "time", types.SimpleNamespace(perf_counter=fake_ollama.clock.perf_counter))
    return fake_ollama


def test_probe_then_character_budget_and_ceiling(paced: FakeOllama) -> None:
    fake_ollama = paced
    fake_ollama.dims = 8
    fake_ollama.ms_per_char = 0.2  # 2000 ms * 0.8 / 0.2 = 8000-char budget: the count ceiling governs
    texts = [f"input {i} " + "x" * 100 for i in range(11)]
    emb = OllamaEmbedder(settings(fake_ollama.url))
    vectors = emb.embed(texts)
    assert fake_ollama.sizes() == [1, 4, 4, 2]
    assert vectors == [pytest.approx(fake_vector(t, 8)) for t in texts]  # input order
    assert all(r.body["keep_alive"] == -1 for r in fake_ollama.requests)
    assert all(r.body["model"] == "nomic-embed-text" for r in fake_ollama.requests)


def test_character_budget_bounds_posts_below_the_ceiling(paced: FakeOllama) -> None:
    fake_ollama = paced
    fake_ollama.dims = 8
    fake_ollama.ms_per_char = 1.0  # budget = floor(1000 * 0.8 / >=1.0) <= 800 chars -> two 300-char inputs
    texts = ["a" * 300 for _ in range(7)]
    emb = OllamaEmbedder(settings(fake_ollama.url, request_timeout_ms=1000))
    emb.embed(texts)
    sizes = fake_ollama.sizes()
    assert sizes[0] == 1
    assert all(n <= 2 for n in sizes[1:]) and sum(sizes) == 7
    for record in fake_ollama.requests[1:]:
        assert sum(len(t) for t in record.body["input"]) <= 800


def test_slowdown_mid_batch_shrinks_later_posts(paced: FakeOllama) -> None:
    fake_ollama = paced
    fake_ollama.dims = 8
    fake_ollama.ms_per_char = 0.05  # fast: budget far above the 4-input ceiling
    fake_ollama.slow_after = 2  # the third POST on is 20x slower: 800 chars take ~800 ms
    fake_ollama.slow_ms_per_char = 1.0
    texts = ["b" * 200 for _ in range(16)]
    emb = OllamaEmbedder(settings(fake_ollama.url, request_timeout_ms=900))
    vectors = emb.embed(texts)
    sizes = fake_ollama.sizes()
    assert sizes[:3] == [1, 4, 4]
    # running maximum >= 1.0 ms/char -> budget floor(900 * 0.8 / 1.0) = 720 chars -> 3 inputs
    assert sizes[3:] and max(sizes[3:]) <= 3 and sum(sizes) == 16
    assert all(sum(len(t) for t in r.body["input"]) <= 720 for r in fake_ollama.requests[3:])
    assert emb.last_batch is not None and emb.last_batch.observed_ms_per_char >= 1.0
    assert len(vectors) == 16


def test_cooldown_between_posts(fake_ollama: FakeOllama) -> None:
    fake_ollama.dims = 8
    emb = OllamaEmbedder(settings(fake_ollama.url, subbatch_cooldown_ms=150))
    emb.embed(["c" * 10 for _ in range(6)])
    times = [(r.started, r.ended) for r in fake_ollama.requests]
    assert len(times) == 3  # 1 + 4 + 1
    gaps = [b[0] - a[1] for a, b in zip(times, times[1:], strict=False)]
    assert all(gap >= 0.14 for gap in gaps), gaps


def test_single_input_is_one_post_and_input_is_capped(fake_ollama: FakeOllama) -> None:
    fake_ollama.dims = 8
    emb = OllamaEmbedder(settings(fake_ollama.url, input_max_chars=50))
    [vector] = emb.embed(["z" * 500])
    assert fake_ollama.sizes() == [1]
    assert fake_ollama.requests[0].body["input"] == ["z" * 50]
    assert vector == pytest.approx(fake_vector("z" * 50, 8))


def test_drift_line_when_slower_than_budget(fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.dims = 8
    fake_ollama.ms_per_char = 1.0
    emb = OllamaEmbedder(settings(fake_ollama.url, ms_per_input=20, request_timeout_ms=5000))
    emb.embed(["d" * 60, "d" * 60])  # ~60 ms per input > 1.5 x 20 ms
    err = capsys.readouterr().err
    drift = [line for line in err.splitlines() if line.startswith("[embed] op=drift")]
    assert len(drift) == 2 and "budgetMs=20" in drift[0] and "inputs=1" in drift[0]


def test_no_drift_when_within_budget(fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.dims = 8
    OllamaEmbedder(settings(fake_ollama.url)).embed(["quick", "ones"])
    assert "op=drift" not in capsys.readouterr().err


def test_keep_alive_from_env(fake_ollama: FakeOllama) -> None:
    fake_ollama.dims = 8
    s = EmbedSettings.from_env({"PLUGHOST_EMBEDDER": "ollama", "OLLAMA_URL": fake_ollama.url,
                                "EMBED_DIMENSIONS": "8", "EMBED_KEEP_ALIVE": "10m", "EMBED_MODEL": "m1"})
    OllamaEmbedder(s).embed(["hello"])
    assert fake_ollama.requests[0].body["keep_alive"] == "10m"
    assert fake_ollama.requests[0].body["model"] == "m1"


def test_server_error_and_unreachable_raise_embed_error(fake_ollama: FakeOllama, closed_port_url: str) -> None:
    fake_ollama.dims = 8
    fake_ollama.fail_marker = "BOOM"
    with pytest.raises(EmbedError, match="HTTP 500"):
        OllamaEmbedder(settings(fake_ollama.url)).embed(["fine", "BOOM"])
    with pytest.raises(EmbedError, match="ConnectError"):
        OllamaEmbedder(settings(closed_port_url)).embed(["x"])


def test_dimension_mismatch_is_a_clear_error(fake_ollama: FakeOllama) -> None:
    fake_ollama.dims = 16
    with pytest.raises(EmbedError, match="expected 8 dimensions"):
        OllamaEmbedder(settings(fake_ollama.url)).embed(["x"])


def test_plan_next_pure() -> None:
    s = settings("http://unused", request_timeout_ms=1000, subbatch_size=4)
    state = PacingState()
    texts = ["x" * 100] * 10
    assert plan_next(texts, 0, state, s) == 1
    state.observed_ms_per_char = 2.0  # budget 400 chars
    assert plan_next(texts, 1, state, s) == 4
    state.observed_ms_per_char = 4.0  # budget 200 chars
    assert plan_next(texts, 1, state, s) == 2
    state.observed_ms_per_char = 100.0  # budget 8 chars: still one input per POST
    assert plan_next(texts, 1, state, s) == 1


def test_bad_env_values_are_one_line_errors() -> None:
    from plughost.util.errors import UserError

    with pytest.raises(UserError, match="EMBED_SUBBATCH_SIZE: expected an integer >= 1"):
        EmbedSettings.from_env({"EMBED_SUBBATCH_SIZE": "0"})
    with pytest.raises(UserError, match="PLUGHOST_EMBEDDER: expected one of local, ollama, none"):
        EmbedSettings.from_env({"PLUGHOST_EMBEDDER": "openai"})
