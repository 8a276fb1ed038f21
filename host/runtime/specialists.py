"""Specialist agents: `.md` files with YAML frontmatter whose `tools:` names what they may call.

Specialists bind to tools by name, so a renamed or typo'd tool silently disarms them. This
module finds every specialist file (templates, each plugin's `agents/`, premium bundle roots,
each account's `specialists/agents/`), classifies every tool name into one of seven classes
(docs/gates.md#specialist-tool-drift) and computes the brand strip-list that whatever spawns a specialist must apply:
:func:`strip_list` / :func:`spawn_tools`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost.runtime import state
from plughost.runtime.accounts import account_dir
from plughost.runtime.install_brand import install_brand, require
from plughost.runtime.manifest import load_yaml, split_frontmatter
from plughost.runtime.surface import safe_name
from plughost.util import settings
from plughost.util.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host
    from plughost.runtime.surface import ToolSurface

CC_NATIVE: frozenset[str] = frozenset({
    "Agent", "Task", "Bash", "BashOutput", "KillShell", "KillBash", "Edit", "MultiEdit", "Glob", "Grep",
    "LS", "NotebookEdit", "NotebookRead", "Read", "Write", "TodoWrite", "TodoRead", "WebFetch", "WebSearch",
    "ExitPlanMode", "Skill", "SlashCommand", "ListMcpResourcesTool", "ReadMcpResourceTool",
})
"""Claude Code's built-in tools: the ONE list every gate and spawner uses."""

# Classes, in classification order (docs/gates.md#specialist-tool-drift).
CC_NATIVE_CLASS = "cc-native"
SERVED = "served"
BRIDGE = "third-party-bridge"
UNKNOWN_TOOL = "unknown-tool-in-plugin"
UNKNOWN_NAMESPACE = "unknown-plugin-namespace"
BRAND_EXCLUDED = "brand-excluded-plugin"
MALFORMED = "malformed-name"
CLASSES = (CC_NATIVE_CLASS, SERVED, BRIDGE, UNKNOWN_TOOL, UNKNOWN_NAMESPACE, BRAND_EXCLUDED, MALFORMED)
REFUSING = frozenset({UNKNOWN_TOOL, UNKNOWN_NAMESPACE, MALFORMED})

_MCP_NAME = re.compile(r"^mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_*-]+)$")


@dataclass(frozen=True)
class Specialist:
    """One agent file: its name (frontmatter `name`, else the file stem), path and tool names."""

    name: str
    path: Path
    tools: tuple[str, ...]
    origin: str = ""


@dataclass(frozen=True)
class Classified:
    tool: str
    drift: str
    plugin: str | None = None


@dataclass
class DriftReport:
    """What the specialist-tool-drift gate found."""

    specialists: list[Specialist] = field(default_factory=list)
    refusals: list[tuple[Specialist, Classified]] = field(default_factory=list)
    strips: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # specialist -> plugin -> tools
    unreadable: list[tuple[Path, str]] = field(default_factory=list)


# ---------------------------------------------------------------------------- parsing
_SIMPLE_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):[ \t]*(.*?)[ \t]*$")
_YAML_SYNTAX = frozenset("[]{}|>&*!%@`\"'#-?:,")
_YAML_WORDS = frozenset({"null", "~", "true", "false", "yes", "no", "on", "off", ".nan", ".inf"})


def _simple_frontmatter(block: str) -> dict[str, Any] | None:
    """Flat `key: value` lines parsed without YAML (thousands of agent files at boot); None when
    anything looks like YAML syntax (lists, quotes, comments, continuations), so YAML decides."""
    out: dict[str, Any] = {}
    for line in block.splitlines():
        if not line.strip():
            continue
        m = _SIMPLE_LINE.match(line)
        if not m or m.group(1) in out:
            return None
        value = m.group(2)
        if (not value or value[0] in _YAML_SYNTAX or ": " in value or " #" in value
                or value.lower() in _YAML_WORDS or value[0].isdigit()):
            return None
        out[m.group(1)] = value
    return out


def parse_tools(value: Any, path: Path) -> tuple[str, ...]:
    """`tools:` as a comma-separated line (`Read, Grep`) or a YAML list; absent means none."""
    if value is None:
        return ()
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = value
    else:
        raise UserError(f"{path}: tools: expected a comma-separated line or a list of tool names "
                        f"(got {type(value).__name__})")
    return tuple(dict.fromkeys(t.strip() for t in items if t.strip()))


