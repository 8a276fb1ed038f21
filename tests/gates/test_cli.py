"""`plughost boot` and `plughost account` through the CLI's ``main`` (in process, isolated; the
first test runs the real command in a process of its own)."""

from __future__ import annotations

import json

from gates_support import HOST_GATES, write

from plughost.plugins.channels.admin_binding import binding_drift
from plughost.runtime.manifest import validate


def test_account_create_writes_a_consistent_valid_account(plughost_home, cli_process):
    proc = cli_process("account", "create", "acme", "--admin-phone", "+15550001", "--admin-phone", "+15550002",
                           "--enable", "graph,memory")
    assert proc.returncode == 0, proc.stderr
    folder = plughost_home / "accounts" / "acme"
    account = json.loads((folder / "account.json").read_text())
    users = json.loads((folder / "users.json").read_text())
    validate(account, "account", "account.json")
    validate(users, "users", "users.json")
    assert account["accountId"] == "acme" and account["enabledPlugins"] == ["graph", "memory"]
    assert binding_drift(account, users) == []
    assert (folder / "specialists" / "agents").is_dir()
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_account_create_refuses_to_overwrite_and_bad_ids(plughost_home, cli):
    assert cli("account", "create", "acme", "--enable", "").returncode == 0
    again = cli("account", "create", "acme")
    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        f"plughost: ID: account 'acme' already exists at {plughost_home / 'accounts' / 'acme'} "
        f"(use --force to rewrite it)"]
    bad = cli("account", "create", "../x")
    assert bad.returncode == 2 and "ID: '../x' is not a valid account id" in bad.stderr
    phone = cli("account", "create", "beta", "--admin-phone", "call me")
    assert phone.returncode == 2 and "adminPhones[0]" in phone.stderr
    assert not (plughost_home / "accounts" / "beta").exists()


def test_account_list_json(plughost_home, cli):
    cli("account", "create", "acme", "--enable", "graph")
    out = json.loads(cli("account", "list", "--json").stdout)
    assert out == {"accounts": [{"accountId": "acme", "enabledPlugins": ["graph"], "admins": 1, "status": "ok"}]}


def test_account_create_defaults_to_loaded_feature_plugins(plughost_home, tmp_path, cli):
    """Platform plugins are always on, so only opt-in (feature/premium) plugins are listed."""
    plugins = tmp_path / "plugins"
    (plugins / "extra").mkdir(parents=True)
    (plugins / "extra" / "PLUGIN.md").write_text("---\nname: extra\nsurface: feature\n---\n")
    assert cli("--plugins-dir", str(plugins), "account", "create", "acme").returncode == 0
    enabled = json.loads((plughost_home / "accounts" / "acme" / "account.json").read_text())["enabledPlugins"]
    assert enabled == ["extra"]


def test_account_create_completes_the_stub_install_left(plughost_home, cli):
    folder = plughost_home / "accounts" / "acme"
    folder.mkdir(parents=True)
    (folder / "account.json").write_text(json.dumps({"accountId": "acme", "enabledPlugins": ["greeter"],
                                                     "custom": 1}))
    proc = cli("account", "create", "acme", "--admin-phone", "+15550001")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("completed account acme")
    account = json.loads((folder / "account.json").read_text())
    assert account["enabledPlugins"] == ["greeter"] and account["custom"] == 1
    assert account["adminPhones"] == ["+15550001"] and account["admins"] == ["owner"]
    assert json.loads((folder / "users.json").read_text())[0]["phone"] == "+15550001"


def test_boot_check_with_nothing_installed_passes_with_warnings_only(plughost_home, tmp_path, cli):
    """A checkout with an account but an empty Claude Code config dir: the registration gates may say
    FATAL for built-in tool-plugins (not installed), but they never refuse boot; the rest is ok."""
    assert cli("account", "create", "acme", "--admin-phone", "+15550001").returncode == 0
    # Nothing is installed in this config dir, so leave out the built-ins that serve tools
    # (the full bundle + install path is tests/gates/test_clean_install.py), and those that need the graph store.
    no_servers = {"PLUGHOST_DISABLE_PLUGINS": "graph,memory,channels,admin"}
    proc = cli("boot", "--check", "--json", "--account", "acme", "--config-dir", str(tmp_path / "cc"), env=no_servers)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    gates = {g["gate"]: g for g in report["gates"]}
    assert HOST_GATES <= set(gates)
    for gate in gates.values():
        assert gate["status"] == "ok" or (not gate["fatal"] and gate["status"] == "warn"), gate
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("[boot] op=gates gates=") and " exit=0 " in last
    log = (plughost_home / "logs" / "server.log").read_text()
    assert "startup-self-test specialist-tool-drift=ok" in log


