"""One `test_hook_<name>` per hookspec (datasette style), plus the meta-tests that keep it so."""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
from pathlib import Path

import pytest

from plughost.runtime import hookdocs, hooktable
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import ChannelAdapter, CliCommand, Gate, GateResult, RetrievalBoost, Route, Tool
from plughost.util.errors import DuplicateNameError

TESTS = Path(__file__).resolve().parents[1]


@functools.cache
def _all_test_names() -> frozenset[str]:
    """Every function name in the test files, parsed once per session (not once per hook)."""
    names: set[str] = set()
    for path in TESTS.rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return frozenset(names)


@pytest.mark.parametrize("name", sorted(hookdocs.hook_functions()))
def test_every_hook_is_documented_with_the_template(name: str) -> None:
    fn = hookdocs.hook_functions()[name]
    doc = inspect.getdoc(fn) or ""
    for part in hookdocs.TEMPLATE_PARTS:
        assert part in doc, f"{name}: docstring lacks {part}"
    rendered = (TESTS.parent / "docs" / "hooks.md").read_text(encoding="utf-8")
    assert f"## {name}" in rendered and hookdocs.signature(fn) in rendered, (
        "docs/hooks.md is stale: run python -m plughost.runtime.hookdocs")


@pytest.mark.parametrize("name", sorted(hookdocs.hook_functions()))
def test_every_hook_has_a_test(name: str) -> None:
    assert f"test_hook_{name}" in _all_test_names(), f"missing test_hook_{name}"


def test_docs_are_current() -> None:
    assert (TESTS.parent / "docs" / "hooks.md").read_text(encoding="utf-8") == hookdocs.render()


# --------------------------------------------------------------------------- per-hook tests
class _P:
    """A namespace to hang hookimpls on."""


def _plugin(**impls):
    obj = _P()
    for name, fn in impls.items():
        setattr(obj, name, hookimpl(fn))
    return obj


def test_hook_plughost_tools(make_host) -> None:
    host = make_host()
    a = _plugin(plughost_tools=lambda host: [Tool("ping", lambda: "pong")])
    b = _plugin(plughost_tools=lambda host: [Tool("ping", lambda: "pong")])
    with host.temporary_plugin(a, "tool-a"), host.temporary_plugin(b, "tool-b"):
        got = host.collect(hooktable.TOOLS)
        assert {(c.plugin, c.item.name) for c in got} >= {("tool-a", "ping"), ("tool-b", "ping")}
        assert "mcp__plugin_tool-a_tool-a__ping" in host.surface.all


def test_hook_plughost_boot_gates(make_host) -> None:
    host = make_host()
    gate = Gate("unit-gate", check=lambda ctx: GateResult("ok", inspected=1))
    a = _plugin(plughost_boot_gates=lambda host: [gate])
    b = _plugin(plughost_boot_gates=lambda host: [gate])
    with host.temporary_plugin(a, "gate-a"):
        assert [c.item.name for c in host.collect(hooktable.BOOT_GATES)].count("unit-gate") == 1
        with host.temporary_plugin(b, "gate-b"), pytest.raises(DuplicateNameError) as err:
            host.collect(hooktable.BOOT_GATES)
        assert "gate-a" in str(err.value) and "gate-b" in str(err.value)


def test_hook_plughost_routes(make_host) -> None:
    host = make_host()
    a = _plugin(plughost_routes=lambda host: [Route("/x", endpoint=lambda r: None), Route("/x", methods=("POST",))])
    with host.temporary_plugin(a, "routes-a"):
        keys = [c.item.key for c in host.collect(hooktable.ROUTES) if c.plugin == "routes-a"]
        assert keys == ["GET /x", "POST /x"]


def test_hook_plughost_cli_commands(make_host) -> None:
    host = make_host()

    def configure(p: argparse.ArgumentParser) -> None:
        p.add_argument("--n", type=int, default=1)

    cmd = CliCommand("unit-cmd", "a test command", configure, lambda args, host: args.n)
    with host.temporary_plugin(_plugin(plughost_cli_commands=lambda host: [cmd]), "cmd-a"):
        (found,) = [c.item for c in host.collect(hooktable.CLI_COMMANDS) if c.plugin == "cmd-a"]
        parser = argparse.ArgumentParser()
        found.configure(parser)
        assert found.run(parser.parse_args(["--n", "3"]), host) == 3


