"""Helpers for the boot-gate tests: an install built in a temp dir, gate by gate.

`install` writes real files: fixture PLUGIN.md folders, premium bundles, specialist agent files,
accounts, a generated payload (`.claude-plugin/plugin.json` in the shapes issue 3 generates) and
the three Claude Code registration files in a throwaway config dir. `install.boot()` loads a real
Host over them and runs every gate in-process.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from plughost.runtime import hooktable


class AccountEnvStandIn:
    """Contributes `plughost.runtime.accounts`' account-id-env gate when no loaded plugin does: the graph plugin
    owns that gate; this keeps these tests meaningful when the graph plugin is disabled."""

    from plughost.runtime.hookspecs import hookimpl

    @hookimpl
    def plughost_boot_gates(self, host):  # type: ignore[no-untyped-def]
        from plughost.runtime.accounts import account_id_env_gate

        return [account_id_env_gate()]


class StoreStandIn:
    """Provides the graph store the channels and admin plugins need (``needs: [graph-store]``) when the
    graph plugin is disabled, so the ``plugin-needs`` gate passes; the gates never open the store."""

    from plughost.runtime.hookspecs import hookimpl

    PROVIDES = ["graph-store"]

    @hookimpl
    def plughost_store(self, host):  # type: ignore[no-untyped-def]
        raise AssertionError("a boot gate opened the store")


ALL_GATES = {"plugin-needs", "account-id-env", "mcp-allowlist-coverage", "specialist-tool-drift", "skill-registration",
             "tool-registration", "admin-identity-binding", "agent-runner"}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_json(path: Path, data: Any) -> Path:
    return write(path, json.dumps(data, indent=2))


def plugin_md(name: str, tools: list[dict[str, Any]] | None = None, mcp: dict[str, Any] | None = None,
              **extra: Any) -> str:
    data: dict[str, Any] = {"name": name, "description": f"fixture {name}", "version": "1.0.0"}
    if tools:
        data["tools"] = tools
    if mcp:
        data["mcp"] = mcp
    data.update({k.replace("_", "-"): v for k, v in extra.items()})
    return "---\n" + yaml.safe_dump(data, sort_keys=False) + "---\n# " + name + "\n"


def agent_md(name: str, tools: list[str] | str) -> str:
    tools_yaml = tools if isinstance(tools, str) else "\n" + "".join(f"  - {t}\n" for t in tools)
    return f"---\nname: {name}\ndescription: fixture specialist {name}\ntools: {tools_yaml}\n---\nBody.\n"


@dataclass
class Install:
    root: Path
    home: Path
    env: dict[str, str] = field(default_factory=dict)
    brand: Path | None = None

    @property
    def plugins(self) -> Path:
        return self.root / "payload" / "plugins"

    @property
    def premium(self) -> Path:
        return self.root / "payload" / "premium-plugins"

    @property
    def config(self) -> Path:
        return self.root / "claude-config"

    # -------------------------------------------------------------- sources
    def plugin(self, name: str, tools: list[str | dict[str, Any]] = (), *, admin: list[str] = (),
               server: bool = True, folder: Path | None = None, **extra: Any) -> Path:
        """A tool-plugin: PLUGIN.md declaring `tools` (names in `admin` are admin-allowlisted),
        with an `mcp` block and a plugin-local `mcp/__main__.py` when `server`."""
        folder = folder or self.plugins / name
        decls = [t if isinstance(t, dict) else {"name": t, "description": t, "adminAllowlist": t in admin}
                 for t in tools]
        mcp = {"command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/mcp/__main__.py"]} if server else None
        write(folder / "PLUGIN.md", plugin_md(name, decls, mcp, **extra))
        if server:
            write(folder / "mcp" / "__main__.py", "print('fixture server')\n")
        return folder

    def agent(self, folder: Path, name: str, tools: list[str] | str) -> Path:
        return write(folder / "agents" / f"{name}.md", agent_md(name, tools))

    def account(self, account_id: str = "acme", *, enabled: list[str] = (), admin_phones: list[str] = (),
                admins: list[str] = ("owner",), users: list[dict[str, Any]] | None = None) -> Path:
        folder = self.home / "accounts" / account_id
        write_json(folder / "account.json", {"accountId": account_id, "enabledPlugins": list(enabled),
                                             "adminPhones": list(admin_phones), "admins": list(admins),
                                             "defaultAgent": "admin"})
        write_json(folder / "users.json", users if users is not None else [{"userId": "owner", "name": "Owner"}])
        return folder

    def set_brand(self, name: str = "acme", excluded: list[str] = ()) -> Path:
        self.brand = write_json(self.root / f"brand-{name}.json",
                                {"name": name, "productName": name.title(), "plugins": {"excluded": list(excluded)}})
        return self.brand

    # -------------------------------------------------------------- generated payload + registration
    def generated_manifest(self, folder: Path, name: str, servers: dict[str, Any] | None) -> Path:
        data: dict[str, Any] = {"name": name, "version": "1.0.0", "description": f"fixture {name}",
                                "author": {"name": "plughost"}}
        if servers is not None:
            data["mcpServers"] = servers
        return write_json(folder / ".claude-plugin" / "plugin.json", data)

    def tee_servers(self, name: str) -> dict[str, Any]:
        """The `auto` shape: the tee launcher starting the plugin-local server."""
        return {name: {"command": sys.executable,
                       "args": ["-m", "plughost.mcp.tee", name, "--", sys.executable,
                                "${CLAUDE_PLUGIN_ROOT}/mcp/__main__.py"]}}

    def marketplace(self, folder: Path, name: str) -> Path:
        return write_json(folder / ".claude-plugin" / "marketplace.json",
                          {"name": name, "owner": {"name": "plughost"}, "plugins": []})

    def register(self, key: str, install_path: Path, *,
                 surfaces: tuple[str, ...] = ("known_marketplaces", "installed_plugins", "enabledPlugins")) -> None:
        """Add `name@marketplace` to the chosen Claude Code surfaces, in the shapes the real CLI writes."""
        marketplace = key.rpartition("@")[2]
        plugins_dir = self.config / "plugins"
        km_path, ip_path, st_path = (plugins_dir / "known_marketplaces.json", plugins_dir / "installed_plugins.json",
                                     self.config / "settings.json")
        km = json.loads(km_path.read_text()) if km_path.exists() else {}
        ip = json.loads(ip_path.read_text()) if ip_path.exists() else {"version": 2, "plugins": {}}
        st = json.loads(st_path.read_text()) if st_path.exists() else {}
        now = "2026-01-01T00:00:00.000Z"
        source = {"source": "directory", "path": str(install_path.parent)}
        if "known_marketplaces" in surfaces:
            km[marketplace] = {"source": source, "installLocation": str(install_path.parent), "lastUpdated": now}
        if "installed_plugins" in surfaces:
            ip["plugins"][key] = [{"scope": "user", "installPath": str(install_path), "version": "1.0.0",
                                   "installedAt": now, "lastUpdated": now}]
        if "enabledPlugins" in surfaces:
            st.setdefault("enabledPlugins", {})[key] = True
            st.setdefault("extraKnownMarketplaces", {})[marketplace] = {"source": source}
        write_json(km_path, km)
        write_json(ip_path, ip)
        write_json(st_path, st)

    def install_tool_plugin(self, name: str, marketplace: str = "acme-platform") -> Path:
        """A tool-plugin as bundle + install leave it: generated manifest (tee server) + all three surfaces."""
        folder = self.plugins / name
        self.generated_manifest(folder, name, self.tee_servers(name))
        self.register(f"{name}@{marketplace}", folder)
        return folder

    # -------------------------------------------------------------- boot
    def host(self, **env: str):
        from plughost.runtime.host import Host

        # The storage plugins' own tools would change the fixtures' tool counts: keep them out.
        isolate = {"PLUGHOST_DISABLE_PLUGINS": "graph,memory"}
        full = {**os.environ, "PLUGHOST_HOME": str(self.home), "ACCOUNT_ID": "acme", **isolate, **self.env, **env}
        full = {k: v for k, v in full.items() if v is not None}
        host = Host(plugins_dir=self.plugins, premium_dir=self.premium if self.premium.is_dir() else None,
                    env=full).load()

        if "account-id-env" not in {c.item.name for c in host.collect(hooktable.BOOT_GATES)}:
            host.register(AccountEnvStandIn(), "account-env-stand-in")
        if not any("graph-store" in r.manifest.provides for r in host.loaded() if r.manifest is not None):
            host.register(StoreStandIn(), "store-stand-in")
        return host

    def builtin_tool_plugins(self, host: Any) -> list[str]:
        """Tool-plugins from outside this fixture (the built-ins), each inspected for every account."""
        return [n for n in host.surface.mcp_servers if host.records[n].folder is not None
                and not Path(host.records[n].folder).resolve().is_relative_to(self.root.resolve())]

    def install_builtins(self, host: Any) -> None:
        """Install the built-in tool-plugins (those outside this fixture) the way a clean install
        would: a generated manifest with the tee server in a temp install folder, all three surfaces.
        Platform plugins are on for every account, so tool-registration inspects them too."""
        for name in self.builtin_tool_plugins(host):
            folder = self.root / "installed-builtins" / name
            if (folder / ".claude-plugin" / "plugin.json").exists():
                continue
            write(folder / "mcp" / "__main__.py", "print('built-in server stand-in')\n")
            self.generated_manifest(folder, name, self.tee_servers(name))
            self.register(f"{name}@acme-platform", folder)

    def boot(self, *, account: str | None = None, host: Any = None, **env: str):
        from plughost.runtime.boot import boot_context_extras, run_gates

        host = host or self.host(**env)
        self.install_builtins(host)
        extras = boot_context_extras(account=account, config_dir=self.config, brand=self.brand, env=host.env)
        return run_gates(host, extras=extras, echo=None)


HOST_GATES = ALL_GATES - {"account-id-env", "admin-identity-binding", "agent-runner"}
"""Gates the host's own plugins always contribute (account-id-env is the graph plugin's,
admin-identity-binding and agent-runner the channels plugin's: a brand may exclude channels)."""


def assert_every_gate_ok(report: dict[str, Any], stderr: str) -> None:
    """For a `boot --check --json` run: every gate reported ok, with its own ok line printed."""
    lines = stderr.splitlines()
    gates = {g["gate"]: g for g in report["gates"]}
    assert HOST_GATES <= set(gates), sorted(gates)
    for name, gate in gates.items():
        assert gate["status"] == "ok", gate
        assert any(line.startswith(f"startup-self-test {name}=ok inspected=") for line in lines), (name, lines)
    if "account-id-env" in gates:
        assert "[graph-health] account-id-env present=true id=acme matches-on-disk=true" in lines


def assert_all_ran(report: Any, extra: set[str] = frozenset()) -> None:
    """Every gate ran and said something (the other gates still ran)."""
    names = {o.gate for o in report.outcomes}
    assert ALL_GATES | set(extra) <= names, names
    for o in report.outcomes:
        assert o.lines, f"gate {o.gate} printed nothing"
