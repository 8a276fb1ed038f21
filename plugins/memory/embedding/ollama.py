"""The Ollama embedder with the pacing contract (docs/memory.md#embeddings).

Why pacing: one ``/api/embed`` POST holding a document's summary and every section body pins
the model server on every core with no idle gap; on a small passively cooled board that
overheated it. So a multi-input batch is split into POSTs sized from the *measured*
throughput: the first POST is a single-input probe, every POST's observed ms-per-character
folds into a running maximum (monotonic within the batch, so a slowdown shrinks the rest and
never re-expands), later POSTs hold as many inputs as fit
``floor(EMBED_REQUEST_TIMEOUT_MS * 0.8 / observedMsPerChar)`` characters, never more than
``EMBED_SUBBATCH_SIZE``, with ``EMBED_SUBBATCH_COOLDOWN_MS`` between POSTs.
``EMBED_MS_PER_INPUT`` does not size anything: it is the baseline for the ``op=drift`` warning.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from plughost import log
from plughost.plugins.memory.embedding.settings import EmbedSettings, cap


class EmbedError(RuntimeError):
    """An embed call failed; the caller stores the node without an embedding."""


@dataclass
class PacingState:
    """The per-batch measurements: running maximum of observed ms per character."""

    observed_ms_per_char: float | None = None
    posts: list[int] = field(default_factory=list)  # input count of each POST, for tests/bench

    def budget_chars(self, timeout_ms: int) -> int | None:
        if not self.observed_ms_per_char:
            return None
        return math.floor(timeout_ms * 0.8 / self.observed_ms_per_char)


def plan_next(texts: Sequence[str], start: int, state: PacingState, settings: EmbedSettings) -> int:
    """How many inputs, from ``start``, the next POST carries (at least one)."""
    if state.observed_ms_per_char is None:
        return 1  # the probe: the only size provably safe without a measurement
    budget = state.budget_chars(settings.request_timeout_ms) or 0
    count, chars = 0, 0
    for text in texts[start:start + settings.subbatch_size]:
        if count and chars + len(text) > budget:
            break
        count += 1
        chars += len(text)
    return max(count, 1)


class OllamaEmbedder:
    """``POST /api/embed`` with ``keep_alive``, inputs capped, batches paced; vectors in input order."""

    name = "ollama"

    def __init__(self, settings: EmbedSettings, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self.dimensions = settings.dimensions
        self._sleep = sleep
        self._client: Any = None
        self._lock = threading.Lock()
        self.last_batch: PacingState | None = None

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(base_url=self.settings.ollama_url,
                                            timeout=self.settings.request_timeout_ms / 1000)
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _post(self, inputs: list[str]) -> list[list[float]]:
        import httpx

        body = {"model": self.settings.model, "input": inputs, "keep_alive": self.settings.keep_alive}
        try:
            response = self._http().post("/api/embed", json=body)
        except httpx.HTTPError as exc:
            raise EmbedError(f"ollama {self.settings.ollama_url}: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise EmbedError(f"ollama /api/embed: HTTP {response.status_code}: {response.text[:120]}")
        try:
            vectors = response.json()["embeddings"]
        except (ValueError, KeyError, TypeError):
            raise EmbedError("ollama /api/embed: response has no 'embeddings' list") from None
        if not isinstance(vectors, list) or len(vectors) != len(inputs):
            raise EmbedError(f"ollama /api/embed: expected {len(inputs)} vectors, got "
                             f"{len(vectors) if isinstance(vectors, list) else type(vectors).__name__}")
        for vector in vectors:
            if not isinstance(vector, list) or len(vector) != self.dimensions:
                got = len(vector) if isinstance(vector, list) else type(vector).__name__
                raise EmbedError(f"ollama model '{self.settings.model}': expected {self.dimensions} dimensions "
                                 f"(EMBED_DIMENSIONS), got {got}")
        return vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        s = self.settings
        capped = [cap(t or "", s.input_max_chars) for t in texts]
        state = PacingState()
        self.last_batch = state
        out: list[list[float]] = []
        start = 0
        while start < len(capped):
            if start:
                self._sleep(s.subbatch_cooldown_ms / 1000)
            count = plan_next(capped, start, state, s)
            chunk = capped[start:start + count]
            chars = max(sum(len(t) for t in chunk), 1)
            self._http()  # client construction (and the httpx import) is not the device's embed time
            t0 = time.perf_counter()
            out.extend(self._post(chunk))
            elapsed_ms = (time.perf_counter() - t0) * 1000
            state.posts.append(count)
            rate = elapsed_ms / chars
            state.observed_ms_per_char = max(state.observed_ms_per_char or 0.0, rate)
            per_input = elapsed_ms / count
            if per_input > s.ms_per_input * 1.5:
                log("embed", "op=drift", perInputMs=round(per_input), budgetMs=s.ms_per_input,
                    inputs=count, chars=chars, msPerChar=f"{rate:.3f}")
            start += count
        return out