def test_hook_plughost_startup(make_host) -> None:
    host = make_host()
    calls: list[str] = []

    def bad(host):
        raise RuntimeError("startup exploded")

    with host.temporary_plugin(_plugin(plughost_startup=lambda host: calls.append("a")), "start-a"), \
            host.temporary_plugin(_plugin(plughost_startup=bad), "start-bad"):
        errors = host.call_each(hooktable.STARTUP)
    assert calls == ["a"]
    assert ("start-bad", "plughost_startup", "RuntimeError: startup exploded") in errors


def test_hook_plughost_shutdown(make_host) -> None:
    host = make_host()
    calls: list[str] = []
    host.register(_plugin(plughost_shutdown=lambda host: calls.append("first")), "stop-1")
    host.register(_plugin(plughost_shutdown=lambda host: calls.append("second")), "stop-2")
    host.close()
    assert calls == ["first", "second"]


def test_hook_plughost_store(make_host) -> None:
    host = make_host(PLUGHOST_DISABLE_PLUGINS="graph")
    sentinel = object()
    host.register(_plugin(plughost_store=lambda host: sentinel), "store-x")
    assert host.store() is sentinel


def test_hook_plughost_embedder(make_host) -> None:
    host = make_host(PLUGHOST_DISABLE_PLUGINS="memory")

    class Fixed:
        name, dimensions = "fixed", 2

        def embed(self, texts):
            return [[1.0, 0.0] for _ in texts]

    host.register(_plugin(plughost_embedder=lambda host: Fixed()), "embed-x")
    assert host.embedder().embed(["a"]) == [[1.0, 0.0]]


def test_hook_plughost_channel_adapters(make_host) -> None:
    host = make_host()
    adapter = ChannelAdapter("unit-chan", routes=(Route("/unit/in", methods=("POST",)),))
    with host.temporary_plugin(_plugin(plughost_channel_adapters=lambda host: [adapter]), "chan-a"):
        assert any(c.item.name == "unit-chan" for c in host.collect(hooktable.CHANNEL_ADAPTERS))


def test_hook_plughost_query_expansions(make_host) -> None:
    host = make_host(PLUGHOST_DISABLE_PLUGINS="memory")
    impl = _plugin(plughost_query_expansions=lambda query, retrieval_class: [query, query.upper()])
    host.register(impl, "expand-x")
    assert host.first(hooktable.QUERY_EXPANSIONS, query="tea", retrieval_class=None) == ["tea", "TEA"]


def test_hook_plughost_rerank(make_host) -> None:
    host = make_host(PLUGHOST_DISABLE_PLUGINS="memory")
    host.register(_plugin(plughost_rerank=lambda rows: sorted(rows, key=lambda r: r["score"])), "rerank-x")
    rows = [{"score": 2}, {"score": 1}]
    assert host.first(hooktable.RERANK, query="q", rows=rows) == [{"score": 1}, {"score": 2}]


def test_hook_plughost_retrieval_boosts(make_host) -> None:
    host = make_host()
    boost = RetrievalBoost("pinned", lambda row: 0.1 if row.get("pinned") else 0.0)
    with host.temporary_plugin(_plugin(plughost_retrieval_boosts=lambda host: [boost]), "boost-a"):
        (got,) = [c.item for c in host.collect(hooktable.RETRIEVAL_BOOSTS) if c.plugin == "boost-a"]
        assert got.bump({"pinned": True}) == 0.1


def test_hook_plughost_screen_message(make_host) -> None:
    host = make_host(PLUGHOST_DISABLE_PLUGINS="channels")
    host.register(_plugin(plughost_screen_message=lambda message: {"verdict": "CLEAN", "len": len(message["text"])}),
                  "screen-x")
    assert host.first(hooktable.SCREEN_MESSAGE, message={"text": "hi"}) == {"verdict": "CLEAN", "len": 2}


def test_hook_plughost_agent_runner(make_host) -> None:
    host = make_host(PLUGHOST_DISABLE_PLUGINS="channels")
    runner = object()
    host.register(_plugin(plughost_agent_runner=lambda host: runner), "runner-x")
    assert host.first(hooktable.AGENT_RUNNER) is runner


def test_hook_plughost_active_rules(make_host) -> None:
    host = make_host(PLUGHOST_DISABLE_PLUGINS="memory")
    host.register(_plugin(plughost_active_rules=lambda account_id: {"rules": [account_id], "source": "owner"}),
                  "rules-x")
    assert host.first(hooktable.ACTIVE_RULES, account_id="acme")["rules"] == ["acme"]


