"""The README's "Writing a plugin", run as a user would: examples/hello copied to a fresh folder,
found through ``--plugins-dir`` beside the built-ins, and called over real MCP clients (the
README's own client snippet against ``plughost mcp serve``, and ``mcp/__main__.py`` through the
tee launcher as the generated plugin.json starts it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

pytestmark = pytest.mark.e2e  # end to end: -m "not e2e" leaves it out locally; CI runs it

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _user_env(home: Path) -> dict[str, str]:
    """What a user's shell has: the virtualenv's bin on PATH, a data root, nothing of the test's."""
    return {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "PLUGHOST_HOME": str(home / "data"),
            "PLUGHOST_EMBEDDER": "none"}


def _copied(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "my-plugins").mkdir(parents=True)
    shutil.copytree(REPO / "examples" / "hello", work / "my-plugins" / "hello")
    assert sorted(p.name for p in (work / "my-plugins" / "hello").rglob("*") if p.is_file()) == [
        "PLUGIN.md", "__main__.py", "hello_tools.py"]
    return work


def _readme_block(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"README: one python block with {marker!r}"
    return found[0]


def test_found_beside_the_builtins_and_served_by_the_readme_client(tmp_path: Path) -> None:
    work = _copied(tmp_path)
    env = _user_env(tmp_path)
    listed = subprocess.run(["plughost", "--plugins-dir", "my-plugins", "plugins", "list", "--json"], cwd=work,
                            env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    plugins = {p["name"]: p for p in json.loads(listed.stdout)["plugins"]}
    assert plugins["hello"]["status"] == "loaded" and plugins["hello"]["tools"] == ["greet"]
    assert plugins["hello"]["source"] == "platform" and plugins["hello"]["toolProblems"] == []
    assert {"graph", "memory", "channels", "admin", "selftest"} <= set(plugins)  # adds to, not replaces
    assert all(plugins[n]["status"] == "loaded" for n in ("graph", "memory"))

    check = subprocess.run(["plughost", "--plugins-dir", "my-plugins", "manifests", "check", "my-plugins/hello"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr

    (work / "client.py").write_text(_readme_block("StdioServerParameters"))
    bare = dict(env, PATH="/usr/bin:/bin")  # run with the install's Python: plughost need not be on PATH
    run = subprocess.run([sys.executable, "client.py"], cwd=work, env=bare, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["['greet']", "Hello, Ada!"]


def test_readme_says_how_to_reach_the_install_plughost() -> None:
    """`plughost` is not on a newcomer's PATH: the section says where it is before its first use."""
    section = (REPO / "README.md").read_text().split("## Writing a plugin", 1)[1].split("\n## ", 1)[0]
    first_use = section.index("plughost --plugins-dir")
    assert ".venv/bin/plughost" in section[:first_use] and ". .venv/bin/activate" in section[:first_use]
    assert 'command="plughost"' not in section


def test_mcp_main_through_the_tee_launcher(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    work = _copied(tmp_path)
    plugin = work / "my-plugins" / "hello"
    env = dict(_user_env(tmp_path), PLUGHOST_PLUGINS_DIR=str(plugin.parent))
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "plughost.mcp.tee", "hello", "--", sys.executable,
                                         str(plugin / "mcp" / "__main__.py")],
                                   env=env, cwd=str(tmp_path))

    async def go():
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            ok = await client.call_tool("greet", {"name": "Grace"})
            bad = await client.call_tool("greet", {"name": 42})
            return tools, ok, bad

    tools, ok, bad = anyio.run(go)
    assert [(t.name, t.input_schema.get("required")) for t in tools] == [("greet", ["name"])]
    assert not ok.is_error and ok.content[0].text == "Hello, Grace."
    assert bad.is_error and "parameter 'name'" in bad.content[0].text
    assert "Traceback" not in bad.content[0].text
    assert not os.path.exists(Path(env["HOME"]) / ".plughost")
