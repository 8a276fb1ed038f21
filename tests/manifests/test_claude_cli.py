"""Acceptance by the real Claude Code CLI (SPEC 15): `claude plugin validate` on every generated
plugin and marketplace, `marketplace add` + `install`, `plughost install` alone, and `claude mcp
list` showing every plugin server Connected through the tee launcher.

One payload per brand is built once for the module; CLI calls are kept few (each costs seconds).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from host.config import REPO_ROOT
from tests.conftest import npx_bin, run_cli
from tests.manifests.conftest import Claude, bundle, connected_servers

pytestmark = pytest.mark.external


@pytest.fixture(scope="module")
def payloads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    npx_bin("claude")
    out = {}
    for brand in ("default", "studio"):
        root = tmp_path_factory.mktemp(brand) / "payload"
        result = bundle(brand, root)
        assert result.returncode == 0, result.stderr
        out[brand] = root
    return out


def _targets(payload: Path) -> list[Path]:
    """Every generated plugin folder and marketplace folder of a payload."""
    found = set()
    for manifest in payload.rglob(".claude-plugin/*.json"):
        found.add(manifest.parent.parent)
    return sorted(found)


def _servers(payload: Path) -> dict[str, str]:
    """'<plugin>:<server>' → plugin key for every generated mcpServers entry of a payload."""
    out = {}
    for manifest in payload.rglob(".claude-plugin/plugin.json"):
        doc = json.loads(manifest.read_text())
        for server in doc.get("mcpServers") or {}:
            out[f"{doc['name']}:{server}"] = doc["name"]
    return out


def test_validate_accepts_every_generated_plugin_and_marketplace(payloads: dict[str, Path], tmp_path: Path,
                                                                 plughost_home: Path) -> None:
    claude = Claude(tmp_path, plughost_home)
    # the default payload in full, and the premium example as the studio brand ships it (its
    # platform plugins are the default payload's, already covered: each CLI call costs seconds)
    studio = payloads["studio"]
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


def test_marketplace_add_install_and_servers_connect(payloads: dict[str, Path], tmp_path: Path,
                                                     plughost_home: Path) -> None:
    payload = payloads["studio"]
    claude = Claude(tmp_path, plughost_home, platform_root=REPO_ROOT)  # the plughost install root
    servers = _servers(payload)
    assert {"greeter:greeter", "notes:notes"} <= set(servers)
    # add the marketplaces that list a plugin serving MCP and install those plugins (each CLI
    # call costs seconds; the `plughost install` test covers every plugin of the payload)
    wanted = sorted(set(servers.values()))
    markets = {}
    for market in sorted(payload.rglob(".claude-plugin/marketplace.json")):
        doc = json.loads(market.read_text())
        listed = {p["name"] for p in doc["plugins"]}
        if listed & set(wanted):
            added = claude("plugin", "marketplace", "add", str(market.parent.parent))
            assert added.returncode == 0, added.stdout + added.stderr
            markets.update({name: doc["name"] for name in listed})
    for name in wanted:
        done = claude("plugin", "install", f"{name}@{markets[name]}")
        assert done.returncode == 0 and "Successfully installed" in done.stdout, done.stdout + done.stderr
    listing = claude("mcp", "list")
    state = connected_servers(listing.stdout)
    assert {s: state.get(s) for s in servers} == {s: True for s in servers}, listing.stdout
    # each server started through the tee: its stderr landed in the tee log
    logs = plughost_home / "logs"
    for plugin in ("greeter", "notes"):
        [log] = logs.glob(f"mcp-{plugin}-stderr-*.log")
        assert f"[mcp] op=serve-stdio plugin={plugin}" in log.read_text()


def test_plughost_install_alone_is_accepted_by_the_cli(payloads: dict[str, Path], tmp_path: Path,
                                                       plughost_home: Path) -> None:
    payload = payloads["studio"]
    claude = Claude(tmp_path, plughost_home, platform_root=REPO_ROOT)  # the plughost install root
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
    servers = _servers(payload)
    listing = claude("mcp", "list").stdout
    state = connected_servers(listing)
    assert {s: state.get(s) for s in servers} == {s: True for s in servers}, listing
    # the CLI owns installPath: uninstalling marks it orphaned, which must not touch the payload
    gone = claude("plugin", "uninstall", "greeter@studio-premium")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert not (payload / "premium-plugins" / "greeter" / ".orphaned_at").exists()
    assert (payload / "premium-plugins" / "greeter" / "mcp" / "__main__.py").is_file()
