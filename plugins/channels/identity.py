"""Sender identity and role (docs/channels.md#identity).

Per account: ``accounts/<id>/account.json`` (``adminPhones``, ``admins[]``) and ``users.json``
(``[{userId, phone, ...}]``; looked up beside account.json, then at the data root). A sender
whose phone is in ``adminPhones`` is an admin; its userId is the users.json entry with that
phone when that userId is in ``admins[]``, else the owner (``users.json[0]``), logged as
``userId=owner-fallback``. Channels whose sender ids are opaque (a Telegram user id) resolve
through the persisted alias cache once the phone has been seen. The channel binding is the
credential: there is no PIN.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from plughost import UserError, log
from plughost.api.accounts import admin_ids, read_account_json
from plughost.plugins.channels.wire import JSON, JSONObject

_alias_lock = threading.Lock()


@dataclass(frozen=True)
class Identity:
    role: str  # admin | public
    user_id: str | None
    phone: str | None
    fallback: bool = False


def normalize_phone(value: JSON) -> str | None:
    """Digits only (``+44 7700-900 123`` → ``447700900123``); None when it holds no digits."""
    if value is None:
        return None
    digits = re.sub(r"\D", "", str(value))
    return digits or None


def account_dir(home: Path, account_id: str) -> Path:
    return home / "accounts" / account_id


def _read_json(path: Path, what: str) -> JSON:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"{path}: invalid {what}: {str(exc).splitlines()[0]}") from None


def load_account(home: Path, account_id: str) -> JSONObject:
    """The account's settings through the host's one account.json reader (a missing file: none)."""
    return read_account_json(account_dir(home, account_id) / "account.json", missing_ok=True)


def load_users(home: Path, account_id: str) -> list[JSONObject]:
    for path in (account_dir(home, account_id) / "users.json", home / "users.json"):
        data = _read_json(path, "users.json")
        if data is None:
            continue
        if isinstance(data, dict) and isinstance(data.get("users"), list):
            data = data["users"]
        if not isinstance(data, list) or not all(isinstance(u, dict) for u in data):
            raise UserError(f"{path}: expected a list of {{userId, phone}} objects")
        return data
    return []


class AliasCache:
    """Opaque platform sender ids → phone, persisted at ``accounts/<id>/channels/aliases.json``."""

    def __init__(self, home: Path, account_id: str) -> None:
        self.path = account_dir(home, account_id) / "channels" / "aliases.json"
        self._data: dict[str, str] | None = None

    def _load(self) -> dict[str, str]:
        if self._data is None:
            try:
                raw = json.loads(self.path.read_text(encoding="utf-8"))
                self._data = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
            except (OSError, ValueError):
                self._data = {}
        return self._data

    def get(self, channel: str, sender: str) -> str | None:
        return self._load().get(f"{channel}:{sender}")

    def remember(self, channel: str, sender: str, phone: str) -> bool:
        """Record an alias (atomic write); True when it was new or changed."""
        phone_n = normalize_phone(phone)
        if not phone_n:
            return False
        key = f"{channel}:{sender}"
        with _alias_lock:
            data = self._load()
            if data.get(key) == phone_n:
                return False
            data[key] = phone_n
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".aliases.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, sort_keys=True, indent=2)
            os.replace(tmp, self.path)
        # the sender id of a phone channel is the number: the line carries a hash of it, never the id
        log("channels", "op=alias-learned", channel=channel,
            sender=hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8])
        return True


def resolve(home: Path, account_id: str, *, channel: str, sender: str, phone: str | None = None,
            aliases: AliasCache | None = None) -> Identity:
    """Role and userId for one sender. ``phone`` is the platform's phone when it gives one."""
    aliases = aliases or AliasCache(home, account_id)
    phone_n = normalize_phone(phone) or aliases.get(channel, sender)
    if phone_n is None and channel == "whatsapp":
        phone_n = normalize_phone(sender)
    if not phone_n:
        return Identity("public", None, None)
    account = load_account(home, account_id)
    admin_phones = {normalize_phone(p) for p in account.get("adminPhones") or []}
    if phone_n not in admin_phones:
        return Identity("public", None, phone_n)
    users = load_users(home, account_id)
    admins = admin_ids(account)  # userId strings or {"userId": ...} objects, as the schema allows
    bound = next((u for u in users if normalize_phone(u.get("phone")) == phone_n), None)
    if bound is not None and str(bound.get("userId")) in admins:
        return Identity("admin", str(bound["userId"]), phone_n)
    owner = str(users[0].get("userId")) if users and users[0].get("userId") else None
    reason = "no-users-binding" if bound is None else "userid-not-admin"
    log("admin-identity", "op=admin-identity", channel=channel, phone=f"…{phone_n[-4:]}",
        resolved=owner or "-", reason=reason, userId="owner-fallback")
    return Identity("admin", owner, phone_n, fallback=True)