def test_boot_check_exit_1_and_json_report_when_fatal(plughost_home, tmp_path, cli):
    assert cli("account", "create", "acme").returncode == 0
    agent = write(plughost_home / "accounts" / "acme" / "specialists" / "agents" / "sloppy.md",
                  "---\nname: sloppy\ntools: read_file\n---\n")
    proc = cli("boot", "--check", "--json", "--config-dir", str(tmp_path / "cc"))
    assert proc.returncode == 1
    assert (f"boot-failed reason=specialist-tool-drift specialist=sloppy tool=read_file drift=malformed-name "
            f"path={agent}") in proc.stderr.splitlines()
    report = json.loads(proc.stdout)
    assert report["exit"] == 1
    by_gate = {g["gate"]: g for g in report["gates"]}
    assert by_gate["specialist-tool-drift"]["status"] == "fail"
    assert by_gate["specialist-tool-drift"]["defects"] == [
        {"specialist": "sloppy", "tool": "read_file", "drift": "malformed-name", "path": str(agent)}]
    assert by_gate["skill-registration"]["status"] == "ok"  # the others still ran
    if "account-id-env" in by_gate:  # ACCOUNT_ID is unset here
        assert by_gate["account-id-env"]["status"] == "fail"
        assert any(line.startswith("[graph-health] account-id-env FATAL reason=unset fix=")
                   for line in proc.stderr.splitlines())


def test_boot_without_check_runs_startup_after_gates(plughost_home, tmp_path, cli):
    cli("account", "create", "acme")
    proc = cli("boot", "--account", "acme", "--config-dir", str(tmp_path / "cc"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    started = [i for i, line in enumerate(lines) if line.startswith("[boot] op=started plugins=")]
    gates = [i for i, line in enumerate(lines) if "startup-self-test" in line or "account-id-env" in line]
    assert started and (not gates or started[0] > gates[-1]), proc.stderr  # a warm-up thread may log after it


def test_boot_bad_brand_is_one_line_exit_2(plughost_home, cli):
    proc = cli("boot", "--check", "--brand", "no-such-brand")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "--brand: brand 'no-such-brand' not found" in proc.stderr


def test_boot_bad_account_flag_is_exit_2(plughost_home, cli):
    proc = cli("boot", "--check", "--account", "a/b")
    assert proc.returncode == 2 and "--account: 'a/b' is not a valid account id" in proc.stderr


def test_boot_check_without_a_config_dir_says_warn_not_fatal(plughost_home, tmp_path, cli):
    """No --config-dir, no CLAUDE_CONFIG_DIR, no install recorded: boot only guesses ~/.claude, so its
    registration findings are warnings in word as in exit code."""
    assert cli("account", "create", "acme").returncode == 0
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": ""}
    proc = cli("boot", "--check", "--account", "acme", env=env)
    assert proc.returncode == 0, proc.stderr
    drift = [line for line in proc.stderr.splitlines() if "op=drift" in line]
    assert drift and all(" op=drift WARN " in line for line in drift), drift
    assert "FATAL" not in proc.stderr


def test_account_list_with_a_hand_edited_stub_is_no_traceback(plughost_home, cli):
    folder = plughost_home / "accounts" / "stub"
    folder.mkdir(parents=True)
    (folder / "account.json").write_text(json.dumps({"accountId": "stub", "enabledPlugins": ["greeter"]}))
    bare = plughost_home / "accounts" / "bare"
    bare.mkdir()
    (bare / "account.json").write_text(json.dumps({"accountId": "bare"}))
    broken = plughost_home / "accounts" / "broken"
    broken.mkdir()
    (broken / "account.json").write_text("{not json")
    for args in (("account", "list"), ("account", "list", "--json")):
        proc = cli(*args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    rows = {r["accountId"]: r for r in json.loads(cli("account", "list", "--json").stdout)["accounts"]}
    assert rows["stub"]["status"] == "incomplete" and "plughost account create stub" in rows["stub"]["reason"]
    assert rows["bare"]["status"] == "invalid" and "enabledPlugins" in rows["bare"]["reason"]
    assert rows["broken"]["status"] == "invalid" and "invalid JSON" in rows["broken"]["reason"]
    boot = cli("boot", "--check", "--account", "bare")
    assert boot.returncode == 1 and "Traceback" not in boot.stderr
    assert "[graph-health] account-id-env FATAL reason=invalid-account-json" in boot.stderr
