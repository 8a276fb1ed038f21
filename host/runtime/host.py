"""The host: one object a plugin receives, a thin façade over discovery, hook calls and capabilities.

There is no global instance and nothing loads at import time: ``Host(...).load()`` builds one, and
tests build their own. What it found lives in :mod:`plughost.runtime.discovery`, how it calls hooks in
:mod:`plughost.runtime.calls`; this module only joins them and caches what a host provides once
(the tool surface and table, the store, the embedder, the principal).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy

from plughost.ports import principal as principal_module
from plughost.ports.principal import Principal
from plughost.runtime import hookspecs, hooktable, leases
from plughost.runtime.calls import Collected, HookCalls
from plughost.runtime.discovery import Discovery, PluginRecord
from plughost.runtime.hooktable import AnyHook, EachHook, ListHook, OneHook, ProviderHook
from plughost.runtime.isolation import HookError
from plughost.runtime.manifest import PluginManifest
from plughost.runtime.state import PluginState
from plughost.runtime.tooltable import call_tool, check_tool_call
from plughost.util import config, settings
from plughost.util.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from plughost.ports.embedding import Embedder
    from plughost.ports.graph import GraphStore
    from plughost.runtime.plugin_host import PluginHost
    from plughost.runtime.surface import ToolSurface
    from plughost.runtime.tooltable import ToolTable
    from plughost.runtime.types import MemoryHit

T = TypeVar("T")


@dataclass
class Host:
    """A plugin host: what was discovered, the pluggy manager, and lazily built capabilities."""

    plugins_dir: Path | None = None
    premium_dir: Path | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    entry_points: bool = True

    def __post_init__(self) -> None:
        if self.plugins_dir is None:
            self.plugins_dir = settings.PLUGINS_DIR.read(self.env) or config.builtin_plugins_dir()
        if self.premium_dir is None:
            self.premium_dir = settings.PREMIUM_DIR.read(self.env)
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.state = PluginState()
        self.discovery = Discovery(self.pm, self.env, plugins_dir=self.plugins_dir, premium_dir=self.premium_dir,
                                   entry_points=self.entry_points)
        self.calls = HookCalls(self.pm, self)
        self._surface: ToolSurface | None = None
        self._tools: ToolTable | None = None
        self._store: GraphStore | None = None
        self._embedder: Embedder | bool | None = None
        self._principal: tuple[tuple[str | None, ...], Principal] | None = None

    # ------------------------------------------------------------------ who and where
    @property
    def home(self) -> Path:
        return config.home(self.env)

    @property
    def principal(self) -> Principal:
        """Who this host's calls run as, resolved from this host's environment (once, again only
        if a command changes it, e.g. ``--account``). A narrower caller gets a host of its own
        (a visitor's: ``child_env(env, principal.visitor())``), never a per-call override that
        would reach the narrower host's calls too."""
        key = principal_module.principal_vars(self.env)
        if self._principal is None or self._principal[0] != key:
            self._principal = (key, principal_module.resolve(self.env))
        return self._principal[1]

    # ------------------------------------------------------------------ plugins
    @property
    def records(self) -> dict[str, PluginRecord]:
        return self.discovery.records

    def load(self) -> Host:
        """Discover and load every plugin once. Returns self for chaining."""
        self.discovery.load()
        return self

    def check_plugin_lists(self) -> None:
        self.discovery.check_plugin_lists()

    def check_provider_choices(self) -> None:
        self.calls.check_provider_choices()

    def brand_exclusions(self) -> tuple[str | None, list[str]]:
        return self.discovery.brand_exclusions()

    def register(self, plugin: Any, name: str, manifest: PluginManifest | None = None) -> PluginRecord:
        """Register an in-process plugin object (tests, embedding apps)."""
        record = self.discovery.register(plugin, name, manifest)
        self._surface = self._tools = None
        return record

    def unregister(self, name: str) -> None:
        self.discovery.unregister(name)
        self._surface = self._tools = None

    @contextmanager
    def temporary_plugin(self, plugin: Any, name: str, manifest: PluginManifest | None = None) -> Iterator[Any]:
        """Register a plugin for the duration of a ``with`` block (datasette-style tests)."""
        self.register(plugin, name, manifest)
        try:
            yield plugin
        finally:
            self.unregister(name)

    def loaded(self) -> list[PluginRecord]:
        return [r for r in self.records.values() if r.loaded]

    def plugin(self, name: str) -> PluginRecord:
        record = self.records.get(name)
        if record is None:
            known = ", ".join(sorted(self.records)) or "none"
            raise UserError(f"plugin: '{name}' is not installed (known: {known})")
        return record

    # ------------------------------------------------------------------ hook calls (plughost.runtime.calls)
    def collect(self, hook: ListHook[T], **kwargs: Any) -> Collected[T]:
        return self.calls.collect(hook, **kwargs)

    def call_each(self, hook: EachHook, **kwargs: Any) -> list[HookError]:
        return self.calls.call_each(hook, **kwargs)

    def first(self, hook: OneHook[T], **kwargs: Any) -> T | None:
        return self.calls.first(hook, **kwargs)

    def has_implementations(self, hook: AnyHook) -> bool:
        return self.calls.has_implementations(hook)

    def provide(self, hook: ProviderHook[T]) -> T | None:
        return self.calls.provide(hook)

    def provider_order(self, hook: ProviderHook[Any]) -> list[str]:
        return self.calls.provider_order(hook)

    # ------------------------------------------------------------------ capabilities, built once
    @property
    def surface(self) -> ToolSurface:
        """The tool surface, computed once from the loaded manifests."""
        if self._surface is None:
            from plughost.runtime.surface import compute_surface

            self._surface = compute_surface(self)
        return self._surface

    def tools(self) -> ToolTable:
        """The tool table (declarations joined with handlers), built once; see :mod:`plughost.runtime.tooltable`."""
        if self._tools is None:
            from plughost.runtime.tooltable import build_tool_table

            self.load()
            self._tools = build_tool_table(self)
        return self._tools

    def call_tool(self, plugin: str, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """One plugin tool in process (:func:`plughost.runtime.tooltable.call_tool`)."""
        return call_tool(self, plugin, name, arguments)

    def check_call(self, plugin: str, name: str, arguments: Mapping[str, Any] | None = None) -> None:
        """What :meth:`call_tool` checks before it calls (:func:`plughost.runtime.tooltable.check_tool_call`)."""
        check_tool_call(self, plugin, name, arguments)

    def store(self) -> GraphStore:
        """The graph store from the ``plughost_store`` hook (cached)."""
        if self._store is None:
            self._store = self.provide(hooktable.STORE)
            if self._store is None:
                raise UserError("store: no plugin provides a graph store (is the graph plugin disabled?)")
        return self._store

    def embedder(self) -> Embedder | None:
        """The embedder from the ``plughost_embedder`` hook, or None when no provider is usable."""
        if self._embedder is None:
            self._embedder = self.provide(hooktable.EMBEDDER) or False
        return self._embedder if self._embedder is not False and self._embedder is not True else None

    def memory_search(self, query: str, principal: Principal, limit: int = 10) -> list[MemoryHit]:
        """``plughost_memory_search`` as typed rows: the first plugin that searches answers, under
        ``principal``'s guards (a visitor's sees public memory only) narrowed to this process's own
        (:meth:`Principal.within`: another account is refused); ``[]`` when none does."""
        from plughost.runtime.types import MemoryHit

        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise UserError(f"memory_search: parameter 'limit': expected a positive integer, got {limit!r}")
        if not isinstance(principal, Principal):
            raise UserError("memory_search: parameter 'principal': expected a plughost.Principal (host.principal, "
                            "or host.principal.visitor() for what a visitor may see)")
        principal = principal.within(self.principal, "memory_search")  # never wider than this process
        rows = self.first(hooktable.MEMORY_SEARCH, query=query, principal=principal, limit=limit) or []
        return [MemoryHit.from_row(row) for row in rows[:limit]]

    def close(self) -> None:
        """Run shutdown hooks and close the store."""
        self.call_each(hooktable.SHUTDOWN)
        leases.close(self)  # what is still held goes back to the other servers at once
        if self._store is not None and hasattr(self._store, "close"):
            try:
                self._store.close()
            finally:
                self._store = None


if TYPE_CHECKING:  # pragma: no cover

    def _satisfies_the_plugin_api(host: Host) -> PluginHost:
        """mypy's check that the concrete host is everything ``plughost.Host`` promises plugins."""
        return host
