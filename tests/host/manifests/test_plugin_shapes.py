"""Plugin shapes: what the generator writes is what the gates check (docs/architecture.md#plugin-model).

Each shape is a plugin folder with one admin-allowlisted tool; the payload is generated, the host is
loaded from it, and for every shape the generated ``plugin.json`` ``mcpServers`` keys equal the
servers of the plugin's model, which is what ``mcp-allowlist-coverage`` and ``tool-registration`` read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from plughost.payload.selftest import checks
from plughost.runtime.host import Host
from plughost.runtime.types import GateContext
from tests.conftest import run_cli

TOOL = "tools:\n  - name: ping\n    description: Answer pong.\n    adminAllowlist: true"

# shape -> (PLUGIN.md frontmatter beyond name and tools, has mcp/__main__.py, servers the generator writes)
SHAPES = {
    "hello: no mcp block, a server file": ("", True, ["hello"]),
    "mcp block and a server file": ("mcp: {command: python, args: [mcp/__main__.py]}", True, ["both"]),
    "mcp block, mcp-manifest skip": ("mcp-manifest: skip\nmcp: {command: node, args: [x.js]}", False, []),
    "server file, mcp-manifest skip": ("mcp-manifest: skip", True, []),
    "shared-lib block": ("mcp-manifest: shared-lib\nmcp: {command: /bin/true}", False, ["lib"]),
    "no server at all": ("", False, []),
}
NAMES = {"hello: no mcp block, a server file": "hello", "mcp block and a server file": "both",
         "mcp block, mcp-manifest skip": "skipped", "server file, mcp-manifest skip": "quiet",
         "shared-lib block": "lib", "no server at all": "bare"}


@pytest.fixture(scope="module")
def payload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shapes") / "payload"
    for shape, (extra, server, _servers) in SHAPES.items():
        folder = root / "plugins" / NAMES[shape]
        (folder / "mcp").mkdir(parents=True)
        (folder / "PLUGIN.md").write_text(f"---\nname: {NAMES[shape]}\n{extra}\n{TOOL}\n---\n# {shape}\n")
        if server:
            (folder / "mcp" / "__main__.py").write_text("from plughost import run_plugin_server\n"
                                                        f"run_plugin_server({NAMES[shape]!r})\n")
    (root / "brand.json").write_text(json.dumps({"name": "acme", "productName": "Acme"}))
    done = run_cli("manifests", "generate", str(root))
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def host(payload: Path) -> Host:
    env = {**os.environ, "PLUGHOST_LOAD_PLUGINS": ",".join(NAMES.values())}
    return Host(plugins_dir=payload / "plugins", premium_dir=None, env=env).load()


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_generator_writes_the_servers_the_gates_check(shape: str, payload: Path, host: Host) -> None:
    name = NAMES[shape]
    written = json.loads((payload / "plugins" / name / ".claude-plugin" / "plugin.json").read_text())
    servers = sorted(written.get("mcpServers") or {})
    assert servers == SHAPES[shape][2], shape
    model = host.surface.models[name]
    assert model.server_keys == servers, shape
    assert (name in host.surface.mcp_servers) == bool(servers), shape


def test_allowlist_coverage_follows_the_model(host: Host) -> None:
    result = checks.mcp_allowlist_coverage(GateContext(host=host, env=dict(host.env), extras={}))
    refused = sorted(d["plugin"] for d in result.defects)
    # an allowlisted tool whose plugin Claude Code starts no server for is refused, the rest pass
    assert refused == ["bare", "quiet", "skipped"], result.lines
