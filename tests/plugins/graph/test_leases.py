"""The store's lease port (host/ports/lease.py) on both stores: one winner among racing owners,
expiry and takeover, renewal, release; the Neo4j store is shared, the embedded one is not."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from plughost.ports.lease import Leases, is_shared
from tests.plugins.graph.conftest import open_store

LIFE = 2.0
"""A lease's lifetime in these tests: long enough that a store round trip on a busy machine never
outlasts it, short enough to watch one run out."""


def _name() -> str:
    return f"test:{uuid.uuid4().hex}"


def test_one_owner_wins_and_others_wait_for_expiry(store) -> None:
    name = _name()
    first = store.take_lease(name, "owner-a", LIFE)
    assert first is not None and first.owner == "owner-a" and first.previous is None
    assert store.take_lease(name, "owner-b", LIFE) is None
    again = store.take_lease(name, "owner-a", LIFE)  # already ours: granted (and pushed)
    assert again is not None and again.previous is None
    assert store.lease_holders([name, "test:absent"])[name].owner == "owner-a"
    time.sleep(LIFE + 0.3)
    assert store.lease_holders([name]) == {}
    taken = store.take_lease(name, "owner-b", 5.0)
    assert taken is not None and taken.previous == "owner-a"  # a takeover of an expired lease
    assert store.release_leases([name], "owner-a") == 0  # not a's any more
    assert store.release_leases([name], "owner-b") == 1
    fresh = store.take_lease(name, "owner-c", 5.0)
    assert fresh is not None and fresh.previous is None  # released, not expired: a plain take
    store.release_leases([name], "owner-c")


def test_renewal_keeps_a_lease_past_its_first_expiry(store) -> None:
    name = _name()
    assert store.take_lease(name, "owner-a", LIFE) is not None
    for _ in range(4):
        time.sleep(LIFE * 0.4)
        assert store.renew_leases([name, "test:never-taken"], "owner-a", LIFE) == [name]
        assert store.take_lease(name, "owner-b", LIFE) is None
    assert store.renew_leases([name], "owner-b", LIFE) == []  # only the holder renews
    store.release_leases([name], "owner-a")


def test_racing_owners_one_grant(store, tmp_path: Path) -> None:
    """Eight threads, each with its own connection (its own store object), race for ten leases."""
    names = [_name() for _ in range(10)]
    account = getattr(store, "test_account", "acct-main")
    stores = [store] + [open_store(store.backend, tmp_path, account) if store.backend == "neo4j" else
                        type(store)(store.path, env=store.env) for _ in range(3)]
    wins: list[tuple[str, str]] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def race(i: int) -> None:
        s = stores[i % len(stores)]
        start.wait()
        for name in names:
            if s.take_lease(name, f"owner-{i}", 30.0) is not None:
                with lock:
                    wins.append((name, f"owner-{i}"))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(n for n, _ in wins) == sorted(names), wins  # each lease granted exactly once
    for name, owner in wins:
        assert store.lease_holders([name])[name].owner == owner
        store.release_leases([name], owner)
    for s in stores[1:]:
        s.close()


def test_the_neo4j_store_is_shared_the_embedded_one_is_not(store) -> None:
    assert is_shared(store) is (store.backend == "neo4j")


def test_leases_helper_logs_and_renews(store, capfd: pytest.CaptureFixture[str]) -> None:
    mine, other = Leases(store, LIFE), Leases(store, LIFE)
    name = _name()
    assert mine.take(name) is not None
    time.sleep(LIFE * 1.5)  # the renewal thread keeps it
    assert other.take(name) is None
    mine._stop.set()  # a process that stops renewing (killed): its lease runs out
    time.sleep(LIFE + 0.3)
    assert other.take(name) is not None and other.taken_over == 1
    other.close()
    mine.close()
    err = capfd.readouterr().err
    assert f"[lease] op=take name={name} owner={mine.owner}" in err
    assert f"[lease] op=renew name={name} count=1 owner={mine.owner}" in err
    assert f"[lease] op=takeover name={name} owner={other.owner} previous={mine.owner}" in err
    assert f"[lease] op=release name={name} owner={other.owner}" in err
    assert store.lease_holders([name]) == {}

