"""Collections wired to a loaded host: the source by name (hook), the store, embedder and guards."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from plughost import UserError, log
from plughost.api import hooks
from plughost.api.store import require_admin
from plughost.plugins.memory.collections import registry
from plughost.plugins.memory.collections.sync import SyncStats, sync

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from plughost import CollectionSource, Host


def sources(host: Host) -> dict[str, CollectionSource]:
    return {c.item.name: c.item for c in host.collect(hooks.COLLECTION_SOURCES)}


def source(host: Host, name: str) -> CollectionSource:
    found = sources(host)
    if name not in found:
        raise UserError(f"--source: '{name}' is not a collection source; expected one of {', '.join(sorted(found))}")
    return found[name]


def refused(coll: registry.Collection, home: Path) -> str | None:
    """Why a registered collection is not synced now, or None. Checked on every sync, not only at
    ``add``: a folder swapped for a symlink since (to PLUGHOST_HOME, a system folder or another
    collection's folder) or a folder that went away (an unmounted drive: syncing it would
    soft-delete every note) is refused and nothing changes."""
    from pathlib import Path

    stored = Path(coll.path)
    if not stored.is_dir():
        return (f"PATH: '{coll.path}' is missing or not a folder now; nothing was changed (remove the "
                "collection if its notes are gone for good)")
    resolved = stored.resolve()
    if resolved != stored:
        return (f"PATH: '{coll.path}' now leads to '{resolved}' (swapped for a symlink since it was added); "
                "nothing was changed: add it again with --replace if that is meant")
    why = registry.refused_path(resolved, home)
    return f"PATH: '{coll.path}' {why}" if why else None


def sync_named(host: Host, names: list[str] | None = None, *, embed: bool = True,
               stop_event: threading.Event | None = None, allow_empty: bool = False) -> dict[str, SyncStats]:
    """Sync the named collections (all when None) of the process's account: admin only (the
    registry and a collection's scope are account-wide). An explicit sync ends ``--no-sync``'s
    registered-only state."""
    require_admin(host.principal, "collection sync")
    guards = host.principal.guards
    known = registry.load(host.home, guards.account_id)
    if names is not None and not all(names):
        raise UserError("NAME: empty (name a collection, or leave NAME out to sync them all)")
    if names:
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UserError(f"NAME: no collection '{unknown[0]}' for account '{guards.account_id}'"
                            f" (registered: {', '.join(known) or 'none'})")
        for name in names:
            why = refused(known[name], host.home)
            if why:
                raise UserError(f"{why} (collection '{name}')")
    out = {}
    embedder = host.embedder() if embed else None
    for name in names or list(known):
        coll = known[name]
        why = refused(coll, host.home)
        if why:
            log("collections", "op=refuse", collection=name, detail=why[:160])
            continue
        out[name] = sync(host.store(), coll, source(host, coll.source), guards=guards,
                         home=host.home, embedder=embedder, stop_event=stop_event, allow_empty=allow_empty)
        if coll.registered_only and not out[name].cancelled:
            registry.mark_synced(host.home, guards.account_id, name)
    return out
