"""``plughost serve`` keeps the account's registered collections fresh: one sync at startup, then
``watchfiles`` (Rust notify, debounced) re-syncs a collection whenever a file of it changes, and
re-reads the registry when a collection is added or removed. Syncs run one at a time on the
watcher's thread, never on a request's. ``PLUGHOST_COLLECTIONS_WATCH=0`` turns it off.

Only changes that can matter wake it: a file matching the collection's patterns (or a folder)
outside its junk folders, and the account's ``registry.json``; nothing under PLUGHOST_HOME
otherwise (a sync's own writes must not start the next one). A collection added with
``--no-sync`` is left alone until its first explicit ``collection sync``; one whose folder is
refused (``/``, a system folder, PLUGHOST_HOME ...) is never walked. A narrowed serve
(``ALLOWED_SCOPES`` / ``AGENT_SLUG``) does not sync collections: that is admin work. A changed
path is credited by its real path, so an edit seen through another collection's folder symlink
re-syncs the collection that holds the file (sync itself never follows folder symlinks).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost import StateKey, log
from plughost.api import serving
from plughost.plugins.memory.collections import registry, service
from plughost.plugins.memory.collections.sync import is_junk, matches, sync
from plughost.plugins.memory.settings import COLLECTIONS_WATCH

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from plughost import Host
    from plughost.plugins.memory.collections.registry import Collection

STATE_KEY: StateKey[Any] = StateKey("memory.collection-watcher")
DEBOUNCE_MS = 400


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class Watcher:
    def __init__(self, host: Host, account_id: str) -> None:
        self.host = host
        self.account = account_id
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="collection-watcher", daemon=True)
        self.refused: set[str] = set()

    def start(self) -> Watcher:
        self.thread.start()
        return self

    def _wanted(self, known: dict[str, Collection]) -> dict[str, Collection]:
        """The collections to sync and watch: not registered-only, not at a refused folder."""
        out = {}
        for name, coll in known.items():
            if coll.registered_only:
                continue
            why = service.refused(coll, self.host.home)
            if why:
                if name not in self.refused:
                    self.refused.add(name)
                    log("collections", "op=refuse", collection=name, detail=why[:160])
                continue
            out[name] = coll
        return out

    def _sync(self, names: list[str]) -> None:
        guards = self.host.principal.for_account(self.account).guards
        known = self._wanted(registry.load(self.host.home, self.account))
        for name in names:
            if name not in known or self.stop_event.is_set():
                continue
            coll = known[name]
            try:
                sync(self.host.store(), coll, service.source(self.host, coll.source), guards=guards, home=self.host.home,
                     embedder=self.host.embedder(), stop_event=self.stop_event)
            except Exception as exc:  # a bad folder must not stop the watcher
                log("collections", "op=watch-error", collection=name, detail=f"{type(exc).__name__}: {exc}"[:120])

    def _filter(self, colls: dict[str, Collection]) -> Callable[[Any, str], bool]:
        """Which changed paths can matter (see the module docstring)."""
        reg = registry.registry_path(self.host.home, self.account)
        home = self.host.home.resolve()
        roots = []
        for coll in colls.values():
            try:
                patterns = (coll.pattern,) if coll.pattern else tuple(service.source(self.host, coll.source).patterns)
            except Exception:
                continue
            roots.append((Path(coll.path), patterns))

        def accept(_change: Any, raw: str) -> bool:
            path = Path(os.path.realpath(raw))  # a change seen through a folder symlink is its target's
            if path.name == "registry.json" and path.parent == reg.parent:
                return True
            if _inside(path, home):
                return False
            for root, patterns in roots:
                if not _inside(path, root) or path == root:
                    continue
                parts = path.relative_to(root).parts
                if any(is_junk(p) for p in parts):
                    return False
                return matches("/".join(parts), patterns) or "." not in parts[-1]  # a folder moved or deleted
            return False

        return accept

    def _run(self) -> None:
        import watchfiles

        logging.getLogger("watchfiles").setLevel(logging.WARNING)  # we log `op=watch changes=N` ourselves
        folder = registry.folder(self.host.home, self.account)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        while not self.stop_event.is_set():
            known = self._wanted(registry.load(self.host.home, self.account))
            roots = {name: Path(c.path) for name, c in known.items() if Path(c.path).is_dir()}
            reload = False
            ready = False
            try:
                for changes in watchfiles.watch(folder, *roots.values(), watch_filter=self._filter(known),
                                                stop_event=self.stop_event, debounce=DEBOUNCE_MS, step=100,
                                                recursive=True, rust_timeout=300, yield_on_timeout=True,
                                                raise_interrupt=False, ignore_permission_denied=True):
                    if not ready:  # the watch is live now: catch up on what changed before it was
                        ready = True
                        self._sync(list(roots))
                        log("collections", "op=watching", account=self.account[:8], collections=sorted(roots))
                    if not changes:
                        continue
                    paths = {Path(os.path.realpath(p)) for _, p in changes}
                    if any(p.name == "registry.json" for p in paths):
                        log("collections", "op=watch", changes=len(paths), reason="registry")
                        reload = True
                        break
                    hit = [n for n, root in roots.items() if any(_inside(p, root) for p in paths)]
                    log("collections", "op=watch", changes=len(paths), collections=",".join(hit) or "-")
                    self._sync(hit)
            except Exception as exc:
                log("collections", "op=watch-error", detail=f"{type(exc).__name__}: {exc}"[:120])
                self.stop_event.wait(5)
            if not reload:
                self.stop_event.wait(0.05)

    def stop(self) -> None:
        """Stop the watch and any sync it runs (between two files); the sync closes its state."""
        self.stop_event.set()
        self.thread.join(10)


def start(host: Host) -> None:
    """Under ``plughost serve`` with an ``ACCOUNT_ID`` (an admin process): watch that account's collections."""
    wanted = COLLECTIONS_WATCH.read(host.env)  # None: only under plughost serve
    if wanted is False or STATE_KEY in host.state:
        return
    principal = host.principal
    account = principal.account
    if not account or (serving.RUNTIME not in host.state and wanted is not True):
        return
    if not principal.is_admin:
        log("collections", "op=watch-off", reason="narrowed-process")
        return
    host.state.set(STATE_KEY, Watcher(host, account).start())


def stop(host: Host) -> None:
    watcher = host.state.pop(STATE_KEY)
    if watcher is not None:
        watcher.stop()
