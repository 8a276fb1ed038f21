"""Commands aimed at an account refuse one that does not exist under PLUGHOST_HOME: exit 2, one
line with the fix, and nothing created (no data root, no store, no log, no silent ~/.plughost)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cli_support import run_in_process

COMMANDS = [
    ("memory", "search", "opening hours"),
    ("graph", "purge"),
    ("schedule", "list"),
    ("channels", "retry"),
    ("boot",),
]


def plughost(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``plughost *args`` with exactly ``env``, in this process as a fresh one would run it (cli_support)."""
    return run_in_process(args, env, cwd=cwd)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_unknown_account_is_refused_and_nothing_is_created(tmp_path: Path, args: tuple[str, ...]) -> None:
    fake_home = tmp_path / "user"
    fake_home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PLUGHOST_HOME"}
    env.update(HOME=str(fake_home), ACCOUNT_ID="demo")
    done = plughost(*args, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("plughost: ACCOUNT_ID: no account 'demo' under ") and "PLUGHOST_HOME is not set" in line
    assert "Fix: set PLUGHOST_HOME" in line and "plughost account create demo" in line
    assert "Traceback" not in done.stderr
    assert not (fake_home / ".plughost").exists()


def test_named_home_lists_the_accounts_it_has(tmp_path: Path) -> None:
    from plughost.runtime.accounts import create_account

    home = tmp_path / "data"
    create_account("bakery", home)
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    env = dict(os.environ, PLUGHOST_HOME=str(home), ACCOUNT_ID="demo")
    done = plughost("memory", "search", "x", env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert f"PLUGHOST_HOME={home}; accounts there: bakery" in done.stderr
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before  # nothing written
    missing = plughost("serve", "--account", "ghost", "--port", "0", env=dict(env, PLUGHOST_HOME=str(tmp_path / "none")),
                       cwd=tmp_path)
    assert missing.returncode == 2 and "--account: no account 'ghost'" in missing.stderr
    assert not (tmp_path / "none").exists()
    ok = plughost("memory", "search", "x", env=dict(env, ACCOUNT_ID="bakery"), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


def test_boot_check_without_account_id_says_to_set_it(tmp_path: Path) -> None:
    """A newcomer's `boot --check` with no ACCOUNT_ID: the FATAL line says what to do, not only `unset`."""
    from plughost.runtime.accounts import create_account

    home = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k not in ("ACCOUNT_ID", "PLUGHOST_ACCOUNT_ID")}
    empty = run_in_process(["boot", "--check"], dict(env, PLUGHOST_HOME=str(home)))
    assert empty.returncode == 1 and "Traceback" not in empty.stderr
    assert ('[graph-health] account-id-env FATAL reason=unset fix="create an account (plughost account create ID), '
            'then set ACCOUNT_ID to its id"') in empty.stderr.splitlines()
    create_account("bakery", home)
    named = run_in_process(["boot", "--check"], dict(env, PLUGHOST_HOME=str(home)))
    assert ('[graph-health] account-id-env FATAL reason=unset fix="set ACCOUNT_ID (or --account) to an account\'s '
            'id: bakery"') in named.stderr.splitlines()
