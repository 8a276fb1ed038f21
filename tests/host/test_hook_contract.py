"""The hook contract as plugins meet it: validation at load, pluggy's call loop, who answers.

Each hook's documented *Combines* and *Fires* lines are exercised here with real plugins:
folder plugins loaded by the host, objects registered in-process, and wheels installed with
pip into a target directory on ``sys.path`` (entry points, as a user installs them).
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from plughost.runtime import hooktable
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.tooltable import call_tool
from plughost.runtime.types import Gate, GateResult, RetrievalBoost, Route, Tool
from plughost.util.errors import DuplicateNameError, UserError
from tests.conftest import run_cli, run_cli_process


class _P:
    """A namespace to hang hookimpls on."""


def _plugin(**impls):
    obj = _P()
    for name, fn in impls.items():
        setattr(obj, name, fn if hasattr(fn, "plughost_impl") else hookimpl(fn))
    return obj


def _folder_plugin(root: Path, name: str, module: str, tools: str = "") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "PLUGIN.md").write_text(f"---\nname: {name}\nversion: 0.1.0\npython: impl\n{tools}---\n# {name}\n",
                                      encoding="utf-8")
    (folder / "impl.py").write_text(textwrap.dedent(module), encoding="utf-8")
    return folder


# --------------------------------------------------------------------------- defect 1: misspelled hooks
def test_a_misspelled_hookimpl_fails_its_plugin_with_a_did_you_mean(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    _folder_plugin(plugins, "typo", """
        from plughost.runtime.hookspecs import hookimpl

        @hookimpl
        def plughost_tool(host):
            return []
    """)
    _folder_plugin(plugins, "fine", """
        from plughost.runtime.hookspecs import hookimpl
        from plughost.runtime.types import Tool

        @hookimpl
        def plughost_tools(host):
            return [Tool("ping", lambda: "pong", description="ping")]
    """)
    result = run_cli("--plugins-dir", str(plugins), "plugins", "list", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["plugins"]}
    assert rows["typo"]["status"] == "failed"
    assert "unknown hook 'plughost_tool' (did you mean 'plughost_tools'?)" in rows["typo"]["reason"]
    assert rows["fine"]["status"] == "loaded" and rows["graph"]["status"] == "loaded"
    assert "[plugins] op=load-failed plugin=typo" in result.stderr


def test_an_optional_hook_with_no_spec_is_accepted(make_host) -> None:
    host = make_host()

    def plughost_future(host):
        return None

    host.register(_plugin(plughost_future=hookimpl(optionalhook=True)(plughost_future)), "future")
    assert host.records["future"].loaded


def test_registering_a_misspelled_hook_is_refused_by_name(make_host) -> None:
    host = make_host()
    with pytest.raises(UserError, match=r"unknown hook 'plughost_stor' \(did you mean 'plughost_store'\?\)"):
        host.register(_plugin(plughost_stor=lambda host: None), "typo-store")
    assert "typo-store" not in host.records


# --------------------------------------------------------------------------- defect 2: wrappers
def test_a_wrapper_on_a_collected_hook_runs_through_pluggy(tmp_path: Path, make_host) -> None:
    """``wrapper=True`` around ``plughost_tools``: sees every answer, may add and drop tools."""
    plugins = tmp_path / "plugins"
    _folder_plugin(plugins, "wrapping", """
        from plughost.runtime.hookspecs import hookimpl
        from plughost.runtime.types import Tool

        @hookimpl(wrapper=True)
        def plughost_tools(host):
            answers = yield
            for answer in answers:
                answer[:] = [t for t in answer if t.name != "secret"]
            return answers + [[Tool("added", lambda: "from-wrapper", description="added by a wrapper")]]
    """, tools="tools:\n  - name: added\n    description: added by a wrapper\n")
    _folder_plugin(plugins, "plain", """
        from plughost.runtime.hookspecs import hookimpl
        from plughost.runtime.types import Tool

        @hookimpl
        def plughost_tools(host):
            return [Tool("ping", lambda: "pong", description="ping"), Tool("secret", lambda: "no", description="hidden")]
    """, tools="tools:\n  - name: ping\n    description: ping\n")
    host = make_host(plugins_dir=plugins)
    assert host.records["wrapping"].loaded, host.records["wrapping"].reason
    assert call_tool(host, "wrapping", "added") == "from-wrapper"
    assert call_tool(host, "plain", "ping") == "pong"
    names = {(c.plugin, c.item.name) for c in host.collect(hooktable.TOOLS)}
    assert ("wrapping", "added") in names and ("plain", "ping") in names
    assert ("plain", "secret") not in names


def test_tracing_goes_through_hookcall_monitoring(make_host, capfd) -> None:
    host = make_host(PLUGHOST_TRACE_HOOKS="1", PLUGHOST_DISABLE_PLUGINS="memory,channels,admin")
    host.register(_plugin(plughost_routes=lambda host: [Route("/t")]), "traced")
    host.collect(hooktable.ROUTES)
    host.first(hooktable.RERANK, query="q", rows=[])
    err = capfd.readouterr().err
    assert "[hooks] op=call hook=plughost_routes plugins=" in err and "traced" in err
    assert "[hooks] op=return hook=plughost_routes" in err and "error=false" in err
    assert "[hooks] op=call hook=plughost_rerank" in err


# --------------------------------------------------------------------------- Combines / Fires: list hooks
def test_list_hook_answers_follow_pluggy_order_tryfirst_and_trylast(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    host.register(_plugin(plughost_routes=hookimpl(trylast=True)(lambda host: [Route("/last")])), "r-last")
    host.register(_plugin(plughost_routes=lambda host: [Route("/old")]), "r-old")
    host.register(_plugin(plughost_routes=hookimpl(tryfirst=True)(lambda host: [Route("/first")])), "r-first")
    host.register(_plugin(plughost_routes=lambda host: [Route("/new")]), "r-new")
    got = [(c.plugin, c.item.path) for c in host.collect(hooktable.ROUTES)]
    assert got == [("r-first", "/first"), ("r-new", "/new"), ("r-old", "/old"), ("r-last", "/last")]


def test_list_hook_isolates_a_raising_and_a_mistyped_plugin(make_host, capfd) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")

    def boom(host):
        raise RuntimeError("gates exploded")

    gate = Gate("fine-gate", check=lambda ctx: GateResult("ok"))
    host.register(_plugin(plughost_boot_gates=lambda host: [gate]), "g-fine")
    host.register(_plugin(plughost_boot_gates=boom), "g-boom")
    host.register(_plugin(plughost_boot_gates=lambda host: ["not a gate"]), "g-typed")
    collected = host.collect(hooktable.BOOT_GATES)
    assert collected.items() == [gate]
    assert sorted(collected.errors) == [("g-boom", "plughost_boot_gates", "RuntimeError: gates exploded"),
                                        ("g-typed", "plughost_boot_gates", "TypeError: returned str, expected Gate")]
    assert not host.collect(hooktable.ROUTES).errors  # errors belong to one call, not the host
    assert "[plugins] op=hook-error plugin=g-boom hook=plughost_boot_gates" in capfd.readouterr().err


def test_a_raising_wrapper_leaves_the_answers_alone(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")

    @hookimpl(wrapper=True)
    def plughost_retrieval_boosts(host):
        yield
        raise RuntimeError("wrapper broke")

    boost = RetrievalBoost("b", lambda row: 0.1)
    host.register(_plugin(plughost_retrieval_boosts=lambda host: [boost]), "b-plain")
    host.register(_plugin(plughost_retrieval_boosts=plughost_retrieval_boosts), "b-wrap")
    collected = host.collect(hooktable.RETRIEVAL_BOOSTS)
    assert collected.items("b-plain") == [boost]
    assert collected.errors == [("b-wrap", "plughost_retrieval_boosts", "RuntimeError: wrapper broke")]


def test_tools_may_repeat_across_plugins_but_not_within_one(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    host.register(_plugin(plughost_tools=lambda host: [Tool("t", str)]), "t-a")
    host.register(_plugin(plughost_tools=lambda host: [Tool("t", str)]), "t-b")
    assert len(host.collect(hooktable.TOOLS)) == 2
    host.register(_plugin(plughost_tools=lambda host: [Tool("t", str), Tool("t", str, description="u")]), "t-twice")
    with pytest.raises(DuplicateNameError, match="'t' is provided twice: by plugin 't-twice' and by plugin 't-twice'"):
        host.collect(hooktable.TOOLS)


def test_tools_hook_never_fires_at_load(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    calls: list[str] = []
    host.register(_plugin(plughost_tools=lambda host: calls.append("tools") or []), "lazy")
    assert calls == []
    host.collect(hooktable.TOOLS)
    assert calls == ["tools"]


def test_shutdown_runs_in_the_reverse_order_of_startup_and_isolates(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    calls: list[str] = []

    def bad(host):
        raise RuntimeError("no")

    for name in ("s1", "s2"):
        host.register(_plugin(plughost_startup=lambda host, n=name: calls.append(f"start {n}"),
                              plughost_shutdown=lambda host, n=name: calls.append(f"stop {n}")), name)
    host.register(_plugin(plughost_shutdown=bad), "s-bad")
    assert host.call_each(hooktable.STARTUP) == []
    errors = host.call_each(hooktable.SHUTDOWN)
    assert calls == ["start s2", "start s1", "stop s1", "stop s2"]
    assert errors == [("s-bad", "plughost_shutdown", "RuntimeError: no")]


def test_firstresult_hooks_skip_none_and_honour_tryfirst(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    host.register(_plugin(plughost_query_expansions=lambda query: [query, "old"]), "x-old")
    host.register(_plugin(plughost_query_expansions=lambda query: None), "x-none")
    assert host.first(hooktable.QUERY_EXPANSIONS, query="q", retrieval_class=None) == ["q", "old"]
    host.register(_plugin(plughost_query_expansions=hookimpl(tryfirst=True)(lambda query: [query, "first"])),
                  "x-first")
    host.register(_plugin(plughost_query_expansions=lambda query: [query, "new"]), "x-new")
    assert host.first(hooktable.QUERY_EXPANSIONS, query="q", retrieval_class=None) == ["q", "first"]


def test_a_wrapper_around_a_firstresult_hook_sees_and_replaces_the_answer(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")

    @hookimpl(wrapper=True)
    def plughost_rerank(host, rows):
        answer = yield
        return list(reversed(answer if answer is not None else rows))

    host.register(_plugin(plughost_rerank=lambda rows: sorted(rows, key=lambda r: r["score"])), "rr")
    host.register(_plugin(plughost_rerank=plughost_rerank), "rr-wrap")
    rows = [{"score": 1}, {"score": 3}, {"score": 2}]
    assert [r["score"] for r in host.first(hooktable.RERANK, query="q", rows=rows)] == [3, 2, 1]


def test_the_hook_table_covers_every_hookspec() -> None:
    from plughost.runtime import hookdocs

    assert set(hooktable.TABLE) == set(hookdocs.hook_functions())


# --------------------------------------------------------------------------- defect 3: who provides the store
def test_store_and_embedder_are_asked_lazily_once(make_host) -> None:
    host = make_host(PLUGHOST_DISABLE_PLUGINS="graph,memory")
    calls: list[str] = []

    class Store:
        def close(self) -> None:
            calls.append("closed")

    host.register(_plugin(plughost_store=lambda host: calls.append("store") or Store(),
                          plughost_embedder=lambda host: calls.append("embedder")), "lazy-x")
    assert calls == []
    assert host.store() is host.store() and host.embedder() is None and host.embedder() is None
    host.close()
    assert calls == ["store", "embedder", "closed"]


def _wheel(dist_dir: Path, name: str, module: str | None = None) -> Path:
    """A tiny wheel whose module (by default a store and an embedder) is entry point ``name``."""
    mod = name.replace("-", "_")
    files = {
        f"{mod}.py": module or textwrap.dedent(f'''\
            from plughost.runtime.hookspecs import hookimpl


            class Store:
                provider = "{name}"

                def close(self):
                    pass


            class Embedder:
                name, dimensions, provider = "{name}", 2, "{name}"

                def embed(self, texts):
                    return [[1.0, 0.0] for _ in texts]


            @hookimpl
            def plughost_store(host):
                return Store()


            @hookimpl
            def plughost_embedder(host):
                return Embedder()
            '''),
        f"{mod}-0.1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {mod}\nVersion: 0.1.0\n",
        f"{mod}-0.1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{mod}-0.1.0.dist-info/entry_points.txt": f"[plughost.plugins]\n{name} = {mod}\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{mod}-0.1.0.dist-info/RECORD,,")
    files[f"{mod}-0.1.0.dist-info/RECORD"] = "\n".join(record) + "\n"
    wheel = dist_dir / f"{mod}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``aa-provider`` sorts before the built-ins (graph, memory), ``zz-provider`` after; pip installs each."""
    root = tmp_path_factory.mktemp("wheels")
    out = {}
    for name in ("aa-provider", "zz-provider"):
        target = root / f"site-{name}"
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--disable-pip-version-check", "--target", str(target), str(_wheel(root, name))],
                       check=True, capture_output=True, text=True, timeout=120)
        out[name] = target
    return out


