"""Graph-area fixtures: a store per backend (embedded always; Neo4j when NEO4J_URI is set or CI)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends import BACKENDS, neo4j_env, use_backend

ACCOUNT = "acct-main"


def open_store(backend: str, tmp_path: Path, account: str = ACCOUNT):
    env = dict(os.environ)
    env["ACCOUNT_ID"] = account
    if backend == "sqlite":
        from plughost.plugins.graph.sqlite_store import SqliteStore

        return SqliteStore(tmp_path / "graph.sqlite", env=env)
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    env.update(neo4j_env())
    store = Neo4jStore.from_env(env)
    store.wipe_account(account)
    return store


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A fresh store for ACCOUNT (the process's ACCOUNT_ID), one per backend."""
    account = ACCOUNT if request.param == "sqlite" else f"{ACCOUNT}-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("ACCOUNT_ID", account)
    s = open_store(request.param, tmp_path, account)
    s.test_account = account  # type: ignore[attr-defined]
    yield s
    if request.param == "neo4j":
        s.wipe_account(account)  # type: ignore[attr-defined]
    s.close()


@pytest.fixture
def sqlite_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    s = open_store("sqlite", tmp_path)
    yield s
    s.close()


@pytest.fixture(params=BACKENDS)
def graph_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test's environment (so ``host.store()``) on each backend in turn."""
    use_backend(monkeypatch, request.param)
    return request.param
