"""The plugin shapes (docs/architecture.md#plugin-model), shared by the shapes table and its `claude mcp list`
end-to-end: folder plugins with and without an `mcp:` block, `mcp-manifest: skip` or `shared-lib`, with or
without a server file; and entry-point plugins (a distribution made on disk, a `*.dist-info` with
`entry_points.txt` beside the package, put on `PYTHONPATH` of a real `plughost` process) with and without
their own `PLUGIN.md`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import run_cli_process

TOOL = "tools:\n  - name: ping\n    description: Answer pong.\n    adminAllowlist: true"

# folder shape -> (plugin name, PLUGIN.md frontmatter beyond name and tools, has mcp/__main__.py, servers written)
FOLDER_SHAPES = {
    "hello: no mcp block, a server file": ("hello", "", True, ["hello"]),
    "mcp block and a server file": ("both", "mcp: {command: python, args: [mcp/__main__.py]}", True, ["both"]),
    "mcp block, mcp-manifest skip": ("skipped", "mcp-manifest: skip\nmcp: {command: node, args: [x.js]}", False, []),
    "server file, mcp-manifest skip": ("quiet", "mcp-manifest: skip", True, []),
    "shared-lib block": ("lib", "mcp-manifest: shared-lib\nmcp: {command: plughost, args: [mcp, serve, lib]}",
                         False, ["lib"]),
    "no server at all": ("bare", "", False, []),
}

PING = '''
from plughost import Tool, hookimpl


def ping() -> str:
    """Answer pong."""
    return "pong"


@hookimpl
def plughost_tools(host):
    return [Tool.from_function(ping)]
'''

ALMANAC_MD = "---\nname: almanac\ndescription: \"The almanac, declared by hand.\"\nversion: 2.0.0\ntools:\n" \
             "  - name: ping\n    description: \"Answer pong.\"\n---\n# almanac\n"
SILENT_MD = "---\nname: silent\ndescription: \"Tools, but no server.\"\nmcp-manifest: skip\ntools:\n" \
            "  - name: ping\n    description: \"Answer pong.\"\n---\n# silent\n"

# entry-point shape -> (plugin name = entry point = module, its own PLUGIN.md or None, servers written)
ENTRY_SHAPES = {
    "entry point without PLUGIN.md: tools from code": ("weather", None, ["weather"]),
    "entry point with its own PLUGIN.md": ("almanac", ALMANAC_MD, ["almanac"]),
    "entry point with PLUGIN.md, mcp-manifest skip": ("silent", SILENT_MD, []),
}

ALL_SERVERS = {**{n: s for n, _, _, s in FOLDER_SHAPES.values()}, **{n: s for n, _, s in ENTRY_SHAPES.values()}}
"""Every shape's plugin name → the servers its generated plugin.json has (and its model)."""

BUILTINS = ["admin", "channels", "graph", "memory"]


def write_folder_shapes(parent: Path) -> Path:
    for name, extra, server, _servers in FOLDER_SHAPES.values():
        folder = parent / name
        (folder / "mcp").mkdir(parents=True)
        module = f"shape_{name}_tools"  # the handler, as examples/hello has it
        (folder / f"{module}.py").write_text(textwrap.dedent(PING))
        (folder / "PLUGIN.md").write_text(f"---\nname: {name}\npython: {module}\n{extra}\n{TOOL}\n---\n# {name}\n")
        if server:
            (folder / "mcp" / "__main__.py").write_text("from plughost import run_plugin_server\n"
                                                        f"run_plugin_server({name!r})\n")
    return parent


def write_entry_dists(site: Path) -> Path:
    """One distribution per entry-point shape: ``acme-<name>``, entry point ``<name> = acme_<name>``."""
    for name, md, _servers in ENTRY_SHAPES.values():
        module = f"acme_{name}"
        info = site / f"acme_{name}-1.2.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: acme-{name}\nVersion: 1.2.0\n"
                                       f"Summary: acme-{name}, a third-party plugin\n")
        (info / "entry_points.txt").write_text(f"[plughost.plugins]\n{name} = {module}\n")
        (site / module).mkdir()
        (site / module / "__init__.py").write_text(textwrap.dedent(PING))
        if md is not None:
            (site / module / "PLUGIN.md").write_text(md.replace("tools:", f"python: {module}\ntools:", 1))
    return site


def bundle_shapes(base: Path) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """(the bundle's result, the payload, the site folder): a brand that leaves out every built-in and
    ships the shapes, bundled by a real ``plughost`` with the distributions on ``PYTHONPATH``."""
    folders = write_folder_shapes(base / "my-plugins")
    site = write_entry_dists(base / "site")
    brand = base / "shapes.json"
    brand.write_text(json.dumps({"name": "shapes", "productName": "Shapes", "plugins": {"excluded": BUILTINS},
                                 "store": {"backend": "sqlite"}}))
    out = base / "payload"
    result = run_cli_process("--plugins-dir", str(folders), "bundle", str(brand), "--out", str(out),
                             env={"PYTHONPATH": str(site)})
    return result, out, site


GATE_VIEW = '''
import json, os, sys
from pathlib import Path
from plughost.payload.selftest import checks
from plughost.runtime.host import Host
from plughost.runtime.types import GateContext
from plughost.serve.app import mcp_plugins

plugins = Path(sys.argv[1]) if sys.argv[1] else Path(os.devnull)
host = Host(plugins_dir=plugins, premium_dir=Path(os.devnull), env=dict(os.environ)).load()
coverage = checks.mcp_allowlist_coverage(GateContext(host=host, env=dict(host.env), extras={}))
print(json.dumps({
    "models": {n: m.server_keys for n, m in host.surface.models.items()},
    "tools": {n: [t.name for t in m.tools] for n, m in host.surface.models.items()},
    "mcpServers": host.surface.mcp_servers,
    "refused": sorted(d["plugin"] for d in coverage.defects),
    "serve": mcp_plugins(host),
}))
'''


def gate_view(plugins_dir: Path | None, site: Path, names: list[str]) -> dict[str, object]:
    """What the gates read, from a real process with the distributions on ``PYTHONPATH``: each loaded
    plugin's model servers and tools, the surface's plugins with a server, ``mcp-allowlist-coverage``'s
    refusals, the plugins ``plughost serve`` mounts at ``/mcp/<plugin>``. ``plugins_dir`` None: the entry points alone (before bundling)."""
    env = {"PYTHONPATH": str(site), "PLUGHOST_LOAD_PLUGINS": ",".join(names)}
    done = subprocess.run([sys.executable, "-c", GATE_VIEW, str(plugins_dir or "")], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    view: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return view