def parse_agent(path: Path, origin: str = "") -> Specialist:
    """Read one specialist `.md` (UserError naming the file and field on bad input)."""
    head, _ = split_frontmatter(path)
    try:
        data = _simple_frontmatter(head)
        if data is None:
            data = load_yaml(head) or {}
    except Exception as exc:  # yaml.YAMLError
        raise UserError(f"{path}: frontmatter: invalid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: frontmatter: expected a mapping of fields")
    name = data.get("name") or path.stem
    if not isinstance(name, str):
        raise UserError(f"{path}: name: expected a string")
    return Specialist(name=name, path=path, tools=parse_tools(data.get("tools"), path), origin=origin)


# ---------------------------------------------------------------------------- discovery
def template_dirs(host: Host) -> list[Path]:
    """`templates/specialists/agents/` of the checkout and of the install (the plugins folder's parent),
    plus the payload-level `agents/` folder."""
    roots: list[Path] = []
    if host.plugins_dir is not None:
        roots.append(Path(host.plugins_dir).parent)
    dirs = [root / "templates" / "specialists" / "agents" for root in roots]
    if host.plugins_dir is not None:
        dirs.append(Path(host.plugins_dir).parent / "agents")  # a payload's own agents (the installer links them)
    extra = settings.TEMPLATES_DIR.read(host.env)
    if extra:
        dirs.append(extra)
    return dirs


def agent_dirs(host: Host, accounts: Iterable[str] = (), config_dir: Path | None = None) -> list[tuple[str, Path]]:
    """Every folder specialists are read from, (origin, path), each once, in a stable order: with
    `config_dir`, also `<config-dir>/agents/` (what Claude Code itself loads, hand-placed or linked)."""
    found: list[tuple[str, Path]] = [("templates", d) for d in template_dirs(host)]
    for record in sorted(host.records.values(), key=lambda r: r.name):
        if record.loaded and record.folder is not None and record.manifest is not None:
            found.append((f"plugin:{record.name}", Path(record.folder) / (record.manifest.agents or "agents")))
    if host.premium_dir is not None and Path(host.premium_dir).is_dir():
        for bundle in sorted(p for p in Path(host.premium_dir).iterdir() if (p / "plugins").is_dir()):
            found.append((f"bundle:{bundle.name}", bundle / "agents"))
    for account_id in accounts:
        found.append((f"account:{account_id}", account_dir(account_id, host.home) / "specialists" / "agents"))
    if config_dir is not None:
        found.append(("config-dir", Path(config_dir) / "agents"))
    out, seen = [], set()
    for origin, folder in found:
        try:
            key = folder.resolve()
        except OSError:
            continue
        if key in seen or not folder.is_dir():
            continue
        seen.add(key)
        out.append((origin, folder))
    return out


def discover(host: Host, accounts: Iterable[str] = (),
             config_dir: Path | None = None) -> tuple[list[Specialist], list[tuple[Path, str]]]:
    """Parse every specialist file once (a file linked into the config dir is read where it lives);
    return (specialists, [(path, error line)])."""
    specialists, bad = [], []
    seen: set[str] = set()
    for origin, folder in agent_dirs(host, accounts, config_dir):
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if not entry.name.endswith(".md") or not entry.is_file():
                continue
            real = os.path.realpath(entry.path)
            if real in seen:
                continue
            seen.add(real)
            path = Path(entry.path)
            try:
                specialists.append(parse_agent(path, origin))
            except UserError as exc:
                bad.append((path, str(exc)))
    return specialists, bad


# ---------------------------------------------------------------------------- classification
def known_plugins(host: Host) -> set[str]:
    """Every plughost plugin name this install knows of, served or not (its namespaces are ours)."""
    names = set(host.records)
    if host.plugins_dir is not None and Path(host.plugins_dir).is_dir():
        names.update(e.name for e in os.scandir(host.plugins_dir) if e.is_dir() and not e.name.startswith("."))
    return {safe_name(n) for n in names}


