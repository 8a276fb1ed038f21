"""Shared helpers for the channels tests: an account on disk with admins and users."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ACCOUNT = "acct-0001"
OWNER_PHONE = "+44 7700 900001"
ADMIN_PHONE = "+44 7700 900002"
STRAY_ADMIN_PHONE = "+44 7700 900003"


def write_account(home: Path, account: str = ACCOUNT, *, users: list[dict] | None = None,
                  admin_phones: list[str] | None = None, admins: list[str] | None = None) -> Path:
    folder = home / "accounts" / account
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "account.json").write_text(json.dumps({
        "accountId": account,
        "adminPhones": admin_phones if admin_phones is not None else [OWNER_PHONE, ADMIN_PHONE, STRAY_ADMIN_PHONE],
        "admins": admins if admins is not None else ["u-owner", "u-ana"],
    }))
    (folder / "users.json").write_text(json.dumps(users if users is not None else [
        {"userId": "u-owner", "phone": OWNER_PHONE},
        {"userId": "u-ana", "phone": ADMIN_PHONE},
        {"userId": "u-bob", "phone": "+1 555 0100"},
    ]))
    return folder


@pytest.fixture
def account(plughost_home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    write_account(plughost_home)
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    return ACCOUNT
