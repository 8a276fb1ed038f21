"""Recorded Claude Code PostToolUse inputs, replayed through the real hook command."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "plugins" / "memory" / "data" / "hooks"
ACCOUNT = "acct-audit"
PLANTED = "pl4nted-S3CRET-9f2c"
COLD = {"PLUGHOST_SURFACE_COLD_TIMEOUT_MS": "90000"}
"""A cold hook may start the host itself; give it time on a loaded machine."""


def recorded(name: str, transcript: Path | None = None, **changes: Any) -> bytes:
    data = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    if transcript is not None:
        data["transcript_path"] = str(transcript)
    data.update(changes)
    return json.dumps(data).encode("utf-8")


def tool_calls(home: Path, account: str = ACCOUNT) -> list[Any]:
    from plughost.ports.graph import Guards
    from plughost.runtime.host import Host

    host = Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": account,
                     "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        return host.store().find(guards=Guards(account), labels=["ToolCall"], limit=1000)
    finally:
        host.close()


def files_containing(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` (the SQLite file and its WAL, the logs) whose bytes hold ``needle``."""
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(str(path))
    return hits
