"""One plugin's failure inside a hook call is that plugin's, not the call's.

The host replaces each list and notification hook implementation, right after registration, with
an isolated one (:func:`isolate`, :func:`isolate_wrapper`): an exception becomes a
:class:`HookError` in the current call's :class:`CallSink` and a ``[plugins] op=hook-error`` line,
and the other plugins still answer. A :class:`~plughost.util.errors.FatalError` is recorded as a
:class:`FatalHookError`, a check meant to refuse boot.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from plughost.util import settings
from plughost.util.errors import FatalError
from plughost.util.log import log


def one_line(exc: BaseException) -> str:
    """An exception as the one line a record or a log line carries."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


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
    """A hook implementation that raised :class:`~plughost.util.errors.FatalError` (compares as a HookError)."""

    __slots__ = ()

    @property
    def fatal(self) -> bool:
        return True


@dataclass
class CallSink:
    """Per-call collection point for isolated implementations' failures."""

    errors: list[HookError] = field(default_factory=list)

    def error(self, plugin: str, hook_name: str, exc: BaseException, env: Mapping[str, str]) -> None:
        reason = one_line(exc)
        kind = FatalHookError if isinstance(exc, FatalError) else HookError
        self.errors.append(kind(plugin, hook_name, reason))
        log("plugins", "op=hook-error", plugin=plugin, hook=hook_name, reason=reason)
        if settings.DEBUG.read_or_default(env):  # reporting a failure must not fail
            import traceback

            traceback.print_exception(exc)


_SINK: ContextVar[CallSink | None] = ContextVar("plughost_hook_sink", default=None)


@contextmanager
def collecting() -> Iterator[CallSink]:
    """The sink the isolated implementations of one hook call report to."""
    sink = CallSink()
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


def _current() -> CallSink:
    return _SINK.get() or CallSink()  # a direct pm.hook call: errors are only logged


class Answer(list[Any]):
    """One implementation's answer to a list hook: a list that remembers the plugin it came from.

    Wrappers see (and may edit) ordinary lists; an answer a wrapper makes up is its own.
    """

    def __init__(self, plugin: str, items: Any, listed: bool = True) -> None:
        super().__init__(items if isinstance(items, (list, tuple)) else [items])
        self.plugin = plugin
        self.listed = listed and isinstance(items, (list, tuple))  # False: the implementation returned no list


def _attributed(plugin: str, answers: Any) -> Any:
    if not isinstance(answers, list):
        return answers
    return [a if isinstance(a, Answer) else Answer(plugin, a) for a in answers]


def isolate(fn: Callable[..., Any], plugin: str, hook_name: str, env: Mapping[str, str]) -> Callable[..., Any]:
    """An implementation that records its failure instead of aborting the hook call."""

    def call(*args: Any, **kwargs: Any) -> Any:
        sink = _current()
        try:
            answer = fn(*args, **kwargs)
        except Exception as exc:
            sink.error(plugin, hook_name, exc, env)
            return None
        return None if answer is None else Answer(plugin, answer, listed=isinstance(answer, (list, tuple)))

    return call


def isolate_wrapper(fn: Callable[..., Any], plugin: str, hook_name: str,
                    env: Mapping[str, str]) -> Callable[..., Any]:
    """A ``wrapper=True`` implementation whose failure leaves the result as it was."""

    def wrap(*args: Any, **kwargs: Any) -> Generator[None, Any, Any]:
        sink = _current()
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
                return _attributed(plugin, stop.value)
            raise RuntimeError(f"{hook_name}: wrapper of plugin '{plugin}' yielded twice") from None
        try:
            gen.send(result)
        except StopIteration as stop:
            return _attributed(plugin, stop.value)
        except Exception as exc:
            sink.error(plugin, hook_name, exc, env)
            return result
        gen.close()
        sink.error(plugin, hook_name, RuntimeError("wrapper yielded twice"), env)
        return result

    return wrap
