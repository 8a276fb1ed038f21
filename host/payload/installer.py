"""The installer: make a generated payload live for a Claude Code config dir and an account (docs/payload.md#installer).

It writes what ``claude plugin marketplace add`` + ``claude plugin install --scope user`` would
(the shapes were taken from what the real CLI writes):

- ``<config>/plugins/known_marketplaces.json``: ``{mkt: {source: {source: directory, path},
  installLocation, lastUpdated}}``;
- ``<config>/plugins/installed_plugins.json``: ``{version: 2, plugins: {name@mkt: [{scope: user,
  installPath, version, installedAt, lastUpdated}]}}``;
- ``<config>/settings.json``: ``extraKnownMarketplaces`` and ``enabledPlugins``, and in ``env``
  what every plugin server needs in Claude Code's own environment (``PLUGHOST_PYTHON``, the
  interpreter the generated entries name; ``PLUGHOST_HOME``; ``ACCOUNT_ID``, the account of this
  config dir): Claude Code applies that ``env`` to the servers it starts and never reads
  ``<PLUGHOST_HOME>/.env``.

Like the CLI, each plugin is copied to ``<config>/plugins/cache/<mkt>/<name>/<version>/`` and
that copy is its ``installPath``: Claude Code owns that folder (``claude plugin uninstall``
marks it ``.orphaned_at`` for garbage collection), so it must never be the payload itself.

Marketplaces are discovered from the payload's generated ``marketplace.json`` files (the
platform one, the premium root, every ``premium-plugins/*/plugins/``), never from a fixed list.
Bundle-level specialist agents (``premium-plugins/<b>/agents/*.md``, ``PAYLOAD/agents/*.md``)
are linked into ``<config>/agents/``. The brand's public-agent files (``PAYLOAD/brand/agents/<slug>/``:
IDENTITY.md, SOUL.md, KNOWLEDGE.md) are copied into the account's ``agents/<slug>/`` where the
account has none (the account's copy wins; an owner's edits are kept), the agent gets a
KNOWLEDGE.md to assemble into, and ``account.json`` gets the brand's ``publicAgent`` when it names
none (docs/agents.md). The account's ``account.json`` ``enabledPlugins`` is
reconciled with what is installed and ``<PLUGHOST_HOME>/.env`` gets the brand's embedding, the
graph store (see :func:`store_settings`: a Neo4j install records its server) and the install's
``ACCOUNT_ID``.

The payload's plugins pass the checks ``plughost bundle`` and ``plughost manifests check`` run
(:mod:`plughost.runtime.plugin_checks`: a valid PLUGIN.md, a ``requires-plughost`` this host meets,
Python that loads and tools that join the tool table) or the install refuses in one line.

Everything is planned (and every defect raised) before the first write; files are merged with
what is there (unrelated keys survive), written atomically and only when their bytes change, so
a rerun writes nothing. ``dry_run`` returns the plan without touching anything.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost.payload import plugin_files
from plughost.payload.generator import BRAND_FILE, PLATFORM_FOLDER, PREMIUM_FOLDER
from plughost.payload.launch import server_entries
from plughost.ports.principal import with_account
from plughost.runtime import agent_files, plugin_checks, plugin_model
from plughost.runtime.accounts import check_id, read_account_json
from plughost.runtime.install_record import RECORD_KEY
from plughost.runtime.manifest import manifest_errors
from plughost.util import config, settings
from plughost.util.config import merge_env
from plughost.util.errors import UserError
from plughost.util.jsonio import read_json, render, write_if_changed
from plughost.util.log import log
from plughost.util.trees import Tree, build_and_swap, materialize, tree_matches, walk_files

MARKETPLACE_FILE = Path(".claude-plugin", "marketplace.json")
PLUGIN_FILE = Path(".claude-plugin", "plugin.json")
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")


@dataclass(frozen=True)
class InstalledPlugin:
    name: str
    marketplace: str
    path: Path  # the plugin folder in the payload
    version: str
    surface: str

    @property
    def key(self) -> str:
        return f"{self.name}@{self.marketplace}"

    def cache_dir(self, config_dir: Path) -> Path:
        """Where the CLI keeps an installed copy: ``plugins/cache/<mkt>/<name>/<version>``."""
        return config_dir / "plugins" / "cache" / self.marketplace / self.name / self.version


@dataclass(frozen=True)
class FoundMarketplace:
    name: str
    root: Path
    plugins: tuple[InstalledPlugin, ...]


@dataclass
class InstallPlan:
    payload: Path
    config_dir: Path
    account: str
    marketplaces: list[FoundMarketplace] = field(default_factory=list)
    files: dict[Path, str] = field(default_factory=dict)  # path -> new text
    changed: list[Path] = field(default_factory=list)
    links: list[tuple[Path, Path]] = field(default_factory=list)  # (link, target) to create
    copies: list[tuple[Path, Tree]] = field(default_factory=list)  # (cache dir, files) to (re)build
    unlinks: list[Path] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    reconciled: tuple[list[str], list[str]] = field(default_factory=lambda: ([], []))  # account (added, removed)

    @property
    def plugins(self) -> list[InstalledPlugin]:
        return [p for m in self.marketplaces for p in m.plugins]


def now_iso() -> str:
    """The CLI's timestamp shape: ``2026-01-02T03:04:05.678Z``."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _load(path: Path, default: Any) -> Any:
    try:
        data = read_json(path, default=default)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not isinstance(data, type(default)):
        raise UserError(f"{path}: (top level): expected a JSON {type(default).__name__.replace('dict', 'object')}")
    return data


