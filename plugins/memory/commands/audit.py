"""`plughost memory audit`: the counts operators need (issue 8): backlog and drift, healthy at 0."""

from __future__ import annotations

import argparse
import json
from typing import Any

from host.graph import VECTOR_LABELS, GraphStore, Guards
from host.log import log
from plugins.memory.commands.common import account

HELP = "count nodes without embeddings per label, orphaned Sections/Chunks, stored vs injected active rules"
SCAN = 1_000_000


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")


def _orphans(store: GraphStore, guards: Guards, label: str, edge: str) -> int:
    nodes = store.find(guards=guards, labels=[label], limit=SCAN)
    if not nodes:
        return 0
    around = store.expand([n.id for n in nodes], guards=guards, limit=SCAN)
    return sum(not any(nb.type == edge and nb.direction == "in" for nb in around.get(n.id, [])) for n in nodes)


def audit(host: Any) -> dict[str, Any]:
    from plugins.memory.preferences import ACTIVE_FLOOR, _owner_profile, active_rules, profile_preferences

    acct = account(host, "the id of the account whose memory to audit")
    store, guards = host.store(), Guards(acct)
    missing: dict[str, int] = {}
    for label in VECTOR_LABELS:
        count = len(store.missing_embeddings(account_id=acct, labels=[label], limit=SCAN))
        if count:
            missing[label] = count
    _, profile = _owner_profile(store, guards)
    stored = 0
    if profile is not None:
        stored = sum(float(p.properties.get("confidence", 0)) >= ACTIVE_FLOOR
                     for p in profile_preferences(store, guards, profile.id))
    rules = active_rules(store, acct)
    report = {
        "account": acct,
        "nullEmbedding": missing,
        "nullAccount": 0 if store.backend == "sqlite" else None,  # the embedded schema makes accountId NOT NULL
        "orphanSections": _orphans(store, guards, "Section", "HAS_SECTION"),
        "orphanChunks": _orphans(store, guards, "Chunk", "HAS_CHUNK"),
        "activeRules": {"stored": stored, "injected": len(rules["rules"]), "source": rules["source"]},
    }
    log("embed-audit", "null-embedding", labels=",".join(missing) or None, count=sum(missing.values()))
    log("account-audit", "null-account", labels=None, count=report["nullAccount"])
    log("memory-audit", "orphans", sections=report["orphanSections"], chunks=report["orphanChunks"])
    log("preference-inject", "op=reconcile", accountId=acct[:8], stored=stored, injected=len(rules["rules"]),
        drifted=int(stored != len(rules["rules"])))
    return report


def run(args: argparse.Namespace, host: Any) -> int:
    report = audit(host)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"account {report['account']}")
    print(f"  nodes without embeddings: {sum(report['nullEmbedding'].values())}"
          + "".join(f"\n    {label}: {n}" for label, n in report["nullEmbedding"].items()))
    print(f"  nodes without accountId: {report['nullAccount'] if report['nullAccount'] is not None else 'n/a'}")
    print(f"  orphaned Sections: {report['orphanSections']}  orphaned Chunks: {report['orphanChunks']}")
    rules = report["activeRules"]
    print(f"  active rules: stored={rules['stored']} injected={rules['injected']} source={rules['source']}")
    return 0
