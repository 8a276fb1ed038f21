"""Identity (docs/channels.md#identity): adminPhones / admins[] / users.json, owner fallback, alias cache."""

from __future__ import annotations

import json

import pytest
from channels_support import ACCOUNT, ADMIN_PHONE, OWNER_PHONE, STRAY_ADMIN_PHONE, write_account

from plughost.plugins.channels.identity import AliasCache, Identity, normalize_phone, resolve
from plughost.util.errors import UserError


def test_bound_admin(plughost_home, account) -> None:
    ident = resolve(plughost_home, ACCOUNT, channel="whatsapp", sender=normalize_phone(ADMIN_PHONE))
    assert ident == Identity("admin", "u-ana", "447700900002")


def test_public_sender(plughost_home, account) -> None:
    assert resolve(plughost_home, ACCOUNT, channel="whatsapp", sender="15550100").role == "public"
    assert resolve(plughost_home, ACCOUNT, channel="telegram", sender="9911").role == "public"


def test_owner_fallback_logged(plughost_home, account, capfd) -> None:
    ident = resolve(plughost_home, ACCOUNT, channel="whatsapp", sender=normalize_phone(STRAY_ADMIN_PHONE))
    assert ident.role == "admin" and ident.user_id == "u-owner" and ident.fallback
    err = capfd.readouterr().err
    assert "[admin-identity] op=admin-identity channel=whatsapp" in err
    assert "reason=no-users-binding userId=owner-fallback" in err


def test_userid_not_admin_falls_back(plughost_home, account, capfd) -> None:
    write_account(plughost_home, admins=["u-owner"])
    ident = resolve(plughost_home, ACCOUNT, channel="whatsapp", sender=normalize_phone(ADMIN_PHONE))
    assert (ident.user_id, ident.fallback) == ("u-owner", True)
    assert "reason=userid-not-admin userId=owner-fallback" in capfd.readouterr().err


def test_alias_cache_persists_and_resolves(plughost_home, account) -> None:
    assert resolve(plughost_home, ACCOUNT, channel="telegram", sender="777").role == "public"
    assert AliasCache(plughost_home, ACCOUNT).remember("telegram", "777", OWNER_PHONE)
    assert not AliasCache(plughost_home, ACCOUNT).remember("telegram", "777", OWNER_PHONE)  # already known
    stored = json.loads((plughost_home / "accounts" / ACCOUNT / "channels" / "aliases.json").read_text())
    assert stored == {"telegram:777": "447700900001"}
    ident = resolve(plughost_home, ACCOUNT, channel="telegram", sender="777")  # a fresh cache reads the file
    assert (ident.role, ident.user_id) == ("admin", "u-owner")


def test_bad_account_json_one_line(plughost_home, account) -> None:
    (plughost_home / "accounts" / ACCOUNT / "account.json").write_text("{nope")
    with pytest.raises(UserError, match=r"account.json: invalid JSON at line 1 column 2 .*; expected a JSON object"):
        resolve(plughost_home, ACCOUNT, channel="whatsapp", sender="447700900002")
    (plughost_home / "accounts" / ACCOUNT / "account.json").write_text('{"adminPhones": "447700900002"}')
    with pytest.raises(UserError, match=r"account.json: adminPhones: expected array"):
        resolve(plughost_home, ACCOUNT, channel="whatsapp", sender="447700900002")
