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
from plughost.runtime.manifest import load_manifest
from plughost.runtime.types import GateContext
from tests.conftest import run_cli
from tests.host.manifests import shapes

SHAPES = shapes.FOLDER_SHAPES
NAMES = {shape: row[0] for shape, row in SHAPES.items()}


@pytest.fixture(scope="module")
def payload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shapes") / "payload"
    shapes.write_folder_shapes(root / "plugins")
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
    assert servers == SHAPES[shape][3], shape
    model = host.surface.models[name]
    assert model.server_keys == servers, shape
    assert (name in host.surface.mcp_servers) == bool(servers), shape


def test_allowlist_coverage_follows_the_model(host: Host) -> None:
    result = checks.mcp_allowlist_coverage(GateContext(host=host, env=dict(host.env), extras={}))
    refused = sorted(d["plugin"] for d in result.defects)
    # an allowlisted tool whose plugin Claude Code starts no server for is refused, the rest pass
    assert refused == ["bare", "quiet", "skipped"], result.lines


def test_the_bundler_serve_and_the_gates_agree_on_the_servers(payload: Path, host: Host) -> None:
    """Every row of the shapes table: the plugins the generated payload starts a server for, the plugins
    ``plughost serve`` mounts at ``/mcp/<plugin>`` and the plugins the gates count as having a server are
    one set, the table's."""
    from plughost.serve.app import mcp_plugins

    written = {name: sorted(json.loads((payload / "plugins" / name / ".claude-plugin" / "plugin.json").read_text())
                            .get("mcpServers") or {}) for name in NAMES.values()}
    table = sorted(name for name, _extra, _file, servers in SHAPES.values() if servers)
    assert sorted(n for n, s in written.items() if s) == table
    assert mcp_plugins(host) == table
    assert sorted(host.surface.mcp_servers) == table


def test_entry_point_shapes_the_generator_writes_the_servers_the_gates_check(tmp_path: Path) -> None:
    """Entry-point plugins, with and without their own PLUGIN.md, bundled with the folder shapes by a real
    ``plughost`` (the distributions on PYTHONPATH): each written ``mcpServers`` equals the servers of the
    plugin's model, read from the entry point alone and from the payload the install loads."""
    result, out, site = shapes.bundle_shapes(tmp_path)
    assert result.returncode == 0, result.stderr
    entry = [name for name, _md, _servers in shapes.ENTRY_SHAPES.values()]
    assert f"entry-points=[{','.join(sorted(entry))}]" in result.stdout and "left out" not in result.stdout, \
        result.stdout
    written = {}
    for name in shapes.ALL_SERVERS:
        doc = json.loads((out / "plugins" / name / ".claude-plugin" / "plugin.json").read_text())
        written[name] = sorted(doc.get("mcpServers") or {})
    assert written == shapes.ALL_SERVERS
    installed = shapes.gate_view(out / "plugins", site, list(shapes.ALL_SERVERS))
    assert installed["models"] == written
    assert sorted(installed["mcpServers"]) == sorted(n for n, s in written.items() if s)  # type: ignore[arg-type]
    assert installed["tools"] == {n: ["ping"] for n in written}
    assert installed["refused"] == ["bare", "quiet", "skipped"]  # allowlisted, but nothing starts a server
    # one server set for every row: what bundle wrote, what serve mounts, what the gates check
    with_server = sorted(n for n, s in written.items() if s)
    assert installed["serve"] == with_server == sorted(installed["mcpServers"])  # type: ignore[arg-type]
    # before bundling, the entry points alone: the same servers (bundle generates the server a plugin
    # loaded from code needs), the same tools (from code, or from its own PLUGIN.md)
    alone = shapes.gate_view(None, site, entry)
    assert alone["models"] == {n: written[n] for n in entry}
    assert alone["tools"] == {n: ["ping"] for n in entry}
    manifest = load_manifest(out / "plugins" / "weather" / "PLUGIN.md")  # generated: the tools from code
    assert [t.name for t in manifest.tools] == ["ping"] and manifest.python == "acme_weather"
