"""The plugin manager: discovery, guarded loading and the one hook-result collector (SPEC 2.2, 2.3).

There is no global instance and nothing loads at import time: ``Host(...).load()`` builds one,
and tests build their own. Block and allow lists are applied by *name* before anything is
imported, so a disabled plugin's module never runs.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import time
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

import pluggy

from host import config, hookspecs
from host.errors import DuplicateNameError, UserError
from host.log import log
from host.manifest import PluginManifest, from_mapping, load_manifest

ENTRY_POINT_GROUP = "plughost.plugins"
T = TypeVar("T")


@dataclass
class PluginRecord:
    """One plugin the host found, loaded or not, with where it came from and why it failed."""

    name: str
    source: str  # entry-point | platform | premium | registered
    origin: str  # "module:<dotted>" or the PLUGIN.md folder
    folder: Path | None = None
    manifest: PluginManifest | None = None
    module: ModuleType | Any | None = None
    status: str = "loaded"  # loaded | failed | disabled
    reason: str | None = None
    bundle: str | None = None  # premium bundle name
    nested: bool = False  # nested-marketplace premium sub-plugin
    builtin: bool = False

    @property
    def loaded(self) -> bool:
        return self.status == "loaded"

    def describe(self) -> dict[str, Any]:
        m = self.manifest
        return {
            "name": self.name,
            "source": self.source,
            "origin": self.origin,
            "version": m.version if m else None,
            "surface": m.surface if m else None,
            "tools": [t.name for t in m.tools] if m else [],
            "status": self.status,
            "reason": self.reason,
            "bundle": self.bundle,
        }


@dataclass(frozen=True)
class Contribution(Generic[T]):
    """An item a hook returned, with the plugin that returned it."""

    plugin: str
    item: T


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass
class Host:
    """A plugin host: what was discovered, the pluggy manager, and lazily built capabilities."""

    plugins_dir: Path | None = None
    premium_dir: Path | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    entry_points: bool = True

    def __post_init__(self) -> None:
        if self.plugins_dir is None:
            value = self.env.get("PLUGHOST_PLUGINS_DIR")
            self.plugins_dir = Path(value) if value else config.builtin_plugins_dir()
        if self.premium_dir is None and self.env.get("PLUGHOST_PREMIUM_DIR"):
            self.premium_dir = Path(self.env["PLUGHOST_PREMIUM_DIR"])
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.hook_errors: list[tuple[str, str, str]] = []
        self.state: dict[str, Any] = {}
        self._surface: Any = None
        self._store: Any = None
        self._embedder: Any = None
        self._loaded = False
        self._modules: dict[str, str] = {}  # dotted module -> plugin name
        if config.flag("PLUGHOST_TRACE_HOOKS", self.env):
            self._trace_undo = self.pm.add_hookcall_monitoring(self._trace_before, self._trace_after)

    # ------------------------------------------------------------------ environment
    @property
    def home(self) -> Path:
        return config.home(self.env)

    def _filters(self) -> tuple[set[str], list[str] | None, bool]:
        disabled = set(config.csv_list(self.env.get("PLUGHOST_DISABLE_PLUGINS")) or [])
        allow = config.csv_list(self.env.get("PLUGHOST_LOAD_PLUGINS"))
        return disabled, allow, config.flag("PLUGHOST_NO_EXTERNAL_PLUGINS", self.env)

    def _blocked_reason(self, name: str, builtin: bool) -> str | None:
        disabled, allow, no_external = self._filters()
        if name in disabled:
            return "disabled by PLUGHOST_DISABLE_PLUGINS"
        if allow is not None and name not in allow:
            return "not in PLUGHOST_LOAD_PLUGINS"
        if no_external and not builtin:
            return "external plugin skipped (PLUGHOST_NO_EXTERNAL_PLUGINS=1)"
        return None

    # ------------------------------------------------------------------ discovery
    def load(self) -> Host:
        """Discover and load every plugin once. Returns self for chaining."""
        if self._loaded:
            return self
        self._loaded = True
        if self.entry_points:
            for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
                self._load_entry_point(ep)
        if self.plugins_dir and self.plugins_dir.is_dir():
            for folder in sorted(p for p in self.plugins_dir.iterdir() if (p / "PLUGIN.md").is_file()):
                self._load_folder(folder, source="platform")
        if self.premium_dir and self.premium_dir.is_dir():
            for top in sorted(p for p in self.premium_dir.iterdir() if p.is_dir()):
                if (top / "PLUGIN.md").is_file():
                    self._load_folder(top, source="premium", bundle=top.name)
                elif (top / "plugins").is_dir():
                    for sub in sorted(p for p in (top / "plugins").iterdir() if (p / "PLUGIN.md").is_file()):
                        self._load_folder(sub, source="premium", bundle=top.name, nested=True)
        if config.flag("PLUGHOST_VERBOSE", self.env):
            statuses = [r.status for r in self.records.values()]
            log("plugins", "op=loaded", count=statuses.count("loaded"), failed=statuses.count("failed"),
                disabled=statuses.count("disabled"))
        return self

    def _claim(self, record: PluginRecord) -> PluginRecord | None:
        """Register a record under its name; the same plugin reached twice merges, two different ones raise."""
        existing = self.records.get(record.name)
        if existing is None:
            self.records[record.name] = record
            return None
        same_folder = existing.folder and record.folder and existing.folder.resolve() == record.folder.resolve()
        same_module = (
            record.manifest is not None
            and record.manifest.python
            and existing.origin == f"module:{record.manifest.python}"
        )
        if same_folder or same_module:
            return existing
        raise DuplicateNameError(
            f"plugin name '{record.name}' is claimed by two sources: {existing.origin} and {record.origin}"
        )

    def _load_entry_point(self, ep: importlib.metadata.EntryPoint) -> None:
        dist = getattr(ep, "dist", None)
        builtin = bool(dist and dist.name == "plughost")
        record = PluginRecord(name=ep.name, source="entry-point", origin=f"module:{ep.value}", builtin=builtin)
        self._claim(record)
        reason = self._blocked_reason(ep.name, builtin)
        if reason:
            record.status, record.reason = "disabled", reason
            self.pm.set_blocked(ep.name)
            return
        try:
            spec = importlib.util.find_spec(ep.module)
        except Exception as exc:  # a broken parent package
            record.status, record.reason = "failed", f"import failed: {_one_line(exc)}"
            return
        if spec and spec.origin and spec.origin not in ("built-in", "frozen"):
            record.folder = Path(spec.origin).resolve().parent
            md = record.folder / "PLUGIN.md"
            if md.is_file():
                try:
                    record.manifest = load_manifest(md)
                except UserError as exc:
                    record.status, record.reason = "failed", str(exc)
                    return
        self._import_and_register(record, ep.module, loader=ep.load)

    def _load_folder(self, folder: Path, *, source: str, bundle: str | None = None, nested: bool = False) -> None:
        md = folder / "PLUGIN.md"
        try:
            manifest: PluginManifest | None = load_manifest(md)
            name = manifest.name
            reason = None
        except UserError as exc:
            manifest, name, reason = None, folder.name, str(exc)
        builtin = folder.resolve().is_relative_to(config.builtin_plugins_dir().resolve()) or bool(
            manifest and manifest.python and manifest.python.startswith("plugins.")
        )
        record = PluginRecord(
            name=name, source=source, origin=str(folder), folder=folder, manifest=manifest,
            bundle=bundle, nested=nested, builtin=builtin and source == "platform",
        )
        existing = self._claim(record)
        if existing is not None:
            # A built-in reached as an entry point and as a folder: one plugin. The folder's
            # manifest (the payload's copy) describes the files; the module stays the entry point's.
            if manifest is not None and existing.status != "failed":
                existing.manifest = manifest
                existing.folder = folder
            return
        if reason:
            record.status, record.reason = "failed", reason
            return
        blocked = self._blocked_reason(name, record.builtin)
        if blocked:
            record.status, record.reason = "disabled", blocked
            self.pm.set_blocked(name)
            return
        if manifest and manifest.python:
            self._import_and_register(record, manifest.python, folder=folder)
        # else: a declarative plugin (a shared-lib MCP server, skills, agents): nothing to import.

    def _import_and_register(self, record: PluginRecord, module_name: str, *, loader: Any = None,
                             folder: Path | None = None) -> None:
        try:
            if loader is not None:
                module = loader()
            else:
                module = self._import_from_folder(module_name, folder) if folder else importlib.import_module(
                    module_name)
        except Exception as exc:
            record.status, record.reason = "failed", f"import failed: {_one_line(exc)}"
            log("plugins", "op=load-failed", plugin=record.name, reason=record.reason)
            return
        record.module = module
        if record.manifest is None:
            record.manifest = from_mapping({"name": record.name, "version": _dist_version(module)}, None)
        try:
            self.pm.register(module, name=record.name)
        except Exception as exc:  # pluggy validation: unknown hook, bad signature
            record.status, record.reason = "failed", f"hook validation failed: {_one_line(exc)}"
            record.module = None
            return
        self._modules[getattr(module, "__name__", module_name)] = record.name

    @staticmethod
    def _import_from_folder(module_name: str, folder: Path) -> ModuleType:
        """Import ``module_name`` from a plugin folder, falling back to the normal import system."""
        rel = Path(*module_name.split("."))
        for candidate in (folder / rel.with_suffix(".py"), folder / rel / "__init__.py"):
            if candidate.is_file():
                unique = f"plughost_ext_{folder.name.replace('-', '_')}_{module_name.replace('.', '_')}"
                spec = importlib.util.spec_from_file_location(unique, candidate)
                assert spec and spec.loader
                module = importlib.util.module_from_spec(spec)
                sys.modules[unique] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    sys.modules.pop(unique, None)
                    raise
                return module
        return importlib.import_module(module_name)

    # ------------------------------------------------------------------ registration in tests
    def register(self, plugin: Any, name: str, manifest: PluginManifest | None = None) -> PluginRecord:
        """Register an in-process plugin object (tests, embedding apps)."""
        record = PluginRecord(name=name, source="registered", origin=f"object:{name}", module=plugin,
                              manifest=manifest or from_mapping({"name": name}, None))
        self._claim(record)
        self.pm.register(plugin, name=name)
        self._surface = None
        return record

    def unregister(self, name: str) -> None:
        record = self.records.pop(name, None)
        if record and record.module is not None and self.pm.is_registered(record.module):
            self.pm.unregister(record.module)
        self._surface = None

    @contextmanager
    def temporary_plugin(self, plugin: Any, name: str, manifest: PluginManifest | None = None) -> Iterator[Any]:
        """Register a plugin for the duration of a ``with`` block (datasette-style tests)."""
        self.register(plugin, name, manifest)
        try:
            yield plugin
        finally:
            self.unregister(name)

    # ------------------------------------------------------------------ views
    def loaded(self) -> list[PluginRecord]:
        return [r for r in self.records.values() if r.loaded]

    def plugin(self, name: str) -> PluginRecord:
        record = self.records.get(name)
        if record is None:
            known = ", ".join(sorted(self.records)) or "none"
            raise UserError(f"plugin: '{name}' is not installed (known: {known})")
        return record

    @property
    def surface(self) -> Any:
        """The tool surface (SPEC 3), computed once from the loaded manifests."""
        if self._surface is None:
            from host.surface import compute_surface

            self._surface = compute_surface(self)
        return self._surface

    # ------------------------------------------------------------------ hooks
    def collect(self, hook_name: str, kind: type[T] | tuple[type, ...], *, unique: str = "global",
                **kwargs: Any) -> list[Contribution[T]]:
        """Call every implementation of a list hook, flatten, validate and reject duplicates.

        Each implementation is called on its own, so one plugin raising is recorded against
        that plugin (``host.hook_errors`` and a ``[plugins] op=hook-error`` line) while the others
        still contribute. ``unique="global"`` rejects two items with one ``key`` anywhere;
        ``"plugin"`` only within one plugin (tools: canonical names already carry the plugin).
        """
        self.load()
        hook = getattr(self.pm.hook, hook_name)
        out: list[Contribution[T]] = []
        seen: dict[Any, str] = {}
        impls = list(reversed(hook.get_hookimpls()))
        tracing = config.flag("PLUGHOST_TRACE_HOOKS", self.env)
        if tracing:
            self._trace_before(hook_name, impls, kwargs)
        for impl in impls:
            plugin = impl.plugin_name
            try:
                args = {a: kwargs[a] if a != "host" else self for a in impl.argnames if a in kwargs or a == "host"}
                result = impl.function(**args)
            except Exception as exc:
                self._hook_error(plugin, hook_name, exc)
                continue
            if result is None:
                continue
            items = result if isinstance(result, (list, tuple)) else [result]
            for item in items:
                if not isinstance(item, kind):
                    expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
                    self._hook_error(plugin, hook_name, TypeError(
                        f"returned {type(item).__name__}, expected {expected}"))
                    continue
                key = getattr(item, "key", None)
                scoped = (plugin, key) if unique == "plugin" else key
                if key is not None and scoped in seen:
                    raise DuplicateNameError(
                        f"{hook_name}: '{key}' is provided twice: by plugin '{seen[scoped]}' and by plugin '{plugin}'"
                    )
                if key is not None:
                    seen[scoped] = plugin
                out.append(Contribution(plugin, item))
        if tracing:
            self._trace_after(_Done(), hook_name, impls, kwargs)
        return out

    def call_each(self, hook_name: str, *, reverse: bool = False, **kwargs: Any) -> None:
        """Run every implementation of a notification hook (startup/shutdown), isolating failures."""
        self.load()
        impls = getattr(self.pm.hook, hook_name).get_hookimpls()
        for impl in (impls if reverse else list(reversed(impls))):
            try:
                impl.function(**{a: self if a == "host" else kwargs[a] for a in impl.argnames})
            except Exception as exc:
                self._hook_error(impl.plugin_name, hook_name, exc)

    def first(self, hook_name: str, **kwargs: Any) -> Any:
        """Call a firstresult hook with ``host`` filled in."""
        self.load()
        return getattr(self.pm.hook, hook_name)(host=self, **kwargs)

    def _hook_error(self, plugin: str, hook_name: str, exc: BaseException) -> None:
        reason = _one_line(exc)
        self.hook_errors.append((plugin, hook_name, reason))
        log("plugins", "op=hook-error", plugin=plugin, hook=hook_name, reason=reason)
        if config.flag("PLUGHOST_DEBUG", self.env):
            traceback.print_exception(exc)

    # ------------------------------------------------------------------ capabilities
    def store(self) -> Any:
        """The graph store from the ``plughost_store`` hook (cached)."""
        if self._store is None:
            self._store = self.first("plughost_store")
            if self._store is None:
                raise UserError("store: no plugin provides a graph store (is the graph plugin disabled?)")
        return self._store

    def embedder(self) -> Any:
        """The embedder from the ``plughost_embedder`` hook, or None when no provider is usable."""
        if self._embedder is None:
            self._embedder = self.first("plughost_embedder") or False
        return self._embedder or None

    def close(self) -> None:
        """Run shutdown hooks and close the store."""
        self.call_each("plughost_shutdown", reverse=True)
        if self._store is not None and hasattr(self._store, "close"):
            try:
                self._store.close()
            finally:
                self._store = None

    # ------------------------------------------------------------------ tracing
    def _trace_before(self, hook_name: str, impls: list[Any], kwargs: dict[str, Any]) -> None:
        self.state.setdefault("_trace_t0", []).append(time.perf_counter())
        log("hooks", "op=call", hook=hook_name, plugins=[i.plugin_name for i in impls])

    def _trace_after(self, outcome: Any, hook_name: str, impls: list[Any], kwargs: dict[str, Any]) -> None:
        t0 = self.state.get("_trace_t0", [time.perf_counter()]).pop()
        log("hooks", "op=return", hook=hook_name, ms=f"{(time.perf_counter() - t0) * 1000:.2f}",
            error=outcome.exception is not None)


class _Done:
    """A stand-in for pluggy's outcome object when ``collect`` traces its own calls."""

    exception = None


def _dist_version(module: Any) -> str:
    name = getattr(module, "__name__", "").split(".")[0]
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return getattr(module, "__version__", "0.0.0")
