"""The import names plugins were told to use before 0.2 (``host``, ``host.runtime.hookspecs``, ...),
served from plughost until 0.3 so an old plugin keeps loading, each use warning with the new import.

Why a meta-path finder and not a ``host`` package: the distribution claims no top-level import name
but ``plughost``. The finder sits at the *end* of ``sys.meta_path``, so any real ``host`` on sys.path
(a user's own package) wins, and only plughost installs it, before it loads plugins (discovery):
``import plughost`` stays cheap and a plain ``python -c 'import host'`` finds nothing.

A use is a name read from an old module. It warns once per file and name (``DeprecationWarning`` at
the plugin's line) and, when discovery says whose import it is, logs once per plugin and name:
``[plugins] op=deprecated plugin=NAME old=... new=...`` (Python hides a plugin's
DeprecationWarning by default; the log line is what an author sees).
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import importlib.abc
import importlib.util
import sys
import threading
import types
import warnings
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from typing import Any

from plughost.util.log import log

REMOVED_IN = "0.3"

# old module -> the module its names live in now: every module the README, the examples and
# docs/hooks.md told plugin authors to import, in 0.1 (flat host/) and until 0.2 (host/ in rooms)
MODULES: dict[str, str] = {
    "host": "plughost",
    "host.hookspecs": "plughost.runtime.hookspecs",
    "host.types": "plughost.runtime.types",
    "host.log": "plughost.util.log",
    "host.mcp_server": "plughost.mcp.server",
    "host.runtime": "plughost.runtime",
    "host.runtime.hookspecs": "plughost.runtime.hookspecs",
    "host.runtime.types": "plughost.runtime.types",
    "host.runtime.state": "plughost.runtime.state",
    "host.mcp": "plughost.mcp",
    "host.mcp.server": "plughost.mcp.server",
    "host.util": "plughost.util",
    "host.util.log": "plughost.util.log",
    "host.util.settings": "plughost.util.settings",
    "host.util.errors": "plughost.util.errors",
    "host.ports": "plughost.ports",
    "host.ports.graph": "plughost.ports.graph",
    "host.ports.embedding": "plughost.ports.embedding",
}
_PACKAGES = {name.rpartition(".")[0] for name in MODULES} - {""}

_loading: contextvars.ContextVar[str | None] = contextvars.ContextVar("plughost_legacy_loading", default=None)
_owners: dict[str, str] = {}  # module name -> plugin, for uses after the import (inside a hook)
_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()  # (file, old name)
_logged: set[tuple[str, str]] = set()  # (plugin, old name)


class _Alias(types.ModuleType):
    """An old module: reading a name resolves it in the new module and reports the use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # probes (__wrapped__, __path__, ...) are no use of an old name
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        sub = f"{self.__name__}.{name}"
        if sub in MODULES:  # `host.runtime` read off `host`: the old submodule, as a package gave it
            return importlib.import_module(sub)
        real = MODULES[self.__name__]
        try:
            value = getattr(importlib.import_module(real), name)
        except AttributeError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None
        _used(sub, new_import(real, name, value))
        return value

    def __dir__(self) -> list[str]:
        real = importlib.import_module(MODULES[self.__name__])
        return sorted(getattr(real, "__all__", None) or [n for n in dir(real) if not n.startswith("_")])


class _Finder(importlib.abc.Loader):
    """Serves the modules of :data:`MODULES`, and a submodule only under an alias parent."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname not in MODULES:
            return None
        parent = fullname.rpartition(".")[0]
        if parent and not isinstance(sys.modules.get(parent), _Alias):
            return None  # under someone's real `host`: theirs to answer
        return importlib.util.spec_from_loader(fullname, self, is_package=fullname in _PACKAGES)

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        return _Alias(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__doc__ = f"Deprecated: the names of {MODULES[module.__name__]} (removed in plughost {REMOVED_IN})."


_FINDER = _Finder()


def install() -> None:
    """Append the finder to ``sys.meta_path`` once; after every real finder, so a real ``host`` wins."""
    with _lock:
        if _FINDER not in sys.meta_path:
            sys.meta_path.append(_FINDER)


@contextlib.contextmanager
def loading(plugin: str) -> Iterator[None]:
    """Uses of old names while this runs (the plugin's import) are that plugin's."""
    token = _loading.set(plugin)
    try:
        yield
    finally:
        _loading.reset(token)


def claim(module: str, plugin: str) -> None:
    """``module`` (and its submodules) is ``plugin``'s: a use inside its hooks is logged for it."""
    _owners[module] = plugin


def new_import(real: str, name: str, value: Any) -> str:
    """The import to write instead: the public API's when it exports this very object."""
    public = importlib.import_module("plughost")
    if name in public.__all__ and getattr(public, name) is value:
        return f"from plughost import {name}"
    return f"from {real} import {name}"


def _caller() -> types.FrameType | None:
    """The frame that used the old name: the first outside this module and the import machinery."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename != __file__ and not ("importlib" in filename and "_bootstrap" in filename):
            return frame
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _owner(module: str) -> str | None:
    while module:
        if module in _owners:
            return _owners[module]
        module = module.rpartition(".")[0]
    return None


def _used(old: str, new: str) -> None:
    frame = _caller()
    if frame is None:
        return
    filename, module = frame.f_code.co_filename, frame.f_globals.get("__name__", "<string>")
    plugin = _loading.get() or _owner(module)
    with _lock:
        warn = (filename, old) not in _warned
        _warned.add((filename, old))
        report = plugin is not None and (plugin, old) not in _logged
        if plugin is not None:
            _logged.add((plugin, old))
    if report:
        log("plugins", "op=deprecated", plugin=plugin, old=old, new=new)
    if warn:
        warnings.warn_explicit(
            f"{old} is deprecated: use `{new}` (removed in plughost {REMOVED_IN})", DeprecationWarning,
            filename, frame.f_lineno, module=module, registry=frame.f_globals.setdefault("__warningregistry__", {}),
            module_globals=frame.f_globals)
