"""A brand of one's own, from a file outside the repository, through the real Claude Code CLI
(docs/testing.md#external-checks): it leaves out a built-in (memory), ships one premium bundle
(greeter) and one plugin of its own shaped like the README's example (hello). Bundle, install,
`claude plugin validate --strict` on every target, `claude mcp list` under `env -i` from /tmp,
`boot --check`, the webchat's page and greeting, the hostname tools: before and after the payload
moves (and is installed again). A payload moved without re-installing is the install-brand gate's
finding naming the file, not an exit 2. And the CLI's own marketplace install: a memory tool call
names what is missing and the command that fixes it, and so does `plughost doctor`."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from plughost.runtime import accounts
from tests.conftest import REPO, npx_bin, run_cli
from tests.host.manifests.conftest import EXAMPLES, Claude, connected_servers

pytestmark = [pytest.mark.external, pytest.mark.e2e]

BRAND = {"name": "acme-desk", "productName": "Acme Desk", "plugins": {"excluded": ["memory"]},
         "shipsPremiumBundles": ["greeter"], "store": {"backend": "sqlite"},
         "hostnames": {"public": "help.acme.test", "admin": "admin.acme.test"}}


def _servers(payload: Path) -> set[str]:
    out = set()
    for manifest in payload.rglob(".claude-plugin/plugin.json"):
        doc = json.loads(manifest.read_text())
        out |= {f"{doc['name']}:{server}" for server in doc.get("mcpServers") or {}}
    return out


def _what_the_install_shows() -> tuple[str, str, dict, dict]:
    """The webchat page and greeting, and both hostname tools, of a host loaded as every command loads it."""
    from plughost.plugins.channels.brand import greeting
    from plughost.plugins.channels.webchat import page_html
    from plughost.runtime.host import Host
    from plughost.util import config

    host = Host(env=config.load_env()).load()
    try:
        assert "memory" not in host.loaded(), "the brand excludes memory"
        return (page_html(host), greeting(host.env, host.plugins_dir),
                host.call_tool("admin", "public-hostname", {}), host.call_tool("admin", "admin-hostname", {}))
    finally:
        host.close()


def _check(payload: Path, claude: Claude) -> None:
    servers = _servers(payload)
    assert {"hello:hello", "greeter:greeter", "admin:admin", "graph:graph"} <= servers
    assert not any(s.startswith("memory:") for s in servers)
    targets = sorted({m.parent.parent for m in payload.rglob(".claude-plugin/*.json")})
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda t: claude("plugin", "validate", "--strict", str(t)), targets))
    bad = [f"{t}: {r.stdout}{r.stderr}" for t, r in zip(targets, results, strict=True)
           if r.returncode != 0 or "✔ Validation passed" not in r.stdout or "warning" in r.stdout]
    assert not bad, "\n".join(bad)
    listing = claude("mcp", "list")
    state = connected_servers(listing.stdout)
    assert {s: state.get(s) for s in servers} == {s: True for s in servers}, listing.stdout + listing.stderr
    boot = run_cli("boot", "--check")
    assert boot.returncode == 0, boot.stdout + boot.stderr
    assert f"[install-brand] op=resolved brand=acme-desk source=payload path={payload / 'brand.json'}" in boot.stderr
    page, hello, public, admin = _what_the_install_shows()
    assert "Acme Desk" in page and "welcome to Acme Desk" in page and "our service" not in page
    assert hello.startswith("Hello, and welcome to Acme Desk!")
    assert public["hostname"] == "help.acme.test" and public["brand"] == "acme-desk"
    assert admin["hostname"] == "admin.acme.test"


def test_a_brand_from_a_file_works_like_a_shipped_one_before_and_after_the_payload_moves(
        tmp_path: Path, plughost_home: Path) -> None:
    npx_bin("claude")
    brand = tmp_path / "brands" / "acme.json"
    brand.parent.mkdir()
    brand.write_text(json.dumps(BRAND))
    mine = tmp_path / "my-plugins"
    shutil.copytree(REPO / "examples" / "hello", mine / "hello", ignore=shutil.ignore_patterns("__pycache__"))
    payload = tmp_path / "first" / "payload"
    built = run_cli("--plugins-dir", str(mine), "bundle", str(brand), "--out", str(payload), "--premium-dir", str(EXAMPLES))
    assert built.returncode == 0, built.stderr
    assert json.loads((payload / "brand.json").read_text()) == BRAND
    claude = Claude(tmp_path)
    accounts.create_account("acme", plughost_home)
    install = ("--config-dir", str(claude.config), "--account", "acme")
    assert run_cli("install", str(payload), *install).returncode == 0
    _check(payload, claude)

    moved = tmp_path / "elsewhere" / "payload"
    moved.parent.mkdir()
    payload.rename(moved)
    stale = run_cli("boot", "--check")  # moved, not installed again: the gate names the file and the fix
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "--brand" not in stale.stderr
    assert (f"[install-brand] FATAL reason=brand-file-missing source=install path={payload / 'brand.json'}"
            in stale.stderr), stale.stderr
    assert run_cli("install", str(moved), *install).returncode == 0
    _check(moved, claude)


def test_the_clis_own_install_names_the_missing_account_and_its_fix(tmp_path: Path) -> None:
    """`claude plugin marketplace add` + `plugin install` alone: no settings env, no .env."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from plughost.payload.launch import installed_launches

    npx_bin("claude")
    payload = tmp_path / "payload"
    assert run_cli("bundle", "default", "--out", str(payload)).returncode == 0
    claude = Claude(tmp_path)
    assert claude("plugin", "marketplace", "add", str(payload / "plugins")).returncode == 0
    for plugin in ("memory", "graph"):
        done = claude("plugin", "install", f"{plugin}@plughost-platform")
        assert done.returncode == 0 and "Successfully installed" in done.stdout, done.stdout + done.stderr
    listing = connected_servers(claude("mcp", "list").stdout)
    assert listing.get("memory:memory") is True, listing
    fix = f"plughost install {payload} --config-dir {claude.config} --account ID"
    home = {"HOME": claude.env["HOME"], "PLUGHOST_HOME": str(Path(claude.env["HOME"]) / ".plughost")}
    doctor = run_cli("doctor", "--config-dir", str(claude.config), env=home)
    assert doctor.returncode == 1
    [line] = [ln for ln in doctor.stdout.splitlines() if "reason=account-unset" in ln]
    assert fix in line, line

    launches, _ = installed_launches(claude.config, claude.env["HOME"])
    memory = next(launch for launch in launches if launch.plugin == "memory")

    async def first_call() -> tuple[bool, str]:  # the server as Claude Code starts it (doctor's launch)
        params = StdioServerParameters(command=memory.command, args=memory.args, env=memory.env, cwd="/tmp")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("memory-search", {"query": "opening hours"})
            return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)

    error, text = anyio.run(first_call)
    assert error and text.startswith("ACCOUNT_ID: not set") and text.endswith(fix), text
