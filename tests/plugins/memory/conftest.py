"""Memory-area fixtures: a fake Ollama on loopback, hosts for one account, an admin Claude Code session."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from audit_support import ACCOUNT as HOOKS_ACCOUNT
from audit_support import DATA as HOOKS_DATA
from memory_support import ACCOUNT, FakeOllama
from surfacing_support import config_dir


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


@pytest.fixture
def admin(tmp_path: Path, plughost_home: Path) -> dict[str, Path]:
    """An admin session's Claude Code config dir, cwd and recorded transcript (the session hooks' suites)."""
    from plughost.runtime.accounts import create_account

    create_account(HOOKS_ACCOUNT, plughost_home)
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=HOOKS_ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text((HOOKS_DATA / "transcript.jsonl").read_text())
    return {"cfg": cfg, "cwd": cwd, "home": plughost_home, "transcript": transcript}
