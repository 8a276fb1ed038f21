"""Accounts on disk: `<PLUGHOST_HOME>/accounts/<id>/account.json` + `users.json` (docs/configuration.md#accounts, docs/gates.md, docs/channels.md#identity).

Also the logic of the ``account-id-env`` gate (the graph plugin contributes it) and the account
readers the channels plugin's ``admin-identity-binding`` gate (``plugins/channels/admin_binding.py``)
builds on.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost.ports.principal import ACCOUNT_ID_EXPECTED, ACCOUNT_ID_RULE, resolve
from plughost.runtime.manifest import validate
from plughost.util import config, settings
from plughost.util.errors import UserError
from plughost.util.log import format_line

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.types import Gate, GateContext, GateResult

ACCOUNT_ID = ACCOUNT_ID_RULE
"""What an account id may look like (it names a folder, so no separators): the rule of
:mod:`plughost.ports.principal`, which ``Principal.owner`` applies too."""


# ---------------------------------------------------------------------------- paths and reads
def accounts_dir(home: Path | None = None) -> Path:
    return (home or config.home()) / "accounts"


def account_dir(account_id: str, home: Path | None = None) -> Path:
    return accounts_dir(home) / account_id


def list_accounts(home: Path | None = None) -> list[str]:
    """Ids of the accounts on disk: folders under `accounts/` holding an `account.json`."""
    root = accounts_dir(home)
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    return sorted(e.name for e in entries if e.is_dir() and os.path.isfile(os.path.join(e.path, "account.json")))


def require_existing(account_id: str, env: Mapping[str, str], what: str = "ACCOUNT_ID") -> Path:
    """The account's folder, or a UserError (exit 2) naming where it was looked for and the fix.

    Reads only: a command aimed at an account that is not there creates nothing (no data root,
    no store, no log), so a missing ``PLUGHOST_HOME`` cannot silently start an empty ``~/.plughost``.
    """
    check_id(account_id, what)
    home = config.home(env)
    folder = account_dir(account_id, home)
    if (folder / "account.json").is_file():
        return folder
    where = f"PLUGHOST_HOME={home}" if settings.HOME.is_set(env) else f"PLUGHOST_HOME is not set, so {home}"
    known = list_accounts(home)
    also = f"; accounts there: {', '.join(known[:10])}" if known else ""
    raise UserError(f"{what}: no account '{account_id}' under {home / 'accounts'} ({where}{also}). "
                    f"Fix: set PLUGHOST_HOME to the data root that holds it, or create it: "
                    f"plughost account create {account_id}")


def check_id(account_id: str, what: str = "ID") -> str:
    if not ACCOUNT_ID.match(account_id or ""):
        raise UserError(f"{what}: '{account_id}' is not a valid account id; expected {ACCOUNT_ID_EXPECTED}")
    return account_id


MAX_DEPTH = 32
"""How deeply an account file may nest: far more than its schema needs, far less than a parser's
recursion limit (a file of 100,000 ``[`` is refused by this, not by a ``RecursionError``)."""


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (iteratively: a deep value must not exhaust the stack here)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                todo.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _read_json(path: Path, expected: str = "JSON") -> Any:
    """A JSON file, or one UserError line naming it and what was expected (never a traceback)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: file is missing; expected {expected}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read ({exc}); expected {expected}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); "
                        f"expected {expected}") from None
    except RecursionError:
        data = None
    except ValueError as exc:  # e.g. an integer past Python's 4,300-digit limit
        why = "a number of more than 4300 digits" if "digits" in str(exc) else str(exc).splitlines()[0][:80]
        raise UserError(f"{path}: invalid JSON ({why}); expected {expected}") from None
    else:
        if _depth(data) <= MAX_DEPTH:
            return data
    raise UserError(f"{path}: nested more than {MAX_DEPTH} levels deep; expected {expected}")


