"""What a plugin may use of the host object its hooks receive, as a typed :class:`PluginHost`
(public as ``plughost.Host``, docs/plugin-api.md).

The concrete :class:`plughost.runtime.host.Host` has more (discovery, registration, the tool
table, provider choice): that is the host's own and may change in any release. A plugin that
types its hooks against this protocol is checked against what is promised, and the concrete host
is checked against it too (a module-level assignment below, and a test).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from plughost.runtime.host import Host
from plughost.util.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from plughost.ports.embedding import Embedder
    from plughost.ports.graph import GraphStore
    from plughost.ports.principal import Principal
    from plughost.runtime.calls import Collected
    from plughost.runtime.discovery import PluginRecord
    from plughost.runtime.hooktable import AnyHook, EachHook, ListHook, OneHook
    from plughost.runtime.isolation import HookError
    from plughost.runtime.state import PluginState
    from plughost.runtime.surface import ToolSurface
    from plughost.runtime.types import MemoryHit

T = TypeVar("T")


class PluginHost(Protocol):
    """The host as a plugin sees it: where and as whom it runs, its capabilities, and other plugins' hooks."""

    # ---------------------------------------------------------------- where, and as whom
    @property
    def env(self) -> Mapping[str, str]:
        """This host's environment: read settings from it (``Setting.read(host.env)``), never from ``os.environ``."""
        ...

    @property
    def home(self) -> Path:
        """The data root (``PLUGHOST_HOME``)."""
        ...

    @property
    def principal(self) -> Principal:
        """Who this host's calls run as; its ``guards`` bound every store read and write (docs/roles.md)."""
        ...

    @property
    def plugins_dir(self) -> Path | None:
        """The plugins folder this host loaded (``--plugins-dir``), if any."""
        ...

    @property
    def state(self) -> PluginState:
        """Per-host slots a plugin keeps what it opened under, by its own ``StateKey``."""
        ...

    # ---------------------------------------------------------------- capabilities
    def store(self) -> GraphStore:
        """The graph store (one provider, built once); raises ``UserError`` when none is installed."""
        ...

    def embedder(self) -> Embedder | None:
        """The embedder, or None when no provider is usable (search then runs on BM25 alone)."""
        ...

    def memory_search(self, query: str, principal: Principal, limit: int = 10) -> list[MemoryHit]:
        """A ranked memory search as ``principal`` would run it (``plughost_memory_search``): typed
        rows, best first, each one ``principal`` may read, never more than this process may (another
        account's principal is refused); ``[]`` when no plugin searches memory."""
        ...

    def call_tool(self, plugin: str, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call ``plugin``'s tool ``name`` in process, with the argument checks an MCP call gets (a bad
        argument is a ``UserError`` naming the parameter); returns what the handler returns."""
        ...

    def check_call(self, plugin: str, name: str, arguments: Mapping[str, Any] | None = None) -> None:
        """The checks :meth:`call_tool` makes before it calls (the tool, every argument against its
        input schema), without calling: a ``UserError`` naming the parameter."""
        ...

    @property
    def surface(self) -> ToolSurface:
        """The tool surface: every tool by its canonical name, the admin allowlist, the eager tools."""
        ...

    # ---------------------------------------------------------------- plugins and their hooks
    @property
    def records(self) -> Mapping[str, PluginRecord]:
        """Every plugin found, loaded or not (``status``: loaded, failed, disabled, excluded)."""
        ...

    def loaded(self) -> list[PluginRecord]:
        """The plugins that loaded."""
        ...

    def collect(self, hook: ListHook[T], **kwargs: Any) -> Collected[T]:
        """A list hook's items from every plugin, each with the plugin that returned it."""
        ...

    def first(self, hook: OneHook[T], **kwargs: Any) -> T | None:
        """A firstresult hook's first non-None answer."""
        ...

    def call_each(self, hook: EachHook, **kwargs: Any) -> list[HookError]:
        """A notification: every implementation runs; the failures come back, one per plugin."""
        ...

    def has_implementations(self, hook: AnyHook) -> bool:
        """Whether any loaded plugin implements ``hook``."""
        ...

    def close(self) -> None:
        """Run the shutdown hooks and close the store (a host a plugin loaded with ``load_host``)."""
        ...


def load_host(env: Mapping[str, str] | None = None, plugins_dir: str | os.PathLike[str] | None = None) -> PluginHost:
    """A loaded host for a plugin's own process (a hook script run by Claude Code, a worker): the
    same plugins a ``plughost`` command would load from ``env`` (default: the process environment).
    Close it with ``host.close()``."""
    folder = Path(plugins_dir).expanduser() if plugins_dir is not None else None
    if folder is not None and not folder.is_dir():
        raise UserError(f"plugins_dir: '{folder}' is not a folder")
    return Host(plugins_dir=folder, env=dict(os.environ if env is None else env)).load()
