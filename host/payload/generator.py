"""Claude Code manifest generation over a payload tree (docs/payload.md#manifests).

A payload is what the bundler produces and the installer makes live::

    PAYLOAD/brand.json                       the brand it was built for (name, productName)
    PAYLOAD/plugins/<p>/PLUGIN.md            platform plugins  -> marketplace <brand>-platform
    PAYLOAD/premium-plugins/<b>/PLUGIN.md    standalone bundle -> marketplace <brand>-premium
    PAYLOAD/premium-plugins/<b>/plugins/<s>/PLUGIN.md
                                             nested bundle     -> marketplace <brand>-premium-<b>

Every plugin gets ``.claude-plugin/plugin.json``; each marketplace folder gets
``.claude-plugin/marketplace.json`` with ``./``-relative sources. Everything is driven by each
plugin's PLUGIN.md and the presence of a plugin-local server (``mcp/__main__.py`` or
``mcp/server.py``), never by plugin names.

Claude Code spawns MCP servers with its own minimal environment (no virtualenv, no PATH to
rely on, any working directory). A payload is built once and installed on many machines, so it
names nothing that breaks on another machine or folder: an ``auto`` server is started through
the stdio tee launcher by ``${PLUGHOST_PYTHON:-<the building interpreter>}`` (``plughost
install`` writes ``PLUGHOST_PYTHON`` into the config dir's ``settings.json`` ``env``, with the
data root and the account; the default keeps the CLI's own ``marketplace add`` + ``install``
working on the machine that built the payload), and the payload's plugin folders
are anchored on ``${CLAUDE_PLUGIN_ROOT}``, which Claude Code expands to the plugin folder it
starts, so a moved payload works once installed again. No per-session values in the entry.
A plugin with hooks also gets ``.claude-plugin/python`` (:data:`HOOK_PYTHON_FILE`), the same
default for its hook scripts.

Every document is computed (and every defect raised) before the first byte is written, and
files are only written when their bytes change: a rerun writes nothing.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from plughost.payload import plugin_files
from plughost.runtime import plugin_model
from plughost.runtime.manifest import PluginManifest, load_manifest
from plughost.runtime.plugin_model import PluginModel
from plughost.util.errors import FatalError, UserError
from plughost.util.jsonio import read_json, render, write_if_changed
from plughost.util.log import log

PLATFORM_FOLDER = "plugins"
PREMIUM_FOLDER = "premium-plugins"
BRAND_FILE = "brand.json"
DEFAULT_BRAND = "plughost"
_BRAND_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_SKIP_DIRS = {".claude-plugin", "__pycache__", ".git", "node_modules"}


@dataclass(frozen=True)
class PayloadPlugin:
    """One plugin of a payload: where its files are read (``folder``), where it lives in the
    payload (``dest``; the same folder for ``manifests generate``, the output for ``bundle``),
    and the marketplace that lists it."""

    folder: Path
    dest: Path
    manifest: PluginManifest
    marketplace: str
    bundle: str | None = None

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def key(self) -> str:
        """The ``name@marketplace`` id Claude Code uses."""
        return f"{self.name}@{self.marketplace}"

    @cached_property
    def model(self) -> PluginModel:
        """The one reading of the plugin (plughost.runtime.plugin_model): its servers, hooks, skills, agents."""
        return plugin_model.build(self.manifest, self.folder)


@dataclass(frozen=True)
class Marketplace:
    name: str
    root: Path  # the folder holding .claude-plugin/marketplace.json, in the payload
    description: str
    plugins: tuple[PayloadPlugin, ...]


@dataclass
class Payload:
    """A payload's brand, plugins and marketplaces (stable order), located at ``root``."""

    root: Path
    brand: str
    product: str
    marketplaces: list[Marketplace] = field(default_factory=list)
    has_platform: bool = False
    has_premium: bool = False

    @property
    def plugins(self) -> list[PayloadPlugin]:
        return [p for m in self.marketplaces for p in m.plugins]

    @property
    def platform_dir(self) -> Path:
        return self.root / PLATFORM_FOLDER

    @property
    def premium_dir(self) -> Path:
        return self.root / PREMIUM_FOLDER


@dataclass
class GenerateReport:
    plugins: int = 0
    marketplaces: int = 0
    written: list[Path] = field(default_factory=list)
    unchanged: int = 0


