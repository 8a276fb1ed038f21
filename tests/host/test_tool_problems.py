"""A plugin's tool defects (an invalid ``inputSchema``, a declared tool without handler) are that
plugin's tool problems: listed by ``plugins list``, exit 2 from ``manifests check``, and never a
crash of the other plugins' commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

BAD_SCHEMA = """---
name: sch
description: "A tool whose inputSchema is not a JSON Schema."
python: sch_tools
tools:
  - name: t1
    description: "Takes a."
    inputSchema: {type: object, properties: {a: {type: wat}}}
---
"""

MODULES = {
    "no-hook": "X = 1\n",
    "raises": ("from plughost.runtime.hookspecs import hookimpl\n\n@hookimpl\ndef plughost_tools(host):\n"
               "    raise RuntimeError('tools table broke')\n"),
    "not-a-list": "from plughost.runtime.hookspecs import hookimpl\n\n@hookimpl\ndef plughost_tools(host):\n    return 42\n",
    "one-tool-no-list": ("from plughost.runtime.hookspecs import hookimpl\nfrom plughost.runtime.types import Tool\n\n"
                         "@hookimpl\ndef plughost_tools(host):\n    return Tool('t1', lambda: 1)\n"),
    "returns-empty": "from plughost.runtime.hookspecs import hookimpl\n\n@hookimpl\ndef plughost_tools(host):\n    return []\n",
    "returns-none": "from plughost.runtime.hookspecs import hookimpl\n\n@hookimpl\ndef plughost_tools(host):\n    return None\n",
}


def _plugin(root: Path, name: str, manifest: str, module: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "PLUGIN.md").write_text(manifest, encoding="utf-8")
    (folder / f"{name}_tools.py").write_text(module, encoding="utf-8")
    return folder


def _listed(plugins_dir: Path) -> dict[str, dict]:
    result = run_cli("--plugins-dir", str(plugins_dir), "plugins", "list", "--json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return {p["name"]: p for p in json.loads(result.stdout)["plugins"]}


def test_an_invalid_input_schema_is_a_tool_problem_not_a_crash(tmp_path: Path) -> None:
    folder = _plugin(tmp_path / "bad4", "sch", BAD_SCHEMA,
                     "from plughost.runtime.hookspecs import hookimpl\nfrom plughost.runtime.types import Tool\n\n"
                     "def t1(a):\n    return a\n\n@hookimpl\ndef plughost_tools(host):\n"
                     "    return [Tool('t1', t1)]\n")
    plugins = _listed(tmp_path / "bad4")
    assert plugins["sch"]["status"] == "loaded" and "t1" not in plugins["sch"]["tools"]
    (problem,) = plugins["sch"]["toolProblems"]
    assert "inputSchema" in problem and "properties.a.type" in problem, problem
    assert plugins["graph"]["status"] == "loaded" and plugins["graph"]["toolProblems"] == []
    check = run_cli("--plugins-dir", str(tmp_path / "bad4"), "manifests", "check", str(folder))
    lines = [line for line in check.stderr.strip().splitlines() if not line.startswith("[")]
    assert check.returncode == 2 and len(lines) == 1, check.stderr
    assert lines[0].startswith(f"{folder / 'PLUGIN.md'}: tools: 't1'") and "properties.a.type" in lines[0]
    boot = run_cli("--plugins-dir", str(tmp_path / "bad4"), "boot", "--check")
    assert "Traceback" not in boot.stderr and "SchemaError" not in boot.stderr, boot.stderr
    assert "[boot] op=gates" in boot.stdout + boot.stderr


@pytest.mark.parametrize("case", sorted(MODULES))
def test_a_declared_tool_without_handler_is_reported(tmp_path: Path, case: str) -> None:
    manifest = BAD_SCHEMA.replace("    inputSchema: {type: object, properties: {a: {type: wat}}}\n", "")
    folder = _plugin(tmp_path / "pl", "sch", manifest, MODULES[case])
    plugins = _listed(tmp_path / "pl")
    problems = plugins["sch"]["toolProblems"]
    assert len(problems) == 1 and "'t1'" in problems[0], problems
    if case == "raises":
        assert "plughost_tools failed: RuntimeError: tools table broke" in problems[0]
        assert "no plughost_tools implementation" not in problems[0]
    if case == "one-tool-no-list":
        assert "plughost_tools failed: TypeError: returned Tool, expected a list of Tool" in problems[0], problems
    if case.startswith("returns-"):
        assert "its plughost_tools returns no Tool" in problems[0], problems
    check = run_cli("--plugins-dir", str(tmp_path / "pl"), "manifests", "check", str(folder))
    assert check.returncode == 2 and "Traceback" not in check.stderr, check.stderr
    lines = [line for line in check.stderr.strip().splitlines() if not line.startswith("[")]
    assert len(lines) == 1 and lines[0].startswith(f"{folder / 'PLUGIN.md'}: tools: 't1'"), check.stderr


TOLD_TWICE = """---
name: twice
description: "Tools whose facts the code states again, and placeholder descriptions."
python: twice_tools
tools:
  - name: t-desc
    description: "Said in PLUGIN.md."
  - name: t-schema
    description: "Takes a string."
    inputSchema: {type: object, properties: {a: {type: string}}}
  - name: t-admin
    description: "Not on the admin allowlist."
  - name: t-eager
    description: "Loaded on demand."
    adminAllowlist: true
    eager: false
  - name: t-typed
    description: "Takes a count."
    inputSchema: {type: object, properties: {a: {type: integer}}}
  - name: t-named
    description: "t-named"
  - name: t-empty
  - name: t-ok
    description: "Declared once, in PLUGIN.md."
  - name: t-fn
    description: "Greets by name; its schema comes from the signature."
