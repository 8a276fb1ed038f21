"""Provider selection for the ``plughost_embedder`` hook (docs/memory.md#embeddings).

``PLUGHOST_EMBEDDER=local|ollama|none`` (default ``local``). ``local`` falls back to ``none``
when the optional model package is not installed; ``none`` means nodes are stored without
embeddings and search is BM25-only, said once per process in one clear warning.
"""

from __future__ import annotations

from collections.abc import Mapping

from plughost import Embedder, FatalError, GraphStore, log
from plughost.plugins.memory.embedding.local import LocalEmbedder, LocalModelMissing, check_available
from plughost.plugins.memory.embedding.settings import EmbedSettings

_warned: set[str] = set()
NONE_EFFECT = "nodes are stored without embeddings; search is BM25-only"


def _warn_none(reason: str) -> None:
    if reason in _warned:
        return
    _warned.add(reason)
    log("embed", "warn", provider="none", reason=reason, effect=NONE_EFFECT)


def select_embedder(env: Mapping[str, str]) -> Embedder | None:
    """The configured embedder, or None (after one warning) when no provider is usable."""
    settings = EmbedSettings.from_env(env)
    if settings.provider == "none":
        _warn_none("PLUGHOST_EMBEDDER=none")
        return None
    if settings.provider == "ollama":
        from plughost.plugins.memory.embedding.ollama import OllamaEmbedder

        return OllamaEmbedder(settings)
    try:
        check_available()
    except LocalModelMissing as exc:
        _warn_none(f"local model unavailable: {exc}")
        return None
    return LocalEmbedder(batch_size=settings.batch_size, input_max_chars=settings.input_max_chars)


def check_dimensions(store: GraphStore, embedder: Embedder | None) -> None:
    """The store's vector indexes and the embedder must agree; a mismatch is a startup error."""
    if embedder is None or store is None:
        return
    indexes = store.vector_indexes() or {}
    wrong = sorted({dims for dims in indexes.values() if dims and dims != embedder.dimensions})
    if wrong:
        raise FatalError(
            f"embedder '{embedder.name}' makes {embedder.dimensions}-dimension vectors but the store's vector "
            f"indexes have {', '.join(map(str, wrong))} dimensions; set the store's dimensions to match "
            f"(or choose another PLUGHOST_EMBEDDER) and run `plughost memory reindex`"
        )