def plugin_folders(parent: Path) -> list[Path]:
    """Sub-folders of ``parent`` that hold a PLUGIN.md, sorted by name."""
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir() if p.is_dir() and p.name not in _SKIP_DIRS and (p / "PLUGIN.md").is_file())


def premium_bundles(premium: Path | None) -> dict[str, Path]:
    """Bundle name → folder: standalone (``<b>/PLUGIN.md``) or nested (``<b>/plugins/``)."""
    if premium is None or not premium.is_dir():
        return {}
    return {
        top.name: top
        for top in sorted(premium.iterdir())
        if top.is_dir() and top.name not in _SKIP_DIRS
        and ((top / "PLUGIN.md").is_file() or (top / PLATFORM_FOLDER).is_dir())
    }


def read_brand(root: Path, brand: str | None = None) -> tuple[str, str]:
    """(brand name, product name): ``brand`` wins, else the payload's brand.json, else the default."""
    data: Any = {}
    path = root / BRAND_FILE
    try:
        data = read_json(path, default={}) or {}
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: (top level): expected an object")
    name = str(brand or data.get("name") or DEFAULT_BRAND)
    if not _BRAND_NAME.match(name):
        where = "--brand" if brand else f"{path}: name"
        raise UserError(f"{where}: expected a kebab-case brand name (got {name!r})")
    return name, str(data.get("productName") or name)


def assemble(root: Path, brand: str, product: str, *, platform: list[Path], bundles: dict[str, Path]) -> Payload:
    """Describe a payload located at ``root`` whose plugins are read from the given source folders.

    ``platform``: platform plugin folders (copied to ``root/plugins/<folder name>``);
    ``bundles``: premium bundle name → source folder (copied to ``root/premium-plugins/<name>``).
    PLUGIN.md defects raise UserError before anything is written.
    """
    payload = Payload(root=root, brand=brand, product=product)
    payload.has_platform = bool(platform)
    payload.has_premium = bool(bundles)
    # a marketplace with no plugin is skipped: the CLI warns on one ("no plugins defined")
    if platform:
        mkt = f"{brand}-platform"
        dest_root = payload.platform_dir
        plugins = tuple(PayloadPlugin(f, dest_root / f.name, load_manifest(f / "PLUGIN.md"), mkt) for f in platform)
        payload.marketplaces.append(Marketplace(mkt, dest_root, f"{product} platform plugins", plugins))
    standalone: list[PayloadPlugin] = []
    nested: list[Marketplace] = []
    for name, src in sorted(bundles.items()):
        dest = payload.premium_dir / name
        if (src / "PLUGIN.md").is_file():
            standalone.append(PayloadPlugin(src, dest, load_manifest(src / "PLUGIN.md"), f"{brand}-premium", name))
        else:
            mkt = f"{brand}-premium-{name}"
            subs = [PayloadPlugin(f, dest / PLATFORM_FOLDER / f.name, load_manifest(f / "PLUGIN.md"), mkt, name)
                    for f in plugin_folders(src / PLATFORM_FOLDER)]
            if subs:
                nested.append(Marketplace(mkt, dest / PLATFORM_FOLDER, f"{product} premium bundle '{name}'",
                                          tuple(subs)))
    if standalone:
        payload.marketplaces.append(Marketplace(f"{brand}-premium", payload.premium_dir,
                                                f"{product} premium plugins", tuple(standalone)))
    payload.marketplaces.extend(nested)
    seen: dict[str, Path] = {}
    for plugin in payload.plugins:
        other = seen.setdefault(plugin.name, plugin.folder)
        if other != plugin.folder:
            raise UserError(f"plugin name '{plugin.name}' is claimed by two folders: {other} and {plugin.folder}")
    return payload


def scan(root: Path, brand: str | None = None) -> Payload:
    """Describe the payload already on disk at ``root`` (``manifests generate``)."""
    root = root.resolve()
    if not root.is_dir():
        raise UserError(f"PAYLOAD_DIR: '{root}' is not a folder")
    if not (root / PLATFORM_FOLDER).is_dir() and not (root / PREMIUM_FOLDER).is_dir():
        raise UserError(f"PAYLOAD_DIR: '{root}' has neither a '{PLATFORM_FOLDER}/' nor a '{PREMIUM_FOLDER}/' folder")
    name, product = read_brand(root, brand)
    payload = assemble(root, name, product, platform=plugin_folders(root / PLATFORM_FOLDER),
                       bundles=premium_bundles(root / PREMIUM_FOLDER))
    payload.has_platform = (root / PLATFORM_FOLDER).is_dir()
    payload.has_premium = (root / PREMIUM_FOLDER).is_dir()
    return payload


