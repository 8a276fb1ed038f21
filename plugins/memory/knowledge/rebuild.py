"""Rebuild the KNOWLEDGE.md of an account's public agents when the public knowledge changes: after a
memory write that touches a public node, after a public collection's sync that changed notes, at
``serve`` start, and when another plugin says so (``plughost_knowledge_changed``: the console)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from plughost import GraphStore, UserError, log
from plughost.api import agents
from plughost.plugins.memory.knowledge.assemble import render
from plughost.plugins.memory.knowledge.gather import gather


def rebuild(store: GraphStore, home: Path, account_id: str, slugs: Sequence[str] | None = None, *,
            reason: str) -> dict[str, bool]:
    """Reassemble each agent's KNOWLEDGE.md (default: every agent of the account with a folder);
    ``{slug: changed}``. One agent's bad IDENTITY.md is a WARN line, never a failed write."""
    changed: dict[str, bool] = {}
    try:
        wanted = list(slugs) if slugs is not None else agents.agent_slugs(home, account_id)
    except UserError as exc:
        log("knowledge", "op=rebuild", "WARN", accountId=account_id, reason=reason, detail=str(exc))
        return changed
    for slug in wanted:
        started = time.perf_counter()
        try:
            if not agents.agent_dir(home, account_id, slug).is_dir():
                continue
            keywords = agents.subscriptions(home, account_id, slug)
            sources = gather(store, account_id, keywords)
            changed[slug] = agents.write_knowledge(home, account_id, slug, render(sources, keywords))
        except UserError as exc:
            log("knowledge", "op=rebuild", "WARN", accountId=account_id, agent=slug, reason=reason, detail=str(exc))
            continue
        log("knowledge", "op=rebuild", accountId=account_id, agent=slug, reason=reason, keywords=len(keywords),
            documents=sum(s.sections is not None for s in sources), changed="true" if changed[slug] else "false",
            ms=f"{(time.perf_counter() - started) * 1000:.0f}")
    return changed


def after_write(store: GraphStore, home: Path, account_id: str, scopes: Sequence[object], *, reason: str) -> None:
    """A write whose node was public before or after it: the account's agents are rebuilt. Any other
    write leaves KNOWLEDGE.md as it is; a failure is a WARN line and the write stands."""
    if "public" not in scopes:
        return
    try:
        rebuild(store, home, account_id, reason=reason)
    except Exception as exc:  # noqa: BLE001 — the write is done; the next public write or serve start retries
        log("knowledge", "op=rebuild", "WARN", accountId=account_id, reason=reason,
            detail=f"{type(exc).__name__}: {exc}"[:200])
