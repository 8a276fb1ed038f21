"""`plughost account create ID` / `account list`: accounts under `<PLUGHOST_HOME>/accounts/` (SPEC 1, 10.2)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HELP = "create and list accounts (account.json + users.json under PLUGHOST_HOME/accounts/)"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = sub.add_parser("create", help="write a consistent account.json + users.json for a new account")
    create.add_argument("id", metavar="ID")
    create.add_argument("--admin-phone", action="append", default=[], metavar="PHONE",
                        help="an admin phone (repeatable); the first is the owner's, each is bound in users.json")
    create.add_argument("--owner", default="owner", metavar="USERID", help="the owner's userId (default: owner)")
    create.add_argument("--owner-name", default=None, help="the owner's display name")
    create.add_argument("--enable", default=None, metavar="A,B",
                        help="enabledPlugins (default: the plugins installed in --config-dir, else every loaded "
                             "plugin)")
    create.add_argument("--config-dir", type=Path, default=None,
                        help="Claude Code config dir whose installed plugins become enabledPlugins")
    create.add_argument("--default-agent", default="admin")
    create.add_argument("--brand", default=None, help="brand name recorded in account.json")
    create.add_argument("--force", action="store_true", help="rewrite an existing account")
    create.add_argument("--json", action="store_true", help="print the written account.json")
    create.set_defaults(_action=run_create)
    ls = sub.add_parser("list", help="list the accounts on disk")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(_action=run_list)


def _default_enabled(args: argparse.Namespace, ctx: Any) -> list[str]:
    from host.registration import Registration

    if args.config_dir is not None:
        reg = Registration.load(args.config_dir)
        names = {key.rpartition("@")[0] for key in reg.installed if reg.user_row(key)}
        if names:
            return sorted(names)
    host = ctx.host()
    return sorted(r.name for r in host.loaded()
                  if r.source in ("platform", "premium") or (r.builtin and not r.origin.startswith("module:host.")))


def run_create(args: argparse.Namespace, ctx: Any) -> int:
    from host import accounts, config
    from host.config import csv_list

    accounts.check_id(args.id)
    enabled = csv_list(args.enable) if args.enable is not None else _default_enabled(args, ctx)
    folder = accounts.create_account(
        args.id, config.home(ctx.env), force=args.force, enabled_plugins=enabled or [],
        admin_phones=args.admin_phone, owner_id=args.owner, owner_name=args.owner_name,
        default_agent=args.default_agent, brand=args.brand)
    if args.json:
        print((folder / "account.json").read_text(encoding="utf-8"), end="")
    else:
        print(f"created account {args.id} at {folder} (enabledPlugins: {', '.join(enabled or []) or 'none'})")
    return 0


def run_list(args: argparse.Namespace, ctx: Any) -> int:
    from host import accounts, config
    from host.errors import UserError

    home = config.home(ctx.env)
    rows = []
    for account_id in accounts.list_accounts(home):
        try:
            data = accounts.load_account(account_id, home)
            rows.append({"accountId": account_id, "enabledPlugins": data["enabledPlugins"],
                         "admins": len(data["admins"]), "status": "ok"})
        except UserError as exc:
            rows.append({"accountId": account_id, "status": "invalid", "reason": str(exc)})
    if args.json:
        print(json.dumps({"accounts": rows}, indent=2))
    else:
        for row in rows:
            detail = ",".join(row.get("enabledPlugins", [])) if row["status"] == "ok" else row["reason"]
            print(f"{row['accountId']:<24} {row['status']:<8} {detail}")
    return 0


def run(args: argparse.Namespace, ctx: Any) -> int:
    return args._action(args, ctx)
