"""How Claude Code starts a plugin's MCP server, reproduced: which folder, which command, which env.

Measured against the real CLI (2.1.x): a plugin of a ``directory`` marketplace runs from the
marketplace source folder (not the install cache); ``${CLAUDE_PLUGIN_ROOT}`` is that folder;
``${VAR}`` and ``${VAR:-default}`` are expanded in ``command``, ``args`` and ``env`` from Claude
Code's own environment, which is the user's environment plus the config dir's ``settings.json``
``env``; an unknown ``${VAR}`` stays literal. The server inherits that environment with the
entry's ``env`` on top. The gates and ``plughost doctor`` use this one description.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost.payload.registration import Registration
from plughost.runtime.install_record import account_on_record
from plughost.util.log import format_line

MINIMAL_PATH = "/usr/bin:/bin"
"""The PATH of a user's machine as Claude Code sees it when nothing was exported by hand."""

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(value: str, variables: Mapping[str, str]) -> tuple[str, list[str]]:
    """``${VAR}`` / ``${VAR:-default}`` expanded; returns (text, names that were unset)."""
    unset: list[str] = []

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in variables:
            return variables[name]
        if default is not None:
            return default
        unset.append(name)
        return m.group(0)

    return _VAR.sub(sub, value), unset


@dataclass
class Launch:
    """One server as Claude Code would spawn it."""

    plugin: str
    key: str  # name@marketplace
    server: str
    root: Path  # CLAUDE_PLUGIN_ROOT
    manifest: Path  # the plugin.json it was read from
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    unset: list[str] = field(default_factory=list)  # ${VAR} names nothing defines

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]


def settings_env(config_dir: Path) -> dict[str, str]:
    """``settings.json`` ``env`` of a config dir (what Claude Code adds to its own environment)."""
    try:
        data = json.loads((config_dir / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    env = data.get("env") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def claude_env(config_dir: Path, home: str | None = None) -> dict[str, str]:
    """Claude Code's environment on a user's machine: a minimal PATH, HOME, the config dir, settings env."""
    base = {"PATH": MINIMAL_PATH, "CLAUDE_CONFIG_DIR": str(config_dir)}
    if home:
        base["HOME"] = home
    return {**base, **settings_env(config_dir)}


def directory_source(reg: Registration, key: str) -> Path | None:
    """The source folder of ``name@marketplace``'s marketplace when it is a ``directory`` one."""
    entry = reg.marketplaces.get(key.rpartition("@")[2])
    source = entry.get("source") if isinstance(entry, dict) else None
    if isinstance(source, dict) and source.get("source") == "directory" and isinstance(source.get("path"), str):
        return Path(source["path"])
    return None


def plugin_root(reg: Registration, key: str) -> Path | None:
    """The folder Claude Code starts ``name@marketplace`` from: for a ``directory`` marketplace its
    source folder + the entry's ``source``; otherwise the user-scope ``installPath``."""
    name = key.rpartition("@")[0]
    base = directory_source(reg, key)
    if base is not None:
        source = reg.marketplace_sources(base).get(name)
        return (base / source).resolve() if source is not None else None
    row = reg.user_row(key)
    if row and isinstance(row.get("installPath"), str):
        return Path(row["installPath"]).expanduser()
    return None


def server_entries(manifest: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """``mcpServers`` of a plugin.json: an object, or a path to a JSON file holding one."""
    servers = manifest.get("mcpServers")
    if isinstance(servers, str):
        try:
            data = json.loads((root / servers).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        servers = data.get("mcpServers", data) if isinstance(data, dict) else None
    return servers if isinstance(servers, dict) else {}


def resolve(plugin: str, key: str, server: str, entry: Mapping[str, Any], root: Path, manifest: Path,
            base_env: Mapping[str, str]) -> Launch:
    """Expand one ``mcpServers`` entry the way Claude Code does."""
    launch = Launch(plugin, key, server, root, manifest)
    variables = {**base_env, "CLAUDE_PLUGIN_ROOT": str(root)}

    def ex(value: Any) -> str:
        text, unset = expand(str(value), variables)
        launch.unset.extend(u for u in unset if u not in launch.unset)
        return text

    launch.command = ex(entry.get("command") or "")
    launch.args = [ex(a) for a in entry.get("args") or []]
    own = {str(k): ex(v) for k, v in (entry.get("env") or {}).items()} if isinstance(entry.get("env"), dict) else {}
    launch.env = {**variables, **own}
    return launch


def installed_roots(config_dir: Path | Registration) -> list[tuple[str, Path]]:
    """``(name@marketplace, folder)`` of every enabled, installed plugin whose folder is known (of a
    config dir, or of its registration a gate has already read)."""
    reg = config_dir if isinstance(config_dir, Registration) else Registration.load(config_dir)
    roots = []
    for key in sorted(k for k, on in reg.enabled.items() if on is True):
        root = plugin_root(reg, key) if reg.user_row(key) is not None else None
        if root is not None:
            roots.append((key, root))
    return roots


def no_folder(reg: Registration, key: str, root: Path | None, config_dir: Path, env: Mapping[str, str]) -> str:
    """``reason=no-plugin-folder``: the folder Claude Code would start ``key`` from is not there
    (the payload moved or was deleted since the install), with the install to rerun."""
    source = directory_source(reg, key)
    gone = next((p for p in (source, root) if p is not None and not p.exists()), None)
    detail = (f"{gone} is gone: the payload was moved or deleted after plughost install" if gone is not None
              else "marketplace lists no folder for it")
    fix = (f"rerun plughost install PAYLOAD --config-dir {config_dir} --account {account_on_record(env) or 'ID'} "
           "with PAYLOAD the folder the payload is in now (from a checkout: plughost bundle BRAND --out PAYLOAD first)")
    return format_line(None, plugin=key, reason="no-plugin-folder", detail=detail, fix=fix)


def installed_launches(config_dir: Path, home: str | None = None) -> tuple[list[Launch], list[str]]:
    """Every enabled, installed plugin's servers as Claude Code would start them, and the problems
    met on the way (one line each: a plugin whose folder or plugin.json is missing)."""
    reg = Registration.load(config_dir)
    base = claude_env(config_dir, home)
    launches: list[Launch] = []
    problems = list(reg.errors)
    for key in sorted(k for k, on in reg.enabled.items() if on is True):
        if reg.user_row(key) is None:
            continue
        root = plugin_root(reg, key)
        name = key.rpartition("@")[0]
        if root is None or not root.exists():
            problems.append(no_folder(reg, key, root, config_dir, base))
            continue
        manifest = root / ".claude-plugin" / "plugin.json"
        try:
            doc = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            problems.append(f"plugin={key} reason=manifest-unreadable path={manifest}")
            continue
        for server, entry in sorted(server_entries(doc if isinstance(doc, dict) else {}, root).items()):
            if isinstance(entry, dict):
                launches.append(resolve(name, key, server, entry, root, manifest, base))
    return launches, problems
