"""Acceptance by the real Claude Code CLI (docs/testing.md#external-checks), started as on a user's machine: `env -i
PATH=/usr/bin:/bin HOME=<tmp>` from `/tmp`, nothing exported by hand.

- `claude plugin validate --strict` accepts every generated plugin and marketplace;
- for each shipped brand with and without `examples/premium`: `plughost install`, then the
  payload is **moved** and installed again, and `claude mcp list` shows every declared server
  `✔ Connected`; `plughost doctor` agrees (one ok line per server);
- the CLI's own `marketplace add` + `install` gets every server connected too.

Payloads are built once for the module; CLI calls are kept few (each costs seconds).
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from plughost.runtime import accounts
from tests.conftest import npx_bin, run_cli
from tests.host.manifests.conftest import EXAMPLES, Claude, bundle, connected_servers

pytestmark = [pytest.mark.external, pytest.mark.e2e]

VARIANTS = {"default": ("default", None), "default+premium": ("default", EXAMPLES), "studio+premium": ("studio", EXAMPLES)}
"""The installable builds of the shipped brands (studio without its premium bundles is refused
by the bundler: tested in test_bundler)."""


@pytest.fixture(scope="module")
def payloads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    npx_bin("claude")
    out = {}
    empty = tmp_path_factory.mktemp("no-premium")
    for variant, (brand, premium) in VARIANTS.items():
        root = tmp_path_factory.mktemp(variant.replace("+", "-")) / "payload"
        result = bundle(brand, root, premium=premium or empty)
        assert result.returncode == 0, result.stderr
        out[variant] = root
    return out


def _targets(payload: Path) -> list[Path]:
    """Every generated plugin folder and marketplace folder of a payload."""
    return sorted({manifest.parent.parent for manifest in payload.rglob(".claude-plugin/*.json")})


def _servers(payload: Path) -> dict[str, str]:
    """'<plugin>:<server>' → plugin name for every generated mcpServers entry of a payload."""
    out = {}
    for manifest in payload.rglob(".claude-plugin/plugin.json"):
        doc = json.loads(manifest.read_text())
        for server in doc.get("mcpServers") or {}:
            out[f"{doc['name']}:{server}"] = doc["name"]
    return out


def test_validate_accepts_every_generated_plugin_and_marketplace(payloads: dict[str, Path], tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    # the default payload in full, and the premium example as the studio brand ships it (its
    # platform plugins are the default payload's, already covered: each CLI call costs seconds)
    studio = payloads["studio+premium"]
    targets = _targets(payloads["default"]) + [t for t in _targets(studio) if "premium-plugins" in t.parts]
    assert len(targets) == len(_targets(payloads["default"])) + 5  # greeter, notes, planner + 2 marketplaces
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda t: claude("plugin", "validate", "--strict", str(t)), targets))
    failures = [f"{t}: {r.stdout}{r.stderr}" for t, r in zip(targets, results, strict=True)
                if r.returncode != 0 or "✔ Validation passed" not in r.stdout or "warning" in r.stdout]
    assert not failures, "\n".join(failures)
    # what the CLI does not check: every marketplace source exists and names that plugin.json
    for payload in payloads.values():
        for market in payload.rglob(".claude-plugin/marketplace.json"):
            for entry in json.loads(market.read_text())["plugins"]:
                plugin_json = market.parent.parent / entry["source"] / ".claude-plugin" / "plugin.json"
                assert json.loads(plugin_json.read_text())["name"] == entry["name"]


def test_the_default_brand_ships_no_premium_bundle_even_when_they_are_there(payloads: dict[str, Path]) -> None:
    """So `default+premium` is the `default` payload: its servers are covered by that run."""
    def manifests(root: Path) -> dict[str, str]:
        return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob(".claude-plugin/*.json")}

    assert manifests(payloads["default+premium"]) == manifests(payloads["default"])
    assert not (payloads["default+premium"] / "premium-plugins").exists()


@pytest.mark.parametrize("variant", ["default", "studio+premium"])
def test_moved_payload_reinstalled_every_server_connects(variant: str, payloads: dict[str, Path], tmp_path: Path,
                                                         plughost_home: Path) -> None:
    original = tmp_path / "first" / "payload"
    shutil.copytree(payloads[variant], original, symlinks=True)
    claude = Claude(tmp_path)
    accounts.create_account("acme", plughost_home, admin_phones=["+15550001"])
    first = run_cli("install", str(original), "--config-dir", str(claude.config), "--account", "acme")
    assert first.returncode == 0, first.stderr
    moved = tmp_path / "elsewhere" / "payload"
    moved.parent.mkdir()
    original.rename(moved)
    again = run_cli("install", str(moved), "--config-dir", str(claude.config), "--account", "acme")
    assert again.returncode == 0, again.stderr
    servers = _servers(moved)
    assert "graph:graph" in servers and "memory:memory" in servers
    listing = claude("mcp", "list")
    state = connected_servers(listing.stdout)
    assert {s: state.get(s) for s in servers} == {s: True for s in servers}, listing.stdout + listing.stderr
    assert str(original) not in listing.stdout  # every server runs from where the payload is now
    for written in [claude.config / "settings.json", *(claude.config / "plugins").glob("*.json")]:
        assert str(original) not in written.read_text(), written
    doctor = run_cli("doctor", "--config-dir", str(claude.config), env={"HOME": claude.env["HOME"]})
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    ok = [line for line in doctor.stdout.splitlines() if line.startswith("[doctor] ok ")]
    assert len(ok) == len(servers), doctor.stdout


def test_the_clis_own_marketplace_add_and_install_connect_every_server(payloads: dict[str, Path],
                                                                       tmp_path: Path) -> None:
    payload = payloads["studio+premium"]
    claude = Claude(tmp_path)
    servers = _servers(payload)
    assert {"greeter:greeter", "notes:notes", "graph:graph"} <= set(servers)
    markets = {}
    for market in sorted(payload.rglob(".claude-plugin/marketplace.json")):
        doc = json.loads(market.read_text())
        added = claude("plugin", "marketplace", "add", str(market.parent.parent))
        assert added.returncode == 0, added.stdout + added.stderr
        markets.update({p["name"]: doc["name"] for p in doc["plugins"]})
    for name in sorted(set(servers.values())):
        done = claude("plugin", "install", f"{name}@{markets[name]}")
        assert done.returncode == 0 and "Successfully installed" in done.stdout, done.stdout + done.stderr
    listing = claude("mcp", "list")
    state = connected_servers(listing.stdout)
    assert {s: state.get(s) for s in servers} == {s: True for s in servers}, listing.stdout
    # each server started through the tee: its stderr landed in the tee log of the default data root
    logs = Path(claude.env["HOME"]) / ".plughost" / "logs"
    for plugin in ("greeter", "notes", "graph"):
        [log] = logs.glob(f"mcp-{plugin}-stderr-*.log")
        assert log.stat().st_size > 0 or plugin == "graph"


def test_plughost_install_is_what_the_cli_lists(payloads: dict[str, Path], tmp_path: Path,
                                                plughost_home: Path) -> None:
    payload = payloads["studio+premium"]
    claude = Claude(tmp_path)
    accounts.create_account("acme", plughost_home)
    result = run_cli("install", str(payload), "--config-dir", str(claude.config), "--account", "acme")
    assert result.returncode == 0, result.stderr
    listed = claude("plugin", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    installed = json.loads((claude.config / "plugins" / "installed_plugins.json").read_text())["plugins"]
    assert set(rows) == set(installed)
    for row in rows.values():
        assert row["enabled"] is True and row["scope"] == "user", row
        assert not row.get("errors"), row
    # the CLI owns installPath: uninstalling marks it orphaned, which must not touch the payload
    gone = claude("plugin", "uninstall", "greeter@studio-premium")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert not (payload / "premium-plugins" / "greeter" / ".orphaned_at").exists()
    assert (payload / "premium-plugins" / "greeter" / "mcp" / "__main__.py").is_file()
