"""``plughost serve`` keeps the account's registered collections fresh: one sync at startup, then
``watchfiles`` (Rust notify, debounced) re-syncs a collection whenever its folder changes, and
re-reads the registry when a collection is added or removed. Syncs run one at a time on the
watcher's thread, never on a request's. ``PLUGHOST_COLLECTIONS_WATCH=0`` turns it off.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from host import state
from host.graph import Guards
from host.log import log
from host.state import StateKey

if TYPE_CHECKING:  # pragma: no cover
    from host.manager import Host

STATE_KEY: StateKey[Any] = StateKey("memory.collection-watcher")
DEBOUNCE_MS = 400


class Watcher:
    def __init__(self, host: Host, account_id: str) -> None:
        self.host = host
        self.account = account_id
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="collection-watcher", daemon=True)

    def start(self) -> Watcher:
        self.thread.start()
        return self

    def _sync(self, names: list[str]) -> None:
        from plugins.memory.collections import registry, service
        from plugins.memory.collections.sync import sync

        guards = Guards.from_env({**self.host.env, "ACCOUNT_ID": self.account})
        known = registry.load(self.host.home, self.account)
        for name in names:
            if name not in known or self.stop_event.is_set():
                continue
            coll = known[name]
            try:
                sync(self.host.store(), coll, service.source(self.host, coll.source), account_id=self.account,
                     guards=guards, home=self.host.home, embedder=self.host.embedder())
            except Exception as exc:  # a bad folder must not stop the watcher
                log("collections", "op=watch-error", collection=name, detail=f"{type(exc).__name__}: {exc}"[:120])

    def _run(self) -> None:
        import watchfiles

        from plugins.memory.collections import registry

        folder = registry.folder(self.host.home, self.account)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        while not self.stop_event.is_set():
            known = registry.load(self.host.home, self.account)
            self._sync(list(known))
            roots = {name: Path(c.path) for name, c in known.items() if Path(c.path).is_dir()}
            reload = False
            ready = False
            try:
                for changes in watchfiles.watch(folder, *roots.values(), stop_event=self.stop_event,
                                                debounce=DEBOUNCE_MS, step=100, recursive=True, rust_timeout=300,
                                                yield_on_timeout=True, raise_interrupt=False,
                                                ignore_permission_denied=True):
                    if not ready:  # the watch is live now: catch up on what changed before it was
                        ready = True
                        self._sync(list(roots))
                        log("collections", "op=watching", account=self.account[:8], collections=sorted(roots))
                    if not changes:
                        continue
                    paths = {Path(p) for _, p in changes}
                    if any(p.name == "registry.json" for p in paths):
                        reload = True
                        break
                    hit = [n for n, root in roots.items() if any(p == root or root in p.parents for p in paths)]
                    self._sync(hit)
            except Exception as exc:
                log("collections", "op=watch-error", detail=f"{type(exc).__name__}: {exc}"[:120])
                self.stop_event.wait(5)
            if not reload:
                time.sleep(0.05)

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(10)


def start(host: Host) -> None:
    """Under ``plughost serve`` with an ``ACCOUNT_ID``: watch that account's collections."""
    if host.env.get("PLUGHOST_COLLECTIONS_WATCH", "1").strip() == "0" or STATE_KEY in host.state:
        return
    account = (host.env.get("ACCOUNT_ID") or "").strip()
    if not account or (state.RUNTIME not in host.state and host.env.get("PLUGHOST_COLLECTIONS_WATCH") != "1"):
        return
    host.state.set(STATE_KEY, Watcher(host, account).start())


def stop(host: Host) -> None:
    watcher = host.state.pop(STATE_KEY)
    if watcher is not None:
        watcher.stop()