ACCOUNT_EXPECTED = "a JSON object of account settings (account.schema.json)"


def read_account_json(path: Path, *, missing_ok: bool = False) -> dict[str, Any]:
    """The one reader of an ``account.json``: every command and plugin reads the file through it.

    The file must be a JSON object, at most :data:`MAX_DEPTH` deep, whose fields have the types
    ``account.schema.json`` gives them; its required fields are :func:`load_account`'s business
    (a stub ``plughost install`` left may lack them). Any defect is one ``UserError`` line naming
    the file, the field and what was expected (exit 2). ``missing_ok``: a missing file is ``{}``.
    """
    if missing_ok and not path.exists():
        return {}
    data = _read_json(path, ACCOUNT_EXPECTED)
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(data), "a number")
        raise UserError(f"{path}: (top level): expected {ACCOUNT_EXPECTED}, got {kind}")
    validate(data, "account", str(path), partial=True)
    return data


def load_account(account_id: str, home: Path | None = None) -> dict[str, Any]:
    """account.json, validated against `account.schema.json`; its accountId must equal the folder."""
    path = account_dir(account_id, home) / "account.json"
    data = read_account_json(path)
    validate(data, "account", str(path))
    if data["accountId"] != account_id:
        raise UserError(f"{path}: accountId: expected '{account_id}' (the folder name), got '{data['accountId']}'")
    return data


def load_users(account_id: str, home: Path | None = None) -> list[dict[str, Any]]:
    """users.json (an array; entry 0 is the owner); a missing file is an empty list."""
    path = account_dir(account_id, home) / "users.json"
    if not path.exists():
        return []
    data = _read_json(path, "a JSON array of users (users.schema.json)")
    validate(data, "users", str(path))
    return data


def admin_ids(account: Mapping[str, Any]) -> set[str]:
    """`admins[]` holds userIds (strings) or objects carrying a `userId`."""
    out = set()
    for entry in account.get("admins") or []:
        if isinstance(entry, str):
            out.add(entry)
        elif isinstance(entry, Mapping) and isinstance(entry.get("userId"), str):
            out.add(entry["userId"])
    return out


def normalize_phone(phone: str) -> str:
    """Compare phones by their digits (a leading '+' and separators do not matter)."""
    return re.sub(r"\D", "", phone or "")


