"""What ``plughost memory audit`` and the standing audits count: backlog and drift, healthy at 0."""

from __future__ import annotations

from typing import Any

from plughost import GraphStore, Guards, Principal
from plughost.api.store import VECTOR_LABELS
from plughost.plugins.memory.work.preferences import (
    ACTIVE_FLOOR,
    active_rules,
    owner_profile,
    profile_preferences,
)

SCAN = 1_000_000
SAMPLE_IDS = 5
"""Ids listed per label of the unscoped nodes."""


def _unscoped(store: Any, acct: str) -> dict[str, Any] | None:
    """Label → {count, ids} of the nodes without a scope; None on a store that cannot list them."""
    if not hasattr(store, "unscoped"):
        return None
    return {label: {"count": n, "ids": ids} for label, (n, ids) in store.unscoped(account_id=acct,
                                                                                   sample=SAMPLE_IDS).items()}


def _orphans(store: GraphStore, guards: Guards, label: str, edge: str) -> int:
    nodes = store.find(guards=guards, labels=[label], limit=SCAN)
    if not nodes:
        return 0
    around = store.expand([n.id for n in nodes], guards=guards, limit=SCAN)
    return sum(not any(nb.type == edge and nb.direction == "in" for nb in around.get(n.id, [])) for n in nodes)


def counts(host: Any, *, time_census: bool = True) -> dict[str, Any]:
    """The audit's report, unlogged but for the time-entry census's lines (the standing audit logs
    its own one line per run and runs the census as an audit of its own: ``time_census=False``)."""
    acct = str(host.principal.require_account("the id of the account whose memory to audit"))
    store, guards = host.store(), Principal.owner(acct).guards
    missing: dict[str, int] = {}
    for label in VECTOR_LABELS:
        count = len(store.missing_embeddings(account_id=acct, labels=[label], limit=SCAN))
        if count:
            missing[label] = count
    _, profile = owner_profile(store, guards)
    stored = 0
    if profile is not None:
        stored = sum(float(p.properties.get("confidence", 0)) >= ACTIVE_FLOOR
                     for p in profile_preferences(store, guards, profile.id))
    rules = active_rules(store, guards)
    report: dict[str, Any] = {
        "account": acct,
        "nullEmbedding": missing,
        "nullAccount": 0 if store.backend == "sqlite" else None,  # the embedded schema makes accountId NOT NULL
        "orphanSections": _orphans(store, guards, "Section", "HAS_SECTION"),
        "orphanChunks": _orphans(store, guards, "Chunk", "HAS_CHUNK"),
        "activeRules": {"stored": stored, "injected": len(rules["rules"]), "source": rules["source"]},
        "unscoped": _unscoped(store, acct),
    }
    if time_census:
        from plughost.plugins.memory.work.worktime import census

        report["timeCensus"] = census(store, acct)
    return report