def _providers(monkeypatch: pytest.MonkeyPatch, make_host, sites: list[Path], **env: str) -> tuple[str, str]:
    for site in sites:
        monkeypatch.syspath_prepend(str(site))
    host = make_host(ACCOUNT_ID="acct", **env)
    store, embedder = host.store(), host.embedder()
    return getattr(store, "provider", "builtin"), getattr(embedder, "provider", "builtin")


@pytest.mark.parametrize("name", ["aa-provider", "zz-provider"])
def test_an_installed_provider_beats_the_builtins_whatever_its_name(name: str, installed, monkeypatch,
                                                                    make_host) -> None:
    assert _providers(monkeypatch, make_host, [installed[name]], PLUGHOST_EMBEDDER="") == (name, name)
    # A built-in's own option is the operator choosing the built-in...
    assert _providers(monkeypatch, make_host, [installed[name]], PLUGHOST_STORE="sqlite",
                      PLUGHOST_EMBEDDER="none") == ("builtin", "builtin")
    # ...and so is naming the built-in plugin.
    assert _providers(monkeypatch, make_host, [installed[name]], PLUGHOST_STORE="graph",
                      PLUGHOST_EMBEDDER="memory")[0] == "builtin"


def test_two_installed_providers_need_the_operator_to_choose(installed, monkeypatch, make_host) -> None:
    sites = [installed["aa-provider"], installed["zz-provider"]]
    with pytest.raises(UserError, match="graph store: plugins 'aa-provider' and 'zz-provider' both provide one; "
                                        "choose with PLUGHOST_STORE=<plugin>"):
        _providers(monkeypatch, make_host, sites)
    assert _providers(monkeypatch, make_host, sites, PLUGHOST_STORE="zz-provider",
                      PLUGHOST_EMBEDDER="aa-provider") == ("zz-provider", "aa-provider")