def test_hook_plughost_settings(make_host) -> None:
    from plughost.runtime import settings as registry
    from plughost.util.settings import Setting

    host = make_host()
    greeting = Setting("PLUGHOST_UNIT_GREETING", "str", "hello", "what the unit plugin says")
    with host.temporary_plugin(_plugin(plughost_settings=lambda: [greeting]), "settings-x"):
        (got,) = [c.item for c in host.collect(hooktable.SETTINGS) if c.plugin == "settings-x"]
        assert got is greeting and got.read({"PLUGHOST_UNIT_GREETING": "hi"}) == "hi"
        rows = {d.setting.name: d.plugin for d in registry.table(host)}
        assert rows["PLUGHOST_UNIT_GREETING"] == "settings-x" and rows["PLUGHOST_HOME"] == "host"
        assert rows["PLUGHOST_GS_STEM"] == "memory"  # the built-ins publish theirs the same way
        clash = Setting("PLUGHOST_HOME", "path", None, "a plugin may not redeclare the host's")
        with host.temporary_plugin(_plugin(plughost_settings=lambda: [clash]), "settings-y"), \
                pytest.raises(DuplicateNameError, match="'PLUGHOST_HOME' is declared twice: by 'host' and by plugin "
                                                        "'settings-y'"):
            registry.table(host)


def test_each_hook_result_type_is_the_one_its_spec_returns() -> None:
    """A hook's result type stands in its spec (the signature docs/hooks.md shows) and in the hook
    table (what the host checks and a type checker sees): this keeps the two one fact."""
    import typing

    from plughost.ports import embedding, graph
    from plughost.runtime import hookspecs, types
    from plughost.runtime.host import Host
    from plughost.util.settings import Setting

    names = {**vars(typing), **vars(types), **vars(graph), **vars(embedding), "Host": Host, "Setting": Setting}
    table_types = typing.get_type_hints(hooktable, globalns={**vars(hooktable), **names})
    for name, hook in hooktable.TABLE.items():
        returned = typing.get_type_hints(getattr(hookspecs, name), globalns=names)["return"]
        if isinstance(hook, hooktable.ListHook):
            assert returned == list[hook.kind], name
        elif isinstance(hook, hooktable.EachHook):
            assert returned is type(None), name
        else:
            const = next(k for k, v in vars(hooktable).items() if v is hook and k != "TABLE")
            (declared,) = typing.get_args(table_types[const])
            assert returned == declared | None, name


# --------------------------------------------------------------------------- Combines: unique names
def _source(name: str):
    from plughost.runtime.types import CollectionSource

    return CollectionSource(name, ("*.txt",), lambda text, rel: {})


_NAMED = {
    "plughost_channel_adapters": (hooktable.CHANNEL_ADAPTERS, lambda: ChannelAdapter("dup-name")),
    "plughost_retrieval_boosts": (hooktable.RETRIEVAL_BOOSTS, lambda: RetrievalBoost("dup-name", lambda row: 0.0)),
    "plughost_collection_sources": (hooktable.COLLECTION_SOURCES, lambda: _source("dup-name")),
    "plughost_cli_commands": (hooktable.CLI_COMMANDS, lambda: CliCommand("dup-name", "h", lambda p: None,
                                                                          lambda a, h: 0)),
}


@pytest.mark.parametrize("name", sorted(_NAMED))
def test_a_name_two_plugins_claim_is_an_error_naming_both(make_host, name: str) -> None:
    """*Combines: flattened; names are unique* — for every list hook whose items carry a name."""
    hook, make = _NAMED[name]
    host = make_host()
    with host.temporary_plugin(_plugin(**{name: lambda host: [make()]}), "claim-a"):
        assert [c.plugin for c in host.collect(hook) if c.item.key == "dup-name"] == ["claim-a"]
        with host.temporary_plugin(_plugin(**{name: lambda host: [make()]}), "claim-b"), \
                pytest.raises(DuplicateNameError) as err:
            host.collect(hook)
    assert "claim-a" in str(err.value) and "claim-b" in str(err.value) and "dup-name" in str(err.value)


def test_cli_commands_fire_only_for_a_command_that_is_not_core(make_host) -> None:
    """*Fires: when the CLI is asked for a command that is not a core one (or for --help).*"""
    from plughost.cli import main as cli

    host = make_host()
    calls: list[str] = []

    def commands(host):
        calls.append("asked")
        return [CliCommand("unit-extra", "a plugin command", lambda p: None, lambda a, h: 0)]

    with host.temporary_plugin(_plugin(plughost_cli_commands=commands), "cmd-fires"):
        ctx = cli.Context(env=dict(host.env), _host=host)
        cli.build_parser(["plugins", "list"], ctx)
        cli.build_parser(["--version"], ctx)
        assert calls == []
        cli.build_parser(["unit-extra"], ctx)
        cli.build_parser([], ctx)  # --help lists plugin commands too
        assert calls == ["asked", "asked"]
