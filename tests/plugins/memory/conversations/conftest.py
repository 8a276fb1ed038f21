"""Conversation-search fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conversation_support import open_store

from tests.backends import BACKENDS


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The store on each backend (session-restricted search filters inside the store's queries)."""
    s = open_store(tmp_path / "graph.sqlite", backend=request.param)
    yield s
    if request.param == "neo4j":
        s.wipe_account("acct-one")
    s.close()
