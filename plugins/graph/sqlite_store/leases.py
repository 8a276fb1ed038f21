"""The embedded store's leases (:class:`plughost.ports.lease.LeaseStore`): a ``leases`` table in the
store's file, taken in one ``BEGIN IMMEDIATE`` transaction. The embedded store is one machine's by
construction (``shared = False``), so the channels keep their ``flock`` claims on it; the table
gives the port the same meaning on both stores (created on first use: it changes no stored data)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from plughost.api.serving import Lease

CREATE = ("CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL, "
          "expires_ms INTEGER NOT NULL)")


def _now_ms() -> int:
    return int(time.time() * 1000)


class SqliteLeases:
    """Mixed into :class:`plughost.plugins.graph.sqlite_store.store.SqliteStore` (``self.write_transaction``)."""

    shared = False
    _leases_ready = False

    def write_transaction(self) -> AbstractContextManager[Any]:  # pragma: no cover - the store's
        raise NotImplementedError

    @contextmanager
    def _lease_tx(self) -> Iterator[Any]:
        with self.write_transaction() as conn:
            if not self._leases_ready:
                conn.execute(CREATE)
                self._leases_ready = True
            yield conn

    def take_lease(self, name: str, owner: str, ttl_s: float) -> Lease | None:
        with self._lease_tx() as conn:
            now = _now_ms()
            row = conn.execute("SELECT owner, expires_ms FROM leases WHERE name = ?", (name,)).fetchone()
            if row is not None and row[0] != owner and row[1] > now:
                return None
            expires = now + int(ttl_s * 1000)
            conn.execute("INSERT INTO leases (name, owner, expires_ms) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE "
                         "SET owner = excluded.owner, expires_ms = excluded.expires_ms", (name, owner, expires))
            previous = row[0] if row is not None and row[0] != owner else None
            return Lease(name, owner, expires, previous)

    def renew_leases(self, names: Sequence[str], owner: str, ttl_s: float) -> list[str]:
        kept: list[str] = []
        with self._lease_tx() as conn:
            expires = _now_ms() + int(ttl_s * 1000)
            for name in names:
                if conn.execute("UPDATE leases SET expires_ms = ? WHERE name = ? AND owner = ?",
                                (expires, name, owner)).rowcount:
                    kept.append(name)
        return kept

    def release_leases(self, names: Sequence[str], owner: str) -> int:
        n = 0
        with self._lease_tx() as conn:
            for name in names:
                n += conn.execute("DELETE FROM leases WHERE name = ? AND owner = ?", (name, owner)).rowcount
        return n

    def lease_holders(self, names: Sequence[str]) -> dict[str, Lease]:
        out: dict[str, Lease] = {}
        with self._lease_tx() as conn:
            now = _now_ms()
            for name in names:
                row = conn.execute("SELECT owner, expires_ms FROM leases WHERE name = ? AND expires_ms > ?",
                                   (name, now)).fetchone()
                if row is not None:
                    out[name] = Lease(name, row[0], int(row[1]))
        return out
