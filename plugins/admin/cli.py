"""`plughost admin set-pin ACCOUNT [--user ID]` and `plughost admin http-token [ACCOUNT]`.

``set-pin`` stores the account's admin PIN (scrypt hash). ``http-token`` prints the account's
HTTP token (created on first use), what a local MCP client sends to ``/mcp/<plugin>`` as
``Authorization: Bearer <token>``. The PIN is read from stdin (first line) so it never appears in a process list or shell
history; on a terminal it is prompted for without echo.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import Any

from plughost import UserError
from plughost.plugins.admin import sessions

HELP = "admin sessions: set an account's admin PIN, print its HTTP token"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    pin = sub.add_parser("set-pin", help="set the admin PIN of an account (PIN read from stdin)")
    pin.add_argument("account", help="account id (a folder under PLUGHOST_HOME/accounts/)")
    pin.add_argument("--user", default=None,
                     help="userId the PIN signs in as (default: the owner, users.json entry 0)")
    token = sub.add_parser("http-token", help="print the account's HTTP token (Authorization: Bearer ...)")
    token.add_argument("account", nargs="?", default=None, help="account id (default: $ACCOUNT_ID)")


def owner_of(home: Any, account: str) -> str:
    path = home / "accounts" / account / "users.json"
    try:
        users = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "owner"
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not readable JSON ({exc})") from None
    if isinstance(users, list) and users and isinstance(users[0], dict) and isinstance(users[0].get("userId"), str):
        return users[0]["userId"]
    return "owner"


def run(args: argparse.Namespace, host: Any) -> int:
    if args.action == "http-token":
        from plughost.api.credentials import http_token

        account = args.account or host.principal.account
        if account is not None:
            sessions.check_account_id(account)
            if not (host.home / "accounts" / account).is_dir():
                raise UserError(f"account '{account}': no folder at {host.home / 'accounts' / account}")
        print(http_token(host.home, account))
        return 0

    sessions.check_account_id(args.account)
    try:
        pin = getpass.getpass("admin PIN: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\r\n")
    except (EOFError, KeyboardInterrupt):
        raise UserError("pin: none given (input ended); nothing was changed") from None
    user = args.user or owner_of(host.home, args.account)
    path = sessions.set_pin(host.home, args.account, pin, user)
    print(f"admin PIN set for account {args.account} (userId {user}) at {path}")
    return 0
