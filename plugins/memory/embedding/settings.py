"""Embedding knobs read from the environment (docs/memory.md#embeddings), one place for every provider.

All of them are env-overridable so a slow device can be tuned on site without a release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from plughost import Setting, UserError
from plughost.api.settings import EMBEDDER

DEFAULT_PROVIDER = "local"
PROVIDERS = ("local", "ollama", "none")


def _int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 0) -> int:
    return Setting(name, "int", default, "", minimum=minimum).read(env)


@dataclass(frozen=True)
class EmbedSettings:
    """Provider choice plus the Ollama pacing contract's parameters."""

    provider: str = DEFAULT_PROVIDER
    input_max_chars: int = 8000
    batch_size: int = 32
    ollama_url: str = "http://127.0.0.1:11434"
    model: str = "nomic-embed-text"
    dimensions: int = 768
    keep_alive: str | int = -1
    request_timeout_ms: int = 30_000
    subbatch_size: int = 4
    subbatch_cooldown_ms: int = 1000
    ms_per_input: int = 6000

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> EmbedSettings:
        provider = (EMBEDDER.read(env) or DEFAULT_PROVIDER).lower()
        if provider == "memory":  # this plugin's name: the host's choice among embedder plugins
            provider = DEFAULT_PROVIDER
        if provider not in PROVIDERS:
            raise UserError(f"PLUGHOST_EMBEDDER: expected one of {', '.join(PROVIDERS)}, got {provider!r}")
        keep_alive_raw = (env.get("EMBED_KEEP_ALIVE") or "-1").strip()
        keep_alive: str | int = int(keep_alive_raw) if keep_alive_raw.lstrip("-").isdigit() else keep_alive_raw
        return cls(
            provider=provider,
            input_max_chars=_int(env, "EMBED_INPUT_MAX_CHARS", cls.input_max_chars, minimum=1),
            batch_size=_int(env, "EMBED_BATCH_SIZE", cls.batch_size, minimum=1),
            ollama_url=(env.get("OLLAMA_URL") or cls.ollama_url).rstrip("/"),
            model=(env.get("EMBED_MODEL") or cls.model).strip(),
            dimensions=_int(env, "EMBED_DIMENSIONS", cls.dimensions, minimum=1),
            keep_alive=keep_alive,
            request_timeout_ms=_int(env, "EMBED_REQUEST_TIMEOUT_MS", cls.request_timeout_ms, minimum=1),
            subbatch_size=_int(env, "EMBED_SUBBATCH_SIZE", cls.subbatch_size, minimum=1),
            subbatch_cooldown_ms=_int(env, "EMBED_SUBBATCH_COOLDOWN_MS", cls.subbatch_cooldown_ms),
            ms_per_input=_int(env, "EMBED_MS_PER_INPUT", cls.ms_per_input, minimum=1),
        )


def cap(text: str, max_chars: int) -> str:
    """Oversized input is truncated, never an error (docs/memory.md#embeddings)."""
    return text if len(text) <= max_chars else text[:max_chars]