PLUGIN_ROOT = "${CLAUDE_PLUGIN_ROOT}"


def interpreter_ref(python: str | None = None) -> str:
    """The interpreter a generated entry names: ``PLUGHOST_PYTHON`` from Claude Code's environment
    (``settings.json`` ``env``, written by ``plughost install``), else the building interpreter."""
    return f"${{PLUGHOST_PYTHON:-{python or sys.executable}}}"


def anchored(path: Path, plugin_dest: Path) -> str:
    """``path`` relative to the plugin folder, written from ``${CLAUDE_PLUGIN_ROOT}``."""
    rel = Path(os.path.relpath(path, plugin_dest)).as_posix()
    return PLUGIN_ROOT if rel == "." else f"{PLUGIN_ROOT}/{rel}"


def server_env(payload: Payload, plugin: PayloadPlugin) -> dict[str, str]:
    """The payload's plugin folders, anchored on the plugin folder (never per-session values)."""
    env = {}
    if payload.has_platform:
        env["PLUGHOST_PLUGINS_DIR"] = anchored(payload.platform_dir, plugin.dest)
    if payload.has_premium:
        env["PLUGHOST_PREMIUM_DIR"] = anchored(payload.premium_dir, plugin.dest)
    return env


BARE_INTERPRETERS = {"python", "python3"}
CONSOLE_SCRIPT = "plughost"


def resolve_command(command: str, args: list[Any], python: str) -> tuple[str, list[Any]]:
    """A bare ``python``/``python3`` becomes the install's interpreter; ``plughost`` becomes that
    interpreter running ``-m plughost.cli``.

    Claude Code spawns servers with a minimal environment (no virtualenv, no PATH to rely on),
    so a shared-lib block that says ``python`` would start the wrong interpreter or none. Every
    other command (absolute, ``${CLAUDE_PLUGIN_ROOT}``-anchored, ``node`` ...) is kept verbatim.
    """
    if command in BARE_INTERPRETERS:
        return python, args
    if command == CONSOLE_SCRIPT:
        return python, ["-m", "plughost.cli", *args]
    return command, args


def mcp_servers(plugin: PayloadPlugin, payload: Payload, python: str) -> dict[str, Any] | None:
    """The ``mcpServers`` block: one entry per server of the plugin's model (plughost.runtime.plugin_model),
    or None for no server. The model's defect (an ``mcp`` block nothing starts) is FATAL."""
    m, model = plugin.manifest, plugin.model
    specs, defects = model.servers, model.defects
    if defects:
        if m.mcp_manifest == "shared-lib":
            raise UserError(defects[0])
        raise FatalError(f"FATAL: plugin '{m.name}' ({plugin.folder / 'PLUGIN.md'}) {defects[0].split(': mcp: ', 1)[-1]}")
    out: dict[str, Any] = {}
    for spec in specs:
        if spec.how == "shared-lib":
            block = dict(m.mcp or {})
            command, args = resolve_command(block["command"], list(block.get("args") or []), python)
            block["command"] = command
            if args or "args" in block:
                block["args"] = args
            if m.python:  # plughost Python code behind a launcher (e.g. graph's bin/mcp-server)
                block["env"] = {"PLUGHOST_PYTHON": python, **(block.get("env") or {})}
            out[spec.key] = block
            continue
        entry: dict[str, Any] = {
            "command": python,
            "args": ["-m", "plughost.mcp.tee", m.name, "--", python, f"{PLUGIN_ROOT}/{spec.file}"],
        }
        env = server_env(payload, plugin)
        if env:
            entry["env"] = env
        out[spec.key] = entry
    return out or None


def _rel(path: str) -> str:
    path = path.strip().rstrip("/")
    return path if path.startswith("./") else "./" + path.lstrip("/")


