"""`plughost boot [--check] [--json] [--config-dir DIR] [--account ID] [--brand BRAND]` (docs/gates.md, docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from plughost.runtime import boot
from plughost.runtime.settings import check_values


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true", help="run the gates and exit without starting plugins")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON report (gate, status, inspected, defects) on stdout")
    parser.add_argument("--config-dir", type=Path, default=None,
                        help="Claude Code config dir to check registrations in (default: the one plughost "
                             "install recorded; see docs/payload.md#install-record)")
    parser.add_argument("--account", default=None,
                        help="boot as this account: sets ACCOUNT_ID and limits account gates to it "
                             "(default: $ACCOUNT_ID for the env gate, every account for the others)")
    parser.add_argument("--brand", default=None,
                        help="a shipped brand's name (bakery, default, studio) or a brand JSON path (default: $PLUGHOST_BRAND); "
                             "its plugins.excluded feeds the specialist strip-list")


def run(args: argparse.Namespace, ctx: Any) -> int:
    ctx.env = boot.command_env(ctx.env, args.account, args.brand, args.config_dir)
    t0 = time.perf_counter()
    host = ctx.host()
    check_values(host)  # a set value its setting refuses: one line, exit 2, before anything starts
    load_ms = (time.perf_counter() - t0) * 1000
    report = boot.check_install(host, ctx.env, account=args.account, config_dir=args.config_dir, brand=args.brand,
                                start=not args.check)
    report.timings["load"] = load_ms
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    return report.exit_code
