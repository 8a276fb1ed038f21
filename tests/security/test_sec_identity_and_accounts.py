"""Identity and account files at the trust boundary (issue items 9 and 17).

``admins[]`` entries may be userId strings or ``{"userId": ...}`` objects (the account schema's
``oneOf``); both must make a bound phone that user, never the owner. Unreadable account or users
files fail the account gate (``boot --check`` exits non-zero), naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.plugins.channels.identity import Identity, resolve

ACCOUNT = "acct-sec"


def write(home: Path, admins: list, users_text: str | None = None, account_text: str | None = None) -> Path:
    folder = home / "accounts" / ACCOUNT
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "account.json").write_text(account_text if account_text is not None else json.dumps(
        {"accountId": ACCOUNT, "enabledPlugins": [], "adminPhones": ["+44 7700 900001", "+44 7700 900002"],
         "admins": admins}))
    (folder / "users.json").write_text(users_text if users_text is not None else json.dumps(
        [{"userId": "owner", "phone": "+44 7700 900001"}, {"userId": "bob", "phone": "+44 7700 900002"}]))
    return folder


@pytest.mark.parametrize("admins", [["owner", "bob"], ["owner", {"userId": "bob"}],
                                    [{"userId": "owner"}, {"userId": "bob", "name": "Bob"}]])
def test_object_form_admins_resolve_to_their_user(plughost_home: Path, admins: list) -> None:
    write(plughost_home, admins)
    assert resolve(plughost_home, ACCOUNT, channel="whatsapp", sender="447700900002") == \
        Identity("admin", "bob", "447700900002")


@pytest.mark.parametrize(("account_text", "users_text", "names"), [
    ("{not json", None, "account.json"),
    (None, "[{\"userId\": ", "users.json"),
    (None, json.dumps([{"phone": 5}]), "users.json"),
])
def test_unreadable_account_files_fail_the_account_gate(plughost_home: Path, cli, account_text, users_text,
                                                        names: str) -> None:
    write(plughost_home, ["owner"], users_text=users_text, account_text=account_text)
    done = cli("boot", "--check", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(plughost_home)})
    assert done.returncode != 0, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert names in out and "Traceback" not in out
    if names == "account.json":  # refused before anything runs: one line, exit 2
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    else:  # users.json is the account gate's to read
        assert "account-id-env FATAL" in out


@pytest.mark.parametrize(("account_text", "users_text"), [("{not json", None), (None, "[{\"userId\": "),
                                                          (None, json.dumps([{"phone": 5}]))])
def test_account_list_names_unreadable_files(plughost_home: Path, cli, account_text, users_text) -> None:
    write(plughost_home, ["owner"], users_text=users_text, account_text=account_text)
    done = cli("account", "list", "--json", env={"PLUGHOST_HOME": str(plughost_home)})
    rows = json.loads(done.stdout)["accounts"]
    assert [(r["accountId"], r["status"]) for r in rows] == [(ACCOUNT, "invalid")], rows
