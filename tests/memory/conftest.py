"""Memory-area fixtures: a fake Ollama on loopback, log capture helpers."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from memory_fakes import FakeOllama


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


def server_log(home: Path) -> list[str]:
    path = home / "logs" / "server.log"
    return path.read_text().splitlines() if path.exists() else []
