"""Which claims a gateway uses: the local flock'ed file on the embedded store, a turn lease on a
shared one (Neo4j): two servers storing the same update store it once (docs/channels.md#several-servers-on-one-store)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest

from plughost.plugins.channels.claims import Claims, LeaseClaims, claims_dir
from plughost.plugins.channels.pipeline import Inbound, gateway
from plughost.runtime.leases import leases
from tests.backends import needs_neo4j, neo4j_env, wipe
from tests.support.channels_support import ACCOUNT, channel_host, write_account


def test_the_embedded_store_keeps_the_local_claims(make_host, account, tmp_path: Path, plughost_home: Path,
                                                   capfd: pytest.CaptureFixture[str]) -> None:
    host = channel_host(make_host, tmp_path, PLUGHOST_STORE="sqlite")
    gw = gateway(host)
    assert leases(host) is None
    assert type(gw.claims) is Claims and not gw.claims.shared
    assert (claims_dir(plughost_home, ACCOUNT) / f"{gw.claims.token}.lock").exists()
    mid, duplicate = gw.persist(Inbound(channel="telegram", sender="42", text="hello", platform_id="42:1"))
    assert not duplicate and gw.persist(Inbound(channel="telegram", sender="42", text="hello",
                                                platform_id="42:1")) == (mid, True)
    assert host.store().get(mid, guards=gw.guards()).properties["claimedBy"] == gw.claims.token
    assert "[lease]" not in capfd.readouterr().err


@needs_neo4j
def test_two_servers_on_neo4j_store_one_update_once(make_host, tmp_path: Path,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    account = f"acct-claims-{uuid.uuid4().hex[:8]}"
    hosts = []
    for name in "ab":
        home = tmp_path / f"home-{name}"
        write_account(home, account)
        hosts.append(channel_host(make_host, tmp_path, **neo4j_env(), PLUGHOST_STORE="neo4j",
                                  PLUGHOST_HOME=str(home), ACCOUNT_ID=account, PLUGHOST_LEASE_TTL="2"))
    gws = [gateway(h) for h in hosts]
    try:
        assert all(type(gw.claims) is LeaseClaims for gw in gws)
        owners = {gw.claims.token for gw in gws}
        assert len(owners) == 2
        outcomes: list[tuple[str, bool]] = []
        for n in range(10):  # the same update reaching both servers at once
            msg = Inbound(channel="telegram", sender="77", text=f"hi {n}", platform_id=f"77:{n}")
            start = threading.Barrier(2)

            def store(gw, msg=msg, start=start) -> None:
                start.wait()
                outcomes.append(gw.persist(msg))

            threads = [threading.Thread(target=store, args=(gw,)) for gw in gws]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        stored = [mid for mid, dup in outcomes if not dup]
        assert len(outcomes) == 20 and len(stored) == len(set(stored)) == 10
        holders = leases(hosts[0]).holders([f"turn:{m}" for m in stored])
        assert len(holders) == 10 and {h.owner for h in holders.values()} <= owners  # held until the turn ends
        for gw in gws:
            for mid in stored:
                gw.claims.finish_turn(mid)
        assert leases(hosts[0]).holders([f"turn:{m}" for m in stored]) == {}
        again = gws[1].persist(Inbound(channel="telegram", sender="77", text="hi 0", platform_id="77:0"))
        assert again[1] is True  # a re-delivery after the turn: stored already
    finally:
        wipe(hosts[0].store(), account)
    err = capfd.readouterr().err
    assert err.count("[lease] op=owner ") == 2
    assert err.count("[lease] op=take name=turn:") >= 10


def test_a_scheduled_turn_a_dead_server_held_runs_once_its_lease_expires(make_host, tmp_path: Path) -> None:
    """A server died holding a scheduled turn's lease (stored, never answered): the entry's dispatch on
    another server is ``held`` until the lease expires, then runs it, once."""
    import asyncio
    import time

    from plughost.plugins.channels.pipeline import dispatch_scheduled
    from tests.support.channels_support import agent_calls

    account = f"acct-sched-{uuid.uuid4().hex[:8]}"
    home = tmp_path / "home"
    write_account(home, account)
    host = channel_host(make_host, tmp_path, **neo4j_env(), PLUGHOST_STORE="neo4j", PLUGHOST_HOME=str(home),
                        ACCOUNT_ID=account, PLUGHOST_LEASE_TTL="2")
    kw = {"channel": "telegram", "sender": "9", "event": "e", "text": "go", "platform_id": "schedule:sch-dead"}
    try:
        gw = gateway(host)
        gw.stopping = True  # store it without a turn, as a server killed after storing leaves it
        mid = asyncio.run(dispatch_scheduled(host, **kw)).message_id
        gw.stopping = False
        gw.claims.finish_turn(mid)
        assert host.store().take_lease(f"turn:{mid}", "dead-server", 4.0) is not None  # the dead one's
        assert asyncio.run(dispatch_scheduled(host, **kw)).status == "held"
        assert agent_calls(tmp_path) == []
        time.sleep(4.3)
        assert asyncio.run(dispatch_scheduled(host, **kw)).status == "answered"
        assert asyncio.run(dispatch_scheduled(host, **kw)).status == "duplicate"
        assert len(agent_calls(tmp_path)) == 1
    finally:
        wipe(host.store(), account)