---
"""

TWICE_MODULE = """\
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import Tool


def answer(a: str = "") -> str:
    return a


def count(a: str) -> str:
    return a


def greet(name: str) -> str:
    \"\"\"Say hello (the docstring documents the handler; PLUGIN.md describes the tool).\"\"\"
    return "hello " + name


@hookimpl
def plughost_tools(host):
    return [Tool("t-desc", answer, description="Said in code."),
            Tool("t-schema", answer, input_schema={"type": "object", "properties": {"a": {"type": "integer"}}}),
            Tool("t-admin", answer, admin_allowlist=True),
            Tool("t-eager", answer, eager=True),
            Tool("t-typed", count), Tool("t-named", answer), Tool("t-empty", answer), Tool("t-ok", answer),
            Tool.from_function(greet, name="t-fn")]
"""

TWICE = {  # tool -> (reason, what its problem line names)
    "t-desc": ("disagrees", "(description)"),
    "t-schema": ("disagrees", "(inputSchema)"),
    "t-admin": ("disagrees", "(adminAllowlist)"),
    "t-eager": ("disagrees", "(eager)"),
    "t-typed": ("signature", "property 'a' of type integer, but its handler's parameter takes string"),
    "t-named": ("placeholder", "placeholder description in PLUGIN.md"),
    "t-empty": ("placeholder", "placeholder description in PLUGIN.md"),
}


def _tool_of(line: str) -> str:
    return line.split("'")[3]  # plugin '<plugin>': tool '<tool>' ...


def test_a_fact_stated_again_in_code_or_a_placeholder_is_a_tool_problem(tmp_path: Path) -> None:
    """Never silently resolved: each one is listed, and `manifests check` exits 2 naming it; the
    tools are still served, as PLUGIN.md declares them."""
    folder = _plugin(tmp_path / "tw", "twice", TOLD_TWICE, TWICE_MODULE)
    plugins = _listed(tmp_path / "tw")
    row = plugins["twice"]
    assert row["status"] == "loaded" and row["tools"] == sorted([*TWICE, "t-ok", "t-fn"])
    problems = {_tool_of(line): line for line in row["toolProblems"]}
    assert sorted(problems) == sorted(TWICE) and len(row["toolProblems"]) == len(TWICE), row["toolProblems"]
    for tool, (_, needle) in TWICE.items():
        assert needle in problems[tool], problems[tool]
    assert "PLUGIN.md's is served" in problems["t-desc"]
    for builtin in ("admin", "channels", "graph", "memory"):
        assert plugins[builtin]["toolProblems"] == [], plugins[builtin]
    check = run_cli("--plugins-dir", str(tmp_path / "tw"), "manifests", "check", str(folder))
    lines = [line for line in check.stderr.strip().splitlines() if not line.startswith("[")]
    assert check.returncode == 2 and sorted(line.split("'")[1] for line in lines) == sorted(TWICE), check.stderr
    assert all(line.startswith(f"{folder / 'PLUGIN.md'}: tools: 't-") for line in lines)


def test_tools_list_serves_what_plugin_md_declares_and_logs_each_problem(tmp_path: Path, make_host,
                                                                         plughost_home: Path) -> None:
    import anyio
    from mcp import Client

    from plughost.mcp.server import EAGER_META_KEY, build_server

    _plugin(tmp_path / "tw", "twice", TOLD_TWICE, TWICE_MODULE)
    host = make_host(plugins_dir=tmp_path / "tw")

    async def listed():
        async with Client(build_server(host, "twice")) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = anyio.run(listed)
    assert sorted(tools) == sorted([*TWICE, "t-ok", "t-fn"])
    assert tools["t-fn"].description == "Greets by name; its schema comes from the signature."
    assert tools["t-fn"].input_schema["required"] == ["name"]  # PLUGIN.md gives none: the signature's
    assert tools["t-desc"].description == "Said in PLUGIN.md."
    assert tools["t-schema"].input_schema["properties"] == {"a": {"type": "string"}}
    assert (tools["t-eager"].meta or {}).get(EAGER_META_KEY) is None
    assert tools["t-named"].description == "t-named" and not tools["t-empty"].description
    admin = [n.rsplit("__", 1)[1] for n in host.surface.admin if "_twice_twice__" in n]
    assert admin == ["t-eager"]  # t-admin's flag in code is not PLUGIN.md's
    log = (plughost_home / "logs" / "server.log").read_text(encoding="utf-8").splitlines()
    for tool, (reason, _) in TWICE.items():
        assert [line for line in log if line.startswith("[mcp] op=tool-problem plugin=twice ")
                and f" tool={tool} reason={reason} " in line], (tool, log)
    assert not [line for line in log if "op=tool-problem" in line and ("tool=t-ok" in line or "tool=t-fn" in line)]


@pytest.mark.parametrize(("case", "said"), [("raises", "plughost_tools failed: RuntimeError: tools table broke"),
                                           ("returns-empty", "its plughost_tools returns no Tool"),
                                           ("returns-none", "its plughost_tools returns no Tool")])
def test_a_failing_tools_hook_is_reported_even_beside_the_plugins_own_server(tmp_path: Path, case: str,
                                                                             said: str) -> None:
    """A plugin with an ``mcp/`` folder (its server runs ``plughost mcp serve``) whose ``plughost_tools``
    raises or returns no Tool cannot serve anything: the problem is listed, not only found when the
    server starts (the folder ``plughost plugin new`` makes, its hook edited to ``return []``)."""
    manifest = BAD_SCHEMA.replace("    inputSchema: {type: object, properties: {a: {type: wat}}}\n", "")
    folder = _plugin(tmp_path / "pl", "sch", manifest, MODULES[case])
    (folder / "mcp").mkdir()
    (folder / "mcp" / "__main__.py").write_text("raise SystemExit(0)\n", encoding="utf-8")
    (problem,) = _listed(tmp_path / "pl")["sch"]["toolProblems"]
    assert said in problem, problem
    check = run_cli("--plugins-dir", str(tmp_path / "pl"), "manifests", "check", str(folder))
    assert check.returncode == 2 and "Traceback" not in check.stderr, check.stderr


SIGNED = """---
name: signed
description: "Tools whose input schema PLUGIN.md leaves to the handler's signature."
python: signed_tools
tools:
  - name: greet
    description: "Greet someone by name."
  - name: text-handler
    description: "Declared with the old two-argument form: text where the handler goes."
