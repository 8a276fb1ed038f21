"""`plughost account create` seeds the account's owner in the graph (through the
`plughost_account_created` hook; the graph plugin writes it), so standing rules work on a fresh
account: profile-update → profile-read shows the rule → the next admin turn carries it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from plughost.ports.graph import Guards
from plughost.runtime.host import Host


def _nodes(home: Path, label: str) -> list:
    host = Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": "acme"}).load()
    try:
        return host.store().find(guards=Guards("acme"), labels=[label], limit=50)
    finally:
        host.close()


def _memory_calls(home: Path, calls: list[tuple[str, dict]]) -> list[dict]:
    """Call memory tools over stdio, as an agent does (`plughost mcp serve memory`, the account's env)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"],
                                   env={"PATH": "/usr/bin:/bin", "PLUGHOST_HOME": str(home), "ACCOUNT_ID": "acme",
                                        "PLUGHOST_EMBEDDER": "none"}, cwd="/tmp")

    async def go() -> list[dict]:
        out = []
        async with Client(params) as client:
            for tool, args in calls:
                result = await client.call_tool(tool, args)
                assert not result.is_error, result.content[0].text
                out.append(json.loads(result.content[0].text))
        return out

    return anyio.run(go)


def test_fresh_account_has_an_owner_and_standing_rules_reach_the_admin_turn(plughost_home, cli):
    created = cli("account", "create", "acme", "--admin-phone", "+15550001", "--owner-name", "Ana")
    assert created.returncode == 0, created.stderr
    assert "[graph] op=account-bootstrap account=acme admins=1 owner=owner" in created.stderr
    again = cli("account", "create", "acme", "--force", "--admin-phone", "+15550001", "--owner-name", "Ana")
    assert again.returncode == 0, again.stderr  # idempotent: fixed ids merge
    [owner] = _nodes(plughost_home, "AdminUser")
    assert owner.properties["role"] == "owner" and owner.properties["userId"] == "owner"
    [profile] = _nodes(plughost_home, "UserProfile")
    assert profile.properties["userId"] == "owner"
    [task] = _nodes(plughost_home, "Task")  # the provenance of both
    assert task.id == "account-bootstrap"

    updated, read = _memory_calls(plughost_home, [
        ("profile-update", {"category": "style", "key": "language", "value": "Always answer in French"}),
        ("profile-read", {}),
    ])
    assert read["source"] == "owner"
    assert [r["value"] for r in read["activeRules"]] == ["Always answer in French"], (updated, read)

    from plughost.plugins.channels.compose import RULES_HEADING, TurnInput, compose, fetch_rules

    host = Host(env={**os.environ, "PLUGHOST_HOME": str(plughost_home), "ACCOUNT_ID": "acme"}).load()
    try:
        turn = TurnInput(channel="webchat", role="admin", text="what is on today?", account_id="acme")
        payload = compose(turn, fetch_rules(host, turn))
    finally:
        host.close()
    assert f"{RULES_HEADING}\n- Always answer in French" in payload, payload


def test_hook_plughost_account_created(make_host) -> None:
    """Combines: every implementation runs, one raising is returned against its plugin; the graph
    plugin's implementation is idempotent."""
    from plughost.runtime import hooktable
    from plughost.runtime.hookspecs import hookimpl

    seen: list[tuple[str, str]] = []

    class Recorder:
        @staticmethod
        @hookimpl
        def plughost_account_created(host, account_id, users):
            seen.append((account_id, users[0]["userId"]))

    class Broken:
        @staticmethod
        @hookimpl
        def plughost_account_created(host, account_id, users):
            raise RuntimeError("seed exploded")

    host = make_host(ACCOUNT_ID="acme")
    users = [{"userId": "u-ana", "name": "Ana", "role": "owner"}]
    with host.temporary_plugin(Recorder, "recorder"), host.temporary_plugin(Broken, "broken"):
        errors = host.call_each(hooktable.ACCOUNT_CREATED, account_id="acme", users=users)
        host.call_each(hooktable.ACCOUNT_CREATED, account_id="acme", users=users)
    assert seen == [("acme", "u-ana")] * 2
    assert [(e.plugin, e.reason) for e in errors] == [("broken", "RuntimeError: seed exploded")]
    owners = host.store().find(guards=Guards("acme"), labels=["AdminUser"], limit=10)
    assert [(n.id, n.properties["role"]) for n in owners] == [("admin-u-ana", "owner")]