def marketplace_files(payload: Path) -> list[Path]:
    """Every generated marketplace of a payload: platform, premium root, each nested bundle."""
    candidates = [payload / PLATFORM_FOLDER / MARKETPLACE_FILE, payload / PREMIUM_FOLDER / MARKETPLACE_FILE]
    premium = payload / PREMIUM_FOLDER
    if premium.is_dir():
        candidates += [top / PLATFORM_FOLDER / MARKETPLACE_FILE for top in sorted(premium.iterdir()) if top.is_dir()]
    return [p for p in candidates if p.is_file()]


def discover(payload: Path) -> list[FoundMarketplace]:
    """Read every marketplace and the plugin.json each entry points at (checking they agree), and each
    plugin's model (what it ships and serves): a plugin.json whose servers are not the model's is stale."""
    found = []
    for file in marketplace_files(payload):
        data = _load(file, {})
        root = file.parent.parent
        name = data.get("name")
        if not isinstance(name, str) or not _SEGMENT.match(name):
            raise UserError(f"{file}: name: expected the marketplace name (letters, digits, '.', '_', '-')")
        plugins = []
        for i, entry in enumerate(data.get("plugins") or []):
            source = entry.get("source") if isinstance(entry, dict) else None
            if not isinstance(source, str) or not source.startswith("./"):
                raise UserError(f"{file}: plugins[{i}].source: expected a './'-relative folder")
            folder = (root / source).resolve()
            manifest = folder / PLUGIN_FILE
            if not manifest.is_file():
                raise UserError(f"{file}: plugins[{i}].source: '{source}' has no {PLUGIN_FILE.as_posix()} "
                                "(run 'plughost manifests generate' on the payload)")
            doc = _load(manifest, {})
            if doc.get("name") != entry.get("name"):
                raise UserError(f"{file}: plugins[{i}].name: '{entry.get('name')}' differs from "
                                f"{manifest}'s name '{doc.get('name')}'")
            model = plugin_model.of_folder(folder)
            surface = model.manifest.surface if model is not None and model.manifest is not None else "feature"
            written = sorted(server_entries(doc, folder))
            if model is not None and written != sorted(model.server_keys):
                raise UserError(f"{manifest}: mcpServers: has [{','.join(written)}] but the plugin serves "
                                f"[{','.join(sorted(model.server_keys))}] (run 'plughost manifests generate' on "
                                "the payload)")
            version = str(doc.get("version") or "0.0.0")
            for what, value in (("name", doc["name"]), ("version", version)):
                if not isinstance(value, str) or not _SEGMENT.match(value):
                    raise UserError(f"{manifest}: {what}: expected letters, digits, '.', '_', '+', '-' (got {value!r})")
            plugins.append(InstalledPlugin(doc["name"], name, folder, version, surface))
        found.append(FoundMarketplace(name, root.resolve(), tuple(plugins)))
    if not found:
        raise UserError(f"PAYLOAD_DIR: no marketplace found in '{payload}' (expected "
                        f"{PLATFORM_FOLDER}/{MARKETPLACE_FILE.as_posix()}; run 'plughost bundle' or "
                        "'plughost manifests generate' first)")
    return found


