"""The plugin shapes started for real (docs/testing.md#external-checks): a brand that ships only the shapes
(tests/host/manifests/shapes.py: folder plugins with and without an `mcp:` block, `mcp-manifest: skip` or
`shared-lib`, entry-point plugins with and without their own `PLUGIN.md`) is bundled and installed; then
`claude mcp list`, under `env -i PATH=/usr/bin:/bin` from /tmp, shows every plugin whose model has a server
`✔ Connected` under the key the model names, and none of the others; `plughost doctor` starts the same
servers and finds each serving what its model declares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.runtime import accounts
from tests.conftest import npx_bin, run_cli, run_cli_process
from tests.host.manifests import shapes
from tests.host.manifests.conftest import Claude, connected_servers

pytestmark = [pytest.mark.e2e]

EXPECTED = {f"{name}:{server}": True for name, servers in shapes.ALL_SERVERS.items() for server in servers}
"""'<plugin>:<server>' of every server the shapes' models have."""


def _install(tmp_path: Path, plughost_home: Path, config: Path) -> None:
    built, payload, site = shapes.bundle_shapes(tmp_path)
    assert built.returncode == 0, built.stderr
    models = shapes.gate_view(payload / "plugins", site, list(shapes.ALL_SERVERS))["models"]
    assert models == shapes.ALL_SERVERS  # the model, as the gates read it from the installed payload
    accounts.create_account("shapes", plughost_home)
    # the install loads each plugin as bundle did (plugin_checks): with the distributions on PYTHONPATH too
    done = run_cli_process("install", str(payload), "--config-dir", str(config), "--account", "shapes",
                           env={"PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stdout + done.stderr
    # the distributions are installed where the install's interpreter finds them: here, on PYTHONPATH in
    # Claude Code's environment (what a `pip install` into that interpreter is on a user's machine)
    settings = json.loads((config / "settings.json").read_text())
    settings["env"]["PYTHONPATH"] = str(site)
    (config / "settings.json").write_text(json.dumps(settings, indent=2))


def _doctor_ok(config: Path, home: str) -> set[str]:
    doctor = run_cli("doctor", "--config-dir", str(config), env={"HOME": home})
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    return {line.split(" plugin=", 1)[1].split(" ", 1)[0].replace("@shapes-platform", "") + ":"
            + line.split(" server=", 1)[1].split(" ", 1)[0]
            for line in doctor.stdout.splitlines() if line.startswith("[doctor] ok ")}


def test_doctor_starts_the_servers_of_each_shapes_model(tmp_path: Path, plughost_home: Path) -> None:
    config = tmp_path / "claude-config"
    config.mkdir()
    _install(tmp_path, plughost_home, config)
    assert _doctor_ok(config, str(tmp_path)) == set(EXPECTED)


@pytest.mark.external
def test_claude_mcp_list_shows_the_servers_of_each_shapes_model(tmp_path: Path, plughost_home: Path) -> None:
    npx_bin("claude")
    claude = Claude(tmp_path)
    _install(tmp_path, plughost_home, claude.config)
    listing = claude("mcp", "list")
    state = connected_servers(listing.stdout)
    assert state == EXPECTED, listing.stdout + listing.stderr  # connected, and no server for the others
    assert _doctor_ok(claude.config, claude.env["HOME"]) == set(EXPECTED)
