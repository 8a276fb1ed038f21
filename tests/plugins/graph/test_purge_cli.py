"""`plughost graph purge` through the real CLI on both backends: hard deletion is admin-only (a
narrowed process is refused, like import and compact), and an account's process purges only its
own account: `--all-accounts` belongs to the install's operator (no ACCOUNT_ID)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plughost import Principal
from plughost.ports.graph import Guards
from tests.backends import BACKENDS, neo4j_env, wipe
from tests.conftest import run_cli

BETA, ACME = "purge-beta", "purge-acme"


def _store(backend: str, home: Path, account: str):
    if backend == "neo4j":
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        return Neo4jStore.from_env({**neo4j_env(), "ACCOUNT_ID": account})
    from plughost.plugins.graph.sqlite_store import SqliteStore

    return SqliteStore(home / "graph.sqlite", env={"ACCOUNT_ID": account})


def _env(backend: str, **extra: str) -> dict[str, str]:
    store = {**neo4j_env(), "PLUGHOST_STORE": "neo4j"} if backend == "neo4j" else {"PLUGHOST_STORE": "sqlite"}
    return {**store, **extra}


def _deleted(store, account: str) -> set[str]:
    return {n for n in ("gone1", "gone2") if store.get(n, guards=Guards(account), include_deleted=True) is not None}


@pytest.mark.parametrize("backend", BACKENDS)
def test_purge_is_admin_only_and_never_reaches_another_account(backend: str, plughost_home: Path) -> None:
    store = _store(backend, plughost_home, BETA)
    wipe(store, BETA, ACME)
    try:
        for account in (BETA, ACME):
            writer = _store(backend, plughost_home, account)
            for node in ("gone1", "gone2"):
                writer.upsert_node(["Note"], {"title": node},
                                   guards=Principal.system(account).guards, node_id=node)
                writer.soft_delete(node, guards=Guards(account))
            writer.close()
        for narrowed, flags in (({"ALLOWED_SCOPES": "public", "AGENT_SLUG": "bot"}, ["--all-accounts"]),
                                ({"AGENT_SLUG": "bot"}, []), ({"ALLOWED_SCOPES": ""}, ["--all-accounts"])):
            res = run_cli("graph", "purge", "--days", "0", *flags, env=_env(backend, ACCOUNT_ID=ACME, **narrowed))
            assert res.returncode == 2, (narrowed, flags, res.stderr)
            assert "graph purge: admin only; this process is narrowed" in res.stderr, res.stderr
            assert "Traceback" not in res.stderr and "[graph-purge] done" not in res.stderr
        # acme's admin (not narrowed) is trusted with acme only
        res = run_cli("graph", "purge", "--days", "0", "--all-accounts", env=_env(backend, ACCOUNT_ID=ACME))
        assert res.returncode == 2, res.stderr
        assert ("--all-accounts: refused in account 'purge-acme''s process" in res.stderr
                and "ACCOUNT_ID unset" in res.stderr), res.stderr
        assert _deleted(store, BETA) == {"gone1", "gone2"} and _deleted(store, ACME) == {"gone1", "gone2"}
        res = run_cli("graph", "purge", "--days", "0", env=_env(backend, ACCOUNT_ID=ACME))
        assert res.returncode == 0 and "[graph-purge] done purged=2 days=0.0 account=purge-ac" in res.stderr, \
            res.stderr
        assert _deleted(store, ACME) == set() and _deleted(store, BETA) == {"gone1", "gone2"}
        if backend == "sqlite":  # the operator (no account) purges every account; on a shared Neo4j
            res = run_cli("graph", "purge", "--days", "0", "--all-accounts", env=_env(backend, ACCOUNT_ID=""))
            assert res.returncode == 0 and "[graph-purge] done purged=2 days=0.0 account=all" in res.stderr, \
                res.stderr  # database that would reach other tests' accounts, so the embedded store only
            assert _deleted(store, BETA) == set()
    finally:
        wipe(store, BETA, ACME)
        store.close()
