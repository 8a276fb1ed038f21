"""`plughost install PAYLOAD_DIR --config-dir DIR --account ID`: the shapes the real CLI writes,
merging, idempotence, dry runs, stale entries, agent links, account reconcile and .env (docs/payload.md#installer)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.host.manifests.conftest import bundle, snapshot

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(scope="module")
def studio_payload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("studio") / "payload"
    result = bundle("studio", out)
    assert result.returncode == 0, result.stderr
    return out


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _account(account: str = "acme") -> None:
    """`plughost install` needs the account to exist (it never invents one)."""
    from plughost.runtime import accounts
    from plughost.util import config

    if accounts.ACCOUNT_ID.match(account) and not accounts.account_dir(account).is_dir():
        accounts.create_account(account, config.home())


def _install(payload: Path, config: Path, *extra: str, account: str = "acme"):
    _account(account)
    return run_cli("install", str(payload), "--config-dir", str(config), "--account", account, *extra)


def test_install_writes_the_cli_shapes(studio_payload: Path, tmp_path: Path, plughost_home: Path) -> None:
    config = tmp_path / "claude"
    result = _install(studio_payload, config)
    assert result.returncode == 0, result.stderr
    assert "[installer] op=install" in result.stderr
    markets = {
        "studio-platform": studio_payload / "plugins",
        "studio-premium": studio_payload / "premium-plugins",
        "studio-premium-studio": studio_payload / "premium-plugins" / "studio" / "plugins",
    }
    known = _read(config / "plugins" / "known_marketplaces.json")
    assert set(known) == set(markets)
    for name, root in markets.items():
        entry = known[name]
        assert entry["source"] == {"source": "directory", "path": str(root)}
        assert entry["installLocation"] == str(root)
        assert ISO.match(entry["lastUpdated"])
    installed = _read(config / "plugins" / "installed_plugins.json")
    assert installed["version"] == 2
    keys = {f"{p}@studio-platform" for p in ("admin", "graph", "memory")} | {
        "greeter@studio-premium", "notes@studio-premium-studio", "planner@studio-premium-studio"}
    assert set(installed["plugins"]) == keys
    [row] = installed["plugins"]["greeter@studio-premium"]
    assert set(row) == {"scope", "installPath", "version", "installedAt", "lastUpdated"}
    assert row["scope"] == "user" and row["version"] == "1.0.0"
    # like the CLI: a copy in its cache is the install (Claude Code owns and garbage-collects it)
    cache = config / "plugins" / "cache" / "studio-premium" / "greeter" / "1.0.0"
    assert row["installPath"] == str(cache)
    assert (cache / ".claude-plugin" / "plugin.json").read_bytes() == (
        studio_payload / "premium-plugins" / "greeter" / ".claude-plugin" / "plugin.json").read_bytes()
    assert (cache / "mcp" / "__main__.py").is_file()
    settings = _read(config / "settings.json")
    assert settings["enabledPlugins"] == {k: True for k in keys}
    assert settings["extraKnownMarketplaces"] == {
        n: {"source": {"source": "directory", "path": str(r)}} for n, r in markets.items()}
    # bundle-level specialists linked; plugin-local agents are loaded with their plugin
    link = config / "agents" / "studio-lead.md"
    assert link.is_symlink() and Path(os.readlink(link)) == studio_payload / "premium-plugins/studio/agents/studio-lead.md"
    assert sorted(p.name for p in (config / "agents").iterdir()) == ["studio-lead.md"]
    account = _read(plughost_home / "accounts" / "acme" / "account.json")
    assert account["enabledPlugins"] == ["greeter", "notes", "planner"] and account["admins"] == ["owner"]
    env = (plughost_home / ".env").read_text().splitlines()
    assert "EMBED_MODEL=all-MiniLM-L6-v2" in env and "EMBED_DIMENSIONS=384" in env
    assert "PLUGHOST_STORE=sqlite" in env
    assert f"PLUGHOST_PLUGINS_DIR={studio_payload / 'plugins'}" in env
    assert f"PLUGHOST_CONFIG_DIR={config}" in env
    assert not [line for line in env if line.startswith(("PLATFORM_ROOT=", "PLUGHOST_PYTHON="))]
    # what Claude Code's own environment needs to start every server: settings.json env
    assert settings["env"] == {"PLUGHOST_PYTHON": sys.executable, "PLUGHOST_HOME": str(plughost_home),
                               "ACCOUNT_ID": "acme"}


def test_install_for_a_missing_account_is_exit_2_with_the_fix(studio_payload: Path, tmp_path: Path,
                                                               plughost_home: Path) -> None:
    config = tmp_path / "claude"
    result = run_cli("install", str(studio_payload), "--config-dir", str(config), "--account", "ghost")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"plughost: --account: account 'ghost' does not exist ({plughost_home}/accounts/ghost/account.json is "
        "missing); create it first: plughost account create ghost"]
    assert not config.exists() and not (plughost_home / "accounts" / "ghost").exists()


def test_install_merges_and_is_idempotent(studio_payload: Path, tmp_path: Path, plughost_home: Path) -> None:
    config = tmp_path / "claude"
    (config / "plugins").mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({
        "theme": "dark", "enabledPlugins": {"other@elsewhere": False},
        "extraKnownMarketplaces": {"elsewhere": {"source": {"source": "github", "repo": "o/r"}}}}))
    (config / "plugins" / "known_marketplaces.json").write_text(json.dumps({
        "elsewhere": {"source": {"source": "github", "repo": "o/r"}, "installLocation": "/x", "lastUpdated": "t"}}))
    (config / "plugins" / "installed_plugins.json").write_text(json.dumps({"version": 2, "plugins": {
        "other@elsewhere": [{"scope": "project", "installPath": "/x", "version": "1", "installedAt": "t",
                             "lastUpdated": "t", "projectPath": "/p"}]}}))
    account = plughost_home / "accounts" / "acme" / "account.json"
    account.parent.mkdir(parents=True)
    account.write_text(json.dumps({"accountId": "acme", "tier": "pro", "enabledPlugins": ["greeter", "gone"]}))
    (plughost_home / ".env").write_text("# mine\nNEO4J_PASSWORD=secret\nEMBED_MODEL=old\n")
    assert _install(studio_payload, config).returncode == 0
    settings = _read(config / "settings.json")
    assert settings["theme"] == "dark"
    assert settings["enabledPlugins"]["other@elsewhere"] is False
    assert settings["extraKnownMarketplaces"]["elsewhere"] == {"source": {"source": "github", "repo": "o/r"}}
    assert "elsewhere" in _read(config / "plugins" / "known_marketplaces.json")
    assert _read(config / "plugins" / "installed_plugins.json")["plugins"]["other@elsewhere"][0]["scope"] == "project"
    acct = _read(account)
    assert acct["tier"] == "pro" and acct["enabledPlugins"] == ["greeter", "notes", "planner"]
    env = (plughost_home / ".env").read_text()
    assert env.startswith("# mine\nNEO4J_PASSWORD=secret\nEMBED_MODEL=all-MiniLM-L6-v2\n")
    before = {**snapshot(config), **{f"home/{k}": v for k, v in snapshot(plughost_home).items() if "logs" not in k}}
    again = _install(studio_payload, config)
    assert again.returncode == 0 and "0 file(s) written, 0 plugin copy(ies), 0 agent link(s)" in again.stdout
    after = {**snapshot(config), **{f"home/{k}": v for k, v in snapshot(plughost_home).items() if "logs" not in k}}
    assert after == before


def test_dry_run_prints_the_plan_and_writes_nothing(studio_payload: Path, tmp_path: Path, plughost_home: Path) -> None:
    config = tmp_path / "claude"
    result = _install(studio_payload, config, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "register marketplace studio-premium-studio" in result.stdout
    assert "install notes@studio-premium-studio 0.2.0 (scope user)" in result.stdout
    assert "copy greeter@studio-premium to" in result.stdout
    assert "enable greeter@studio-premium" in result.stdout
    assert "link agent studio-lead.md" in result.stdout
    assert not config.exists()
    assert not (plughost_home / ".env").exists()
    assert _install(studio_payload, config).returncode == 0
    assert "nothing to do: already installed" in _install(studio_payload, config, "--dry-run").stdout


def test_reinstall_after_rebundle_drops_what_the_brand_no_longer_ships(tmp_path: Path, plughost_home: Path) -> None:
    payload, config = tmp_path / "payload", tmp_path / "claude"
    assert bundle("studio", payload).returncode == 0
    assert _install(payload, config).returncode == 0
    brand = tmp_path / "lean.json"
    brand.write_text(json.dumps({"name": "studio", "productName": "Studio", "plugins": {"excluded": ["admin"]},
                                 "shipsPremiumBundles": ["greeter"]}))
    assert bundle(str(brand), payload).returncode == 0
    result = _install(payload, config)
    assert result.returncode == 0, result.stderr
    installed = set(_read(config / "plugins" / "installed_plugins.json")["plugins"])
    assert "admin@studio-platform" not in installed and "notes@studio-premium-studio" not in installed
    assert "greeter@studio-premium" in installed
    assert "studio-premium-studio" not in _read(config / "plugins" / "known_marketplaces.json")
    settings = _read(config / "settings.json")
    assert "notes@studio-premium-studio" not in settings["enabledPlugins"]
    assert "studio-premium-studio" not in settings["extraKnownMarketplaces"]
    assert not (config / "agents" / "studio-lead.md").exists()
    assert _read(plughost_home / "accounts" / "acme" / "account.json")["enabledPlugins"] == ["greeter"]
    assert "removed=[notes,planner]" in result.stderr


def test_bad_inputs_are_one_line_and_write_nothing(studio_payload: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude"
    result = _install(studio_payload, config, account="../etc")
    assert result.returncode == 2 and "--account" in result.stderr
    (config).mkdir()
    (config / "settings.json").write_text("{not json")
    result = _install(studio_payload, config)
    assert result.returncode == 2
    assert f"{config / 'settings.json'}: invalid JSON" in result.stderr
    assert not (config / "plugins").exists()
    bare = tmp_path / "bare"
    (bare / "plugins" / "x").mkdir(parents=True)
    result = _install(bare, tmp_path / "c2")
    assert result.returncode == 2 and "no marketplace found" in result.stderr


def test_version_1_records_are_migrated_and_garbage_is_refused(studio_payload: Path, tmp_path: Path) -> None:
    from plughost.payload.installer import install
    from plughost.util.errors import UserError

    config = tmp_path / "claude"
    (config / "plugins").mkdir(parents=True)
    records = config / "plugins" / "installed_plugins.json"
    records.write_text(json.dumps({"version": 1, "plugins": {"old@elsewhere": {"installPath": "/x", "version": "1"}}}))
    _account()
    install(studio_payload, config, "acme")
    data = _read(records)
    assert data["version"] == 2
    assert data["plugins"]["old@elsewhere"] == [{"installPath": "/x", "version": "1", "scope": "user"}]
    records.write_text(json.dumps({"version": 2, "plugins": {"x@y": "nope"}}))
    with pytest.raises(UserError, match=r"installed_plugins.json: plugins.x@y: expected a list of install records"):
        install(studio_payload, config, "acme")


def test_a_changed_plugin_refreshes_its_cache_copy(tmp_path: Path) -> None:
    payload, config = tmp_path / "payload", tmp_path / "claude"
    assert bundle("studio", payload).returncode == 0
    assert _install(payload, config).returncode == 0
    cache = config / "plugins" / "cache" / "studio-premium" / "greeter" / "1.0.0"
    (cache / ".orphaned_at").write_text("1")  # what `claude plugin uninstall` leaves
    (payload / "premium-plugins" / "greeter" / "NOTES.md").write_text("new")
    result = _install(payload, config)
    assert "1 plugin copy(ies)" in result.stdout, result.stdout
    assert (cache / "NOTES.md").read_text() == "new" and not (cache / ".orphaned_at").exists()
    assert not [p for p in cache.parent.iterdir() if p.name.startswith(".")]


def test_a_neo4j_install_records_its_server_and_a_reinstall_keeps_it(studio_payload: Path, tmp_path: Path,
                                                                     plughost_home: Path) -> None:
    """Every later command and MCP server reads `.env`: a Neo4j install (PLUGHOST_STORE=neo4j, as
    `scripts/run.sh` exports with NEO4J_URI) records the store and its connection there; a re-install
    without the variables keeps it (never a silent move to an empty embedded store); only an explicit
    PLUGHOST_STORE switches."""
    from plughost.util.config import read_dotenv

    config = tmp_path / "claude"
    _account()
    neo = {"PLUGHOST_STORE": "neo4j", "NEO4J_URI": "neo4j://127.0.0.1:7999", "NEO4J_USER": "svc",
           "NEO4J_PASSWORD": "s3cret", "NEO4J_DATABASE": "acme"}
    args = ("install", str(studio_payload), "--config-dir", str(config), "--account", "acme")
    res = run_cli(*args, env={"PLUGHOST_STORE": "neo4j"})
    assert res.returncode == 2 and res.stderr.startswith("plughost: NEO4J_URI: not set; a Neo4j install"), res.stderr
    assert not (plughost_home / ".env").exists() and not config.exists()  # refused before any write
    res = run_cli(*args, "--dry-run", env=neo)
    assert res.returncode == 0 and "graph store: neo4j at neo4j://127.0.0.1:7999 (brand: sqlite)" in res.stdout
    assert "s3cret" not in res.stdout
    assert run_cli(*args, env=neo).returncode == 0
    env = read_dotenv(plughost_home / ".env")
    assert {k: env.get(k) for k in neo} == neo
    assert (plughost_home / ".env").stat().st_mode & 0o777 == 0o600
    res = run_cli(*args, "--dry-run")  # the test's environment has neither variable
    assert "nothing to do: already installed" in res.stdout, res.stdout
    assert run_cli(*args).returncode == 0
    assert {k: read_dotenv(plughost_home / ".env").get(k) for k in neo} == neo
    res = run_cli("graph", "purge", env={"NEO4J_MAX_RETRY_S": "1"}, timeout=60)
    assert "the server at neo4j://127.0.0.1:7999 (NEO4J_URI)" in res.stderr, res.stderr  # the next command's server
    assert run_cli(*args, env={"PLUGHOST_STORE": "sqlite"}).returncode == 0
    assert read_dotenv(plughost_home / ".env")["PLUGHOST_STORE"] == "sqlite"


def test_a_plugin_json_whose_servers_are_not_the_models_is_refused(tmp_path: Path, plughost_home: Path) -> None:
    """The installer reads each plugin's model: a manifest left from before PLUGIN.md turned its server off
    names the file, both server lists and the command that regenerates it, and nothing is written."""
    payload = tmp_path / "payload"
    assert bundle("studio", payload).returncode == 0
    notes = payload / "premium-plugins" / "studio" / "plugins" / "notes"
    md = notes / "PLUGIN.md"
    md.write_text(md.read_text().replace("version: 0.2.0\n", "version: 0.2.0\nmcp-manifest: skip\n", 1))
    config = tmp_path / "claude"
    result = _install(payload, config)
    assert result.returncode == 2, result.stdout + result.stderr
    assert (f"{notes / '.claude-plugin' / 'plugin.json'}: mcpServers: has [notes] but the plugin serves [] "
            "(run 'plughost manifests generate' on the payload)") in result.stderr
    assert not config.exists()
    assert run_cli("manifests", "generate", str(payload)).returncode == 0
    assert _install(payload, config).returncode == 0


def test_install_refuses_a_plugin_bundle_and_manifests_check_refuse(tmp_path: Path, plughost_home: Path) -> None:
    """The payload edited after its bundle: a declared tool without handler, a plugin that needs
    another plughost, a tools hook that returns no Tool, a plugin folder whose PLUGIN.md was
    deleted: each refused as `bundle` would, exit 2 in one line, nothing written."""
    payload = tmp_path / "payload"
    assert bundle("studio", payload).returncode == 0
    md = payload / "premium-plugins" / "greeter" / "PLUGIN.md"
    good = md.read_text()
    md.write_text(good.replace("  - name: greet\n", "  - name: greet-person\n"))
    config = tmp_path / "claude"
    result = _install(payload, config)
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert f"{md}: tools: 'greet-person'" in line and "nothing written" in line
    assert f"plughost manifests check {payload}" in line and "Traceback" not in result.stderr
    assert not config.exists()
    md.write_text(good.replace("version: ", "requires-plughost: \">=99\"\nversion: ", 1))
    result = _install(payload, config, "--dry-run")
    assert result.returncode == 2 and f"{md}: requires-plughost: needs plughost >=99" in result.stderr
    md.write_text(good)
    tools = md.parent / "greeter_tools.py"
    code = tools.read_text()
    tools.write_text(code.replace("    return [", "    return []\n    return ["))  # returns no Tool
    result = _install(payload, config)
    assert result.returncode == 2 and f"{md}: tools: 'greet' is declared in PLUGIN.md but its plughost_tools " \
        "returns no Tool" in result.stderr, result.stderr
    tools.write_text(code)
    md.unlink()  # the PLUGIN.md bundle wrote, deleted since
    result = _install(payload, config)
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert f"install: {md.parent}: PLUGIN.md: missing" in line and "nothing written" in line, line
    assert not config.exists()
    md.write_text(good)
    assert _install(payload, config).returncode == 0
