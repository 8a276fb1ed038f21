"""The permission mode and model an owner's agent session was started with, and which of the user's
admin conversations is current: ``<home>/accounts/<id>/admin-sessions.json`` (its shape in
``owner_sessions``). Kept apart, with no plugin imports, so the claude runner and the admin chat
read it without importing the session manager.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from plughost.plugins.channels.wire import JSONObject

FILE = "admin-sessions.json"
lock = threading.RLock()
"""Held over every read-change-write of the file (and by ``admin_chat.conversation``)."""


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _path(home: Path, account: str) -> Path:
    return home / "accounts" / account / FILE


def load(home: Path, account: str) -> JSONObject:
    try:
        data = json.loads(_path(home, account).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    for key in ("users", "bySession"):
        if not isinstance(data.get(key), dict):
            data[key] = {}
    return data


def save(home: Path, account: str, data: JSONObject) -> None:
    path = _path(home, account)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def user_entry(data: JSONObject, user: str) -> JSONObject:
    entry = data["users"].setdefault(user, {})
    if not isinstance(entry.get("sessions"), dict):
        entry["sessions"] = {}
    return entry


def settings_of(home: Path, account: str, session_id: str) -> dict[str, str]:
    """The permission mode and model an agent session was started with (empty: the runner's own)."""
    found = load(home, account)["bySession"].get(session_id)
    return {k: v for k, v in found.items() if k in ("permissionMode", "model") and isinstance(v, str)} \
        if isinstance(found, dict) else {}


def current_of(home: Path, account: str, user: str, count: int) -> tuple[int, bool]:
    """The user's current conversation (a resumed one, else the latest) and whether it has ended."""
    entry = load(home, account)["users"].get(user)
    entry = entry if isinstance(entry, dict) else {}
    current = entry.get("current")
    number = current if isinstance(current, int) and 0 < current <= count else count
    record = (entry.get("sessions") or {}).get(str(number)) if isinstance(entry.get("sessions"), dict) else None
    return number, isinstance(record, dict) and record.get("status") == "ended"


def made_current(home: Path, account: str, user: str, number: int) -> None:
    """A new conversation was started: it is the user's current one (a resumed older one no longer is)."""
    with lock:
        data = load(home, account)
        entry = data["users"].get(user)
        if isinstance(entry, dict) and entry.get("current") not in (None, number):
            entry["current"] = number
            save(home, account, data)
