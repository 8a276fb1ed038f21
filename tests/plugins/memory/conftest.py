"""Memory-area fixtures: a fake Ollama on loopback, hosts for one account."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from memory_support import ACCOUNT, FakeOllama


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    fake = FakeOllama().start()
    yield fake
    fake.stop()


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL where nothing listens (an unreachable Ollama)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def memory_host(make_host, plughost_home):
    """A loaded host for account ``acct-a`` (embedder from the test env unless overridden)."""

    def build(**env: str):
        env.setdefault("ACCOUNT_ID", ACCOUNT)
        return make_host(**env)

    return build