def plugin_json(plugin: PayloadPlugin, payload: Payload, python: str) -> dict[str, Any]:
    """The ``.claude-plugin/plugin.json`` document for one plugin.

    Claude Code discovers ``skills/``, ``agents/*.md`` and ``hooks/hooks.json`` by itself; it
    rejects an explicit ``hooks`` entry naming the standard file (a "duplicate hooks file" load
    error), and ``agents`` must list ``.md`` files. So: ``skills`` whenever the folder exists,
    ``agents``/``hooks`` only when PLUGIN.md moves them off their default place.
    """
    m, model = plugin.manifest, plugin.model
    doc: dict[str, Any] = {
        "name": m.name,
        "version": m.version,
        "description": m.description or m.name,
        "author": {"name": m.author or payload.product},
    }
    if model.skills:
        doc["skills"] = _rel(m.skills)
    if _rel(m.agents) != "./agents" and model.agents:
        doc["agents"] = [f"{_rel(m.agents)}/{p.name}" for p in model.agents]
    if _rel(m.hooks) != "./hooks" and model.hooks is not None:
        doc["hooks"] = f"{_rel(m.hooks)}/hooks.json"
    servers = mcp_servers(plugin, payload, python)
    if servers:
        doc["mcpServers"] = servers
    return doc


def marketplace_json(market: Marketplace, payload: Payload) -> dict[str, Any]:
    entries = []
    for p in market.plugins:
        rel = p.dest.relative_to(market.root).as_posix()
        entries.append({
            "name": p.name,
            "source": f"./{rel}",
            "description": p.manifest.description or p.name,
            "version": p.manifest.version,
        })
    return {
        "name": market.name,
        "owner": {"name": payload.product},
        "metadata": {"description": market.description},
        "plugins": entries,
    }


HOOK_PYTHON_FILE = Path(".claude-plugin", "python")
"""The hooks' fallback interpreter, one line: what ``${PLUGHOST_PYTHON:-...}`` is to a server entry.

A hook command is a shell line in ``hooks/hooks.json`` (a source file, copied verbatim), so the
default it needs cannot be spliced into it; the hook scripts read this generated file when
``PLUGHOST_PYTHON`` is not in their environment (the CLI's own ``marketplace add`` + ``install``,
or a settings.json without it). It names the building interpreter and nothing of the payload's
location, so a moved payload keeps it."""


def check_sources(payload: Payload) -> None:
    """Refuse a plugin whose hooks, skills or agents Claude Code would refuse (one line each, naming the
    plugin, the file and the field); a warning (a hook command file that is not there) is logged."""
    found = [f for p in payload.plugins for f in plugin_files.check_plugin(p.folder, p.name, generated=False)
             if f.file.name != "plugin.json"]  # plugin.json is the generator's own output
    for f in found:
        if f.severity != "error":
            log("manifests", "op=warning", plugin=f.plugin, file=str(f.file), field=f.field, detail=f.detail)
    bad = plugin_files.errors(found)
    if bad:
        raise UserError("Claude Code would refuse these plugin files:\n" + "\n".join(f.line() for f in bad))


def plan(payload: Payload, python: str | None = None) -> dict[Path, str]:
    """Every file generation would write (path → text); raises before anything is written.

    ``python`` is the default interpreter the servers (and hooks) name when ``PLUGHOST_PYTHON`` is unset.
    """
    default = python or sys.executable
    python = interpreter_ref(default)
    out: dict[Path, str] = {}
    check_sources(payload)
    for market in payload.marketplaces:
        for plugin in market.plugins:
            out[plugin.dest / ".claude-plugin" / "plugin.json"] = render(plugin_json(plugin, payload, python))
            if plugin.model.hooks is not None:
                out[plugin.dest / HOOK_PYTHON_FILE] = default + "\n"
        out[market.root / ".claude-plugin" / "marketplace.json"] = render(marketplace_json(market, payload))
    return out


def generate(root: Path, *, brand: str | None = None, python: str | None = None) -> GenerateReport:
    """Generate every manifest of a payload; write only files whose bytes change."""
    payload = scan(root, brand)
    files = plan(payload, python)
    report = GenerateReport(plugins=len(payload.plugins), marketplaces=len(payload.marketplaces))
    for path, text in files.items():
        if write_if_changed(path, text):
            report.written.append(path)
        else:
            report.unchanged += 1
    for stale in marketplace_locations(payload.root):
        if stale not in files and stale.is_file():
            stale.unlink()  # a marketplace left from an earlier run whose plugins are gone
            report.written.append(stale)
    return report


def marketplace_locations(root: Path) -> list[Path]:
    """Where generation owns a marketplace.json: platform, premium root, each nested bundle."""
    rel = Path(".claude-plugin", "marketplace.json")
    out = [root / PLATFORM_FOLDER / rel, root / PREMIUM_FOLDER / rel]
    premium = root / PREMIUM_FOLDER
    if premium.is_dir():
        out += [top / PLATFORM_FOLDER / rel for top in sorted(premium.iterdir()) if top.is_dir()]
    return out