def test_two_installed_stores_refuse_boot_naming_both(installed, tmp_path: Path) -> None:
    import os

    path = os.pathsep.join([str(installed["aa-provider"]), str(installed["zz-provider"])])
    env = {"PYTHONPATH": path, "ACCOUNT_ID": "acct"}
    result = run_cli_process("boot", env=env)  # entry points on PYTHONPATH: a process of their own
    assert result.returncode != 0
    assert "'aa-provider' and 'zz-provider' both provide one" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- defect 5: tools declared once
_TOOLS_MODULE = """\
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import Tool


def echo(text: str) -> str:
    \"\"\"Say it back.\"\"\"
    return text


def extra() -> str:
    \"\"\"Not declared in PLUGIN.md.\"\"\"
    return "extra"


@hookimpl
def plughost_tools(host):
    return [Tool.from_function(echo), Tool.from_function(extra)]
"""


def test_an_undeclared_folder_tool_is_reported_not_silently_dropped(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    folder = _folder_plugin(plugins, "toolish", _TOOLS_MODULE, tools="tools:\n  - name: echo\n    description: Echo\n")
    listed = run_cli("--plugins-dir", str(plugins), "plugins", "list", "--json")
    row = {r["name"]: r for r in json.loads(listed.stdout)["plugins"]}["toolish"]
    assert row["tools"] == ["echo"]
    assert row["toolProblems"] == ["plugin 'toolish': tool 'extra' is provided by plughost_tools but not declared "
                                   "in PLUGIN.md tools: (declare it there to serve it)"]
    check = run_cli("manifests", "check", str(folder))
    assert check.returncode == 2
    assert f"{folder / 'PLUGIN.md'}: tools: 'extra' is provided by plughost_tools but not declared" in check.stderr


def test_an_input_schema_the_handler_cannot_take_is_a_manifest_defect(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    folder = _folder_plugin(plugins, "schemish", _TOOLS_MODULE, tools=(
        "tools:\n  - name: echo\n    inputSchema:\n      type: object\n      properties:\n"
        "        txt: {type: string}\n  - name: extra\n"))
    check = run_cli("manifests", "check", str(folder))
    assert check.returncode == 2
    assert "tools: 'echo' has an inputSchema property 'txt' that is not a parameter of its handler" in check.stderr


def test_an_entry_point_plugin_lists_and_serves_what_it_declares_in_python(tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--disable-pip-version-check", "--target", str(target),
                    str(_wheel(tmp_path, "ep-tools", _TOOLS_MODULE))],
                   check=True, capture_output=True, text=True, timeout=120)
    env = {"PYTHONPATH": str(target)}  # entry points on PYTHONPATH: processes of their own
    listed = run_cli_process("plugins", "list", "--json", env=env)
    row = {r["name"]: r for r in json.loads(listed.stdout)["plugins"]}["ep-tools"]
    assert row["tools"] == ["echo", "extra"] and row["toolProblems"] == []
    text = run_cli_process("plugins", "list", env=env).stdout
    assert "tools=echo,extra" in text


def test_the_tool_table_is_joined_once_and_used_everywhere(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    calls: list[int] = []

    def plughost_tools(host):
        calls.append(1)
        return [Tool("ping", lambda: "pong", description="ping")]

    host.register(_plugin(plughost_tools=plughost_tools), "once")
    assert "mcp__plugin_once_once__ping" in host.surface.all
    assert call_tool(host, "once", "ping") == "pong"
    assert sorted(host.tools().of("once")) == ["ping"]
    assert calls == [1]


# --------------------------------------------------------------------------- Combines / Fires: boot, CLI, routes
def test_boot_gates_run_in_order_and_a_raising_hook_is_that_plugins_error(make_host) -> None:
    from plughost.runtime.boot import collect_gates

    host = make_host(PLUGHOST_LOAD_PLUGINS="none")

    def boom(host):
        raise RuntimeError("no gates today")

    late = Gate("b-late", check=lambda ctx: GateResult("ok"), order=200)
    early = Gate("a-early", check=lambda ctx: GateResult("ok"), order=1)
    same = Gate("a-same", check=lambda ctx: GateResult("ok"), order=200)
    host.register(_plugin(plughost_boot_gates=lambda host: [late, early]), "gates-1")
    host.register(_plugin(plughost_boot_gates=lambda host: [same]), "gates-2")
    host.register(_plugin(plughost_boot_gates=boom), "gates-boom")
    gates, errors = collect_gates(host)
    assert [(plugin, gate.name) for plugin, gate in gates] == [("gates-1", "a-early"), ("gates-2", "a-same"),
                                                               ("gates-1", "b-late")]
    assert [(e.gate, e.plugin, e.status) for e in errors] == [("gates-boom:plughost_boot_gates", "gates-boom", "error")]


def test_a_plugin_command_may_not_shadow_a_core_one(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    _folder_plugin(plugins, "shadow", """
        from plughost.runtime.hookspecs import hookimpl
        from plughost.runtime.types import CliCommand

        @hookimpl
        def plughost_cli_commands(host):
            return [CliCommand("plugins", "mine", lambda p: None, lambda a, h: 7),
                    CliCommand("shadow-cmd", "mine", lambda p: None, lambda a, h: 3)]
    """)
    mine = run_cli("--plugins-dir", str(plugins), "shadow-cmd")
    assert mine.returncode == 3
    assert "hook=plughost_cli_commands reason=\"command 'plugins' would shadow a core command; ignored\"" in mine.stderr
    core = run_cli("--plugins-dir", str(plugins), "plugins", "list")
    assert core.returncode == 0 and "shadow" in core.stdout


def test_routes_and_channel_routes_claimed_twice_name_both_plugins(make_host) -> None:
    from plughost.runtime.types import ChannelAdapter
    from plughost.serve.app import plugin_routes

    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    host.register(_plugin(plughost_routes=lambda host: [Route("/same", endpoint=lambda r: None)]), "route-a")
    assert [(p, r.key) for p, r in plugin_routes(host)] == [("route-a", "GET /same")]
    host.register(_plugin(plughost_channel_adapters=lambda host: [
        ChannelAdapter("dup", routes=(Route("/same", endpoint=lambda r: None),))]), "chan-b")
    with pytest.raises(DuplicateNameError, match="'GET /same' is provided twice: by plugin 'route-a' and by plugin "
                                                 "'chan-b'"):
        plugin_routes(host)


def test_plugin_state_slots_are_keyed_by_object_not_name(make_host) -> None:
    from plughost.runtime.state import StateKey

    host = make_host(PLUGHOST_LOAD_PLUGINS="none")
    mine, theirs = StateKey[int]("same.name"), StateKey[int]("same.name")
    made: list[int] = []
    assert host.state.setdefault(mine, lambda: made.append(1) or 41) == 41
    assert host.state.setdefault(mine, lambda: made.append(2) or 0) == 41 and made == [1]
    assert host.state.get(theirs) is None and theirs not in host.state
    assert host.state.pop(mine) == 41 and host.state.pop(mine) is None
