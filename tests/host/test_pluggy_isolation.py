"""The per-plugin isolation leans on a pluggy detail: after registering a plugin, the host replaces
each ``HookImpl.function`` of a list or each hook with a wrapper that records the plugin's failure
(``host/runtime/host.py``, ``_register_checked``). pyproject.toml bounds pluggy to ``>=1.5,<2``; these
tests pin that the installed pluggy still calls what that attribute holds, so one plugin raising
does not take the other plugins' answers down."""

from __future__ import annotations

from importlib.metadata import version

from plughost.runtime import hooktable
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import Route


class _P:
    """A namespace to hang hookimpls on."""


def _plugin(**impls):
    obj = _P()
    for name, fn in impls.items():
        setattr(obj, name, hookimpl(fn))
    return obj


def _boom(host):
    raise RuntimeError("routes exploded")


def test_the_installed_pluggy_is_within_the_declared_bounds() -> None:
    major, minor = (int(part) for part in version("pluggy").split(".")[:2])
    assert (major, minor) >= (1, 5) and major < 2


def test_the_wrapper_the_host_installs_is_what_pluggy_calls(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    host.register(_plugin(plughost_routes=lambda host: [Route("/fine")]), "fine")
    host.register(_plugin(plughost_routes=_boom), "boom")
    impls = {impl.plugin_name: impl for impl in host.pm.hook.plughost_routes.get_hookimpls()}
    assert set(impls) >= {"fine", "boom"}
    boom = impls["boom"]
    assert boom.function is not _boom  # replaced right after registration
    assert boom.function.__qualname__.startswith("isolate.")  # host/runtime/isolation.py
    # pluggy's own call loop, without the host's collect around it: the raising plugin is isolated
    # only if pluggy calls the replaced attribute rather than a copy it took at registration
    answers = host.pm.hook.plughost_routes(host=host)
    assert [[r.path for r in a] for a in answers if a] == [["/fine"]]


def test_a_raising_plugin_leaves_the_others_answers(make_host, capfd) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    host.register(_plugin(plughost_routes=lambda host: [Route("/first")]), "first")
    host.register(_plugin(plughost_routes=_boom), "boom")
    host.register(_plugin(plughost_routes=lambda host: [Route("/last")]), "last")
    collected = host.collect(hooktable.ROUTES)
    assert sorted(c.item.path for c in collected) == ["/first", "/last"]
    assert collected.errors == [("boom", "plughost_routes", "RuntimeError: routes exploded")]
    assert "[plugins] op=hook-error plugin=boom hook=plughost_routes" in capfd.readouterr().err
