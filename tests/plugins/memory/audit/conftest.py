"""Audit fixtures: an admin session's Claude Code config dir, cwd and recorded transcript."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_support import ACCOUNT, DATA
from surfacing_support import config_dir


@pytest.fixture
def admin(tmp_path: Path, plughost_home: Path) -> dict[str, Path]:
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, plughost_home)
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text((DATA / "transcript.jsonl").read_text())
    return {"cfg": cfg, "cwd": cwd, "home": plughost_home, "transcript": transcript}