def _is_under(path: str | None, root: Path) -> bool:
    if not path:
        return False
    try:
        return Path(path).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False


def _known_marketplaces(plan: InstallPlan, stamp: str) -> None:
    path = plan.config_dir / "plugins" / "known_marketplaces.json"
    data = _load(path, {})
    ours = {m.name for m in plan.marketplaces}
    for name in sorted(data):
        entry = data[name]
        src = entry.get("source", {}) if isinstance(entry, dict) else {}
        if name not in ours and isinstance(src, dict) and _is_under(src.get("path"), plan.payload):
            del data[name]
            plan.actions.append(f"forget marketplace {name} (no longer in the payload)")
    for m in plan.marketplaces:
        want = {"source": {"source": "directory", "path": str(m.root)}, "installLocation": str(m.root)}
        entry = data.get(m.name)
        if isinstance(entry, dict) and entry.get("source") == want["source"] and entry.get("installLocation") == want[
                "installLocation"] and entry.get("lastUpdated"):
            continue
        data[m.name] = {**(entry if isinstance(entry, dict) else {}), **want, "lastUpdated": stamp}
        plan.actions.append(f"register marketplace {m.name} -> {m.root}")
    plan.files[path] = render(data, sort_keys=False)


def _installed_plugins(plan: InstallPlan, stamp: str, stale: set[str]) -> None:
    path = plan.config_dir / "plugins" / "installed_plugins.json"
    data = _load(path, {"version": 2, "plugins": {}})
    plugins = data.get("plugins")
    if not isinstance(plugins, dict):
        raise UserError(f"{path}: plugins: expected an object of name@marketplace entries")
    if data.get("version") != 2:  # version 1 kept one object per plugin
        plugins = {k: (v if isinstance(v, list) else [dict(v, scope=v.get("scope", "user"))])
                   for k, v in plugins.items() if isinstance(v, (list, dict))}
    for key, rows in plugins.items():
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise UserError(f"{path}: plugins.{key}: expected a list of install records")
    for key in sorted(stale):
        rows = [r for r in plugins.get(key, []) if r.get("scope") != "user"]
        if rows:
            plugins[key] = rows
        else:
            plugins.pop(key, None)
        plan.actions.append(f"uninstall {key} (no longer in the payload)")
    for p in plan.plugins:
        rows = list(plugins.get(p.key) or [])
        user = next((r for r in rows if isinstance(r, dict) and r.get("scope") == "user"), None)
        install_path = str(p.cache_dir(plan.config_dir))
        if user and user.get("installPath") == install_path and user.get("version") == p.version:
            continue
        row = {"scope": "user", "installPath": install_path, "version": p.version,
               "installedAt": (user or {}).get("installedAt") or stamp, "lastUpdated": stamp}
        if user:
            rows[rows.index(user)] = {**user, **row}
        else:
            rows.append(row)
        plugins[p.key] = rows
        plan.actions.append(f"install {p.key} {p.version} (scope user) from {p.path}")
    plan.files[path] = render({**data, "version": 2, "plugins": plugins}, sort_keys=False)


