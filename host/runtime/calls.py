"""The four ways the host calls a hook (collect, each, first, provide) and hook tracing.

Every call goes through pluggy with ``host`` filled in. A list hook's answers are flattened,
attributed to the plugin that gave them and de-duplicated by ``key``; a provider hook is asked in
a deterministic order (the operator's choice alone, else external plugins before the built-ins).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pluggy

from plughost.runtime import hooktable
from plughost.runtime.hooktable import AnyHook, EachHook, ListHook, OneHook, ProviderHook
from plughost.runtime.isolation import Answer, HookError, collecting
from plughost.util import settings
from plughost.util.errors import DuplicateNameError, UserError
from plughost.util.log import log

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host

T = TypeVar("T")


@dataclass(frozen=True)
class Contribution(Generic[T]):
    """An item a hook returned, with the plugin that returned it."""

    plugin: str
    item: T


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


class HookCalls:
    """One host's hook calls; ``host`` is what every implementation receives."""

    def __init__(self, pm: pluggy.PluginManager, host: Host) -> None:
        self.pm, self.host, self.env = pm, host, host.env
        self._trace_t0: list[float] = []
        if settings.TRACE_HOOKS.read(self.env):
            pm.add_hookcall_monitoring(self._trace_before, self._trace_after)

    def check_provider_choices(self) -> None:
        """A UserError when ``PLUGHOST_STORE`` / ``PLUGHOST_EMBEDDER`` names neither a provider
        plugin nor a built-in option (checked at boot, not first at the first store call)."""
        for hook in hooktable.PROVIDERS:
            chosen = hook.setting.read(self.env) or ""
            providers = sorted(i.plugin_name for i in self.providers(hook))
            if not chosen or chosen in providers or chosen.lower() in hook.builtin_options:
                continue
            import difflib

            close = difflib.get_close_matches(chosen, [*hook.builtin_options, *providers], n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise UserError(f"{hook.env}: no {hook.what} named '{chosen}' ({hint}expected a built-in option: "
                            f"{', '.join(hook.builtin_options)}; or a provider plugin: {', '.join(providers) or 'none'})")

    def collect(self, hook: ListHook[T], **kwargs: Any) -> Collected[T]:
        """Call a list hook through pluggy; flatten, attribute and de-duplicate the answers.

        Each implementation is isolated: one raising (or returning the wrong type) is an error
        of that plugin, in the result's ``errors`` and a ``[plugins] op=hook-error`` line, while
        the others still contribute. ``unique="global"`` rejects two items with one ``key``
        anywhere; ``"plugin"`` only within one plugin (tools: canonical names carry the plugin).
        """
        self.host.load()
        with collecting() as sink:
            answers = getattr(self.pm.hook, hook.name)(host=self.host, **kwargs)
        out: list[Contribution[T]] = []
        seen: dict[Any, str] = {}
        for answer in answers or ():
            plugin = answer.plugin if isinstance(answer, Answer) else "?"
            if isinstance(answer, Answer) and not answer.listed:  # one item where a list is due: not taken
                sink.error(plugin, hook.name, TypeError(
                    f"returned {type(answer[0]).__name__}, expected a list of {hook.kind.__name__}"), self.env)
                continue
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
        self.host.load()
        with collecting() as sink:
            caller = getattr(self.pm.hook, hook.name)
            if hook.reverse:  # registration order: pluggy calls the last registered first
                caller = _Reversed(self.pm, hook.name)
            caller(host=self.host, **kwargs)
        return sink.errors

    def first(self, hook: OneHook[T], **kwargs: Any) -> T | None:
        """Call a firstresult hook with ``host`` filled in; the first non-None answer or None."""
        self.host.load()
        answer: T | None = getattr(self.pm.hook, hook.name)(host=self.host, **kwargs)
        return answer

    def has_implementations(self, hook: AnyHook) -> bool:
        """Whether any loaded plugin implements ``hook`` (wrappers not counted)."""
        self.host.load()
        impls = getattr(self.pm.hook, hook.name).get_hookimpls()
        return any(not (i.wrapper or i.hookwrapper) for i in impls)

    def provide(self, hook: ProviderHook[T]) -> T | None:
        """Ask a single-provider capability hook, choosing who answers deterministically.

        The operator's choice (``hook.env`` naming a plugin that implements the hook) answers
        alone. Otherwise (unset, or a provider's own option such as ``PLUGHOST_STORE=sqlite``)
        an external plugin is asked before the built-ins, whatever the names sort to; two
        external providers are an error naming both. The first non-None answer wins.
        """
        providers = self.providers(hook)
        for name in self.provider_order(hook):
            others = [i.plugin for i in providers if i.plugin_name != name]  # their wrappers stay
            answer: T | None = self.pm.subset_hook_caller(hook.name, remove_plugins=others)(host=self.host)
            if answer is not None:
                log("plugins", "op=provider", hook=hook.name, plugin=name) if self._verbose() else None
                return answer
        return None

    def provider_order(self, hook: ProviderHook[Any]) -> list[str]:
        """The plugins :meth:`provide` asks, in order; a UserError naming both when two externals compete."""
        providers = [i.plugin_name for i in self.providers(hook)]
        chosen = hook.setting.read(self.env) or ""
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

    def providers(self, hook: AnyHook) -> list[Any]:
        self.host.load()
        return [i for i in getattr(self.pm.hook, hook.name).get_hookimpls() if not (i.wrapper or i.hookwrapper)]

    def _is_builtin(self, plugin: str) -> bool:
        record = self.host.records.get(plugin)
        return bool(record and record.builtin)

    def _verbose(self) -> bool:
        return settings.VERBOSE.read(self.env)

    def _trace_before(self, hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        self._trace_t0.append(time.perf_counter())
        log("hooks", "op=call", hook=hook_name, plugins=list(dict.fromkeys(i.plugin_name for i in reversed(impls))))

    def _trace_after(self, outcome: Any, hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        t0 = self._trace_t0.pop() if self._trace_t0 else time.perf_counter()
        log("hooks", "op=return", hook=hook_name, ms=f"{(time.perf_counter() - t0) * 1000:.2f}",
            error=outcome.exception is not None)


class _Reversed:
    """Call a hook's implementations in registration order (pluggy calls them newest first)."""

    def __init__(self, pm: pluggy.PluginManager, name: str) -> None:
        self.pm, self.name = pm, name

    def __call__(self, **kwargs: Any) -> Any:
        caller = getattr(self.pm.hook, self.name)
        impls = list(reversed([i for i in caller.get_hookimpls() if not (i.wrapper or i.hookwrapper)]))
        wrappers = [i for i in caller.get_hookimpls() if i.wrapper or i.hookwrapper]
        return self.pm._hookexec(self.name, impls + wrappers, kwargs, False)
