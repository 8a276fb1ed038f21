"""The Neo4j store's connection: the driver from ``NEO4J_*`` settings, and a server that does not
answer as one :class:`plughost.util.errors.StoreUnavailable` (the driver is imported only here and in the
functions that run queries, never at import)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from plughost import StoreUnavailable, UserError, log

URI_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
MAX_RETRY_S = 5.0
"""``NEO4J_MAX_RETRY_S``: how long a transaction function retries a transient failure (the driver
default is 30 s; a person waiting on a chat answer should get a quick 503 instead)."""


def driver_settings(env: Mapping[str, str]) -> tuple[str, tuple[str, str], float]:
    """``(NEO4J_URI, (user, password), retry seconds)``, checked: a missing or non-Bolt URI is a
    :class:`UserError` naming the variable."""
    uri = (env.get("NEO4J_URI") or "").strip()
    if not uri:
        raise UserError("NEO4J_URI: not set; expected the Neo4j server's Bolt URI, e.g. bolt://127.0.0.1:7687")
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme not in URI_SCHEMES:
        raise UserError(f"NEO4J_URI: {uri}: expected a Bolt URI ({', '.join(s + '://' for s in URI_SCHEMES)}), "
                        "e.g. bolt://127.0.0.1:7687 or neo4j+s://xxxx.databases.neo4j.io")
    user = env.get("NEO4J_USER") or env.get("NEO4J_USERNAME") or "neo4j"
    password = env.get("NEO4J_PASSWORD") or ""
    return uri, (user, password), _seconds(env, "NEO4J_MAX_RETRY_S", MAX_RETRY_S)


def open_driver(uri: str, auth: tuple[str, str], retry_s: float) -> Any:
    """A driver that has reached the server (``verify_connectivity`` fails fast; a transaction
    function would retry for up to ``retry_s``)."""
    import neo4j

    # The driver's own log lines (notifications on the store's queries, "will be retried in")
    # are not the host's interface: a store that does not answer becomes one StoreUnavailable.
    logging.getLogger("neo4j").setLevel(logging.ERROR)
    # Notifications are the Cypher tools' warning block, not the driver's log lines.
    driver = neo4j.GraphDatabase.driver(uri, auth=auth, connection_timeout=10.0,
                                        connection_acquisition_timeout=10.0,
                                        max_transaction_retry_time=retry_s,
                                        warn_notification_severity=neo4j.NotificationMinimumSeverity.OFF)
    driver.verify_connectivity()
    return driver


@contextmanager
def connect_errors(uri: str) -> Iterator[None]:
    """A connection attempt's failures as the host's errors: a server down or unreachable is
    :class:`StoreUnavailable` (not bad input, and no hint to switch stores: an install's other one is
    empty); a refused login, a bad URI or database is a :class:`UserError` naming the settings."""
    import neo4j

    try:
        yield
    except unavailable_errors(OSError) as exc:
        raise unavailable(exc, uri) from None
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, ValueError, ImportError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"NEO4J_URI: cannot use {uri} ({reason}); check NEO4J_URI/NEO4J_USER/NEO4J_PASSWORD"
                        ) from None


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 600:
        raise UserError(f"{name}={raw}: expected seconds between 0 and 600")
    return value


def unavailable_errors(*extra: type[BaseException]) -> tuple[type[BaseException], ...]:
    """What a server that stopped or is not there raises: gone (``ServiceUnavailable``), its
    connection lost mid-session (``SessionExpired``), or its database shutting down under a
    running statement (``DatabaseUnavailable``, e.g. ``compact``'s wait for the indexes)."""
    import neo4j

    errors = neo4j.exceptions
    return errors.ServiceUnavailable, errors.SessionExpired, errors.DatabaseUnavailable, *extra


def unavailable(exc: BaseException, uri: str | None = None) -> StoreUnavailable:
    """The one error of a server that does not answer (logged as ``[graph] op=unavailable``)."""
    reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    log("graph", "op=unavailable", backend="neo4j", error=type(exc).__name__)
    where = f"the server at {uri} (NEO4J_URI)" if uri else "the server at NEO4J_URI"
    return StoreUnavailable(f"graph store: Neo4j does not answer ({reason}); check that {where} is running")
