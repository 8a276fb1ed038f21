"""``public-hostname`` / ``admin-hostname`` through a real MCP client against the admin plugin's
server: the install's setting over the brand's ``hostnames``, a clear ``isError`` when none is
configured or the value is malformed, and the admin hostname for admin processes only."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from plughost.runtime.host import Host

ACCOUNT = "acct-h"
REPO = Path(__file__).resolve().parents[3]


def call(host: Host, tool: str) -> tuple[bool, str]:
    import anyio
    from mcp import Client

    from plughost.mcp.server import build_server

    async def go() -> tuple[bool, str]:
        async with Client(build_server(host, "admin")) as client:
            result = await client.call_tool(tool, {})
            return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)

    return anyio.run(go)


def host_for(plughost_home: Path, **env: str) -> Host:
    return Host(env={**os.environ, "PLUGHOST_HOME": str(plughost_home), "ACCOUNT_ID": ACCOUNT, **env}).load()


def log_lines(home: Path) -> list[str]:
    path = home / "logs" / "server.log"
    return [ln for ln in path.read_text().splitlines() if ln.startswith("[hostnames]")] if path.exists() else []


def test_the_brands_hostnames_answer(plughost_home: Path) -> None:
    host = host_for(plughost_home, PLUGHOST_BRAND="bakery")
    try:
        err, text = call(host, "public-hostname")
        assert not err and json.loads(text) == {"hostname": "harbourstreetbakery.example", "brand": "bakery",
                                                "url": "https://harbourstreetbakery.example", "source": "brand"}
        err, text = call(host, "admin-hostname")
        assert not err and json.loads(text)["hostname"] == "admin.harbourstreetbakery.example"
    finally:
        host.close()
    assert "[hostnames] op=answer which=public source=brand brand=bakery" in log_lines(plughost_home)


def test_the_installs_setting_wins_and_a_bad_one_is_named(plughost_home: Path) -> None:
    host = host_for(plughost_home, PLUGHOST_BRAND="bakery", PLUGHOST_PUBLIC_HOSTNAME="shop.example.com:8443")
    try:
        err, text = call(host, "public-hostname")
        assert not err and json.loads(text) == {"hostname": "shop.example.com:8443", "source": "install",
                                                "url": "https://shop.example.com:8443"}
    finally:
        host.close()
    for bad in ("Shop.Example.com", "shop_example.com", "https://shop.example.com", "-shop.example.com", "a" * 64 + ".com"):
        host = host_for(plughost_home, PLUGHOST_ADMIN_HOSTNAME=bad)
        try:
            err, text = call(host, "admin-hostname")
        finally:
            host.close()
        assert err and text.startswith("PLUGHOST_ADMIN_HOSTNAME: expected a host name such as shop.example.com"), text
        assert "\n" not in text.strip() and "Traceback" not in text


def test_none_configured_is_a_clear_error(plughost_home: Path) -> None:
    host = host_for(plughost_home, PLUGHOST_BRAND="default")
    try:
        for which in ("public", "admin"):
            err, text = call(host, f"{which}-hostname")
            assert err, text
            assert text == (f"{which}-hostname: no {which} hostname is configured: set PLUGHOST_{which.upper()}_HOSTNAME "
                            f"in the install's .env, or hostnames.{which} in the brand file (plughost)"), text
    finally:
        host.close()


@pytest.mark.parametrize("narrowed", [{"PLUGHOST_SESSION_ROLE": "public", "SESSION_ID": "wc-1"},
                                      {"ALLOWED_SCOPES": "public"}, {"AGENT_SLUG": "concierge"}])
def test_a_narrowed_process_gets_the_public_hostname_only(plughost_home: Path, narrowed: dict[str, str]) -> None:
    host = host_for(plughost_home, PLUGHOST_BRAND="bakery", **narrowed)
    try:
        assert not host.principal.is_admin
        err, text = call(host, "public-hostname")
        assert not err and json.loads(text)["hostname"] == "harbourstreetbakery.example"
        err, text = call(host, "admin-hostname")
        assert err and text.startswith("admin-hostname: admin only; this process is narrowed ("), text
        assert "harbourstreetbakery" not in text
    finally:
        host.close()
    assert any(ln.startswith("[hostnames] op=refused which=admin") for ln in log_lines(plughost_home))


def test_the_schema_pattern_is_the_tools() -> None:
    from plughost.plugins.admin.hostnames import HOSTNAME

    schema = json.loads((REPO / "host" / "manifests" / "schemas" / "brand.schema.json").read_text())
    props = schema["properties"]["hostnames"]["properties"]
    assert props["public"]["pattern"] == props["admin"]["pattern"] == HOSTNAME.pattern
    assert re.fullmatch(HOSTNAME.pattern, "admin.harbourstreetbakery.example")


def test_a_brand_with_a_bad_hostname_is_refused(tmp_path: Path) -> None:
    from plughost.payload.bundler import load_brand
    from plughost.util.errors import UserError

    path = tmp_path / "b.json"
    path.write_text(json.dumps({"name": "b", "productName": "B", "hostnames": {"public": "Not A Host"}}))
    with pytest.raises(UserError, match="hostnames"):
        load_brand(path)
