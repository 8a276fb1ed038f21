"""Entity fixtures: a store per backend (the embedded store always, Neo4j when NEO4J_URI is set)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conversation_support import open_store

from tests.backends import BACKENDS


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A fresh store of one account (``store.test_account``), on each backend."""
    account = "acct-one" if request.param == "sqlite" else f"acct-ent-{uuid.uuid4().hex[:8]}"
    s = open_store(tmp_path / "graph.sqlite", account=account, backend=request.param)
    s.test_account = account
    yield s
    if request.param == "neo4j":
        s.wipe_account(account)
    s.close()
