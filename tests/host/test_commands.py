"""The core commands in process, through ``plughost.cli.main`` (the subprocess tests cover the console
script; these pin each command module's parse → run → exit code and output without a fork)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.cli import main as cli
from tests.conftest import REPO as REPO_ROOT


def _main(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def test_every_core_command_has_help_and_a_module_with_configure_and_run() -> None:
    import importlib

    for name, (module_name, help_text) in cli.CORE_COMMANDS.items():
        module = importlib.import_module(module_name)
        assert isinstance(help_text, str) and help_text, name
        assert callable(module.configure) and callable(module.run), name


def test_command_name_skips_the_global_options() -> None:
    assert cli._command_name(["--plugins-dir", "plugins", "--premium-dir", "x", "plugins", "list"]) == "plugins"
    assert cli._command_name(["--version"]) is None
    assert cli._command_name([]) is None


def test_no_command_prints_help_and_exits_2(capfd) -> None:
    code, _, err = _main(capfd)
    assert code == 2 and "COMMAND" in err


def test_a_usage_error_is_one_line_and_exit_2(capfd) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["plugins"])
    assert exc.value.code == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "plughost plugins: error:" in err


def test_plugins_list_json_shows_what_is_served(capfd) -> None:
    code, out, _ = _main(capfd, "plugins", "list", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["plugins"]}
    assert {"graph", "memory", "channels", "admin"} <= set(rows)
    assert all(rows[n]["status"] == "loaded" for n in ("graph", "memory", "channels", "admin"))
    assert "memory-search" in rows["memory"]["tools"] and rows["memory"]["toolProblems"] == []


def test_account_create_then_list(capfd, plughost_home: Path) -> None:
    code, out, _ = _main(capfd, "account", "create", "acme", "--admin-phone", "+15550001", "--enable", "")
    assert code == 0 and out.startswith("created account acme at ")
    assert (plughost_home / "accounts" / "acme" / "account.json").is_file()
    code, out, _ = _main(capfd, "account", "list", "--json")
    assert code == 0
    (row,) = json.loads(out)["accounts"]
    assert row["accountId"] == "acme" and row["status"] == "ok" and row["admins"] == 1


def test_an_unknown_account_is_refused_before_the_command_runs(capfd, plughost_home: Path) -> None:
    code, _, err = _main(capfd, "boot", "--check", "--account", "nobody")
    assert code == 2 and "nobody" in err and "Traceback" not in err
    assert not (plughost_home / "accounts" / "nobody").exists()


def test_manifests_check_ok_and_defect(capfd, tmp_path: Path) -> None:
    code, out, _ = _main(capfd, "manifests", "check", str(REPO_ROOT / "plugins"))
    assert code == 0 and out.startswith("ok: ")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "PLUGIN.md").write_text("---\nname: [unclosed\n---\n", encoding="utf-8")
    code, _, err = _main(capfd, "manifests", "check", str(bad))
    assert code == 2 and "PLUGIN.md" in err and "invalid YAML" in err


def test_bundle_install_and_boot_check_in_process(capfd, tmp_path: Path, plughost_home: Path) -> None:
    out_dir, config = tmp_path / "payload", tmp_path / "claude"
    code, out, _ = _main(capfd, "bundle", "default", "--out", str(out_dir))
    assert code == 0 and out.startswith("built: ") and "brand=plughost" in out
    code, out, _ = _main(capfd, "bundle", "default", "--out", str(out_dir))
    assert code == 0 and out.startswith("unchanged: ")
    code, _, err = _main(capfd, "install", str(out_dir), "--config-dir", str(config), "--account", "acme")
    assert code == 2 and "acme" in err and not config.exists()  # install never invents an account
    assert _main(capfd, "account", "create", "acme", "--enable", "")[0] == 0
    code, out, _ = _main(capfd, "install", str(out_dir), "--config-dir", str(config), "--account", "acme",
                         "--dry-run")
    assert code == 0 and out.startswith("plan: install ") and not config.exists()
    code, out, _ = _main(capfd, "install", str(out_dir), "--config-dir", str(config), "--account", "acme")
    assert code == 0 and out.startswith("installed: ")
    assert (config / "plugins" / "installed_plugins.json").is_file()
    code, out, err = _main(capfd, "boot", "--check", "--json", "--config-dir", str(config), "--account", "acme")
    report = json.loads(out)
    assert code == 0 and report["exit"] == 0, err
    gates = {g["gate"]: g["status"] for g in report["gates"]}
    assert gates["account-id-env"] == "ok" and gates["tool-registration"] == "ok", gates
