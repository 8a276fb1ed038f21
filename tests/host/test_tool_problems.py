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
    "raises": ("from host.runtime.hookspecs import hookimpl\n\n@hookimpl\ndef plughost_tools(host):\n"
               "    raise RuntimeError('tools table broke')\n"),
    "not-a-list": "from host.runtime.hookspecs import hookimpl\n\n@hookimpl\ndef plughost_tools(host):\n    return 42\n",
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
                     "from host.runtime.hookspecs import hookimpl\nfrom host.runtime.types import Tool\n\n"
                     "def t1(a):\n    return a\n\n@hookimpl\ndef plughost_tools(host):\n"
                     "    return [Tool('t1', t1)]\n")
    plugins = _listed(tmp_path / "bad4")
    assert plugins["sch"]["status"] == "loaded" and "t1" not in plugins["sch"]["tools"]
    (problem,) = plugins["sch"]["toolProblems"]
    assert "inputSchema" in problem and "properties.a.type" in problem, problem
    assert plugins["graph"]["status"] == "loaded" and plugins["graph"]["toolProblems"] == []
    check = run_cli("--plugins-dir", str(tmp_path / "bad4"), "manifests", "check", str(folder))
    lines = check.stderr.strip().splitlines()
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
    check = run_cli("--plugins-dir", str(tmp_path / "pl"), "manifests", "check", str(folder))
    assert check.returncode == 2 and "Traceback" not in check.stderr, check.stderr
    lines = [line for line in check.stderr.strip().splitlines() if not line.startswith("[")]
    assert len(lines) == 1 and lines[0].startswith(f"{folder / 'PLUGIN.md'}: tools: 't1'"), check.stderr
