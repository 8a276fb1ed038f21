"""The plugin manager: discovery, guarded loading and the one hook-result collector (docs/architecture.md#discovery, docs/architecture.md#hooks).

There is no global instance and nothing loads at import time: ``Host(...).load()`` builds one,
and tests build their own. Block and allow lists are applied by *name* before anything is
imported, so a disabled plugin's module never runs.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import os
import sys
import time
import traceback
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

import pluggy

from host import config, hookspecs, hooktable
from host import principal as principal_module
from host.errors import DuplicateNameError, FatalError, UserError
from host.hooktable import AnyHook, EachHook, ListHook, OneHook, ProviderHook
from host.log import log
from host.manifest import PluginManifest, from_mapping, load_manifest
from host.principal import Principal
from host.state import PluginState

if TYPE_CHECKING:  # pragma: no cover
    from host.embedding import Embedder
    from host.graph import GraphStore
    from host.surface import ToolSurface
    from host.tooltable import ToolTable

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
    status: str = "loaded"  # loaded | failed | disabled | excluded (by the install's brand)
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
        self.state = PluginState()
        self._surface: ToolSurface | None = None
        self._tools: ToolTable | None = None
        self._store: GraphStore | None = None
        self._embedder: Embedder | bool | None = None
        self._loaded = False
        self._modules: dict[str, str] = {}  # dotted module -> plugin name
        self._trace_t0: list[float] = []
        self._brand: tuple[str | None, list[str]] | None = None
        self._principal: tuple[tuple[str | None, ...], Principal] | None = None
        if config.flag("PLUGHOST_TRACE_HOOKS", self.env):
            self._trace_undo = self.pm.add_hookcall_monitoring(self._trace_before, self._trace_after)

    # ------------------------------------------------------------------ environment
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

    def _filters(self) -> tuple[set[str], list[str] | None, bool]:
        disabled = set(config.csv_list(self.env.get("PLUGHOST_DISABLE_PLUGINS")) or [])
        allow = config.csv_list(self.env.get("PLUGHOST_LOAD_PLUGINS"))
        return disabled, allow, config.flag("PLUGHOST_NO_EXTERNAL_PLUGINS", self.env)

    def check_plugin_lists(self) -> None:
        """A UserError naming the first block/allow-list entry that no discovered plugin has.

        The lists are applied by name before any import, so a misspelt name would otherwise block
        nothing (``PLUGHOST_DISABLE_PLUGINS``) or everything (``PLUGHOST_LOAD_PLUGINS``) in silence.
        ``PLUGHOST_LOAD_PLUGINS=none`` loads no plugin.
        """
        self.load()
        known = sorted(self.records)
        for var in ("PLUGHOST_LOAD_PLUGINS", "PLUGHOST_DISABLE_PLUGINS"):
            for name in config.csv_list(self.env.get(var)) or []:
                if name in self.records or (var == "PLUGHOST_LOAD_PLUGINS" and name == "none"):
                    continue
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean '{close[0]}'? " if close else ""
                raise UserError(f"{var}: no plugin named '{name}' ({hint}known: {', '.join(known) or 'none'})")

    def check_provider_choices(self) -> None:
        """A UserError when ``PLUGHOST_STORE`` / ``PLUGHOST_EMBEDDER`` names neither a provider
        plugin nor a built-in option (checked at boot, not first at the first store call)."""
        for hook in hooktable.PROVIDERS:
            chosen = (self.env.get(hook.env) or "").strip()
            providers = sorted(i.plugin_name for i in self._providers(hook))
            if not chosen or chosen in providers or chosen.lower() in hook.builtin_options:
                continue
            close = difflib.get_close_matches(chosen, [*hook.builtin_options, *providers], n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise UserError(f"{hook.env}: no {hook.what} named '{chosen}' ({hint}expected a built-in option: "
                            f"{', '.join(hook.builtin_options)}; or a provider plugin: {', '.join(providers) or 'none'})")

    def brand_exclusions(self) -> tuple[str | None, list[str]]:
        """(brand, `plugins.excluded`) of this install's brand: `PLUGHOST_BRAND`, else the payload's
        `brand.json` beside the plugins folder. What a brand excludes does not load (docs/payload.md#brands)."""
        if self._brand is None:
            from host.specialists import find_brand

            payload_root = Path(self.plugins_dir).parent if self.plugins_dir is not None else None
            self._brand = find_brand(self.env.get("PLUGHOST_BRAND") or None, self.env, payload_root)
        return self._brand

    def _blocked_reason(self, name: str, builtin: bool) -> str | None:
        disabled, allow, no_external = self._filters()
        brand, excluded = self.brand_exclusions()
        if name in excluded:
            return f"excluded by brand '{brand}' (plugins.excluded)"
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
            record.status, record.reason = ("excluded" if reason.startswith("excluded by brand") else "disabled"), reason
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
        self._import_and_register(record, ep.module, loader=ep.load, dist=dist)

    def _load_folder(self, folder: Path, *, source: str, bundle: str | None = None, nested: bool = False) -> None:
        md = folder / "PLUGIN.md"
        try:
            found = load_manifest(md)
            manifest: PluginManifest | None = found
            name, reason = found.name, None
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
            record.status, record.reason = ("excluded" if blocked.startswith("excluded by brand") else "disabled"), blocked
            self.pm.set_blocked(name)
            return
        if manifest and manifest.python:
            self._import_and_register(record, manifest.python, folder=folder)
        # else: a declarative plugin (a shared-lib MCP server, skills, agents): nothing to import.

    def _import_and_register(self, record: PluginRecord, module_name: str, *, loader: Any = None,
                             folder: Path | None = None, dist: Any = None) -> None:
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
            record.manifest = from_mapping({"name": record.name, "version": _dist_version(module, dist)}, None)
        problem = self._register_checked(module, record.name)
        if problem:
            record.status, record.reason = "failed", problem
            record.module = None
            log("plugins", "op=load-failed", plugin=record.name, reason=problem)
            return
        self._modules[getattr(module, "__name__", module_name)] = record.name

    def _register_checked(self, module: Any, name: str) -> str | None:
        """Register one plugin with pluggy; its failure reason, or None once registered and isolated.

        pluggy validates signatures at register time; a hook name with no spec (a misspelling)
        is only caught by ``check_pending``, which we run for this plugin alone so one plugin's
        typo fails that plugin, not the host.
        """
        try:
            self.pm.register(module, name=name)
        except Exception as exc:  # pluggy validation: bad signature, wrapper not a generator
            return f"hook validation failed: {_one_line(exc)}"
        callers = self.pm.get_hookcallers(module) or []
        unknown = sorted(c.name for c in callers if c.spec is None
                         and not all(i.optionalhook for i in c.get_hookimpls() if i.plugin is module))
        if unknown:
            self.pm.unregister(module)
            hints = []
            for hook_name in unknown:
                close = difflib.get_close_matches(hook_name, list(hooktable.TABLE), n=1)
                hints.append(f"'{hook_name}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
            return f"hook validation failed: unknown hook {', '.join(hints)}"
        for caller in callers:
            kind = hooktable.TABLE.get(caller.name)
            if not isinstance(kind, (ListHook, EachHook)):
                continue
            for impl in caller.get_hookimpls():
                if impl.plugin is not module or impl.hookwrapper:
                    continue
                isolate = _isolated_wrapper if impl.wrapper else _isolated
                # pluggy types HookImpl.function as Final; replacing it once, right after
                # registration and before any call, is what puts isolation inside pluggy's loop.
                impl.function = isolate(impl.function, name, caller.name, self.env)  # type: ignore[misc]
        return None

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
        problem = self._register_checked(plugin, name)
        if problem:
            self.records.pop(name, None)
            raise UserError(f"plugin '{name}': {problem}")
        self._surface = self._tools = None
        return record

    def unregister(self, name: str) -> None:
        record = self.records.pop(name, None)
        if record and record.module is not None and self.pm.is_registered(record.module):
            self.pm.unregister(record.module)
        self._surface = self._tools = None

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
    def surface(self) -> ToolSurface:
        """The tool surface (docs/architecture.md#tool-surface), computed once from the loaded manifests."""
        if self._surface is None:
            from host.surface import compute_surface

            self._surface = compute_surface(self)
        return self._surface

    def tools(self) -> ToolTable:
        """The tool table (declarations joined with handlers), built once; see :mod:`host.tooltable`."""
        if self._tools is None:
            from host.tooltable import build_tool_table

            self.load()
            self._tools = build_tool_table(self)
        return self._tools

    # ------------------------------------------------------------------ hooks
    def collect(self, hook: ListHook[T], **kwargs: Any) -> Collected[T]:
        """Call a list hook through pluggy; flatten, attribute and de-duplicate the answers.

        Each implementation is isolated: one raising (or returning the wrong type) is an error
        of that plugin, in the result's ``errors`` and a ``[plugins] op=hook-error`` line, while
        the others still contribute. ``unique="global"`` rejects two items with one ``key``
        anywhere; ``"plugin"`` only within one plugin (tools: canonical names carry the plugin).
        """
        self.load()
        sink = _CallSink()
        token = _SINK.set(sink)
        try:
            answers = getattr(self.pm.hook, hook.name)(host=self, **kwargs)
        finally:
            _SINK.reset(token)
        out: list[Contribution[T]] = []
        seen: dict[Any, str] = {}
        for answer in answers or ():
            plugin = answer.plugin if isinstance(answer, _Answer) else "?"
            for item in answer if isinstance(answer, (list, tuple)) else [answer]:
                if not isinstance(item, hook.kind):
                    sink.error(plugin, hook.name, TypeError(
                        f"returned {type(item).__name__}, expected {hook.kind.__name__}"), self.env)
                    continue
                key = getattr(item, "key", None)
                scoped = (plugin, key) if hook.unique == "plugin" else key
                if key is not None and scoped in seen:
                    raise DuplicateNameError(
                        f"{hook.name}: '{key}' is provided twice: by plugin '{seen[scoped]}' and by plugin '{plugin}'"
                    )
                if key is not None:
                    seen[scoped] = plugin
                out.append(Contribution(plugin, item))
        return Collected(out, sink.errors)

    def call_each(self, hook: EachHook, **kwargs: Any) -> list[HookError]:
        """Run every implementation of a notification hook (startup/shutdown); return their failures."""
        self.load()
        sink = _CallSink()
        token = _SINK.set(sink)
        try:
            caller = getattr(self.pm.hook, hook.name)
            if hook.reverse:  # registration order: pluggy calls the last registered first
                caller = _Reversed(self.pm, hook.name)
            caller(host=self, **kwargs)
        finally:
            _SINK.reset(token)
        return sink.errors

    def first(self, hook: OneHook[T], **kwargs: Any) -> T | None:
        """Call a firstresult hook with ``host`` filled in; the first non-None answer or None."""
        self.load()
        answer: T | None = getattr(self.pm.hook, hook.name)(host=self, **kwargs)
        return answer

    def has_implementations(self, hook: AnyHook) -> bool:
        """Whether any loaded plugin implements ``hook`` (wrappers not counted)."""
        self.load()
        impls = getattr(self.pm.hook, hook.name).get_hookimpls()
        return any(not (i.wrapper or i.hookwrapper) for i in impls)

    def provide(self, hook: ProviderHook[T]) -> T | None:
        """Ask a single-provider capability hook, choosing who answers deterministically.

        The operator's choice (``hook.env`` naming a plugin that implements the hook) answers
        alone. Otherwise (unset, or a provider's own option such as ``PLUGHOST_STORE=sqlite``)
        an external plugin is asked before the built-ins, whatever the names sort to; two
        external providers are an error naming both. The first non-None answer wins.
        """
        providers = self._providers(hook)
        for name in self.provider_order(hook):
            others = [i.plugin for i in providers if i.plugin_name != name]  # their wrappers stay
            answer: T | None = self.pm.subset_hook_caller(hook.name, remove_plugins=others)(host=self)
            if answer is not None:
                log("plugins", "op=provider", hook=hook.name, plugin=name) if self._verbose() else None
                return answer
        return None

    def provider_order(self, hook: ProviderHook[Any]) -> list[str]:
        """The plugins :meth:`provide` asks, in order; a UserError naming both when two externals compete."""
        providers = [i.plugin_name for i in self._providers(hook)]
        chosen = (self.env.get(hook.env) or "").strip()
        if chosen in providers:
            return [chosen]
        builtin = [name for name in providers if self._is_builtin(name)]
        external = [name for name in providers if name not in builtin]
        if builtin and chosen.lower() in hook.builtin_options:  # a built-in's own setting: it answers
            return list(reversed(builtin))
        if len(external) > 1:
            raise UserError(
                f"{hook.what}: plugins {' and '.join(repr(n) for n in sorted(external))} both provide one; "
                f"choose with {hook.env}=<plugin>"
            )
        return external + list(reversed(builtin))

    def _providers(self, hook: AnyHook) -> list[Any]:
        self.load()
        return [i for i in getattr(self.pm.hook, hook.name).get_hookimpls() if not (i.wrapper or i.hookwrapper)]

    def _is_builtin(self, plugin: str) -> bool:
        record = self.records.get(plugin)
        return bool(record and record.builtin)

    def _verbose(self) -> bool:
        return config.flag("PLUGHOST_VERBOSE", self.env)

    # ------------------------------------------------------------------ capabilities
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

    def close(self) -> None:
        """Run shutdown hooks and close the store."""
        self.call_each(hooktable.SHUTDOWN)
        if self._store is not None and hasattr(self._store, "close"):
            try:
                self._store.close()
            finally:
                self._store = None

    # ------------------------------------------------------------------ tracing
    def _trace_before(self, hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        self._trace_t0.append(time.perf_counter())
        log("hooks", "op=call", hook=hook_name, plugins=list(dict.fromkeys(i.plugin_name for i in reversed(impls))))

    def _trace_after(self, outcome: Any, hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        t0 = self._trace_t0.pop() if self._trace_t0 else time.perf_counter()
        log("hooks", "op=return", hook=hook_name, ms=f"{(time.perf_counter() - t0) * 1000:.2f}",
            error=outcome.exception is not None)


class HookError(NamedTuple):
    """One plugin's failure inside one hook call."""

    plugin: str
    hook: str
    reason: str

    @property
    def fatal(self) -> bool:
        """A FatalError: a check meant to refuse boot, not a failure to isolate."""
        return False


class FatalHookError(HookError):
    """A hook implementation that raised :class:`~host.errors.FatalError` (compares as a HookError)."""

    __slots__ = ()

    @property
    def fatal(self) -> bool:
        return True


@dataclass
class Collected(Generic[T]):
    """A list hook's answers (in call order) and the failures of the plugins that did not answer."""

    contributions: list[Contribution[T]]
    errors: list[HookError]

    def __iter__(self) -> Iterator[Contribution[T]]:
        return iter(self.contributions)

    def __len__(self) -> int:
        return len(self.contributions)

    def items(self, plugin: str | None = None) -> list[T]:
        """The items, optionally only those one plugin returned."""
        return [c.item for c in self.contributions if plugin is None or c.plugin == plugin]


@dataclass
class _CallSink:
    """Per-call collection point for isolated implementations' failures."""

    errors: list[HookError] = field(default_factory=list)

    def error(self, plugin: str, hook_name: str, exc: BaseException, env: Mapping[str, str]) -> None:
        reason = _one_line(exc)
        kind = FatalHookError if isinstance(exc, FatalError) else HookError
        self.errors.append(kind(plugin, hook_name, reason))
        log("plugins", "op=hook-error", plugin=plugin, hook=hook_name, reason=reason)
        if config.flag("PLUGHOST_DEBUG", env):
            traceback.print_exception(exc)


_SINK: ContextVar[_CallSink | None] = ContextVar("plughost_hook_sink", default=None)


def _sink() -> _CallSink:
    return _SINK.get() or _CallSink()  # a direct pm.hook call: errors are only logged


class _Answer(list[Any]):
    """One implementation's answer to a list hook: a list that remembers the plugin it came from.

    Wrappers see (and may edit) ordinary lists; an answer a wrapper makes up is its own.
    """

    def __init__(self, plugin: str, items: Any) -> None:
        super().__init__(items if isinstance(items, (list, tuple)) else [items])
        self.plugin = plugin


def _claim(plugin: str, answers: Any) -> Any:
    if not isinstance(answers, list):
        return answers
    return [a if isinstance(a, _Answer) else _Answer(plugin, a) for a in answers]


def _isolated(fn: Callable[..., Any], plugin: str, hook_name: str, env: Mapping[str, str]) -> Callable[..., Any]:
    """An implementation that records its failure instead of aborting the hook call."""

    def call(*args: Any, **kwargs: Any) -> Any:
        sink = _sink()
        try:
            answer = fn(*args, **kwargs)
        except Exception as exc:
            sink.error(plugin, hook_name, exc, env)
            return None
        return None if answer is None else _Answer(plugin, answer)

    return call


def _isolated_wrapper(fn: Callable[..., Any], plugin: str, hook_name: str,
                      env: Mapping[str, str]) -> Callable[..., Any]:
    """A ``wrapper=True`` implementation whose failure leaves the result as it was."""

    def wrap(*args: Any, **kwargs: Any) -> Generator[None, Any, Any]:
        sink = _sink()
        try:
            gen = fn(*args, **kwargs)
            next(gen)
        except Exception as exc:  # failed before yielding (or did not yield)
            sink.error(plugin, hook_name, exc if not isinstance(exc, StopIteration)
                       else RuntimeError("wrapper did not yield"), env)
            return (yield)
        try:
            result = yield
        except BaseException as exc:  # an unisolated failure inside: the wrapper may handle it
            try:
                gen.throw(exc)
            except StopIteration as stop:
                return _claim(plugin, stop.value)
            raise RuntimeError(f"{hook_name}: wrapper of plugin '{plugin}' yielded twice") from None
        try:
            gen.send(result)
        except StopIteration as stop:
            return _claim(plugin, stop.value)
        except Exception as exc:
            sink.error(plugin, hook_name, exc, env)
            return result
        gen.close()
        sink.error(plugin, hook_name, RuntimeError("wrapper yielded twice"), env)
        return result

    return wrap


class _Reversed:
    """Call a hook's implementations in registration order (pluggy calls them newest first)."""

    def __init__(self, pm: pluggy.PluginManager, name: str) -> None:
        self.pm, self.name = pm, name

    def __call__(self, **kwargs: Any) -> Any:
        caller = getattr(self.pm.hook, self.name)
        impls = list(reversed([i for i in caller.get_hookimpls() if not (i.wrapper or i.hookwrapper)]))
        wrappers = [i for i in caller.get_hookimpls() if i.wrapper or i.hookwrapper]
        return self.pm._hookexec(self.name, impls + wrappers, kwargs, False)


def _dist_version(module: Any, dist: Any = None) -> str:
    """The version of the distribution that declares the entry point (a module's name need not be
    its distribution's); else the distribution owning the module's top package; else ``__version__``."""
    if dist is not None and getattr(dist, "version", None):
        return str(dist.version)
    top = getattr(module, "__name__", "").split(".")[0]
    for name in importlib.metadata.packages_distributions().get(top, []):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return getattr(module, "__version__", "0.0.0")
