"""`plughost install PAYLOAD_DIR --config-dir DIR --account ID [--dry-run]` (docs/payload.md#installer)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from plughost.payload.installer import install
from plughost.runtime.install_record import config_dir_source
from plughost.util.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("payload", type=Path, metavar="PAYLOAD_DIR")
    parser.add_argument("--config-dir", type=Path, default=None, metavar="DIR",
                        help="Claude Code config dir (default: the one the install recorded, else $CLAUDE_CONFIG_DIR, else ~/.claude)")
    parser.add_argument("--account", required=True, metavar="ID", help="the account whose enabledPlugins to reconcile")
    parser.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")


def run(args: argparse.Namespace, ctx: Any) -> int:
    # the one choice every process makes (host/runtime/install_record.py): a re-install without
    # --config-dir stays in the folder the install recorded
    config_dir, source = config_dir_source(ctx.env, args.config_dir)
    what = "--config-dir" if source == "flag" else source
    for folder in (config_dir, *config_dir.parents):  # a file on the way is one line, never a traceback
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{what}: {folder} is not a folder; expected a Claude Code config dir "
                            f"(a folder, created when missing)")
        if folder.exists():
            break
    plan = install(args.payload, config_dir, args.account, dry_run=args.dry_run, env=ctx.env)
    if args.dry_run:
        print(f"plan: install {plan.payload} into {plan.config_dir} for account {plan.account}")
        for action in plan.actions:
            print(f"  {action}")
        for path in plan.changed:
            print(f"  write {path}")
        if not plan.actions and not plan.changed and not plan.copies:
            print("  nothing to do: already installed")
        return 0
    print(f"installed: {len(plan.plugins)} plugin(s) from {len(plan.marketplaces)} marketplace(s) into "
          f"{plan.config_dir}; {len(plan.changed)} file(s) written, {len(plan.copies)} plugin copy(ies), "
          f"{len(plan.links)} agent link(s)")
    return 0
