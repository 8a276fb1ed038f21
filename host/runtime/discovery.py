"""Plugin discovery: entry points, PLUGIN.md folders and premium bundles, filtered by name first.

Block and allow lists and the brand's exclusions are applied by *name* before anything is
imported, so a disabled plugin's module never runs. Each plugin is registered with pluggy alone
and checked alone (``check_pending`` for that plugin), so one plugin's typo fails that plugin.
The built-ins are registered first and every external plugin after them (entry points, then
platform folders, then premium bundles, each by name): pluggy asks the last registered first, so
an external plugin is asked before the built-ins whatever its name (docs/hooks.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from plughost.runtime import entry_points, hooktable, hostrange, legacy
from plughost.runtime.hooktable import EachHook, ListHook
from plughost.runtime.isolation import isolate, isolate_wrapper, one_line
from plughost.runtime.manifest import PluginManifest, code_declaration, from_mapping, load_manifest
from plughost.util import config, settings
from plughost.util.errors import DuplicateNameError, UserError
from plughost.util.log import log

ENTRY_POINT_GROUP = "plughost.plugins"


PLUGIN_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
"""A plugin's name (plugin.schema.json's ``name``): what an entry point's name must be too."""


def shared_modules(eps: list[Any],
                   name_of: Callable[[Any], str | None] = lambda d: getattr(d, "name", None)) -> dict[str, list[str]]:
    """Entry-point targets more than one entry point names (target → the names): ambiguous, so none
    of them is loaded (a second distribution cannot take over an installed plugin's module)."""
    names: dict[str, list[str]] = {}
    for ep in eps:
        names.setdefault(ep.value, []).append(f"{ep.name} ({name_of(getattr(ep, 'dist', None)) or '?'})")
    return {value: found for value, found in names.items() if len(found) > 1}


class _Refused(Exception):
    """A record :meth:`Discovery._claim` refused (already recorded as failed)."""


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
            "provides": list(m.provides) if m else [],
            "needs": list(m.needs) if m else [],
            "status": self.status,
            "reason": self.reason,
            "bundle": self.bundle,
        }


