"""`plughost account create ID` / `account list`: accounts under `<PLUGHOST_HOME>/accounts/` (docs/configuration.md#accounts, docs/channels.md#identity)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from plughost.ports.principal import set_account
from plughost.runtime import accounts, hooktable
from plughost.util import config
from plughost.util.config import csv_list
from plughost.util.errors import UserError
from plughost.util.log import log


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = sub.add_parser("create", help="write a consistent account.json + users.json for a new account")
    create.add_argument("id", metavar="ID")
    create.add_argument("--admin-phone", action="append", default=[], metavar="PHONE",
                        help="an admin phone (repeatable); the first is the owner's, each is bound in users.json")
    create.add_argument("--owner", default="owner", metavar="USERID", help="the owner's userId (default: owner)")
    create.add_argument("--owner-name", default=None, help="the owner's display name")
    create.add_argument("--enable", default=None, metavar="A,B",
                        help="enabledPlugins (default: what `plughost install` already reconciled for this "
                             "account, else every loaded feature/premium plugin; platform plugins are always on)")
    create.add_argument("--default-agent", default="admin")
    create.add_argument("--brand", default=None, help="brand name recorded in account.json")
    create.add_argument("--force", action="store_true", help="rewrite an existing account")
    create.add_argument("--json", action="store_true", help="print the written account.json")
    create.set_defaults(_action=run_create)
    ls = sub.add_parser("list", help="list the accounts on disk")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(_action=run_list)


def _default_enabled(ctx: Any) -> list[str]:
    """Every loaded plugin that is opt-in (feature or premium); platform plugins are always on."""
    host = ctx.host()
    return sorted(r.name for r in host.loaded()
                  if r.manifest is not None and r.manifest.surface != "platform" and r.source != "registered"
                  and not r.origin.startswith("module:host."))


def run_create(args: argparse.Namespace, ctx: Any) -> int:
    accounts.check_id(args.id)
    set_account(ctx.env, args.id)  # the host this command builds acts as the new account (its store writes)
    home = config.home(ctx.env)
    stub = (accounts.account_dir(args.id, home) / "account.json").exists()
    if args.enable is not None:
        enabled: list[str] | None = csv_list(args.enable) or []
    else:
        enabled = None if stub else _default_enabled(ctx)
    folder = accounts.create_account(
        args.id, home, force=args.force, enabled_plugins=enabled,
        admin_phones=args.admin_phone, owner_id=args.owner, owner_name=args.owner_name,
        default_agent=args.default_agent, brand=args.brand)
    written = accounts.read_account_json(folder / "account.json")
    failed = bootstrap(ctx, args.id, json.loads((folder / "users.json").read_text(encoding="utf-8")))
    if args.json:
        print(json.dumps(written, indent=2))
    else:
        print(f"{'completed' if stub else 'created'} account {args.id} at {folder} "
              f"(enabledPlugins: {', '.join(written['enabledPlugins']) or 'none'})")
    return 1 if failed else 0


def bootstrap(ctx: Any, account_id: str, users: list[dict[str, Any]]) -> list[str]:
    """Let the plugins seed the new account (the graph plugin writes its owner and admins); one line
    per plugin that failed, returned so the command exits 1 with the files already in place."""
    errors = ctx.host().call_each(hooktable.ACCOUNT_CREATED, account_id=account_id, users=users)
    lines = []
    for error in errors:
        lines.append(log("account", "op=bootstrap-failed", account=account_id, plugin=error.plugin, error=error.reason))
    return lines


def run_list(args: argparse.Namespace, ctx: Any) -> int:
    home = config.home(ctx.env)
    rows = []
    for account_id in accounts.list_accounts(home):
        try:
            data = accounts.load_account(account_id, home)
            accounts.load_users(account_id, home)  # an unreadable users.json makes the account invalid too
            admins = data.get("admins")
            row: dict[str, Any] = {"accountId": account_id, "enabledPlugins": list(data.get("enabledPlugins") or []),
                                   "admins": len(admins) if isinstance(admins, list) else 0, "status": "ok"}
            if not (accounts.account_dir(account_id, home) / "users.json").is_file() or not admins:
                row.update(status="incomplete",
                           reason=f"no admins or users.json: complete it with plughost account create {account_id}")
            rows.append(row)
        except UserError as exc:
            rows.append({"accountId": account_id, "status": "invalid", "reason": str(exc)})
    if args.json:
        print(json.dumps({"accounts": rows}, indent=2))
    else:
        for row in rows:
            detail = row["reason"] if "reason" in row else ",".join(row.get("enabledPlugins", []))
            print(f"{row['accountId']:<24} {row['status']:<8} {detail}")
    return 0


def run(args: argparse.Namespace, ctx: Any) -> int:
    return args._action(args, ctx)
