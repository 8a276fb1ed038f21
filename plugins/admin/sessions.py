"""Admin PINs (docs/http.md#credentials); the session tokens they are exchanged for live in :mod:`plughost.util.credentials`.

PIN: ``accounts/<id>/credentials/admin-pin`` holds a scrypt hash (JSON: scheme, n, r, p, salt,
hash, userId), written 0600 through a temp file and ``os.replace``; set with ``plughost admin
set-pin``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plughost import UserError
from plughost.api.accounts import ACCOUNT_ID
from plughost.api.credentials import (  # noqa: F401
    CLOCK_SKEW_MS,
    SECRET_FILE,
    TTL_MS,
    Session,
    b64url,
    check_session,
    load_secret,
    mint,
    revoke,
    revoke_all,
    secret_path,
    unb64url,
    validate,
)
from plughost.api.credentials import private_dir as _private_dir

PIN_FILE = "admin-pin"
SCRYPT = {"n": 2**14, "r": 8, "p": 1}


# ---------------------------------------------------------------------------------- PINs
def check_account_id(account_id: str) -> str:
    if not isinstance(account_id, str) or not ACCOUNT_ID.match(account_id):
        raise UserError(f"accountId: expected letters, digits, '.', '_' or '-' (got {account_id!r:.40})")
    return account_id


def pin_path(home: Path, account_id: str) -> Path:
    return home / "accounts" / check_account_id(account_id) / "credentials" / PIN_FILE


MIN_PIN = 6
"""The shortest PIN ``set-pin`` takes (docs/console.md#sign-in): a million guesses at least, which the
lockout (five a window) makes out of reach. Sign-in still checks PINs set before this minimum."""
MAX_PIN = 64
"""The longest PIN, set or offered."""
SIGN_IN_MIN_PIN = 4
"""The shortest PIN sign-in checks: :data:`MIN_PIN` once was this, and a PIN set then still signs in."""


def pin_rule(shortest: int = MIN_PIN) -> str:
    """The rule of a PIN in words, for messages and the console's sign-in form."""
    return f"{shortest} to {MAX_PIN} characters without spaces"


def check_pin(pin: Any) -> str:
    """A PIN offered at sign-in: :data:`SIGN_IN_MIN_PIN` to :data:`MAX_PIN` characters without spaces."""
    if not isinstance(pin, str) or not (SIGN_IN_MIN_PIN <= len(pin) <= MAX_PIN) or any(ch.isspace() for ch in pin):
        raise UserError(f"pin: expected {pin_rule(SIGN_IN_MIN_PIN)}")
    return pin


def check_new_pin(pin: Any) -> str:
    """A PIN being set: :data:`MIN_PIN` to :data:`MAX_PIN` characters, no spaces."""
    if not isinstance(pin, str) or not (MIN_PIN <= len(pin) <= MAX_PIN) or any(ch.isspace() for ch in pin):
        raise UserError(f"pin: expected {pin_rule()}")
    return pin


def _hash(pin: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(pin.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=64 * 1024 * 1024)


def set_pin(home: Path, account_id: str, pin: str, user_id: str) -> Path:
    """Store the account's admin PIN hash (scrypt), atomically, 0600 in a 0700 folder."""
    check_new_pin(pin)
    if not user_id or not isinstance(user_id, str):
        raise UserError("userId: expected a non-empty user id")
    path = pin_path(home, account_id)
    if not path.parent.parent.is_dir():
        raise UserError(f"account '{account_id}': no folder at {path.parent.parent}")
    _private_dir(path.parent)
    salt = secrets.token_bytes(16)
    record = {"scheme": "scrypt", **SCRYPT, "salt": salt.hex(),
              "hash": _hash(pin, salt, **SCRYPT).hex(), "userId": user_id}
    tmp = path.with_name(f".{PIN_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    os.replace(tmp, path)
    revoke_all(home, account_id)  # a new PIN signs every earlier session out
    return path


def read_pin_record(home: Path, account_id: str) -> Mapping[str, Any] | None:
    try:
        path = pin_path(home, account_id)
    except UserError:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("scheme") == "scrypt" else None


def verify_pin(home: Path, account_id: str, pin: str) -> str | None:
    """The PIN's userId when ``pin`` matches the account's stored hash, else None.

    An account without a PIN record costs no scrypt (the route waits out a typical scrypt time
    instead, so the answer does not come back faster): hashing for made-up accounts was the
    cheapest way to burn the server's memory and CPU.
    """
    record = read_pin_record(home, account_id)
    if record is None:
        return None
    try:
        digest = _hash(pin, bytes.fromhex(record["salt"]), int(record["n"]), int(record["r"]), int(record["p"]))
        expected = bytes.fromhex(record["hash"])
    except (KeyError, ValueError, TypeError):
        return None
    return str(record.get("userId") or "owner") if hmac.compare_digest(digest, expected) else None


def has_pin(home: Path, account_id: str) -> bool:
    return read_pin_record(home, account_id) is not None
