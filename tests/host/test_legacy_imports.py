"""Plugins written for 0.1 (``from host.runtime.hookspecs import hookimpl``, ``import host``, ...) load
through a real ``plughost`` process until 0.3, warn at their own line and are named in the log with
the new import; a user's own ``host`` package wins over the alias (host/runtime/legacy.py).

Every run is a subprocess from a temporary cwd with no PYTHONPATH of the test's: with the checkout
root on sys.path its ``host/`` folder would be imported as ``host`` and no alias would be used.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

BIN = Path(sys.executable).parent

# plugin -> its module, one per way the old README, examples and docs/hooks.md told authors to import
OLD_PLUGINS = {
    "rooms": """
        from host.runtime.hookspecs import hookimpl
        from host.runtime.types import Tool
        from host.util.log import log
        from host.util.settings import Setting
        from host.util.errors import FatalError
        from host.ports.graph import GraphStore
        from host.runtime.state import StateKey

        def ping() -> str:
            \"\"\"Answer pong.\"\"\"
            return "pong"

        @hookimpl
        def plughost_tools(host):
            assert callable(log) and Setting and FatalError and GraphStore and StateKey
            return [Tool("ping", ping)]
    """,
    "flat": """
        from host.hookspecs import hookimpl
        from host.types import Tool
        from host.log import log
        from host.mcp_server import run_plugin_server

        def ping() -> str:
            \"\"\"Answer pong.\"\"\"
            return "pong"

        @hookimpl
        def plughost_tools(host):
            assert callable(log) and callable(run_plugin_server)
            return [Tool("ping", ping)]
    """,
    "bare": """
        import host

        def ping() -> str:
            \"\"\"Answer pong.\"\"\"
            return "pong"

        @host.hookimpl
        def plughost_tools():
            return [host.Tool("ping", ping)]  # read inside the hook: after the import, still this plugin's

        @host.hookimpl
        def plughost_startup():
            return None
    """,
    "from-package": """
        from host import hookimpl, Tool
        from host.mcp.server import run_plugin_server

        def ping() -> str:
            \"\"\"Answer pong.\"\"\"
            return "pong"

        @hookimpl
        def plughost_tools(host):
            return [Tool("ping", ping)]
    """,
}

# (plugin, old name, new import): every use the log must name, once
EXPECTED = [
    ("rooms", "host.runtime.hookspecs.hookimpl", "from plughost import hookimpl"),
    ("rooms", "host.runtime.types.Tool", "from plughost import Tool"),
    ("rooms", "host.util.log.log", "from plughost import log"),
    ("rooms", "host.util.settings.Setting", "from plughost import Setting"),
    ("rooms", "host.util.errors.FatalError", "from plughost import FatalError"),
    ("rooms", "host.ports.graph.GraphStore", "from plughost import GraphStore"),
    ("rooms", "host.runtime.state.StateKey", "from plughost import StateKey"),
    ("flat", "host.hookspecs.hookimpl", "from plughost import hookimpl"),
    ("flat", "host.types.Tool", "from plughost import Tool"),
    ("flat", "host.log.log", "from plughost import log"),
    ("flat", "host.mcp_server.run_plugin_server", "from plughost import run_plugin_server"),
    ("bare", "host.hookimpl", "from plughost import hookimpl"),
    ("bare", "host.Tool", "from plughost import Tool"),
    ("from-package", "host.hookimpl", "from plughost import hookimpl"),
    ("from-package", "host.Tool", "from plughost import Tool"),
    ("from-package", "host.mcp.server.run_plugin_server", "from plughost import run_plugin_server"),
]


def _plugin(root: Path, name: str, module: str, tool: str = "ping") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "PLUGIN.md").write_text(f"---\nname: {name}\nversion: 0.1.0\npython: impl\ntools:\n  - name: {tool}\n"
                                      f"    description: Answer {tool}.\n---\n", encoding="utf-8")
    (folder / "impl.py").write_text(textwrap.dedent(module).lstrip(), encoding="utf-8")
    return folder


def _plughost(cwd: Path, *args: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The console script, as a user runs it: from ``cwd``, DeprecationWarnings shown once per line."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PLUGHOST_HOME=str(cwd / "home"), PLUGHOST_EMBEDDER="none", PYTHONWARNINGS="default::DeprecationWarning")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([str(BIN / "plughost"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_old_imports_load_work_warn_at_the_plugins_line_and_log_the_new_import(tmp_path: Path) -> None:
    for name, module in OLD_PLUGINS.items():
        _plugin(tmp_path / "plugins", name, module)
    result = _plughost(tmp_path, "--plugins-dir", "plugins", "plugins", "list", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["plugins"]}
    for name in OLD_PLUGINS:
        assert rows[name]["status"] == "loaded", rows[name]
        assert rows[name]["tools"] == ["ping"] and rows[name]["toolProblems"] == [], rows[name]
    assert rows["graph"]["status"] == "loaded"

    logged = re.findall(r"^\[plugins\] op=deprecated .*$", result.stderr, re.M)
    expected = [f'[plugins] op=deprecated plugin={p} old={old} new="{new}"' for p, old, new in EXPECTED]
    assert sorted(logged) == sorted(expected)  # each once, though `host.hookimpl` is used twice

    # the warning points at the plugin's own line (not importlib's, not legacy.py's)
    bare = tmp_path / "plugins" / "bare" / "impl.py"
    rooms = tmp_path / "plugins" / "rooms" / "impl.py"
    package = tmp_path / "plugins" / "from-package" / "impl.py"
    for path, text, old, new in [
        (rooms, "from host.runtime.hookspecs", "host.runtime.hookspecs.hookimpl", "from plughost import hookimpl"),
        (bare, "@host.hookimpl", "host.hookimpl", "from plughost import hookimpl"),
        (bare, "host.Tool(", "host.Tool", "from plughost import Tool"),
        (package, "from host import", "host.hookimpl", "from plughost import hookimpl"),
    ]:
        warning = (f"{path}:{_line_of(path, text)}: DeprecationWarning: {old} is deprecated: use `{new}` "
                   f"(removed in plughost 0.3)")
        assert warning in result.stderr, result.stderr
    assert "legacy.py" not in result.stderr and "_bootstrap" not in result.stderr


def test_a_users_own_host_package_wins_over_the_alias(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "host").mkdir(parents=True)
    (site / "host" / "__init__.py").write_text("OWNER = 'user'\n", encoding="utf-8")
    _plugin(tmp_path / "plugins", "mine", """
        import host
        from plughost import Tool, hookimpl

        def owner() -> str:
            \"\"\"Who owns `host`.\"\"\"
            return host.OWNER

        @hookimpl
        def plughost_tools(host):
            return [Tool("owner", owner)]
    """, tool="owner")
    _plugin(tmp_path / "plugins", "old", "from host.runtime.hookspecs import hookimpl\n")
    result = _plughost(tmp_path, "--plugins-dir", "plugins", "plugins", "list", "--json", pythonpath=site)
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["plugins"]}
    assert rows["mine"]["status"] == "loaded" and rows["mine"]["tools"] == ["owner"]
    # under a real `host` the alias serves nothing, not even a submodule the real one lacks
    assert rows["old"]["status"] == "failed"
    assert rows["old"]["reason"] == "import failed: ModuleNotFoundError: No module named 'host.runtime'"
    assert "op=deprecated" not in result.stderr and "DeprecationWarning" not in result.stderr


def test_only_a_plughost_process_serves_the_old_names_and_import_plughost_stays_cheap(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = textwrap.dedent("""
        import sys
        import plughost
        print("legacy loaded:", "plughost.runtime.legacy" in sys.modules)
        try:
            import host
        except ModuleNotFoundError as exc:
            print(exc)
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["legacy loaded: False", "No module named 'host'"]