---
"""


def test_the_signature_is_the_schema_when_plugin_md_gives_none_and_a_text_handler_is_a_problem(tmp_path: Path) -> None:
    module = ("from plughost.runtime.hookspecs import hookimpl\nfrom plughost.runtime.types import Tool\n\n"
              "def greet(name: str) -> str:\n    return f'Hello, {name}!'\n\n@hookimpl\ndef plughost_tools(host):\n"
              "    return [Tool('greet', greet), Tool('text-handler', 'Greets.')]\n")
    folder = _plugin(tmp_path / "pl", "signed", SIGNED, module)
    (problem,) = _listed(tmp_path / "pl")["signed"]["toolProblems"]
    assert "'text-handler'" in problem and "not callable (str)" in problem, problem
    check = run_cli("--plugins-dir", str(tmp_path / "pl"), "manifests", "check", str(folder))
    assert check.returncode == 2 and "text-handler" in check.stderr and "greet" not in check.stderr, check.stderr
    from plughost.runtime.host import Host

    host = Host(plugins_dir=tmp_path / "pl", env={"PLUGHOST_HOME": str(tmp_path / "home"), "PLUGHOST_LOAD_PLUGINS": "signed"})
    served = host.load().tools().served["signed"]
    assert set(served) == {"greet"}
    assert served["greet"].schema["properties"] == {"name": {"type": "string"}}
    assert served["greet"].schema["required"] == ["name"]
