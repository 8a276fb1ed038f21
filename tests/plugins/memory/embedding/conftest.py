"""Embedding fixtures: an embedded store for one account (the retrieval suites' own)."""

import pytest
from retrieval_support import ACCOUNT


@pytest.fixture
def store(tmp_path):
    from plughost.plugins.graph.sqlite_store import SqliteStore

    s = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": "4"})
    yield s
    s.close()