def _settings(plan: InstallPlan, stale: set[str], stale_markets: set[str]) -> None:
    path = plan.config_dir / "settings.json"
    data = _load(path, {})
    extra = data.get("extraKnownMarketplaces") or {}
    enabled = data.get("enabledPlugins") or {}
    if not isinstance(extra, dict) or not isinstance(enabled, dict):
        raise UserError(f"{path}: extraKnownMarketplaces/enabledPlugins: expected objects")
    for name in stale_markets:
        extra.pop(name, None)
    for key in stale:
        enabled.pop(key, None)
    for m in plan.marketplaces:
        want = {"source": "directory", "path": str(m.root)}
        if (extra.get(m.name) or {}).get("source") != want:
            extra[m.name] = {**(extra.get(m.name) or {}), "source": want}
    for p in plan.plugins:
        if enabled.get(p.key) is not True:
            enabled[p.key] = True
            plan.actions.append(f"enable {p.key}")
    data["extraKnownMarketplaces"] = extra
    data["enabledPlugins"] = enabled
    env = data.get("env") or {}
    if not isinstance(env, dict):
        raise UserError(f"{path}: env: expected an object of environment variables")
    wanted = server_settings_env(plan.account)
    if any(env.get(k) != v for k, v in wanted.items()):
        plan.actions.append("settings env: " + " ".join(f"{k}={v}" for k, v in wanted.items()))
    data["env"] = {**env, **wanted}
    plan.files[path] = render(data, sort_keys=False)


def server_settings_env(account: str) -> dict[str, str]:
    """What the plugin servers of this config dir need from Claude Code's environment."""
    return with_account({"PLUGHOST_PYTHON": sys.executable, "PLUGHOST_HOME": str(config.home().absolute())}, account)


def _cache_copies(plan: InstallPlan) -> None:
    """Each plugin's copy in the CLI cache, rebuilt only when it differs from the payload."""
    for p in plan.plugins:
        target = p.cache_dir(plan.config_dir)
        tree: Tree = {Path(rel): p.path / rel for rel in walk_files(p.path)}
        if not tree_matches(target, tree):
            plan.copies.append((target, tree))
            plan.actions.append(f"copy {p.key} to {target}")


def _stale(plan: InstallPlan) -> tuple[set[str], set[str]]:
    """Plugins and marketplaces a previous install of this payload registered that are gone now."""
    ours = {m.name for m in plan.marketplaces}
    keys = {p.key for p in plan.plugins}
    known = _load(plan.config_dir / "plugins" / "known_marketplaces.json", {})
    gone_markets = {
        n for n, e in known.items()
        if n not in ours and isinstance(e, dict) and _is_under((e.get("source") or {}).get("path"), plan.payload)
    }
    managed = ours | gone_markets
    installed = _load(plan.config_dir / "plugins" / "installed_plugins.json", {"version": 2, "plugins": {}})
    settings = _load(plan.config_dir / "settings.json", {})
    candidates = set(installed.get("plugins") or {}) | set(settings.get("enabledPlugins") or {})
    stale = {k for k in candidates if "@" in k and k.rsplit("@", 1)[1] in managed and k not in keys}
    return stale, gone_markets


def agent_templates(payload: Path) -> list[Path]:
    """Bundle-level specialist agents: ``PAYLOAD/agents/*.md`` and each ``premium-plugins/<b>/agents/*.md``.

    Agents inside a plugin (``<plugin>/agents/``) are loaded by Claude Code with the plugin.
    """
    dirs = [payload / "agents"]
    premium = payload / PREMIUM_FOLDER
    if premium.is_dir():
        dirs += [top / "agents" for top in sorted(premium.iterdir())
                 if top.is_dir() and not (top / "PLUGIN.md").is_file()]
    return [f for d in dirs if d.is_dir() for f in sorted(d.glob("*.md")) if f.is_file()]


def _agents(plan: InstallPlan) -> None:
    target_dir = plan.config_dir / "agents"
    wanted: dict[str, Path] = {}
    for src in agent_templates(plan.payload):
        if src.name in wanted:
            raise UserError(f"{src}: agent template name '{src.name}' is also provided by {wanted[src.name]}")
        wanted[src.name] = src.resolve()
    if target_dir.is_dir():
        for link in sorted(target_dir.iterdir()):
            if link.is_symlink() and link.name not in wanted and _is_under(os.readlink(link), plan.payload):
                plan.unlinks.append(link)
                plan.actions.append(f"unlink agent {link.name} (no longer in the payload)")
    for name, src in sorted(wanted.items()):
        link = target_dir / name
        if link.is_symlink():
            if Path(os.readlink(link)) == src:
                continue
            if link.exists() and not _is_under(os.readlink(link), plan.payload):  # dangling: a moved payload
                log("installer", "op=agent-skipped", agent=name, reason="linked-elsewhere", path=str(link))
                continue
        elif link.exists():
            log("installer", "op=agent-skipped", agent=name, reason="user-file", path=str(link))
            continue
        plan.links.append((link, src))
        plan.actions.append(f"link agent {name} -> {src}")


