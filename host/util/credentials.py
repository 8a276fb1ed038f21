"""Credentials the host's HTTP app checks (docs/http.md#credentials): admin session tokens and the per-account HTTP token.

Admin session token: ``v1.<base64url(payload)>.<base64url(hmac-sha256(secret, payload))>`` with
payload ``{"v":"adm","a":accountId,"u":userId,"c":createdAtMs,"n":<16-byte hex nonce>}``. The
secret lives at ``<PLUGHOST_HOME>/credentials/admin-session-secret`` (file 0600 in a 0700 folder),
created exclusively on first use so two processes racing to create it agree on one secret.
Both token segments must be the canonical unpadded base64url of their bytes (a token that only
differs in the unused bits of its last character is a different token) and the signature is
compared in constant time. A rejected token yields only a reason code, never a log line: a
tampered token is an attacker's probe, and logging it would amplify noise. The admin plugin
mints them (PIN → token); the host checks them, so the code lives here.

HTTP token: ``<PLUGHOST_HOME>/accounts/<id>/credentials/http-token`` (``<PLUGHOST_HOME>/credentials/
http-token`` for a server without an account), ``pht_`` + 64 hex characters, created 0600 on first
use; what a local MCP client sends as ``Authorization: Bearer <token>``. It is per account, so
one account's token opens no other account's server.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from plughost.util.errors import UserError

TTL_MS = 24 * 60 * 60 * 1000
CLOCK_SKEW_MS = 5 * 60 * 1000
SECRET_FILE = "admin-session-secret"
_B64URL = re.compile(r"^[A-Za-z0-9_-]+$")
_NONCE = re.compile(r"^[0-9a-f]{32}$")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes | None:
    """Strict decode: the alphabet only, and ``text`` must be the canonical encoding of the bytes."""
    if not text or not _B64URL.match(text) or len(text) % 4 == 1:
        return None
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return data if b64url(data) == text else None


# ---------------------------------------------------------------------------------- the secret
def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def secret_path(home: Path) -> Path:
    return home / "credentials" / SECRET_FILE


def load_secret(home: Path) -> bytes:
    """The HMAC secret, created on first use with O_EXCL (0600 file, 0700 folder)."""
    path = secret_path(home)
    _private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return _read_secret(path)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(secrets.token_hex(32) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return _read_secret(path)


def _read_secret(path: Path) -> bytes:
    for _ in range(50):  # another process may have created it and not yet written it
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "r", encoding="ascii") as fh:
            if stat.S_IMODE(os.fstat(fh.fileno()).st_mode) & 0o077:
                os.fchmod(fh.fileno(), 0o600)
            text = fh.read().strip()
        if text:
            if len(text) < 32:
                raise UserError(f"{path}: secret is too short (expected 64 hex characters)")
            return text.encode("ascii")
        time.sleep(0.01)
    raise UserError(f"{path}: secret is empty")


# ---------------------------------------------------------------------------------- tokens
@dataclass(frozen=True)
class Session:
    account_id: str
    user_id: str
    created_ms: int
    nonce: str

    def age_ms(self, now_ms: int | None = None) -> int:
        return (now_ms if now_ms is not None else _now_ms()) - self.created_ms


def _now_ms() -> int:
    return int(time.time() * 1000)


def _sign(secret: bytes, payload: bytes) -> str:
    return b64url(hmac.new(secret, payload, hashlib.sha256).digest())


def mint(secret: bytes, account_id: str, user_id: str, *, now_ms: int | None = None) -> str:
    payload = json.dumps({"v": "adm", "a": account_id, "u": user_id, "c": now_ms if now_ms is not None else _now_ms(),
                          "n": secrets.token_hex(16)}, separators=(",", ":")).encode("utf-8")
    return f"v1.{b64url(payload)}.{_sign(secret, payload)}"


def validate(secret: bytes, token: str | None, *, now_ms: int | None = None) -> tuple[Session | None, str]:
    """``(session, "ok")`` or ``(None, reason)``; reasons: missing, invalid-token, expired. Never logs."""
    if not token:
        return None, "missing"
    if len(token) > 4096:
        return None, "invalid-token"
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != "v1":
        return None, "invalid-token"
    payload = unb64url(parts[1])
    if payload is None or unb64url(parts[2]) is None:
        return None, "invalid-token"
    if not hmac.compare_digest(_sign(secret, payload).encode("ascii"), parts[2].encode("ascii")):
        return None, "invalid-token"
    try:
        data = json.loads(payload)
    except ValueError:
        return None, "invalid-token"
    if not (isinstance(data, dict) and data.get("v") == "adm" and isinstance(data.get("a"), str) and data["a"]
            and isinstance(data.get("u"), str) and data["u"] and type(data.get("c")) is int
            and isinstance(data.get("n"), str) and _NONCE.match(data["n"])):
        return None, "invalid-token"
    session = Session(data["a"], data["u"], data["c"], data["n"])
    age = session.age_ms(now_ms)
    if age > TTL_MS or age < -CLOCK_SKEW_MS:
        return None, "expired"
    return session, "ok"



# ---------------------------------------------------------------------------------- revocation
REVOKED_FILE = "revoked-sessions.json"
_ACCOUNT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")


def revoked_path(home: Path, account_id: str) -> Path:
    """``accounts/<id>/credentials/revoked-sessions.json``: ``{"notBefore": ms, "nonces": {nonce: expiresMs}}``."""
    return home / "accounts" / account_id / "credentials" / REVOKED_FILE


def _revocations(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_revocations(path: Path, data: dict[str, object]) -> None:
    _private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def revoke(home: Path, session: Session, *, now_ms: int | None = None) -> None:
    """Sign one session out for good (its nonce is kept until the token would have expired anyway)."""
    if not _ACCOUNT.match(session.account_id):
        return
    now = now_ms if now_ms is not None else _now_ms()
    path = revoked_path(home, session.account_id)
    data = _revocations(path)
    nonces = data.get("nonces")
    kept = {n: e for n, e in nonces.items() if isinstance(e, int) and e > now} if isinstance(nonces, dict) else {}
    kept[session.nonce] = session.created_ms + TTL_MS + CLOCK_SKEW_MS
    _write_revocations(path, {**data, "nonces": kept})


def revoke_all(home: Path, account_id: str, *, now_ms: int | None = None) -> None:
    """Every session of the account minted until now stops working (a new PIN, a lost device)."""
    path = revoked_path(home, account_id)
    _write_revocations(path, {"notBefore": now_ms if now_ms is not None else _now_ms(), "nonces": {}})


def is_revoked(home: Path, session: Session) -> bool:
    if not _ACCOUNT.match(session.account_id):
        return True
    data = _revocations(revoked_path(home, session.account_id))
    not_before = data.get("notBefore")
    nonces = data.get("nonces")
    return (isinstance(not_before, int) and session.created_ms < not_before) or \
        (isinstance(nonces, dict) and session.nonce in nonces)


def check_session(home: Path, token: str | None) -> tuple[Session | None, str]:
    """:func:`validate` under this home's secret, then revocation (reason ``revoked``): what every
    surface that accepts an admin session calls."""
    session, reason = validate(load_secret(home), token)
    if session is not None and is_revoked(home, session):
        return None, "revoked"
    return session, reason


# ---------------------------------------------------------------------------------- HTTP token
HTTP_TOKEN_FILE = "http-token"
_HTTP_TOKEN = re.compile(r"^pht_[0-9a-f]{64}$")


def http_token_path(home: Path, account_id: str | None) -> Path:
    base = Path(home) / "accounts" / account_id if account_id else Path(home)
    return base / "credentials" / HTTP_TOKEN_FILE


def http_token(home: Path, account_id: str | None) -> str:
    """The account's HTTP token, created exclusively (0600 in a 0700 folder) on first use."""
    path = http_token_path(home, account_id)
    _private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(f"pht_{secrets.token_hex(32)}\n")
            fh.flush()
            os.fsync(fh.fileno())
    for _ in range(50):
        text = path.read_text(encoding="ascii", errors="replace").strip()
        if _HTTP_TOKEN.match(text):
            return text
        time.sleep(0.01)
    raise UserError(f"{path}: expected pht_ and 64 hex characters")


