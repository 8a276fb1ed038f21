"""The Neo4j store's leases (:class:`plughost.ports.lease.LeaseStore`): one ``Lease {name}`` node per
lease (a uniqueness constraint on ``name``, ``schema.cypher``), taken by MERGE and a conditional SET
in one write transaction, its expiry on the server's clock (``timestamp()``), so every machine
sharing the database agrees on it. Lease nodes carry no ``GraphNode`` label: no account's reads,
searches or counts ever see them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plughost.api.serving import Lease

# The SET of ``l.lockedAt`` write-locks the node before its owner and expiry are read, so two
# transactions racing for one lease are serialised and exactly one of them sees it free.
Q_TAKE = """MERGE (l:Lease {name: $name})
SET l.lockedAt = timestamp()
WITH l, l.owner AS before, coalesce(l.expiresAt, 0) AS until, timestamp() AS now
WITH l, before, until, now, (before IS NULL OR before = $owner OR until <= now) AS free
FOREACH (_ IN CASE WHEN free THEN [1] ELSE [] END |
  SET l.owner = $owner, l.expiresAt = now + $ttlMs, l.takenAt = now)
RETURN free, before, until <= now AS expired, l.expiresAt AS expiresAt"""
Q_RENEW = """UNWIND $names AS name
MATCH (l:Lease {name: name}) WHERE l.owner = $owner
SET l.expiresAt = timestamp() + $ttlMs
RETURN l.name AS name"""
Q_RELEASE = """UNWIND $names AS name
MATCH (l:Lease {name: name}) WHERE l.owner = $owner
DELETE l
RETURN count(*) AS n"""
Q_HOLDERS = """UNWIND $names AS name
MATCH (l:Lease {name: name}) WHERE l.owner IS NOT NULL AND l.expiresAt > timestamp()
RETURN l.name AS name, l.owner AS owner, l.expiresAt AS expiresAt"""


class Neo4jLeases:
    """Mixed into :class:`plughost.plugins.graph.neo4j_store.store.Neo4jStore` (``self.read`` / ``self.write``)."""

    shared = True

    def read(self, work: Any) -> Any:  # pragma: no cover - the store's
        raise NotImplementedError

    def write(self, work: Any) -> Any:  # pragma: no cover - the store's
        raise NotImplementedError

    def take_lease(self, name: str, owner: str, ttl_s: float) -> Lease | None:
        params = {"name": str(name), "owner": str(owner), "ttlMs": int(ttl_s * 1000)}
        row = self.write(lambda tx: tx.run(Q_TAKE, params).single())
        if not row["free"]:
            return None
        before = row["before"]
        previous = before if before and before != owner and row["expired"] else None
        return Lease(str(name), str(owner), int(row["expiresAt"]), previous)

    def renew_leases(self, names: Sequence[str], owner: str, ttl_s: float) -> list[str]:
        if not names:
            return []
        params = {"names": [str(n) for n in names], "owner": str(owner), "ttlMs": int(ttl_s * 1000)}
        return self.write(lambda tx: [r["name"] for r in tx.run(Q_RENEW, params)])

    def release_leases(self, names: Sequence[str], owner: str) -> int:
        if not names:
            return 0
        params = {"names": [str(n) for n in names], "owner": str(owner)}
        return int(self.write(lambda tx: tx.run(Q_RELEASE, params).single()["n"]))

    def lease_holders(self, names: Sequence[str]) -> dict[str, Lease]:
        if not names:
            return {}
        params = {"names": [str(n) for n in names]}
        rows = self.read(lambda tx: list(tx.run(Q_HOLDERS, params)))
        return {r["name"]: Lease(r["name"], r["owner"], int(r["expiresAt"])) for r in rows}
