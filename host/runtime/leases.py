"""The serving process's :class:`plughost.ports.lease.Leases` on its store, one per host (docs/channels.md#several-servers-on-one-store).

None when the store is not shared (:func:`plughost.ports.lease.is_shared`): the embedded store is one
machine's, and its callers keep their local claims. Closed (its leases released) by
:meth:`plughost.runtime.host.Host.close` after the shutdown hooks ran.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plughost.ports.lease import Leases, is_shared
from plughost.runtime.state import StateKey
from plughost.util.settings import LEASE_TTL

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host

LEASES: StateKey[Leases] = StateKey("leases")


def leases(host: Host | Any) -> Leases | None:
    """This host's leases on its store, or None when the store is not shared."""
    found = host.state.get(LEASES)
    if found is not None:
        return found
    store = host.store()
    if not is_shared(store):
        return None
    return host.state.setdefault(LEASES, lambda: Leases(store, LEASE_TTL.read(host.env)))


def close(host: Host | Any) -> None:
    found = host.state.pop(LEASES)
    if found is not None:
        found.close()
