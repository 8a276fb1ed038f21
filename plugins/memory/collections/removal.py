"""``collection remove``: unregister, stop the collection's running sync, soft-delete its notes.

The registry entry goes first, so a sync of it running in another process (serve's watcher, a
``collection sync``) stops between two files; then, holding the collection's sync lock, every
document of the collection is soft-deleted (its sections and chunks with it, restorable like
any document): those the state recorded and those a killed sync wrote before recording them.
"""

from __future__ import annotations

from typing import Any

from plughost import log
from plughost.plugins.memory.collections import registry
from plughost.plugins.memory.collections.running import sync_lock
from plughost.plugins.memory.collections.state import State


def remove(host: Any, account_id: str, name: str) -> int:
    """Remove collection ``name``; the number of documents soft-deleted."""
    registry.remove(host.home, account_id, name)
    guards = host.principal.guards

    def waiting() -> None:
        log("collections", "op=remove-wait", collection=name, reason="sync-stopping")

    with sync_lock(host.home, account_id, name, on_wait=waiting):
        store = host.store()
        ids: set[str] = set()
        path = registry.state_path(host.home, account_id, name)
        if path.exists():
            state = State(path)
            ids.update(n.doc_id for n in state.notes().values())
            state.close()
        offset = 0
        while True:
            page = store.find(guards=guards, labels=["KnowledgeDocument"], where={"collection": name}, limit=500,
                              offset=offset)
            ids.update(d.id for d in page if not d.deleted)
            if len(page) < 500:
                break
            offset += 500
        removed = sum(bool(store.soft_delete(doc_id, guards=guards)) for doc_id in sorted(ids))
        for suffix in ("", "-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
    log("collections", "op=remove", collection=name, documents=removed)
    return removed
