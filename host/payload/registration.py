"""Read the three Claude Code registration surfaces of a config dir (docs/payload.md#installer, docs/gates.md#registration-severity).

`plugins/known_marketplaces.json` (marketplace registered), `plugins/installed_plugins.json`
(version 2: a `scope: "user"` row per `name@marketplace`) and `settings.json` `enabledPlugins`.
A plugin missing from any one of them loads none of its skills or servers; the registration
gates read them here, once per boot.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost.runtime.install_record import config_dir_source as resolve
from plughost.util.jsonio import read_json

SURFACES = ("known_marketplaces", "installed_plugins", "enabledPlugins")


def config_dir(env: Mapping[str, str], explicit: Path | str | None = None) -> Path:
    """The Claude Code config dir plughost runs in (:func:`plughost.runtime.install_record.config_dir_source`)."""
    return config_dir_source(env, explicit)[0]


def config_dir_source(env: Mapping[str, str], explicit: Path | str | None = None) -> tuple[Path, str]:
    """(config dir, where it came from); one precedence for the gates, doctor and the runner."""
    return resolve(env, explicit)


def _load(path: Path, errors: list[str]) -> dict[str, Any]:
    try:
        data = read_json(path, default={})
    except ValueError as exc:
        errors.append(str(exc))
        return {}
    except OSError as exc:
        errors.append(f"{path}: unreadable: {exc}")
        return {}
    if not isinstance(data, dict):
        errors.append(f"{path}: expected a JSON object")
        return {}
    return data


@dataclass
class Registration:
    """The registration state of one Claude Code config dir."""

    config_dir: Path
    marketplaces: dict[str, Any] = field(default_factory=dict)
    installed: dict[str, Any] = field(default_factory=dict)
    enabled: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _by_plugin: dict[str, list[str]] | None = None
    _sources: dict[Path, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, config_dir: Path) -> Registration:
        reg = cls(config_dir)
        reg.marketplaces = _load(config_dir / "plugins" / "known_marketplaces.json", reg.errors)
        installed = _load(config_dir / "plugins" / "installed_plugins.json", reg.errors)
        plugins = installed.get("plugins") if installed.get("version") == 2 else None
        if installed and not isinstance(plugins, dict):
            reg.errors.append(f"{config_dir / 'plugins' / 'installed_plugins.json'}: expected version 2 "
                              f"with a 'plugins' object")
            plugins = {}
        reg.installed = plugins or {}
        settings = _load(config_dir / "settings.json", reg.errors)
        enabled = settings.get("enabledPlugins")
        reg.enabled = enabled if isinstance(enabled, dict) else {}
        return reg

    def marketplace_sources(self, folder: Path) -> dict[str, str]:
        """A directory marketplace's ``.claude-plugin/marketplace.json`` as plugin name → its ``source``
        (the first entry of a name; empty when unreadable), read once per registration: every
        plugin of the marketplace asks it."""
        found = self._sources.get(folder)
        if found is None:
            try:
                doc = json.loads((folder / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                doc = {}
            found = {}
            for item in doc.get("plugins") or [] if isinstance(doc, dict) else []:
                if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("source"), str):
                    found.setdefault(item["name"], item["source"])
            self._sources[folder] = found
        return found

    def user_row(self, key: str) -> dict[str, Any] | None:
        """The `scope: "user"` row of `name@marketplace` in installed_plugins.json."""
        rows = self.installed.get(key)
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and row.get("scope") == "user":
                return row
        return None

    def missing(self, key: str) -> list[str]:
        """Which of the three surfaces lack `name@marketplace` (empty when fully registered)."""
        marketplace = key.rpartition("@")[2]
        out = []
        if marketplace not in self.marketplaces:
            out.append("known_marketplaces")
        if self.user_row(key) is None:
            out.append("installed_plugins")
        if self.enabled.get(key) is not True:
            out.append("enabledPlugins")
        return out

    def find_installed(self, plugin: str) -> tuple[str, Path] | None:
        """(`name@marketplace`, installPath) of a user-scope install of `plugin`, in any marketplace."""
        if self._by_plugin is None:
            self._by_plugin = {}
            for key in sorted(self.installed):
                self._by_plugin.setdefault(key.rpartition("@")[0], []).append(key)
        for key in self._by_plugin.get(plugin, []):
            row = self.user_row(key)
            if row and isinstance(row.get("installPath"), str):
                return key, Path(os.path.expanduser(row["installPath"]))
        return None
