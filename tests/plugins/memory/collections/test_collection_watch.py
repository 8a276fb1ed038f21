"""``plughost serve`` keeps a registered collection fresh: a new, an edited and a deleted note
reach the store without anyone running ``collection sync`` (a real serve, real files)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from collections_support import ACCOUNT, write_notes
from serve_helpers import stop_process

from tests.conftest import REPO, run_cli

ENV = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}


def _notes(state: Path) -> dict[str, str]:
    try:
        with sqlite3.connect(state) as conn:
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
    from host.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    notes = tmp_path / "vault"
    write_notes(notes, 2)
    assert run_cli("memory", "collection", "add", "vault", str(notes), env=ENV).returncode == 0
    write_notes(notes, 3)  # one more before serve starts: its startup sync picks it up
    state = plughost_home / "collections" / ACCOUNT / "vault.state.sqlite"
    log = plughost_home / "serve.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "host.cli", "serve", "--port", "0"],
                                env={**os.environ, **ENV}, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)
    try:
        assert _wait(lambda: "[collections] op=watching" in log.read_text(errors="replace")), log.read_text()
        assert len(_notes(state)) == 3  # the startup sync
        (notes / "fresh.md").write_text("# Fresh\n\nA note written while serving.\n")
        assert _wait(lambda: "fresh.md" in _notes(state))
        before = _notes(state)["d1/note-1.md"]
        (notes / "d1" / "note-1.md").write_text("# Note 1\n\nEdited while serving.\n")
        assert _wait(lambda: _notes(state).get("d1/note-1.md") not in (None, before))
        (notes / "d2" / "note-2.md").unlink()
        assert _wait(lambda: "d2/note-2.md" not in _notes(state))
        text = log.read_text(errors="replace")
        assert "[collections] op=sync collection=vault" in text and "new=1" in text and "deleted=1" in text
    finally:
        stop_process(proc, 30)