# ---------------------------------------------------------------------------- writes
def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temp file beside `path`, then `os.replace`: never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=False)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def build_account(account_id: str, *, enabled_plugins: Iterable[str] = (), admin_phones: Iterable[str] = (),
                  owner_id: str = "owner", owner_name: str | None = None, default_agent: str = "admin",
                  brand: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A consistent (account.json, users.json) pair: every admin phone bound to an admin userId.

    The first admin phone belongs to the owner; each further phone gets its own admin user.
    """
    phones = list(dict.fromkeys(admin_phones))
    owner: dict[str, Any] = {"userId": owner_id, "name": owner_name or owner_id, "role": "owner"}
    if phones:
        owner["phone"] = phones[0]
    users = [owner]
    for i, phone in enumerate(phones[1:], start=2):
        users.append({"userId": f"{owner_id}-admin-{i}", "name": f"admin {i}", "phone": phone, "role": "admin"})
    account: dict[str, Any] = {
        "accountId": account_id,
        "enabledPlugins": sorted(dict.fromkeys(enabled_plugins)),
        "adminPhones": phones,
        "admins": [u["userId"] for u in users],
        "defaultAgent": default_agent,
        "createdAt": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
    }
    if brand:
        account["brand"] = brand
    return account, users


def create_account(account_id: str, home: Path | None = None, *, force: bool = False,
                   enabled_plugins: Iterable[str] | None = None, **fields: Any) -> Path:
    """Write a validated, consistent account folder.

    An `account.json` without a `users.json` beside it (the stub `plughost install` leaves when
    it reconciles `enabledPlugins` for a new account) is completed: its keys are kept, its
    `enabledPlugins` too unless given. A complete account is only rewritten with ``force``.
    """
    check_id(account_id)
    folder = account_dir(account_id, home)
    existing: dict[str, Any] = {}
    if (folder / "account.json").exists():
        if (folder / "users.json").exists() and not force:
            raise UserError(f"ID: account '{account_id}' already exists at {folder} (use --force to rewrite it)")
        try:
            existing = read_account_json(folder / "account.json")
        except UserError:
            if not force:
                raise
        existing = existing if isinstance(existing, dict) else {}
    if enabled_plugins is None:
        enabled_plugins = existing.get("enabledPlugins") if isinstance(existing.get("enabledPlugins"), list) else []
    account, users = build_account(account_id, enabled_plugins=enabled_plugins or (), **fields)
    keep = {k: v for k, v in existing.items() if k not in account and k != "createdAt"}
    account = {**account, **keep, "createdAt": existing.get("createdAt", account["createdAt"])}
    validate(account, "account", str(folder / "account.json"))
    validate(users, "users", str(folder / "users.json"))
    (folder / "specialists" / "agents").mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / "users.json", users)
    write_json_atomic(folder / "account.json", account)
    return folder


# ---------------------------------------------------------------------------- gate helpers
def selected_accounts(ctx: GateContext) -> list[str]:
    """The accounts a gate inspects: `--account` when boot was given one, else every account on disk."""
    chosen = ctx.extras.get("account")
    if chosen:
        return [chosen]
    return list_accounts(ctx.host.home)


def account_files_problem(account_id: str, home: Path | None = None) -> tuple[str, str] | None:
    """Why the account's files cannot be used — ``(reason, detail naming the file and field)`` — or None.

    account.json and users.json are both validated against their schemas: an account whose
    files do not parse is an account the channels cannot resolve anyone in.
    """
    try:
        load_account(account_id, home)
    except UserError as exc:
        return "invalid-account-json", str(exc)
    try:
        load_users(account_id, home)
    except UserError as exc:
        return "invalid-users-json", str(exc)
    return None


def check_account_id_env(ctx: GateContext) -> GateResult:
    """`account-id-env`: ACCOUNT_ID is set, well formed, and names a readable account on disk."""
    from plughost.runtime.types import GateResult
    home = ctx.host.home
    on_disk = list_accounts(home)
    value = resolve(ctx.env).account or ""

    def fatal(reason: str, **extra: Any) -> GateResult:
        fields = {"reason": reason, **extra}
        line = format_line("graph-health", "account-id-env", "FATAL", **fields)
        return GateResult(status="fail", inspected=len(on_disk), lines=[line], defects=[fields])

    if not value:
        named = ", ".join(on_disk[:5]) + (", ..." if len(on_disk) > 5 else "")
        return fatal("unset", fix=f"set ACCOUNT_ID (or --account) to an account's id: {named}" if on_disk else
                     "create an account (plughost account create ID), then set ACCOUNT_ID to its id")
    short = value[:8]
    if not ACCOUNT_ID.match(value):
        return fatal("malformed", id=short)
    if value not in on_disk:
        return fatal("not-on-disk", id=short, accounts=len(on_disk))
    problem = account_files_problem(value, home)
    if problem:
        return fatal(problem[0], id=short, detail=problem[1])
    return GateResult(status="ok", inspected=len(on_disk), lines=[
        format_line("graph-health", "account-id-env", present=True, id=short, **{"matches-on-disk": True}),
        format_line(None, "startup-self-test", **{"account-id-env": "ok"}, inspected=len(on_disk)),
    ])


def account_id_env_gate() -> Gate:
    """The `account-id-env` gate, for the graph plugin's `plughost_boot_gates` (fatal; runs first)."""
    from plughost.runtime.types import Gate

    return Gate("account-id-env", check=check_account_id_env, fatal=True, order=10)
