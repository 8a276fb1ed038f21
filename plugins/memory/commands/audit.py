"""`plughost memory audit`: the counts operators need (issue 8): backlog and drift, healthy at 0.

Also the legacy nodes without a scope (written before every write path stamped one): every
scope reads them, a public visitor included. ``--fix-scope admin`` stamps them (admin only).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from plughost import UserError, log
from plughost.api.store import require_admin
from plughost.plugins.memory.collections.registry import SCOPE
from plughost.plugins.memory.commands.common import account
from plughost.plugins.memory.upkeep.counts import counts
from plughost.plugins.memory.upkeep.record import describe, last_run

HELP = ("count nodes without embeddings or without a scope per label, orphaned Sections/Chunks, stored vs "
        "injected active rules, tasks whose logged time drifted; --fix-scope stamps the unscoped ones")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.add_argument("--fix-scope", metavar="SCOPE",
                        help="give every node without a scope this one (e.g. admin: private; admin only)")


def fix_scope(host: Any, scope: str) -> int:
    """Stamp ``scope`` on every unscoped node of the account; returns how many (logged)."""
    acct = account(host, "the id of the account whose memory to audit")
    require_admin(host.principal, "memory audit --fix-scope")  # it rewrites nodes of every scope's reach
    if not SCOPE.match(scope):
        raise UserError(f"--fix-scope: '{scope}' is not a scope name (letters, digits, '-', '_'; e.g. admin)")
    store = host.store()
    if not hasattr(store, "stamp_scope"):
        raise UserError(f"--fix-scope: the {getattr(store, 'backend', '?')} store cannot stamp scopes")
    stamped = int(store.stamp_scope(scope, account_id=acct))
    log("memory-audit", "op=fix-scope", accountId=acct[:8], scope=scope, stamped=stamped)
    return stamped


def audit(host: Any) -> dict[str, Any]:
    """:func:`counts`, each count logged on its own line (``plughost memory audit``)."""
    report = counts(host)
    missing, rules = report["nullEmbedding"], report["activeRules"]
    acct, stored = report["account"], rules["stored"]
    log("embed-audit", "null-embedding", labels=",".join(missing) or None, count=sum(missing.values()))
    log("account-audit", "null-account", labels=None, count=report["nullAccount"])
    log("memory-audit", "orphans", sections=report["orphanSections"], chunks=report["orphanChunks"])
    unscoped = report["unscoped"] or {}
    log("memory-audit", "unscoped", labels=",".join(unscoped) or None, count=sum(u["count"] for u in unscoped.values()))
    log("preference-inject", "op=reconcile", accountId=acct[:8], stored=stored, injected=rules["injected"],
        drifted=int(stored != rules["injected"]))
    return report


def run(args: argparse.Namespace, host: Any) -> int:
    stamped = fix_scope(host, args.fix_scope) if args.fix_scope is not None else None
    report = audit(host)
    last = last_run(host.home, report["account"])
    if args.json:
        if stamped is not None:
            report["fixScope"] = {"scope": args.fix_scope, "stamped": stamped}
        report["lastStandingRun"] = last
        print(json.dumps(report, indent=2))
        return 0
    if stamped is not None:
        print(f"fix-scope: {stamped} node{'' if stamped == 1 else 's'} without a scope now scope {args.fix_scope}")
    print(f"account {report['account']}")
    print(f"  nodes without embeddings: {sum(report['nullEmbedding'].values())}"
          + "".join(f"\n    {label}: {n}" for label, n in report["nullEmbedding"].items()))
    print(f"  nodes without accountId: {report['nullAccount'] if report['nullAccount'] is not None else 'n/a'}")
    print(f"  orphaned Sections: {report['orphanSections']}  orphaned Chunks: {report['orphanChunks']}")
    rules = report["activeRules"]
    print(f"  active rules: stored={rules['stored']} injected={rules['injected']} source={rules['source']}")
    unscoped = report["unscoped"]
    if unscoped is None:
        print("  nodes without a scope: n/a")
    else:
        print(f"  nodes without a scope (every scope reads them): {sum(u['count'] for u in unscoped.values())}"
              + "".join(f"\n    {label}: {u['count']} (e.g. {', '.join(u['ids'])})" for label, u in unscoped.items())
              + ("\n    fix: plughost memory audit --fix-scope admin" if unscoped else ""))
    found = report["timeCensus"]
    print(f"  time on tasks: {found['tasks']} task{'' if found['tasks'] == 1 else 's'}, {found['running']} timer"
          f"{'' if found['running'] == 1 else 's'} running, {len(found['drifted'])} drifted"
          + (f", {found['orphaned']} deleted with time records" if found.get("orphaned") else "")
          + "".join(f"\n    {d['taskId']}: secondsLogged={d['secondsLogged']} expected={d['expected']}"
                    for d in found["drifted"]))
    print(f"  last standing run: {describe(last)}")
    return 0
