"""The standing audit's record: ``<home>/accounts/<id>/audit-last.json``, the last run's time,
counts, duration and warnings (written by :mod:`plughost.plugins.memory.upkeep.standing`, printed by
``plughost memory audit``)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from plughost.api.accounts import account_dir

RECORD = "audit-last.json"


def record_path(home: Path, account_id: str) -> Path:
    return account_dir(account_id, home) / RECORD


def last_run(home: Path, account_id: str) -> dict[str, Any] | None:
    """The last standing run's record, or None (never ran, or the file is unreadable)."""
    try:
        data = json.loads(record_path(home, account_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("at"), str) else None


def parse(at: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(at).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def describe(record: dict[str, Any] | None, now: float | None = None) -> str:
    """One line for ``plughost memory audit``: when, how long ago, the counts, the duration."""
    if record is None:
        return "never (plughost serve runs it every PLUGHOST_AUDIT_PERIOD seconds)"
    started = parse(record.get("at"))
    ago = "" if started is None else f" ({max(0, round((now or time.time()) - started))} s ago)"
    counts = record.get("counts")
    fields = " ".join(f"{k}={v}" for k, v in counts.items()) if isinstance(counts, dict) else ""
    warned = record.get("warnings") or []
    tail = f" warnings={','.join(map(str, warned))}" if warned else ""
    return f"{record['at']}{ago} {fields} ms={record.get('ms')}{tail}".replace("  ", " ")


def iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
