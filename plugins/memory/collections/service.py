"""Collections wired to a loaded host: the source by name (hook), the store, embedder and guards."""

from __future__ import annotations

from typing import TYPE_CHECKING

from host import hooktable
from host.errors import UserError
from host.graph import Guards
from plugins.memory.collections import registry
from plugins.memory.collections.sync import SyncStats, sync

if TYPE_CHECKING:  # pragma: no cover
    from host.manager import Host
    from host.types import CollectionSource


def sources(host: Host) -> dict[str, CollectionSource]:
    return {c.item.name: c.item for c in host.collect(hooktable.COLLECTION_SOURCES)}


def source(host: Host, name: str) -> CollectionSource:
    found = sources(host)
    if name not in found:
        raise UserError(f"--source: '{name}' is not a collection source; expected one of {', '.join(sorted(found))}")
    return found[name]


def sync_named(host: Host, names: list[str] | None = None, *, embed: bool = True) -> dict[str, SyncStats]:
    """Sync the named collections (all when None) of the process's account, under its guards."""
    guards = Guards.from_env(host.env)
    known = registry.load(host.home, guards.account_id)
    if names:
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UserError(f"NAME: no collection '{unknown[0]}' for account '{guards.account_id}'"
                            f" (registered: {', '.join(known) or 'none'})")
    out = {}
    embedder = host.embedder() if embed else None
    for name in names or list(known):
        coll = known[name]
        out[name] = sync(host.store(), coll, source(host, coll.source), account_id=guards.account_id, guards=guards,
                         home=host.home, embedder=embedder)
    return out