def account_file(account: str) -> Path:
    return config.home() / "accounts" / account / "account.json"


def _account(plan: InstallPlan) -> None:
    """``enabledPlugins``: keep what is still installed, add installed feature plugins, drop the rest.

    Platform plugins (``surface: platform``) are never opt-in, so they are not listed. The account
    must exist (``plughost account create``): an install never invents one.
    """
    path = account_file(plan.account)
    if not path.is_file():
        raise UserError(f"--account: account '{plan.account}' does not exist ({path} is missing); create it first: "
                        f"plughost account create {plan.account}")
    data = read_account_json(path)
    current = data.get("enabledPlugins")
    if current is not None and not (isinstance(current, list) and all(isinstance(x, str) for x in current)):
        raise UserError(f"{path}: enabledPlugins: expected a list of plugin names")
    current = list(current or [])
    installed = {p.name: p for p in plan.plugins}
    optional = sorted(n for n, p in installed.items() if p.surface != "platform")
    reconciled = sorted(set(n for n in current if n in installed and installed[n].surface != "platform") | set(optional))
    added = sorted(set(reconciled) - set(current))
    removed = sorted(set(current) - set(reconciled))
    if added or removed or "accountId" not in data:
        plan.actions.append(f"account {plan.account}: enabledPlugins added={added} removed={removed}")
    data.setdefault("accountId", plan.account)
    data["enabledPlugins"] = reconciled
    _public_agent(plan, data)
    plan.files[path] = render(data, sort_keys=False)
    plan.reconciled = (added, removed)


def _public_agent(plan: InstallPlan, account: dict[str, Any]) -> None:
    """The brand's agent files into the account's home, each only where the account has none."""
    brand_file = plan.payload / BRAND_FILE
    shipped = agent_files.brand_agent_files(brand_file)
    slug = agent_files.brand_public_agent(_load(brand_file, {}), shipped)
    if slug and not account.get(agent_files.PUBLIC_AGENT_KEY):
        account[agent_files.PUBLIC_AGENT_KEY] = agent_files.check_slug(slug, f"{brand_file}: publicAgent")
        plan.actions.append(f"account {plan.account}: publicAgent {slug} (from the brand)")
    home = config.home()
    for rel, src in sorted(shipped.items()):
        target = agent_files.agents_dir(home, plan.account) / rel
        if target.exists():
            log("installer", "op=agent-file-kept", agent=rel.parts[0], file=rel.name, reason="account-copy")
            continue
        plan.files[target] = src.read_text(encoding="utf-8")
        plan.actions.append(f"agent file {rel.as_posix()} (from the brand)")
    for agent in sorted({rel.parts[0] for rel in shipped} | ({slug} if slug else set())):
        target = agent_files.agent_dir(home, plan.account, agent) / agent_files.KNOWLEDGE
        if not target.exists() and target not in plan.files:
            plan.files[target] = agent_files.merge_knowledge(None, agent_files.NOT_ASSEMBLED)
            plan.actions.append(f"agent file {agent}/{agent_files.KNOWLEDGE} (assembled by the memory plugin)")


def env_settings(payload: Path) -> dict[str, str]:
    """``.env`` values from the payload's brand: embedding, store, where the payload is, and the
    payload's ``brand.json`` as the install's brand (``PLUGHOST_BRAND_FILE``, read through
    :func:`plughost.runtime.install_brand.install_brand`)."""
    brand = _load(payload / BRAND_FILE, {})
    embed = brand.get("embed") or {}
    store = brand.get("store") or {}
    out: dict[str, str] = {}
    if embed.get("provider"):
        out["PLUGHOST_EMBEDDER"] = str(embed["provider"])
    if embed.get("model"):
        out["EMBED_MODEL"] = str(embed["model"])
    if embed.get("dimensions"):
        out["EMBED_DIMENSIONS"] = str(embed["dimensions"])
    if store.get("backend"):
        out["PLUGHOST_STORE"] = str(store["backend"])
    if store.get("uri"):
        out["NEO4J_URI"] = str(store["uri"])
    if (payload / PLATFORM_FOLDER).is_dir():
        out["PLUGHOST_PLUGINS_DIR"] = str(payload / PLATFORM_FOLDER)
    if (payload / PREMIUM_FOLDER).is_dir():
        out["PLUGHOST_PREMIUM_DIR"] = str(payload / PREMIUM_FOLDER)
    if (payload / BRAND_FILE).is_file():
        out[settings.BRAND_FILE.name] = str(payload / BRAND_FILE)
    return out


