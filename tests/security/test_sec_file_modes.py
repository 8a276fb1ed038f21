"""Every account's private memory sits in the store file and the logs: the owner's alone (0600,
folders 0700), never readable by another local user, through the real CLI."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.conftest import run_cli


def test_store_and_logs_are_the_owners_alone(plughost_home: Path, tmp_path: Path) -> None:
    assert run_cli("account", "create", "acct-modes").returncode == 0
    note = tmp_path / "staff.md"
    note.write_text("# Staff\n\nThe staff wifi password is croissant42.\n")
    done = run_cli("memory", "ingest", str(note), env={"ACCOUNT_ID": "acct-modes"})
    assert done.returncode == 0, done.stderr
    files = [p for p in plughost_home.rglob("*") if p.is_file() and (p.name.startswith("graph.sqlite")
                                                                    or p.suffix == ".log")]
    assert any(p.name == "graph.sqlite" for p in files) and any(p.name == "server.log" for p in files), files
    loose = {str(p.relative_to(plughost_home)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files
             if stat.S_IMODE(p.stat().st_mode) & 0o077}
    assert loose == {}, f"readable by others: {loose}"
    logs = plughost_home / "logs"
    assert stat.S_IMODE(logs.stat().st_mode) & 0o077 == 0