def classify(tool: str, surface: ToolSurface, plughost_plugins: set[str], excluded: set[str]) -> Classified:
    """One tool name → one of the seven classes (docs/gates.md#specialist-tool-drift), in order.

    `mcp__plugin_<plugin>_<server>__<tool>` is the canonical plugin form; `mcp__<server>__<tool>` the
    short form. A `*` tool segment names every tool of a served namespace.
    """
    if tool in CC_NATIVE:
        return Classified(tool, CC_NATIVE_CLASS)
    if tool in surface.all:
        plugin = surface.all[tool].plugin
        if safe_name(plugin) in excluded:  # loaded (an entry point) but not shipped by this brand
            return Classified(tool, BRAND_EXCLUDED, plugin)
        return Classified(tool, SERVED, plugin)
    match = _MCP_NAME.match(tool)
    if not match:
        return Classified(tool, MALFORMED)
    namespace, leaf = match.groups()
    if namespace.startswith("plugin_"):
        namespace = namespace[len("plugin_"):]
        plugin_segment = namespace.split("_", 1)[0]
        if plugin_segment not in plughost_plugins and plugin_segment not in excluded:
            return Classified(tool, BRIDGE, plugin_segment)
    else:
        plugin_segment = namespace.split("_", 1)[0]
    served_by = surface.namespaces.get(namespace)
    if served_by is not None and served_by not in surface.mcp_servers:
        served_by = None  # a loaded plugin that serves no MCP tools: its namespace is served by nothing
    if served_by is not None and safe_name(served_by) not in excluded:
        if leaf == "*":
            return Classified(tool, SERVED, served_by)
        return Classified(tool, UNKNOWN_TOOL, served_by)
    if plugin_segment in excluded:
        return Classified(tool, BRAND_EXCLUDED, plugin_segment)
    return Classified(tool, UNKNOWN_NAMESPACE, plugin_segment)


def check_drift(host: Host, *, excluded: Iterable[str] = (), accounts: Iterable[str] = (),
                config_dir: Path | None = None) -> DriftReport:
    """Classify every tool of every specialist; collect refusals and the per-specialist strip-list."""
    report = DriftReport()
    report.specialists, report.unreadable = discover(host, accounts, config_dir)
    surface = host.surface
    ours = known_plugins(host)
    excluded_set = {safe_name(e) for e in excluded}
    for spec in report.specialists:
        for tool in spec.tools:
            c = classify(tool, surface, ours, excluded_set)
            if c.drift in REFUSING:
                report.refusals.append((spec, c))
            elif c.drift == BRAND_EXCLUDED:
                report.strips.setdefault(spec.name, {}).setdefault(c.plugin or "", []).append(tool)
    return report


# ---------------------------------------------------------------------------- brands and spawning
def find_brand(brand: str | Path | None, env: Mapping[str, str] | None = None,
               payload_root: Path | None = None) -> tuple[str | None, list[str]]:
    """(brand name, `plugins.excluded`) of a brand: ``brand`` (a brand JSON path, a shipped brand's name or
    the payload's brand's name; one that is not found is a UserError naming `--brand`), else the install's
    brand (:func:`plughost.runtime.install_brand.install_brand`: the payload's `brand.json`, else the
    install record), else (None, []). An install brand that cannot be read is (None, []): the
    `install-brand` gate reports it."""
    env = dict(env or {})
    plugins_dir = payload_root / "plugins" if payload_root is not None else None
    if brand:
        found = require(str(brand), env, plugins_dir)
    else:
        env.pop(settings.BRAND.name, None)
        found = install_brand(env, plugins_dir)
    if found.problem:
        return None, []
    return found.name or (str(brand) if brand else None), found.excluded


def brand_excluded(brand: str | Path | None, env: Mapping[str, str] | None = None,
                   payload_root: Path | None = None) -> list[str]:
    """`plugins.excluded` of a brand (see :func:`find_brand`)."""
    return find_brand(brand, env, payload_root)[1]


def strip_list(host: Host, *, brand: str | Path | None = None, excluded: Iterable[str] | None = None,
               accounts: Iterable[str] = ()) -> dict[str, dict[str, list[str]]]:
    """specialist → plugin → tool names a spawn must drop (their plugin is excluded by the brand).

    Boot computes this once and keeps it in ``plughost.runtime.state`` (``plughost.runtime.state.STRIP_LIST``); a spawner in
    another process calls this function (or :func:`spawn_tools`) with the same brand.
    """
    cached = host.state.get(state.STRIP_LIST)
    if cached is not None and brand is None and excluded is None:
        return cached
    payload_root = Path(host.plugins_dir).parent if host.plugins_dir is not None else None
    names = list(excluded) if excluded is not None else brand_excluded(brand, host.env, payload_root)
    return check_drift(host, excluded=names, accounts=accounts).strips


def spawn_tools(host: Host, specialist: Specialist | str, *, brand: str | Path | None = None,
                excluded: Iterable[str] | None = None, accounts: Iterable[str] = ()) -> list[str]:
    """The `--allowed-tools` a spawn of this specialist gets: its `tools:` minus the strip-list."""
    if isinstance(specialist, str):
        specs, _ = discover(host, accounts)
        match = [s for s in specs if s.name == specialist]
        if not match:
            raise UserError(f"specialist: '{specialist}' not found in any agents folder")
        specialist = match[0]
    strips = strip_list(host, brand=brand, excluded=excluded, accounts=accounts).get(specialist.name, {})
    dropped = {t for tools in strips.values() for t in tools}
    return [t for t in specialist.tools if t not in dropped]
