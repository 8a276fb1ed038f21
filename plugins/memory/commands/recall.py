"""`plughost memory recall [pin|snooze|clear ID...]`: what surfacing showed and what the replies used."""

from __future__ import annotations

import argparse
from typing import Any

from plugins.memory.commands.common import account, print_json

HELP = "recall tracking: snooze candidates (surfaced, never used), pin candidates (used often); pin/snooze/clear"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=("list", "pin", "snooze", "clear"), default="list")
    parser.add_argument("ids", nargs="*", metavar="ID", help="node ids to pin, snooze or clear")
    parser.add_argument("--min-surfaced", type=int, default=3, help="snooze candidates: surfaced at least (3)")
    parser.add_argument("--min-used", type=int, default=2, help="pin candidates: used at least (2)")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace, host: Any) -> int:
    from host.errors import UserError
    from plugins.memory import recall

    acct = account(host)
    if args.action != "list":
        if not args.ids:
            raise UserError(f"recall {args.action}: expected one or more node ids")
        decision = {"pin": "pinned", "snooze": "snoozed", "clear": None}[args.action]
        now = recall.decide(host.home, acct, args.ids, decision)
        print(f"recall: {args.action} {' '.join(args.ids)} ({sum(v == 'pinned' for v in now.values())} pinned, "
              f"{sum(v == 'snoozed' for v in now.values())} snoozed)")
        return 0
    for name in ("min_surfaced", "min_used", "limit"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name.replace('_', '-')}: expected a positive integer")
    found = recall.candidates(host.home, acct, min_surfaced=args.min_surfaced, min_used=args.min_used,
                              limit=args.limit)
    if args.json:
        print_json(found)
        return 0
    print(f"snooze candidates (surfaced >= {args.min_surfaced}, never used):")
    for h in found["snooze"] or [{"id": "-", "title": "none", "surfaced": 0, "used": 0}]:
        print(f"  {h['id']}\tsurfaced={h['surfaced']}\tused={h['used']}\t{h['title']}")
    print(f"pin candidates (used >= {args.min_used}):")
    for h in found["pin"] or [{"id": "-", "title": "none", "surfaced": 0, "used": 0}]:
        print(f"  {h['id']}\tsurfaced={h['surfaced']}\tused={h['used']}\t{h['title']}")
    print(f"pinned: {', '.join(found['pinned']) or '-'}; snoozed: {', '.join(found['snoozed']) or '-'} "
          "(ranking uses them with PLUGHOST_RECALL_RANKING=1 PLUGHOST_GS_BOOSTS=1)")
    return 0
