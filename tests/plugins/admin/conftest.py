"""Fixtures for the admin/serve tests (helpers in ``serve_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import serve_helpers
from serve_helpers import LiveServer, make_account


@pytest.fixture
def live_app(make_host) -> Iterator[Any]:
    """``live_app(host=None)`` → a started :class:`LiveServer` (stopped at teardown)."""
    started: list[LiveServer] = []

    def start(host: Any = None, bind: str = "127.0.0.1") -> LiveServer:
        server = LiveServer(host or make_host(), bind=bind).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def serve_env(plughost_home: Path) -> dict[str, str]:
    """Env for a `plughost serve` subprocess: a valid account selected, the test's data root."""
    account = make_account(plughost_home)
    return {"ACCOUNT_ID": account, "PLUGHOST_HOME": str(plughost_home)}


@pytest.fixture(autouse=True)
def no_leftover_servers() -> Iterator[None]:
    """A test that fails before stopping its `plughost serve` process must not leave it running."""
    yield
    while serve_helpers.STARTED:
        proc = serve_helpers.STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
