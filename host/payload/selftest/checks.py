"""The registration gates (docs/gates.md#the-gates). Each reads, never writes, and returns its lines verbatim.

Why they exist: a tool can be declared yet never callable. The admin allowlist can name a tool
whose plugin has no server (mcp-allowlist-coverage); a specialist can name a renamed tool
(specialist-tool-drift); a premium plugin can be enabled for an account but missing from one
Claude Code surface, so its skills never load (skill-registration); a tool-plugin's generated
manifest can carry no server or point at a missing one, so its tools never mount
(tool-registration). None of these emit anything at run time, so boot makes them loud.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from plughost.payload import launch, plugin_files
from plughost.payload.launch import MINIMAL_PATH, Launch
from plughost.payload.registration import Registration, config_dir
from plughost.runtime import accounts, hooktable, plugin_model, specialists, state
from plughost.runtime.types import GateContext, GateResult
from plughost.util import settings
from plughost.util.errors import UserError
from plughost.util.log import format_line

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


def _ok(gate: str, inspected: int, **extra: Any) -> str:
    return format_line(None, "startup-self-test", **{gate: "ok"}, inspected=inspected, **extra)


def severity(ctx: GateContext) -> str:
    """The word on a registration defect line (docs/gates.md#registration-severity): `WARN`, because the
    registration gates are not fatal (boot goes on, exit 0); `FATAL` is only ever printed where boot refuses."""
    return "WARN"


def _registration(ctx: GateContext) -> Registration:
    reg = ctx.extras.get("registration")
    if reg is None:
        reg = Registration.load(config_dir(ctx.env, ctx.extras.get("config_dir")))
        ctx.extras["registration"] = reg
    return reg


def _enabled_by_account(ctx: GateContext, tag: str, result: GateResult) -> list[tuple[str, list[str]]]:
    """(accountId, enabledPlugins) for the inspected accounts; an unreadable account is a defect line."""
    out = []
    for account_id in accounts.selected_accounts(ctx):
        try:
            account = accounts.load_account(account_id, ctx.host.home)
        except UserError as exc:
            result.lines.append(format_line(tag, "op=drift", severity(ctx), accountId=account_id,
                                            reason="account-unreadable", detail=str(exc)))
            result.defects.append({"accountId": account_id, "reason": "account-unreadable", "detail": str(exc)})
            continue
        out.append((account_id, list(account.get("enabledPlugins") or [])))
    return out


# ---------------------------------------------------------------------------- mcp-allowlist-coverage
def mcp_allowlist_coverage(ctx: GateContext) -> GateResult:
    """Every admin-allowlisted tool's plugin has an `mcp` block (a server the allowlist can reach)."""
    surface = ctx.host.surface
    with_server = set(surface.mcp_servers)
    result = GateResult(status="ok", inspected=len(surface.admin))
    registered = 0
    for canonical in surface.admin:
        tool = surface.all[canonical]
        if tool.plugin in with_server:
            registered += 1
            continue
        result.lines.append(format_line(None, "boot-failed", reason="mcp-allowlist-without-server",
                                        plugin=tool.plugin, tool=canonical))
        result.defects.append({"plugin": tool.plugin, "tool": canonical, "reason": "mcp-allowlist-without-server"})
    result.lines.append(format_line(None, "mcp-config-allowlist-coverage", **{"admin-tools": len(surface.admin),
                                                                                "admin-registered": registered}))
    result.data = {"admin-tools": len(surface.admin), "admin-registered": registered}
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(_ok("mcp-allowlist-coverage", result.inspected))
    return result


# ---------------------------------------------------------------------------- specialist-tool-drift
def specialist_tool_drift(ctx: GateContext) -> GateResult:
    """Classify every specialist tool name; refuse boot on typos, unknown namespaces, malformed names."""
    host = ctx.host
    excluded = list(ctx.extras.get("excluded") or [])
    report = specialists.check_drift(host, excluded=excluded, accounts=accounts.selected_accounts(ctx),
                                     config_dir=config_dir(ctx.env, ctx.extras.get("config_dir")))
    host.state.set(state.STRIP_LIST, report.strips)
    result = GateResult(status="ok", inspected=len(report.specialists), data={"strip-list": report.strips})
    for path, error in report.unreadable:
        result.lines.append(format_line(None, "boot-failed", reason="specialist-unreadable", path=str(path),
                                        detail=error))
        result.defects.append({"path": str(path), "drift": "unreadable", "detail": error})
    for spec, c in report.refusals:
        result.lines.append(format_line(None, "boot-failed", reason="specialist-tool-drift", specialist=spec.name,
                                        tool=c.tool, drift=c.drift, path=str(spec.path)))
        result.defects.append({"specialist": spec.name, "tool": c.tool, "drift": c.drift, "path": str(spec.path)})
    for name in sorted(report.strips):
        for plugin, tools in sorted(report.strips[name].items()):
            result.lines.append(format_line(None, "specialist-tool-strip", specialist=name, plugin=plugin,
                                            tools=",".join(tools), reason="brand-excluded"))
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(_ok("specialist-tool-drift", result.inspected,
                                **{"stripped-specialists": len(report.strips)}))
    return result


# ---------------------------------------------------------------------------- skill-registration
def _marketplace_name(record: Any, brand_name: str) -> str:
    """The marketplace a premium plugin registers under: its generated marketplace.json's name, else
    `<brand>-premium-<bundle>` (nested sub) / `<brand>-premium` (standalone)."""
    folder = Path(record.folder) if record.folder is not None else None
    if folder is not None:
        try:
            data = json.loads((folder.parent / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
            if isinstance(data, dict) and isinstance(data.get("name"), str):
                return data["name"]
        except (OSError, ValueError):
            pass
    return f"{brand_name}-premium-{record.bundle}" if record.nested else f"{brand_name}-premium"


def _brand_name(ctx: GateContext, reg: Registration) -> str:
    name = ctx.extras.get("brand_name")
    if name:
        return name
    platform = sorted(k for k in reg.marketplaces if k.endswith("-platform"))
    return platform[0][: -len("-platform")] if platform else "plughost"


def skill_registration(ctx: GateContext) -> GateResult:
    """Every premium plugin an account enables is registered in all three Claude Code surfaces."""
    tag = "skill-registration"
    result = GateResult(status="ok")
    reg = _registration(ctx)
    brand = _brand_name(ctx, reg)
    records = ctx.host.records
    for account_id, enabled in _enabled_by_account(ctx, tag, result):
        for name in enabled:
            record = records.get(name)
            if record is None or record.source != "premium":
                continue
            result.inspected += 1
            expected = f"{name}@{_marketplace_name(record, brand)}"
            missing = reg.missing(expected)
            if missing:
                fields = {"accountId": account_id, "plugin": name, "expected": expected, "missing": ",".join(missing)}
                result.lines.append(format_line(tag, "op=drift", severity(ctx), **fields))
                result.defects.append(fields)
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(_ok(tag, result.inspected))
    return result


# ---------------------------------------------------------------------------- tool-registration
def _module_exists(name: str) -> bool:
    if name == "host" or name.startswith("host."):
        return True  # the host itself: always there when boot runs
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def server_missing(entry: Launch, plugin_local: bool) -> str | None:
    """What a server, as Claude Code will start it, names that is absent on disk (None: all there).

    Tokens with a variable nothing defines cannot be checked here (`plughost doctor` starts them).
    """
    if not entry.command:
        return "no command"
    if plugin_local and plugin_model.local_server(entry.root) is None:
        return f"{entry.root / 'mcp'}/__main__.py"
    tokens = [entry.command, *entry.args]
    for i, token in enumerate(tokens):
        if _VAR.search(token):
            continue
        if i == 0 and not os.path.isabs(token):
            if shutil.which(token, path=entry.env.get("PATH") or MINIMAL_PATH) is None:
                return token
        elif os.path.isabs(token) and not os.path.exists(token):
            return token
        elif i > 0 and tokens[i - 1] == "-m" and not _module_exists(token):
            return f"-m {token}"
    return None


def stale_paths(entry: Launch, payload_root: Path | None) -> list[str]:
    """Payload folders an entry's env points at outside the payload Claude Code starts it from:
    a generated manifest left from where the payload was built or first installed."""
    if payload_root is None:
        return []
    out = []
    for setting in (settings.PLUGINS_DIR, settings.PREMIUM_DIR):
        value = setting.raw(entry.env)
        if value and os.path.isabs(value) and not Path(os.path.normpath(value)).is_relative_to(payload_root):
            out.append(f"{setting.name}={value}")
    return out


def tool_registration(ctx: GateContext) -> GateResult:
    """Every tool-plugin an account enables has a generated manifest whose MCP server exists, checked
    in the folder Claude Code starts it from (a directory marketplace's source, not the cache)."""
    tag = "tool-registration"
    host = ctx.host
    result = GateResult(status="ok")
    reg = _registration(ctx)
    tool_plugins = set(host.surface.mcp_servers)
    excluded = set(ctx.extras.get("excluded") or [])
    always_on = sorted(r.name for r in host.loaded()
                       if r.manifest is not None and r.manifest.surface == "platform" and r.name not in excluded)
    base = {**{k: v for k, v in ctx.env.items() if isinstance(v, str)},
            **launch.claude_env(reg.config_dir, ctx.env.get("HOME"))}
    base["PATH"] = launch.MINIMAL_PATH
    bad_python = _bad_interpreter(base)
    if bad_python:  # one finding covering every server: each is started by this interpreter
        fields = {"reason": "bad-interpreter", "variable": settings.PYTHON.name, "value": bad_python,
                  "servers": len(tool_plugins)}
        result.lines.append(format_line(tag, "op=drift", severity(ctx), **fields,
                                        fix="set PLUGHOST_PYTHON to the install's python (plughost install does)"))
        result.defects.append(fields)
    for account_id, enabled in _enabled_by_account(ctx, tag, result):
        for name in dict.fromkeys([*enabled, *always_on]):  # platform plugins are on for every account
            if name not in tool_plugins:
                continue
            result.inspected += 1
            reason, server, detail = _tool_plugin_defect(host, reg, name, base, bad_python)
            if reason:
                fields = {"accountId": account_id, "plugin": name, "expected-server": server, "reason": reason}
                if reason == "stale-path":
                    fields["path"] = detail.split(": ", 1)[0]
                elif reason in ("plugin-json-invalid", "server-key-differs"):
                    fields["file"], _, rest = detail.partition(": ")
                    fields["field"] = rest.split(":", 1)[0]
                result.lines.append(format_line(tag, "op=drift", severity(ctx), **fields))
                result.defects.append({**fields, "detail": detail})
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(_ok(tag, result.inspected))
    return result


def _bad_interpreter(base: dict[str, str]) -> str | None:
    """``PLUGHOST_PYTHON`` as Claude Code's environment has it, when it names no executable."""
    value = settings.PYTHON.raw(base)
    if not value:
        return None
    found = value if os.path.isabs(value) else shutil.which(value, path=base.get("PATH") or MINIMAL_PATH)
    return None if found and os.path.isfile(found) and os.access(found, os.X_OK) else value


def _tool_plugin_defect(host: Any, reg: Registration, name: str, base: dict[str, str],
                        bad_python: str | None = None) -> tuple[str | None, str, str]:
    """(reason or None, expected server name, detail) for one enabled tool-plugin: every server its model
    (plughost.runtime.plugin_model) has must be in the installed plugin.json under the key the allowlist names."""
    installed = reg.find_installed(name)
    if installed is None:
        return "not-installed", name, f"no user-scope {name}@<marketplace> row in installed_plugins.json"
    key, install_path = installed
    source = launch.directory_source(reg, key)
    if source is not None and not source.is_dir():
        return "payload-missing", name, (f"marketplace folder {source} does not exist (payload moved or removed? "
                                         "run plughost install again)")
    root = launch.plugin_root(reg, key) or install_path
    manifest_path = root / ".claude-plugin" / "plugin.json"
    try:
        text = manifest_path.read_text(encoding="utf-8")
    except OSError:
        return "not-installed", name, f"{manifest_path} missing or unreadable"
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        return "plugin-json-invalid", name, f"{manifest_path}: json: invalid JSON ({exc})"
    servers = launch.server_entries(manifest if isinstance(manifest, dict) else {}, root)
    if not servers:
        return "no-mcpServers-manifest", name, f"{manifest_path} has no mcpServers"
    model = host.surface.models.get(name)
    expected = model.server_keys if model is not None and model.servers else [name]
    for server in expected:
        found = _server_defect(reg, key, name, server, servers, model, root, manifest_path, base, bad_python)
        if found is not None:
            return found
    return None, expected[0], ""


def _server_defect(reg: Registration, key: str, name: str, server: str, servers: dict[str, Any], model: Any,
                   root: Path, manifest_path: Path, base: dict[str, str],
                   bad_python: str | None) -> tuple[str, str, str] | None:
    """(reason, server, detail) for one server the plugin's model expects in its installed plugin.json, or None."""
    if server not in servers:
        return "server-key-differs", server, (f"{manifest_path}: mcpServers: has {','.join(sorted(servers))}; "
                                              f"the allowlist names mcp__plugin_{name}_{server}__*")
    entry = servers[server]
    if not isinstance(entry, dict):
        return "plugin-json-invalid", server, f"{manifest_path}: mcpServers.{server}: expected an object"
    spec = next((s for s in model.servers if s.key == server), None) if model is not None else None
    plugin_local = spec is not None and spec.how != "shared-lib"
    resolved = launch.resolve(name, key, server, entry, root, manifest_path, base)
    if bad_python:  # reported once for every server
        resolved.command = "" if resolved.command == bad_python else resolved.command
        resolved.args = [a for a in resolved.args if a != bad_python]
        if not resolved.command:
            resolved.command = "/bin/sh"
    missing = server_missing(resolved, plugin_local)
    if missing:
        # the plugin's own folder lacks its server (no distribution to blame); else what a
        # shared server needs from an installed distribution (a command, a module) is absent
        local = plugin_local and missing == f"{resolved.root / 'mcp'}/__main__.py"
        return ("server-missing" if local else "dist-missing"), server, f"{missing} does not exist (from {manifest_path})"
    stale = stale_paths(resolved, _payload_root(reg, key))
    if stale:
        return "stale-path", server, f"{manifest_path}: {', '.join(stale)} is outside the installed payload"
    return None


def single_provider(ctx: GateContext) -> GateResult:
    """The store and the embedder each have one provider: two installed plugins offering one refuse boot."""
    result = GateResult("ok")
    for hook in (hooktable.STORE, hooktable.EMBEDDER):
        try:
            order = ctx.host.provider_order(hook)
        except UserError as exc:
            result.status = "fail"
            result.lines.append(format_line(None, "boot-failed", reason="two-providers", hook=hook.name,
                                            error=str(exc)))
            result.defects.append({"reason": "two-providers", "hook": hook.name, "detail": str(exc)})
            continue
        result.inspected += 1
        result.data[hook.name] = order
    if result.status == "ok":
        result.lines.append(_ok("single-provider", result.inspected))
    return result


def _payload_root(reg: Registration, key: str) -> Path | None:
    """The payload a directory marketplace belongs to (the folder holding brand.json above it)."""
    folder = launch.directory_source(reg, key)
    if folder is None:
        return None
    for candidate in (folder, *folder.parents):
        if (candidate / "brand.json").is_file():
            return candidate.resolve()
    return None


# ---------------------------------------------------------------------------- plugin-files
def plugin_files_gate(ctx: GateContext) -> GateResult:
    """Every installed plugin's Claude Code files (plugin.json, hooks, skills, agents) and its marketplace,
    in the folder Claude Code loads them from, checked as the pinned CLI checks them
    (plughost.payload.plugin_files): what it refuses, Claude Code fails to load (the plugin's hooks,
    skills and servers are gone)."""
    tag = "plugin-files"
    result = GateResult(status="ok")
    reg = _registration(ctx)
    markets: set[Path] = set()
    for key, root in launch.installed_roots(reg):
        result.inspected += 1
        found = plugin_files.check_plugin(root, key.rpartition("@")[0])
        source = launch.directory_source(reg, key)
        if source is not None and source not in markets:
            markets.add(source)
            found += plugin_files.check_marketplace(source)
        for f in found:
            word = "WARN"
            result.lines.append(format_line(tag, "op=invalid-file", word, plugin=key if f.plugin != "-" else f.plugin,
                                            file=str(f.file), field=f.field, detail=f.detail,
                                            effect="plugin-fails-to-load" if f.severity == "error" else "fails-at-run"))
            result.defects.append({"plugin": key, **f.fields()})
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(_ok(tag, result.inspected))
    return result


# ---------------------------------------------------------------------------- plugin-load
def plugin_load(ctx: GateContext) -> GateResult:
    """Every plugin that failed to load (a bad PLUGIN.md, an import failure), one line each, and every
    declared tool without a handler: the tool is withheld so the rest of its server starts."""
    host = ctx.host
    result = GateResult(status="ok", inspected=len(host.records))
    for record in sorted(host.records.values(), key=lambda r: r.name):
        if record.status != "failed":
            continue
        fields = {"plugin": record.name, "reason": "load-failed", "origin": record.origin,
                  "detail": record.reason or "?"}
        result.lines.append(format_line("boot", "plugin-failed", "WARN", **fields))
        result.defects.append(fields)
    for name, model in sorted(host.surface.models.items()):
        manifest = model.manifest
        for tool in model.no_handler:
            index = next((i for i, t in enumerate(manifest.tools) if t.name == tool), None) if manifest else None
            fields = {"plugin": name, "reason": "tool-without-handler", "tool": tool,
                      "file": str(manifest.path) if manifest and manifest.path else name,
                      "field": f"tools[{index}]" if index is not None else "tools", "served": "withheld"}
            result.lines.append(format_line("boot", "tool-failed", "WARN", **fields))
            result.defects.append(fields)
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(_ok("plugin-load", result.inspected))
    return result


# ---------------------------------------------------------------------------- plugin-needs
def plugin_needs(ctx: GateContext) -> GateResult:
    """Every need a loaded plugin declares (``needs:``, docs/architecture.md#needs-and-provides) has a
    loaded provider, and a plugin that says it provides a capability the host consumes implements its
    hook: otherwise the plugin is loaded yet cannot work (memory without a graph store fails every
    call), as if a dependency were missing."""
    host = ctx.host
    models = list(host.surface.models.values())
    unloaded = [plugin_model.of_unloaded(r) for r in host.records.values() if not r.loaded]
    result = GateResult(status="ok", inspected=len(models))
    needs = sum(len(m.needs) for m in models)
    unmet = plugin_model.unmet_needs(models)
    for miss in unmet:
        off = plugin_model.providers_of(unloaded, miss.need)
        fields: dict[str, Any] = {"plugin": miss.plugin, "need": miss.need, "reason": "no-provider",
                                  "file": miss.file, "field": miss.field}
        if off:  # a provider was found but not loaded: say why
            fields["not-loaded"] = "; ".join(f"{n}: {host.records[n].reason or host.records[n].status}" for n in off)
        first = f"'{off[0]}' or another plugin" if off else "a plugin"
        fields["fix"] = f"load {first} that provides '{miss.need}', or leave '{miss.plugin}' out"
        result.lines.append(format_line("plugin-needs", "FATAL", **fields))
        result.defects.append(fields)
    for model in sorted(models, key=lambda m: m.name):
        for i, cap in enumerate(model.provides):
            hook = plugin_model.CAPABILITY_HOOKS.get(cap)
            if hook is None or hook in model.implements:
                continue
            file, where = model.declared_at("provides", i)
            fields = {"plugin": model.name, "provides": cap, "reason": "provides-without-hook", "hook": hook,
                      "file": file, "field": where}
            result.lines.append(format_line("plugin-needs", "FATAL", **fields))
            result.defects.append(fields)
        for cap in model.implied:  # counted as provided; bundle, which imports nothing, cannot see it
            file, _ = model.declared_at("provides", 0)
            said = (f"add 'provides: [{cap}]' to {file}" if model.manifest and model.manifest.path
                    else f"set PROVIDES = ['{cap}'] in {file}")
            result.lines.append(format_line("plugin-needs", "WARN", plugin=model.name, reason="undeclared-provider",
                                            capability=cap, hook=plugin_model.CAPABILITY_HOOKS[cap], fix=said))
    met = needs - len(unmet)
    result.data = {"needs": needs, "met": met}
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(_ok("plugin-needs", result.inspected, needs=needs, met=met))
    return result
