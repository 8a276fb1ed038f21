import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import pytest  # noqa: E402

ACCOUNT = "acct0001-aaaa"


class LookupEmbedder:
    """A deterministic Embedder for fixed-graph tests: each query text maps to a chosen vector."""

    name = "lookup"

    def __init__(self, table, dimensions=4, fail=False):
        self.table = table
        self.dimensions = dimensions
        self.fail = fail
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        if self.fail:
            raise ConnectionError("embedder down")
        return [list(self.table.get(t, [0.5, 0.5, 0.5, 0.5])) for t in texts]


@pytest.fixture
def store(tmp_path):
    from plugins.graph.sqlite_store import SqliteStore

    s = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": "4"})
    yield s
    s.close()


@pytest.fixture
def other_store(tmp_path, store):
    from plugins.graph.sqlite_store import SqliteStore

    s = SqliteStore(tmp_path / "graph.sqlite", env={"ACCOUNT_ID": "acct0002-bbbb", "PLUGHOST_EMBED_DIMENSIONS": "4"})
    yield s
    s.close()
