"""``plughost serve`` keeps a registered collection fresh: a new, an edited and a deleted note
reach the store without anyone running ``collection sync`` (a real serve, real files)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from collections_support import ACCOUNT, write_notes
from serve_helpers import stop_process

from tests.conftest import REPO, run_cli

ENV = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}


def _notes(state: Path) -> dict[str, str]:
    try:
        with closing(sqlite3.connect(state)) as conn:  # closed now: an open reader keeps the -wal file
            return dict(conn.execute("SELECT relpath, hash FROM notes").fetchall())
    except sqlite3.Error:
        return {}


def _wait(predicate, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_serve_watches_registered_collections(tmp_path: Path, plughost_home: Path) -> None:
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    notes = tmp_path / "vault"
    write_notes(notes, 2)
    assert run_cli("memory", "collection", "add", "vault", str(notes), env=ENV).returncode == 0
    write_notes(notes, 3)  # one more before serve starts: its startup sync picks it up
    state = plughost_home / "collections" / ACCOUNT / "vault.state.sqlite"
    log = plughost_home / "serve.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "serve", "--port", "0"],
                                env={**os.environ, **ENV}, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)
    try:
        assert _wait(lambda: "[collections] op=watching" in log.read_text(errors="replace")), log.read_text(errors="replace")
        assert len(_notes(state)) == 3  # the startup sync
        (notes / "fresh.md").write_text("# Fresh\n\nA note written while serving.\n")
        assert _wait(lambda: "fresh.md" in _notes(state))
        before = _notes(state)["d1/note-1.md"]
        (notes / "d1" / "note-1.md").write_text("# Note 1\n\nEdited while serving.\n")
        assert _wait(lambda: _notes(state).get("d1/note-1.md") not in (None, before))
        (notes / "d2" / "note-2.md").unlink()
        assert _wait(lambda: "d2/note-2.md" not in _notes(state))
        # the sync commits its state before it logs its line
        assert _wait(lambda: "deleted=1" in log.read_text(errors="replace")), log.read_text(errors="replace")
        text = log.read_text(errors="replace")
        assert "[collections] op=sync collection=vault" in text and "new=1" in text
    finally:
        stop_process(proc, 30)


def _serve(home: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "plughost.cli", "serve", "--port", "0"],
                                env={**os.environ, **ENV}, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)


def test_the_watcher_keeps_its_promises(tmp_path: Path, plughost_home: Path) -> None:
    """``--no-sync`` stays unsynced until ``collection sync NAME``; only matching notes wake the
    watcher; refused folders (PLUGHOST_HOME, /) registered by an older version are never walked."""
    import json

    from plughost.plugins.memory.collections import registry
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    write_notes(tmp_path / "a", 2)
    write_notes(tmp_path / "b", 2)
    assert run_cli("memory", "collection", "add", "a", str(tmp_path / "a"), env=ENV).returncode == 0
    assert run_cli("memory", "collection", "add", "b", str(tmp_path / "b"), "--no-sync", env=ENV).returncode == 0
    reg = registry.registry_path(plughost_home, ACCOUNT)
    data = json.loads(reg.read_text())
    data["home"] = {"path": str(plughost_home), "addedAt": 0}  # what the checks now refuse
    data["root"] = {"path": "/", "addedAt": 0}
    reg.write_text(json.dumps(data))
    a_state, b_state = (registry.state_path(plughost_home, ACCOUNT, n) for n in ("a", "b"))
    log = plughost_home / "serve.log"
    proc = _serve(plughost_home, log)
    try:
        assert _wait(lambda: "[collections] op=watching" in log.read_text(errors="replace")), log.read_text(errors="replace")
        text = log.read_text(errors="replace")
        assert "collections=[a]" in text  # b is registered only; home and root are refused
        assert f"[collections] op=refuse collection=home detail=\"PATH: '{plughost_home}' is PLUGHOST_HOME" in text
        assert "[collections] op=refuse collection=root detail=\"PATH: '/' is the filesystem root" in text
        assert _notes(b_state) == {} and "op=sync collection=b" not in text
        (tmp_path / "a" / "readme.txt").write_text("not a note")
        (tmp_path / "a" / ".draft.md").write_text("# hidden")
        (tmp_path / "a" / "node_modules").mkdir()
        (tmp_path / "a" / "node_modules" / "junk.md").write_text("# junk")
        time.sleep(2)  # well past the debounce: nothing of that may wake it
        text = log.read_text(errors="replace")
        assert "op=watch changes=" not in text and "op=sync collection=a" not in text.split("op=watching")[1]
        (tmp_path / "a" / "fresh.md").write_text("# Fresh\n")
        assert _wait(lambda: "fresh.md" in _notes(a_state))
        assert _wait(lambda: "[collections] op=watch changes=1 collections=a" in log.read_text(errors="replace"))
        text = log.read_text(errors="replace")
        assert "changes detected" not in text  # watchfiles' own lines are quiet: ours follow [tag] key=value
        synced = run_cli("memory", "collection", "sync", "b", env=ENV)
        assert synced.returncode == 0 and "new=2" in synced.stdout
        assert not registry.load(plughost_home, ACCOUNT)["b"].registered_only
        assert _wait(lambda: "collections=[a,b]" in log.read_text(errors="replace"))
        (tmp_path / "b" / "later.md").write_text("# Later\n")
        assert _wait(lambda: "later.md" in _notes(b_state))
        time.sleep(1.5)  # the sync's own writes under PLUGHOST_HOME wake nothing: no loop
        syncs = log.read_text(errors="replace").count("op=sync collection=")
        time.sleep(2)
        assert log.read_text(errors="replace").count("op=sync collection=") == syncs
    finally:
        stop_process(proc, 30)


def _live_documents(home: Path, collection: str) -> int:
    from collections_support import documents, host_for

    host = host_for(home)
    try:
        return len(documents(host, collection))
    finally:
        host.close()


BULK = 4000


def _arrive(folder: Path, staging: Path) -> None:
    """``BULK`` notes arrive in ``folder`` at once (a folder moved in: one change, one long sync)."""
    write_notes(staging, BULK, prefix="bulk")
    staging.rename(folder / "bulk")


def test_remove_and_shutdown_stop_a_running_sync(tmp_path: Path, plughost_home: Path) -> None:
    from plughost.plugins.memory.collections import registry
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    for name in ("a", "b"):
        write_notes(tmp_path / name, 1)
        assert run_cli("memory", "collection", "add", name, str(tmp_path / name), env=ENV).returncode == 0
    log = plughost_home / "serve.log"
    proc = _serve(plughost_home, log)
    try:
        assert _wait(lambda: "[collections] op=watching" in log.read_text(errors="replace")), log.read_text(errors="replace")
        a_state = registry.state_path(plughost_home, ACCOUNT, "a")
        _arrive(tmp_path / "a", tmp_path / "staging-a")
        assert _wait(lambda: 64 < len(_notes(a_state)) < BULK, 120), "serve did not start syncing a"
        removed = run_cli("memory", "collection", "remove", "a", env=ENV)
        assert removed.returncode == 0, removed.stderr
        assert _wait(lambda: "[collections] op=sync-cancelled collection=a reason=removed" in log.read_text(errors="replace"))
        assert not a_state.exists() and _live_documents(plughost_home, "a") == 0  # nothing orphaned

        b_state = registry.state_path(plughost_home, ACCOUNT, "b")
        _arrive(tmp_path / "b", tmp_path / "staging-b")
        assert _wait(lambda: 64 < len(_notes(b_state)) < BULK, 120), "serve did not start syncing b"
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)  # a hang guard: the sync stops at its next note
        stopped_s = time.monotonic() - started
    finally:
        stop_process(proc, 30)
    text = log.read_text(errors="replace")
    assert "[collections] op=sync-cancelled collection=b reason=shutdown" in text, (stopped_s, text[-2000:])
    left = sorted(p.name for p in b_state.parent.iterdir())
    assert not [n for n in left if n.endswith(("-wal", "-shm"))], (left, text[-1500:])  # closed cleanly
    stats = run_cli("memory", "collection", "sync", "b", env=ENV)
    assert stats.returncode == 0 and "new=" in stats.stdout
    assert len(_notes(b_state)) == BULK + 1 and _live_documents(plughost_home, "b") == BULK + 1


def test_an_edit_seen_through_another_collections_folder_symlink_syncs_its_own(tmp_path: Path,
                                                                              plughost_home: Path) -> None:
    """``odd`` holds a folder symlink to ``notes``: an edit in ``notes`` re-syncs ``notes`` (by the
    file's real path), and serve's startup syncs each collection once."""
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    notes, odd = tmp_path / "notes", tmp_path / "odd"
    write_notes(notes, 1)
    write_notes(odd, 1)
    (odd / "dirlink").symlink_to(notes)
    for name, folder in (("notes", notes), ("odd", odd)):
        assert run_cli("memory", "collection", "add", name, str(folder), env=ENV).returncode == 0
    state = plughost_home / "collections" / ACCOUNT / "notes.state.sqlite"
    log = plughost_home / "serve.log"
    proc = _serve(plughost_home, log)
    try:
        assert _wait(lambda: "[collections] op=watching" in log.read_text(errors="replace")), log.read_text(errors="replace")
        startup = log.read_text(errors="replace")
        assert startup.count("[collections] op=sync collection=notes") == 1, startup
        (notes / "fresh.md").write_text("# Fresh\n\ndingoword arrives while serving.\n")
        assert _wait(lambda: "fresh.md" in _notes(state)), log.read_text(errors="replace")
        assert "collections=notes" in log.read_text(errors="replace")
    finally:
        stop_process(proc, 30)
