"""The `mcpServers` entry a generated plugin.json carries really serves the plugin's tools: run it
as Claude Code would (the command verbatim, `${CLAUDE_PLUGIN_ROOT}` expanded, a minimal env with
no virtualenv on PATH) and call the tool over stdio with a real MCP client."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from plughost.payload.launch import MINIMAL_PATH, resolve
from tests.conftest import run_cli


def _call(entry: dict, root: Path, home: Path, tool: str, args: dict) -> tuple[list[str], str, bool]:
    # Claude Code's environment: a minimal PATH plus what `plughost install` puts in settings.json env
    base = {"PATH": MINIMAL_PATH, "PLUGHOST_HOME": str(home), "PLUGHOST_EMBEDDER": "none",
            "PLUGHOST_PYTHON": sys.executable}
    launch = resolve(root.name, f"{root.name}@m", root.name, entry, root, root / "plugin.json", base)
    assert not launch.unset
    params = StdioServerParameters(command=launch.command, args=launch.args, env=launch.env, cwd="/tmp")

    async def go() -> tuple[list[str], str, bool]:
        async with Client(params) as client:
            tools = await client.list_tools()
            result = await client.call_tool(tool, args)
            return [t.name for t in tools.tools], result.content[0].text, bool(result.is_error)

    return anyio.run(go)


def test_generated_entries_serve_the_declared_tools(example_payload: Path, plughost_home: Path) -> None:
    assert run_cli("manifests", "generate", str(example_payload)).returncode == 0
    greeter = example_payload / "premium-plugins" / "greeter"
    entry = json.loads((greeter / ".claude-plugin" / "plugin.json").read_text())["mcpServers"]["greeter"]
    names, text, error = _call(entry, greeter, plughost_home, "greet", {"name": "Ada"})
    assert names == ["greet"] and text == "Hello, Ada!" and not error
    notes = example_payload / "premium-plugins" / "studio" / "plugins" / "notes"
    entry = json.loads((notes / ".claude-plugin" / "plugin.json").read_text())["mcpServers"]["notes"]
    names, text, error = _call(entry, notes, plughost_home, "note-count", {"text": 3})
    assert names == ["note-count"] and error and "parameter 'text'" in text
    log = next((plughost_home / "logs").glob("mcp-notes-stderr-*.log")).read_text()
    assert "[mcp] op=serve-stdio plugin=notes" in log