def _env(plan: InstallPlan) -> None:
    """``<PLUGHOST_HOME>/.env``: the brand's settings, the payload, the config dir and the account of
    this install (read by every command through :func:`plughost.util.config.load_env`, so ``boot --check``
    and ``serve`` in a user's plain shell run as the installed account; an exported ``ACCOUNT_ID``
    still wins)."""
    path = config.home() / ".env"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    brand = env_settings(plan.payload)
    recorded = config.read_dotenv(path)
    store = store_settings(brand, recorded, os.environ)
    if any(recorded.get(k) != v for k, v in store.items()):
        chosen = settings.STORE.read(store)
        where = f" at {store['NEO4J_URI']}" if chosen == "neo4j" else ""
        plan.actions.append(f"graph store: {chosen}{where} (brand: {settings.STORE.read(brand)})")
    values = with_account({**brand, **store, RECORD_KEY: str(plan.config_dir)}, plan.account)
    retired: tuple[str, ...] = RETIRED_ENV
    if recorded.get(settings.BRAND.name) == _load(plan.payload / BRAND_FILE, {}).get("name"):
        retired += (settings.BRAND.name,)  # what earlier installs wrote; the record is PLUGHOST_BRAND_FILE now
    plan.files[path] = merge_env(drop_env(text, retired), values)


