"""`plughost memory recall [list | pin|snooze|clear ID...]`: what surfacing showed and what the replies used.

The listing applies the process's read guards (a narrowed process sees only the items it could
read); pin, snooze and clear change the account's ranking for every session, so they are admin
only and accept only ids of nodes the account holds (clear also takes an id already decided).
"""

from __future__ import annotations

import argparse
from typing import Any

from plughost import Principal, UserError
from plughost.api.store import require_admin
from plughost.plugins.memory.commands.common import account, print_json
from plughost.plugins.memory.surfacing import recall

HELP = "recall tracking: snooze candidates (surfaced, never used), pin candidates (used often); pin/snooze/clear"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=("list", "pin", "snooze", "clear"), default="list")
    parser.add_argument("ids", nargs="*", metavar="ID", help="node ids to pin, snooze or clear")
    parser.add_argument("--min-surfaced", type=int, default=3, help="snooze candidates: surfaced at least (3)")
    parser.add_argument("--min-used", type=int, default=2, help="pin candidates: used at least (2)")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace, host: Any) -> int:
    if args.action == "list":
        if args.ids:
            raise UserError(f"recall list: takes no ids, got {' '.join(args.ids)[:80]!r}; "
                            "expected `recall list` or `recall pin|snooze|clear ID...`")
        for name in ("min_surfaced", "min_used", "limit"):
            if getattr(args, name) < 1:
                raise UserError(f"--{name.replace('_', '-')}: expected a positive integer")
        acct = account(host, "the id of the account whose recall history to list")
        guards = host.principal.guards
        found = recall.candidates(host.home, acct, min_surfaced=args.min_surfaced, min_used=args.min_used,
                                  limit=args.limit, visible=recall.visible_filter(host.store(), guards))
        if args.json:
            print_json(found)
            return 0
        print_listing(found, args)
        return 0
    require_admin(host.principal, f"memory recall {args.action}")  # the account's ranking, for every session
    acct = account(host, f"the id of the account whose items to {args.action}")
    if not args.ids:
        raise UserError(f"recall {args.action}: expected one or more node ids")
    decided = recall.load_decisions(host.home, acct)
    guards = Principal.owner(acct).guards
    unknown = [i for i in args.ids if host.store().get(i, guards=guards) is None
               and not (args.action == "clear" and i in decided)]
    if unknown:
        raise UserError(f"recall {args.action}: no node {unknown[0][:80]!r} in account {acct}"
                        + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
                        + "; expected ids from `plughost memory recall` or memory-search")
    decision = {"pin": "pinned", "snooze": "snoozed", "clear": None}[args.action]
    now = recall.decide(host.home, acct, args.ids, decision)
    print(f"recall: {args.action} {' '.join(args.ids)} ({sum(v == 'pinned' for v in now.values())} pinned, "
          f"{sum(v == 'snoozed' for v in now.values())} snoozed)")
    return 0


def print_listing(found: dict[str, Any], args: argparse.Namespace) -> None:
    if not found["surfacedItems"]:
        print("recall: no surfaced items yet (the UserPromptSubmit hook records what it shows each session)")
    else:
        print(f"snooze candidates (surfaced >= {args.min_surfaced}, never used):")
        for h in found["snooze"]:
            print(f"  {h['id']}\tsurfaced={h['surfaced']}\tused={h['used']}\t{h['title']}")
        if not found["snooze"]:
            print("  none yet")
        print(f"pin candidates (used >= {args.min_used}):")
        for h in found["pin"]:
            print(f"  {h['id']}\tsurfaced={h['surfaced']}\tused={h['used']}\t{h['title']}")
        if not found["pin"]:
            print("  none yet")
    print(f"pinned: {', '.join(found['pinned']) or '-'}; snoozed: {', '.join(found['snoozed']) or '-'} "
          "(ranking uses them with PLUGHOST_RECALL_RANKING=1 PLUGHOST_GS_BOOSTS=1)")