class Discovery:
    """What one host found and loaded: its records by name and the modules they came from."""

    def __init__(self, pm: pluggy.PluginManager, env: Mapping[str, str], *, plugins_dir: Path | None,
                 premium_dir: Path | None, entry_points: bool) -> None:
        self.pm, self.env = pm, env
        self.plugins_dir, self.premium_dir, self.entry_points = plugins_dir, premium_dir, entry_points
        self.records: dict[str, PluginRecord] = {}
        self._loaded = False
        self._shared: dict[str, list[str]] = {}
        self._modules: dict[str, str] = {}  # dotted module -> plugin name
        self._brand: tuple[str | None, list[str]] | None = None
        self._frontmatters: dict[str, dict[str, Any]] = {}  # PLUGIN.md frontmatter text -> its validated mapping
        self._dist_names: dict[int, tuple[Any, str]] = {}  # id(distribution) -> (it, its name)

    def _dist_name(self, dist: Any) -> str | None:
        """A distribution's name, read once per distribution object: ``Distribution.name`` parses its
        METADATA on every read, and the entry points of one distribution share one object."""
        if dist is None:
            return None
        cached = self._dist_names.get(id(dist))
        if cached is None or cached[0] is not dist:
            cached = self._dist_names[id(dist)] = (dist, str(dist.name))
        return cached[1]

    def _filters(self) -> tuple[set[str], list[str] | None, bool]:
        disabled = set(settings.DISABLE_PLUGINS.read(self.env) or [])
        allow = settings.LOAD_PLUGINS.read(self.env)
        return disabled, allow, settings.NO_EXTERNAL_PLUGINS.read(self.env)

    def check_plugin_lists(self) -> None:
        """A UserError naming the first block/allow-list entry that no discovered plugin has.

        The lists are applied by name before any import, so a misspelt name would otherwise block
        nothing (``PLUGHOST_DISABLE_PLUGINS``) or everything (``PLUGHOST_LOAD_PLUGINS``) in silence.
        ``PLUGHOST_LOAD_PLUGINS=none`` loads no plugin.
        """
        self.load()
        known = sorted(self.records)
        for setting in (settings.LOAD_PLUGINS, settings.DISABLE_PLUGINS):
            for name in setting.read(self.env) or []:
                if name in self.records or (setting is settings.LOAD_PLUGINS and name == "none"):
                    continue
                import difflib

                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean '{close[0]}'? " if close else ""
                raise UserError(f"{setting.name}: no plugin named '{name}' ({hint}known: {', '.join(known) or 'none'})")

    def brand_exclusions(self) -> tuple[str | None, list[str]]:
        """(brand, `plugins.excluded`) of this install's brand (:func:`plughost.runtime.install_brand.install_brand`:
        `PLUGHOST_BRAND`, the payload's `brand.json`, the install record). What a brand excludes does not
        load (docs/payload.md#brands); a brand that cannot be read excludes nothing here and is the
        `install-brand` gate's finding."""
        if self._brand is None:
            from plughost.runtime.install_brand import install_brand

            found = install_brand(self.env, self.plugins_dir)
            self._brand = (found.name, found.excluded)
        return self._brand

    def ignore_brand(self) -> None:
        """Load what this install's brand excludes too (a check of given plugins, not a serving host)."""
        self._brand = (None, [])

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

    def load(self) -> Discovery:
        """Discover and load every plugin once."""
        if self._loaded:
            return self
        self._loaded = True
        legacy.install()  # plugins written for 0.1 import `host...`: served, with a warning, until 0.3
        eps: list[Any] = []  # importlib.metadata.EntryPoint, or entry_points.OwnEntryPoint
        if self.entry_points:
            eps = sorted(entry_points.entry_points(ENTRY_POINT_GROUP), key=lambda e: e.name)
            self._shared = shared_modules(eps, self._dist_name)
        folders: list[Path] = []
        if self.plugins_dir and self.plugins_dir.is_dir():
            folders = sorted(p for p in self.plugins_dir.iterdir() if (p / "PLUGIN.md").is_file())
        # Pluggy asks the last registered first: the built-ins are registered before every external
        # plugin (entry point, folder, premium; each kind by name), so any external one is asked first.
        builtin_eps = [ep for ep in eps if self._dist_name(getattr(ep, "dist", None)) == "plughost"]
        builtin_folders = [f for f in folders if self._builtin_folder(f)]
        for ep in builtin_eps:
            self._load_entry_point(ep)
        for folder in builtin_folders:
            self._load_folder(folder, source="platform")
        for ep in eps:
            if ep not in builtin_eps:
                self._load_entry_point(ep)
        for folder in folders:
            if folder not in builtin_folders:
                self._load_folder(folder, source="platform")
        self._load_premium()
        if settings.VERBOSE.read(self.env):
            statuses = [r.status for r in self.records.values()]
            log("plugins", "op=loaded", count=statuses.count("loaded"), failed=statuses.count("failed"),
                disabled=statuses.count("disabled"))
        return self

    def _load_premium(self) -> None:
        """The premium bundles' plugins, after every other: a bundle's own PLUGIN.md, or its plugins/ folder."""
        if not (self.premium_dir and self.premium_dir.is_dir()):
            return
        for top in sorted(p for p in self.premium_dir.iterdir() if p.is_dir()):
            if (top / "PLUGIN.md").is_file():
                self._load_folder(top, source="premium", bundle=top.name)
            elif (top / "plugins").is_dir():
                for sub in sorted(p for p in (top / "plugins").iterdir() if (p / "PLUGIN.md").is_file()):
                    self._load_folder(sub, source="premium", bundle=top.name, nested=True)

    def _claim(self, record: PluginRecord) -> PluginRecord | None:
        """Register a record under its name; the same plugin reached twice merges. A second, different
        plugin claiming a taken name fails alone (the first keeps it), naming both sources; the
        :class:`DuplicateNameError` it carries is its reason."""
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
        clash = DuplicateNameError(
            f"plugin name '{record.name}' is claimed by two sources: {existing.origin} and {record.origin} "
            f"(the second is not loaded; rename it)")
        record.status, record.reason = "failed", str(clash)
        self.records[f"{record.name}@{record.origin}"] = record  # listed and reported, never loaded
        log("plugins", "op=load-failed", plugin=record.name, reason=str(clash))
        raise _Refused from None

    def _load_entry_point(self, ep: Any) -> None:
        dist = getattr(ep, "dist", None)
        builtin = self._dist_name(dist) == "plughost"
        record = PluginRecord(name=ep.name, source="entry-point", origin=f"module:{ep.value}", builtin=builtin)
        where = f"entry point '{ep.name} = {ep.value}' of the distribution {self._dist_name(dist) or '?'}"
        if not PLUGIN_NAME.fullmatch(ep.name):
            self._refuse(record, f"{where}: name: expected lower-case letters, digits and single '-' (a plugin's name)")
            return
        others = [n for n in self._shared.get(ep.value, ()) if not n.startswith(f"{ep.name} (")]
        if others:
            self._refuse(record, f"{where}: its module is also the entry point {', '.join(others)}; "
                                 "one module is one plugin (none of them loads until one is removed)")
            return
        try:
            self._claim(record)
        except _Refused:
            return
        reason = self._blocked_reason(ep.name, builtin)
        if reason:
            record.status, record.reason = ("excluded" if reason.startswith("excluded by brand") else "disabled"), reason
            self.pm.set_blocked(ep.name)
            return
        try:
            spec = importlib.util.find_spec(ep.module)
        except Exception as exc:  # a broken parent package
            record.status, record.reason = "failed", f"import failed: {one_line(exc)}"
            return
        if spec and spec.origin and spec.origin not in ("built-in", "frozen"):
            record.folder = Path(spec.origin).resolve().parent
            md = record.folder / "PLUGIN.md"
            if md.is_file():
                try:
                    record.manifest = load_manifest(md, self._frontmatters)
                except UserError as exc:
                    record.status, record.reason = "failed", str(exc)
                    return
        if not builtin and self._refused_host(record, dist):
            return
        self._import_and_register(record, ep.module, loader=ep.load, dist=dist)

    def _load_folder(self, folder: Path, *, source: str, bundle: str | None = None, nested: bool = False) -> None:
        md = folder / "PLUGIN.md"
        try:
            found = load_manifest(md, self._frontmatters)
            manifest: PluginManifest | None = found
            name, reason = found.name, None
        except UserError as exc:
            manifest, name, reason = None, folder.name, str(exc)
        builtin = self._is_builtin(folder, manifest)
        record = PluginRecord(
            name=name, source=source, origin=str(folder), folder=folder, manifest=manifest,
            bundle=bundle, nested=nested, builtin=builtin and source == "platform",
        )
        try:
            existing = self._claim(record)
        except _Refused:
            return
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
        elif manifest:
            self._refused_host(record)
        # else: a declarative plugin (a shared-lib MCP server, skills, agents): nothing to import.

    @staticmethod
    def _is_builtin(folder: Path, manifest: PluginManifest | None) -> bool:
        """A platform folder holding one of plughost's own plugins (its module is ``plughost.plugins.*``)."""
        return folder.resolve().is_relative_to(config.builtin_plugins_dir().resolve()) or bool(
            manifest and manifest.python and manifest.python.startswith("plughost.plugins."))

    def _builtin_folder(self, folder: Path) -> bool:
        """Whether a platform folder is a built-in's, read before any is loaded (to register those first)."""
        try:
            return self._is_builtin(folder, load_manifest(folder / "PLUGIN.md", self._frontmatters))
        except UserError:
            return self._is_builtin(folder, None)  # loaded in its turn, and failed there

    def _refuse(self, record: PluginRecord, reason: str) -> None:
        """Fail a plugin that cannot be registered under its own name: listed and reported, never loaded."""
        record.status, record.reason = "failed", reason
        self.records[record.name if record.name not in self.records else f"{record.name}@{record.origin}"] = record
        log("plugins", "op=load-failed", plugin=record.name, reason=reason)

    def _refused_host(self, record: PluginRecord, dist: Any = None) -> bool:
        """Fail ``record`` alone, before its import, when PLUGIN.md's ``requires-plughost`` or its
        distribution's requirement on plughost excludes this host; True when refused."""
        try:
            problem = hostrange.problem(record.manifest.requires_plughost if record.manifest else None)
            if problem is None and dist is not None:
                problem = hostrange.problem(hostrange.of_distribution(dist))
        except UserError as exc:  # a Requires-Dist on plughost that does not parse
            problem = str(exc)
        if problem is None:
            return False
        record.status, record.reason = "failed", problem
        log("plugins", "op=load-failed", plugin=record.name, reason=problem)
        return True

    def _import_and_register(self, record: PluginRecord, module_name: str, *, loader: Any = None,
                             folder: Path | None = None, dist: Any = None) -> None:
        if folder is not None and self._refused_host(record):
            return
        try:
            with legacy.loading(record.name):
                if loader is not None:
                    module = loader()
                else:
                    module = self._import_from_folder(module_name, folder) if folder else importlib.import_module(
                        module_name)
        except Exception as exc:
            record.status, record.reason = "failed", f"import failed: {one_line(exc)}"
            log("plugins", "op=load-failed", plugin=record.name, reason=record.reason)
            return
        record.module = module
        if record.manifest is None:  # declared in code: its PROVIDES/NEEDS attributes are the declaration
            try:
                declared = code_declaration(module, record.origin)
            except UserError as exc:
                record.status, record.reason, record.module = "failed", str(exc), None
                log("plugins", "op=load-failed", plugin=record.name, reason=record.reason)
                return
            record.manifest = from_mapping({"name": record.name, "version": dist_version(module, dist), **declared},
                                           None)
        problem = self._register_checked(module, record.name)
        if problem:
            record.status, record.reason = "failed", problem
            record.module = None
            log("plugins", "op=load-failed", plugin=record.name, reason=problem)
            return
        self._modules[getattr(module, "__name__", module_name)] = record.name
        legacy.claim(getattr(module, "__name__", module_name), record.name)

    def _register_checked(self, module: Any, name: str) -> str | None:
        """Register one plugin with pluggy; its failure reason, or None once registered and isolated.

        pluggy validates signatures at register time; a hook name with no spec (a misspelling)
        is only caught by ``check_pending``, which we run for this plugin alone so one plugin's
        typo fails that plugin, not the host.
        """
        try:
            self.pm.register(module, name=name)
        except Exception as exc:  # pluggy validation: bad signature, wrapper not a generator
            return f"hook validation failed: {one_line(exc)}"
        callers = self.pm.get_hookcallers(module) or []
        unknown = sorted(c.name for c in callers if c.spec is None
                         and not all(i.optionalhook for i in c.get_hookimpls() if i.plugin is module))
        if unknown:
            self.pm.unregister(module)
            import difflib

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
                wrap = isolate_wrapper if impl.wrapper else isolate
                # pluggy types HookImpl.function as Final; replacing it once, right after
                # registration and before any call, is what puts isolation inside pluggy's loop.
                impl.function = wrap(impl.function, name, caller.name, self.env)  # type: ignore[misc]
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

    def register(self, plugin: Any, name: str, manifest: PluginManifest | None = None) -> PluginRecord:
        """Register an in-process plugin object (tests, embedding apps)."""
        record = PluginRecord(name=name, source="registered", origin=f"object:{name}", module=plugin,
                              manifest=manifest or from_mapping(
                                  {"name": name, **code_declaration(plugin, f"object:{name}")}, None))
        self._claim(record)
        problem = self._register_checked(plugin, name)
        if problem:
            self.records.pop(name, None)
            raise UserError(f"plugin '{name}': {problem}")
        return record

    def unregister(self, name: str) -> None:
        record = self.records.pop(name, None)
        if record and record.module is not None and self.pm.is_registered(record.module):
            self.pm.unregister(record.module)


def dist_version(module: Any, dist: Any = None) -> str:
    """The version of the distribution that declares the entry point (a module's name need not be
    its distribution's); else the distribution owning the module's top package; else ``__version__``."""
    if dist is not None and getattr(dist, "version", None):
        return str(dist.version)
    import importlib.metadata

    top = getattr(module, "__name__", "").split(".")[0]
    for name in importlib.metadata.packages_distributions().get(top, []):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return getattr(module, "__version__", "0.0.0")