NEO4J_KEYS = ("NEO4J_URI", "NEO4J_USER", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE")
"""The Neo4j connection a Neo4j install records, so every later command and server uses that server."""


def store_settings(brand: dict[str, str], recorded: dict[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The graph store this install records in ``.env``, and its connection.

    ``PLUGHOST_STORE`` exported to the install wins, then the store this data root already
    records (a re-install never moves an install to an empty store behind its back), then the
    brand's. A Neo4j store records ``NEO4J_URI`` (required) and the credentials, each from the
    install's environment, else as recorded, else the brand's ``uri``: the later commands, the
    rerun a user pastes and the MCP servers Claude Code starts all read this ``.env``.
    """
    chosen = settings.STORE.read(environ) or settings.STORE.read(recorded) or settings.STORE.read(brand) or ""
    out = {settings.STORE.name: chosen} if chosen else {}
    if chosen.lower() != "neo4j":
        return out
    for key in NEO4J_KEYS:
        value = (environ.get(key) or "").strip() or (recorded.get(key) or "").strip()
        if not value and key == "NEO4J_URI":
            value = brand.get("NEO4J_URI", "")
        if value:
            out[key] = value
    if not out.get("NEO4J_URI"):
        raise UserError("NEO4J_URI: not set; a Neo4j install (PLUGHOST_STORE=neo4j) records the server every "
                        "later command and MCP server uses: set NEO4J_URI (e.g. bolt://127.0.0.1:7687) for the "
                        "install")
    return out


RETIRED_ENV = ("PLATFORM_ROOT", settings.PYTHON.name)
"""Keys earlier installs wrote to .env; the servers get them from settings.json ``env`` now."""


def drop_env(text: str, keys: tuple[str, ...]) -> str:
    lines = [line for line in text.splitlines()
             if line.lstrip().startswith("#") or line.split("=", 1)[0].strip() not in keys]
    return "\n".join(lines) + "\n" if lines else ""


def _check_files(plan: InstallPlan) -> None:
    """Refuse a payload whose Claude Code files the CLI would refuse (plughost.payload.plugin_files)."""
    found = [f for m in plan.marketplaces for f in plugin_files.check_marketplace(m.root)]
    found += [f for p in plan.plugins for f in plugin_files.check_plugin(p.path, p.name)]
    bad = plugin_files.errors(found)
    if bad:
        raise UserError("the payload has files Claude Code refuses; fix them and bundle again:\n"
                        + "\n".join(f.line() for f in bad))


def _check_plugins(plan: InstallPlan, env: Mapping[str, str] | None) -> None:
    """Refuse a payload with a plugin ``plughost bundle`` and ``plughost manifests check`` refuse
    (a payload edited, or built by another plughost, since its bundle): one line naming the first
    defect, how many there are and the command that lists them all."""
    manifests = [p.path / "PLUGIN.md" for p in plan.plugins if (p.path / "PLUGIN.md").is_file()]
    # bundle writes a PLUGIN.md into every plugin folder (an entry point's too): one missing was removed since
    found = [f"{p.path}: PLUGIN.md: missing (every bundled plugin has one; bundle again)"
             for p in plan.plugins if not (p.path / "PLUGIN.md").is_file()]
    found += [line for md in manifests for line in manifest_errors(md)]
    if not found:
        found = [d.line() for d in plugin_checks.host_range_defects(manifests)]
    if not found:
        found = [d.line() for d in plugin_checks.tool_defects(manifests, env)]
    if found:
        more = f" ({len(found) - 1} more defect(s))" if len(found) > 1 else ""
        raise UserError(f"install: {found[0]}{more}; nothing written "
                        f"(plughost manifests check {plan.payload} lists every defect)")


def make_plan(payload: Path, config_dir: Path, account: str, env: Mapping[str, str] | None = None) -> InstallPlan:
    """Compute every file, link and action of an install; raises before anything is written."""
    check_id(account, "--account")
    payload = payload.resolve()
    if not payload.is_dir():
        raise UserError(f"PAYLOAD_DIR: '{payload}' is not a folder")
    plan = InstallPlan(payload=payload, config_dir=config_dir.absolute(), account=account)
    plan.marketplaces = discover(payload)
    _check_files(plan)
    _check_plugins(plan, env)
    seen: dict[str, str] = {}
    for p in plan.plugins:
        if p.key in seen:
            raise UserError(f"plugin '{p.key}' is listed twice in the payload")
        seen[p.key] = p.marketplace
    stamp = now_iso()
    stale, stale_markets = _stale(plan)
    _known_marketplaces(plan, stamp)
    _installed_plugins(plan, stamp, stale)
    _settings(plan, stale, stale_markets)
    _cache_copies(plan)
    _agents(plan)
    _account(plan)
    _env(plan)
    for path, text in plan.files.items():
        try:
            same = path.read_bytes() == text.encode("utf-8")
        except FileNotFoundError:
            same = False
        if not same:
            plan.changed.append(path)
    return plan


def apply(plan: InstallPlan) -> None:
    """Write the plan's copies, changed files and links (atomically, only what differs)."""
    for target, tree in plan.copies:
        build_and_swap(target, lambda tmp, _tree=tree: materialize(tmp, _tree))
    for path in plan.changed:
        write_if_changed(path, plan.files[path])
        if path.name == ".env":
            os.chmod(path, 0o600)
    for link in plan.unlinks:
        link.unlink(missing_ok=True)
    for link, target in plan.links:
        link.parent.mkdir(parents=True, exist_ok=True)
        tmp = link.with_name(f".{link.name}.tmp-{os.getpid()}")
        tmp.unlink(missing_ok=True)
        os.symlink(target, tmp)
        os.replace(tmp, link)


def install(payload: Path, config_dir: Path, account: str, *, dry_run: bool = False,
            env: Mapping[str, str] | None = None) -> InstallPlan:
    plan = make_plan(payload, config_dir, account, env)
    if not dry_run:
        apply(plan)
        added, removed = plan.reconciled
        log("installer", "op=install", payload=str(plan.payload), config_dir=str(plan.config_dir),
            account=account, marketplaces=len(plan.marketplaces), plugins=len(plan.plugins),
            written=len(plan.changed), copied=len(plan.copies), links=len(plan.links), added=added, removed=removed)
    return plan
