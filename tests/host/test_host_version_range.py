"""A plugin names the host versions it works with (PLUGIN.md's ``requires-plughost``, or its
distribution's ``Requires-Dist: plughost ...``); one outside the range fails alone, before its module
is imported, with one line naming both versions (host/runtime/hostrange.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import plughost
from tests.conftest import run_cli

VERSION = plughost.__version__
MODULE = '''
from plughost import Tool, hookimpl

def ping() -> str:
    """Answer pong."""
    return "pong"

@hookimpl
def plughost_tools(host):
    return [Tool("ping", ping, description="Answer pong.")]
'''
NEVER = "raise SystemExit('a plugin refused for its host range must not be imported')\n"


def _plugin(root: Path, name: str, requires: str | None, module: str = MODULE) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    field = f"requires-plughost: {requires}\n" if requires is not None else ""
    (folder / "PLUGIN.md").write_text(f"---\nname: {name}\nversion: 0.1.0\npython: impl\n{field}"
                                      "tools:\n  - name: ping\n    description: Answer pong.\n---\n",
                                      encoding="utf-8")
    (folder / "impl.py").write_text(module, encoding="utf-8")
    return folder


def test_a_plugin_needing_a_newer_host_fails_alone_with_both_versions(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    _plugin(plugins, "newer", '">=99"', NEVER)
    _plugin(plugins, "current", f'">={VERSION},<99"')
    _plugin(plugins, "bad", '">=banana"', NEVER)
    _plugin(plugins, "number", "0.2", NEVER)  # YAML reads a float: the schema names the field
    listed = run_cli("--plugins-dir", str(plugins), "plugins", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)["plugins"]}
    assert rows["newer"]["status"] == "failed"
    assert rows["newer"]["reason"] == f"needs plughost >=99 (this is {VERSION})"
    assert f'[plugins] op=load-failed plugin=newer reason="needs plughost >=99 (this is {VERSION})"' in listed.stderr
    assert rows["current"]["status"] == "loaded" and rows["current"]["tools"] == ["ping"]
    assert rows["graph"]["status"] == "loaded"
    bad = plugins / "bad" / "PLUGIN.md"
    assert rows["bad"]["status"] == "failed"
    assert rows["bad"]["reason"] == (f"{bad}: requires-plughost: expected a PEP 440 version specifier such as "
                                     "'>=0.2,<1' (got '>=banana')")
    assert rows["number"]["reason"] == f"{plugins / 'number' / 'PLUGIN.md'}: requires-plughost: expected string (got float 0.2)"

    text = run_cli("--plugins-dir", str(plugins), "plugins", "list")
    line = next(row for row in text.stdout.splitlines() if row.startswith("newer "))
    assert line.endswith(f"reason: needs plughost >=99 (this is {VERSION})")

    check = run_cli("--plugins-dir", str(plugins), "manifests", "check", str(plugins / "bad"))
    assert check.returncode == 2
    assert f"{bad}: requires-plughost: expected a PEP 440 version specifier" in check.stdout + check.stderr


def _dist(site: Path, name: str, requires: list[str], module: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0", *(f"Requires-Dist: {r}" for r in requires)]
    (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[plughost.plugins]\n{name} = {name}_hooks\n", encoding="utf-8")
    (site / f"{name}_hooks.py").write_text(module, encoding="utf-8")


def test_an_entry_points_distribution_requirement_on_plughost_is_read_the_same_way(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "fakenew", ["pyyaml>=6", "plughost>=99"], NEVER)
    _dist(site, "fakeok", [f"plughost>={VERSION}", 'plughost>=99; extra == "dev"'], MODULE)
    _dist(site, "fakebad", ["plughost >=banana"], NEVER)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(site), PLUGHOST_HOME=str(tmp_path / "home"))
    result = subprocess.run([sys.executable, "-m", "plughost.cli", "plugins", "list", "--json"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["plugins"]}
    assert rows["fakenew"]["status"] == "failed"
    assert rows["fakenew"]["reason"] == f"needs plughost >=99 (this is {VERSION})"
    assert rows["fakeok"]["status"] == "loaded", rows["fakeok"]  # the `extra == "dev"` requirement does not count
    assert rows["fakebad"]["status"] == "failed"
    assert rows["fakebad"]["reason"] == textwrap.dedent(f"""\
        {site / 'fakebad-1.0.dist-info'}/METADATA: Requires-Dist: expected a PEP 508 requirement such as \
'plughost>=0.2,<1' (got 'plughost >=banana')""")
    assert rows["graph"]["status"] == "loaded"


def test_check_names_the_field_and_bundle_leaves_such_a_plugin_out(tmp_path: Path) -> None:
    """`manifests check` says which field excludes this host (with or without a `python:` module), and
    `bundle` ships no plugin this host would never load, saying so in its `left out:` line."""
    plugins = tmp_path / "plugins"
    newer = _plugin(plugins, "newer", '">=99"', NEVER)
    decl = plugins / "decl"
    decl.mkdir()
    (decl / "PLUGIN.md").write_text('---\nname: decl\nversion: 0.1.0\nrequires-plughost: "<0.2"\n---\n')
    for folder in (newer, decl):
        check = run_cli("--plugins-dir", str(plugins), "manifests", "check", str(folder))
        assert check.returncode == 2 and "Traceback" not in check.stderr
        assert f"{folder / 'PLUGIN.md'}: requires-plughost: needs plughost" in check.stdout + check.stderr
    _plugin(plugins, "current", f'">={VERSION},<99"')
    out = tmp_path / "payload"
    built = run_cli("--plugins-dir", str(plugins), "bundle", "default", "--out", str(out))
    assert built.returncode == 0, built.stderr
    assert "newer (needs plughost >=99" in built.stdout and "decl (needs plughost <0.2" in built.stdout
    shipped = {p.name for p in (out / "plugins").iterdir()}
    assert "current" in shipped and not {"newer", "decl"} & shipped
