"""The embedder port (docs/memory.md#embeddings). Providers come through the ``plughost_embedder`` hook."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension, in input order."""

    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text; raises on failure (callers store the node without an embedding)."""
        ...
