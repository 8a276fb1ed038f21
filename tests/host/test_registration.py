"""``plughost.payload.registration``: the three Claude Code registration surfaces of a config dir, read in process
(the gates that use them run through ``plughost boot`` in tests/gates)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.payload.registration import Registration, config_dir_source
from plughost.util.errors import UserError


def _write(config: Path, *, marketplaces=None, installed=None, settings=None) -> None:
    (config / "plugins").mkdir(parents=True, exist_ok=True)
    for rel, data in (("plugins/known_marketplaces.json", marketplaces), ("plugins/installed_plugins.json", installed),
                      ("settings.json", settings)):
        if data is not None:
            (config / rel).write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def test_config_dir_precedence(tmp_path: Path) -> None:
    """flag, the runner's override, the install record, CLAUDE_CONFIG_DIR, ~/.claude (host.install_record)."""
    home = tmp_path / "ph"
    env = {"HOME": str(tmp_path), "PLUGHOST_HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "c"),
           "PLUGHOST_CONFIG_DIR": str(tmp_path / "i"), "PLUGHOST_CLAUDE_CONFIG_DIR": str(tmp_path / "o")}
    assert config_dir_source(env, tmp_path / "flag") == (tmp_path / "flag", "flag")
    assert config_dir_source(env) == (tmp_path / "o", "PLUGHOST_CLAUDE_CONFIG_DIR")
    env["PLUGHOST_CLAUDE_CONFIG_DIR"] = ""
    assert config_dir_source(env) == (tmp_path / "i", "install")  # over an exported CLAUDE_CONFIG_DIR
    del env["PLUGHOST_CONFIG_DIR"]
    assert config_dir_source(env) == (tmp_path / "c", "CLAUDE_CONFIG_DIR")
    home.mkdir()
    (home / ".env").write_text(f"PLUGHOST_CONFIG_DIR={tmp_path / 'recorded'}\n", encoding="utf-8")
    assert config_dir_source(env) == (tmp_path / "recorded", "install")  # read from the record itself
    (home / ".env").unlink()
    assert config_dir_source({"HOME": str(tmp_path), "PLUGHOST_HOME": str(home)}) == (tmp_path / ".claude", "default")


def test_a_relative_recorded_config_dir_is_one_line_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("PLUGHOST_CONFIG_DIR=claude-config\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"\.env: PLUGHOST_CONFIG_DIR: expected an absolute folder"):
        config_dir_source({"HOME": str(tmp_path), "PLUGHOST_HOME": str(tmp_path)})


def test_a_fully_registered_plugin_misses_nothing(tmp_path: Path) -> None:
    row = {"scope": "user", "installPath": str(tmp_path / "cache" / "greeter"), "version": "1.0.0"}
    _write(tmp_path, marketplaces={"studio": {}}, installed={"version": 2, "plugins": {"greeter@studio": [row]}},
           settings={"enabledPlugins": {"greeter@studio": True}})
    reg = Registration.load(tmp_path)
    assert reg.errors == [] and reg.missing("greeter@studio") == []
    assert reg.find_installed("greeter") == ("greeter@studio", tmp_path / "cache" / "greeter")
    assert reg.find_installed("planner") is None


def test_each_missing_surface_is_named(tmp_path: Path) -> None:
    project_row = {"scope": "project", "installPath": "/x"}
    _write(tmp_path, installed={"version": 2, "plugins": {"greeter@studio": [project_row]}},
           settings={"enabledPlugins": {"greeter@studio": False}})
    reg = Registration.load(tmp_path)
    assert reg.missing("greeter@studio") == ["known_marketplaces", "installed_plugins", "enabledPlugins"]
    assert reg.user_row("greeter@studio") is None  # only a user-scope row counts
    assert reg.find_installed("greeter") is None


def test_an_empty_config_dir_is_no_error(tmp_path: Path) -> None:
    reg = Registration.load(tmp_path / "absent")
    assert reg.errors == [] and reg.missing("a@b") == ["known_marketplaces", "installed_plugins", "enabledPlugins"]


def test_unreadable_and_misshapen_files_are_errors_naming_the_file(tmp_path: Path) -> None:
    _write(tmp_path, marketplaces="{not json", installed={"version": 1, "plugins": []}, settings="[]")
    reg = Registration.load(tmp_path)
    assert len(reg.errors) == 3
    assert "known_marketplaces.json: invalid JSON (" in reg.errors[0]
    assert "installed_plugins.json: expected version 2" in reg.errors[1]
    assert "settings.json: expected a JSON object" in reg.errors[2]
    assert reg.installed == {} and reg.enabled == {}


def test_hostile_json_in_a_surface_is_an_error_not_a_crash(tmp_path: Path) -> None:
    _write(tmp_path, marketplaces="[" * 100000 + "]" * 100000, settings=b"\xff\xfe".decode("latin-1"))
    (tmp_path / "settings.json").write_bytes(b'{"enabledPlugins": "\xff"}')
    reg = Registration.load(tmp_path)
    assert "known_marketplaces.json: invalid JSON (nested deeper" in reg.errors[0]
    assert reg.errors[1].endswith("settings.json: not UTF-8")


def test_a_directory_marketplace_is_read_once_for_all_its_plugins(tmp_path: Path) -> None:
    from plughost.payload.launch import installed_roots, plugin_root

    market = tmp_path / "payload"
    (market / ".claude-plugin").mkdir(parents=True)
    (market / ".claude-plugin" / "marketplace.json").write_text(json.dumps({"plugins": [
        {"name": "a", "source": "./a"}, {"name": ["odd"], "source": "./x"}, {"name": "b", "source": 3},
        {"name": "b", "source": "./b"}, {"name": "a", "source": "./second-a"}]}), encoding="utf-8")
    rows = {f"{n}@m": [{"scope": "user", "installPath": str(tmp_path / "cache" / n)}] for n in ("a", "b", "c")}
    _write(tmp_path / "cc", marketplaces={"m": {"source": {"source": "directory", "path": str(market)}}},
           installed={"version": 2, "plugins": rows}, settings={"enabledPlugins": dict.fromkeys(rows, True)})
    reg = Registration.load(tmp_path / "cc")
    assert plugin_root(reg, "a@m") == (market / "a").resolve()  # the first entry of a name with a text source
    (market / ".claude-plugin" / "marketplace.json").unlink()  # read once: the registration keeps it
    assert plugin_root(reg, "b@m") == (market / "b").resolve() and plugin_root(reg, "c@m") is None
    assert installed_roots(reg) == [("a@m", (market / "a").resolve()), ("b@m", (market / "b").resolve())]
    assert installed_roots(tmp_path / "cc") == []  # a config dir is read afresh
