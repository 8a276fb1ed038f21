"""Retrieval fixtures: an embedded store for one account (and a second account on the same file)."""

import pytest
from retrieval_support import ACCOUNT


@pytest.fixture
def store(tmp_path):
    from plughost.plugins.graph.sqlite_store import SqliteStore

    s = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": "4"})
    yield s
    s.close()


@pytest.fixture
def other_store(tmp_path, store):
    from plughost.plugins.graph.sqlite_store import SqliteStore

    s = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": "acct0002-bbbb", "PLUGHOST_EMBED_DIMENSIONS": "4"})
    yield s
    s.close()