# ---------------------------------------------------------------------------------- conversation ids
CONVERSATION_SECRET_FILE = "conversation-id-secret"
_CONVERSATION_SECRETS: dict[Path, bytes] = {}


def conversation_secret_path(home: Path, account_id: str) -> Path:
    return Path(home) / "accounts" / account_id / "credentials" / CONVERSATION_SECRET_FILE


def conversation_secret(home: Path, account_id: str) -> bytes:
    """The account's conversation-id key (docs/channels.md#conversation-ids): 64 hex characters,
    created exclusively (0600 in a 0700 folder) on first use, so racing processes agree on one key.
    Remembered per process: a conversation's id never changes while the file stays."""
    if not _ACCOUNT.match(account_id):
        raise UserError(f"account: '{account_id[:64]}' is not an account id")
    path = conversation_secret_path(home, account_id)
    cached = _CONVERSATION_SECRETS.get(path)
    if cached is not None and path.exists():
        return cached
    _private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(32) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    secret = _read_secret(path)
    _CONVERSATION_SECRETS[path] = secret
    return secret


def token_matches(expected: str, given: str | None) -> bool:
    """Constant-time comparison of a presented token with the expected one."""
    return bool(given) and hmac.compare_digest(expected.encode("ascii"), (given or "").encode("utf-8", "replace"))
