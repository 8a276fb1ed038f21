"""Conversation-search helpers: a real SQLite store on disk, a deterministic embedder."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

DIMS = 8


class HashEmbedder:
    """A deterministic Embedder: each text maps to a fixed unit vector (no model needed)."""

    name = "hash"
    dimensions = DIMS

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            raw = hashlib.sha256(text.encode("utf-8")).digest()
            vec = [b - 127.5 for b in raw[:DIMS]]
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


def open_store(path: Path, account: str = "acct-one", backend: str = "sqlite") -> Any:
    """The store as one account's process opens it (a process writes only its own account).

    On Neo4j (one shared database) the account starts empty."""
    env = {"ACCOUNT_ID": account, "PLUGHOST_EMBED_DIMENSIONS": str(DIMS)}
    if backend == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore
        from tests.backends import neo4j_env

        store = Neo4jStore.from_env({**neo4j_env(), **env})
        store.wipe_account(account)
        return store
    from plughost.plugins.graph.sqlite_store import SqliteStore

    return SqliteStore(path, env=env)
