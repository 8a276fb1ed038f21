"""`plughost plugin new`: the scaffold passes `manifests check`, loads with its tool, boots and
is served over MCP as generated; a bad NAME or an existing folder is one line, exit 2. The
`--package` scaffold is installed and bundled from a built wheel in tests/installed/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli


def test_a_folder_plugin_checks_loads_and_boots_as_generated(tmp_path: Path) -> None:
    made = run_cli("plugin", "new", "shop-hours", "--dir", str(tmp_path / "mine"))
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "mine" / "shop-hours"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "PLUGIN.md", "mcp/__main__.py", "shop_hours_tools.py"]
    assert "from plughost import Tool, hookimpl" in (folder / "shop_hours_tools.py").read_text()
    check = run_cli("--plugins-dir", str(folder.parent), "manifests", "check", str(folder))
    assert check.returncode == 0, check.stdout + check.stderr
    listed = run_cli("--plugins-dir", str(folder.parent), "plugins", "list", "--json")
    [plugin] = [p for p in json.loads(listed.stdout)["plugins"] if p["name"] == "shop-hours"]
    assert (plugin["status"], plugin["tools"], plugin["toolProblems"]) == ("loaded", ["shop-hours-greet"], [])
    boot = run_cli("--plugins-dir", str(folder.parent), "boot", "--check", env={"ACCOUNT_ID": "demo"})
    assert boot.returncode == 0, boot.stdout + boot.stderr


def test_its_server_answers_over_mcp(tmp_path: Path) -> None:
    import os
    import sys

    import anyio
    from mcp import Client, StdioServerParameters

    assert run_cli("plugin", "new", "shop-hours", "--dir", str(tmp_path)).returncode == 0
    folder = tmp_path / "shop-hours"
    env = dict(os.environ, PLUGHOST_PLUGINS_DIR=str(tmp_path))
    params = StdioServerParameters(command=sys.executable, args=[str(folder / "mcp" / "__main__.py")], env=env,
                                   cwd=str(tmp_path))

    async def go():
        async with Client(params) as client:
            return (await client.list_tools()).tools, await client.call_tool("shop-hours-greet", {"name": "Ada"})

    tools, result = anyio.run(go)
    assert [t.name for t in tools] == ["shop-hours-greet"]
    assert result.content[0].text == "Hello, Ada, from shop-hours."


def test_the_package_scaffold_names_its_entry_point_and_plughost(tmp_path: Path) -> None:
    assert run_cli("plugin", "new", "shop-hours", "--package", "--dir", str(tmp_path)).returncode == 0
    root = tmp_path / "shop-hours"
    pyproject = (root / "pyproject.toml").read_text()
    assert '[project.entry-points."plughost.plugins"]\nshop-hours = "plughost_shop_hours.plugin"' in pyproject
    assert 'dependencies = ["plughost>=0.' in pyproject
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == [
        "README.md", "pyproject.toml", "src/plughost_shop_hours/PLUGIN.md", "src/plughost_shop_hours/__init__.py",
        "src/plughost_shop_hours/plugin.py", "tests/test_plugin.py"]


@pytest.mark.parametrize("args, message", [
    (["Bad_Name"], "plughost: NAME: 'Bad_Name' is not a plugin name"),
    (["-x"], "plughost plugin new: error:"),
    (["a" * 65], "is not a plugin name"),
    (["memory"], "plughost: NAME: 'memory' is the name of a built-in plugin"),
])
def test_a_bad_name_is_one_line_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = run_cli("plugin", "new", *args, "--dir", str(tmp_path))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not any(tmp_path.iterdir())


def test_an_existing_folder_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "shop-hours").mkdir()
    (tmp_path / "shop-hours" / "mine.txt").write_text("keep")
    result = run_cli("plugin", "new", "shop-hours", "--dir", str(tmp_path))
    assert result.returncode == 2 and result.stderr.strip() == (
        f"plughost: NAME: '{tmp_path / 'shop-hours'}' already exists; choose another name or --dir")
    assert [p.name for p in (tmp_path / "shop-hours").iterdir()] == ["mine.txt"]
