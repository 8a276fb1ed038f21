"""The graph backends the tests run on: the embedded store always, Neo4j when NEO4J_URI is set.

Imported by ``tests/conftest.py`` at collection, before the autouse home fixture clears
``NEO4J_URI`` from each test's environment, so the captured settings survive. Under
``PLUGHOST_REQUIRE_EXTERNAL=1`` (CI) the Neo4j backend is always collected and a missing
``NEO4J_URI`` fails its tests instead of leaving them out.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest

STASH = "PLUGHOST_TESTS_NEO4J_ENV"
"""Where the conftest keeps the run's NEO4J_* once it drops them from the environment (the
pytest-xdist workers it starts inherit that environment, not the variables)."""
RUN_ENV = ({k: v for k, v in os.environ.items() if k.startswith("NEO4J_")}
           or json.loads(os.environ.get(STASH, "{}")))
"""The run's NEO4J_* as started (the conftest stashes this for the workers)."""
NEO4J_ENV = {k: v for k, v in RUN_ENV.items() if k != "NEO4J_URIS"}
SERVERS = RUN_ENV.get("NEO4J_URIS", "").split()
"""One Neo4j server per pytest-xdist worker, when the run starts them (``.ci/run``: one per core).
Each worker then takes its own as NEO4J_URI, and the Neo4j tests are grouped per file rather than
all on one worker (tests/conftest.py): no two workers ever share a database."""
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
SERVER_PER_WORKER = bool(SERVERS) and len(SERVERS) >= int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if SERVER_PER_WORKER:
    NEO4J_ENV["NEO4J_URI"] = SERVERS[_WORKER]
REQUIRE_EXTERNAL = os.environ.get("PLUGHOST_REQUIRE_EXTERNAL") == "1"
RUN_NEO4J = bool(NEO4J_ENV.get("NEO4J_URI")) or REQUIRE_EXTERNAL
"""Whether this run's Neo4j tests run: with a server, or under CI (where a missing one fails them)."""
BACKENDS = ["sqlite", "neo4j"]
"""Every backend is always collected; without NEO4J_URI the Neo4j ones skip (tests/conftest.py), so
the run's summary can say how many were left out."""
SKIP_REASON = "no NEO4J_URI: the Neo4j backend is not tested here (scripts/neo4j/neo4j.sh starts one)"
needs_neo4j = pytest.mark.skipif(not RUN_NEO4J, reason=SKIP_REASON)
"""For a Neo4j test neither its file name (test_neo4j_*) nor a ``neo4j`` parameter says so."""
HOW_TO_RUN = ('eval "$(bash scripts/neo4j/neo4j.sh start)" && export NEO4J_URI && bash scripts/test.sh '
              "(Java 17 and Maven; .ci/run does it all, as CI)")


def xdist_group(nodeid: str) -> str:
    """The worker group of a Neo4j test: its file's own with a server per worker, else the one
    shared group (the tests wipe and reuse fixed account ids on the one database)."""
    return "neo4j:" + nodeid.split("::", 1)[0] if SERVER_PER_WORKER else "neo4j"


def neo4j_env() -> dict[str, str]:
    """The Neo4j settings of the run: without NEO4J_URI the test skips, or fails under
    PLUGHOST_REQUIRE_EXTERNAL=1 (CI, where a missing server is a broken run)."""
    if not NEO4J_ENV.get("NEO4J_URI"):
        if REQUIRE_EXTERNAL:
            pytest.fail("PLUGHOST_REQUIRE_EXTERNAL=1 but NEO4J_URI is not set (start one with scripts/neo4j/neo4j.sh)")
        pytest.skip(SKIP_REASON)
    return dict(NEO4J_ENV)


def use_backend(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """Point this test's environment (and so ``host.store()``) at ``backend``."""
    if backend == "neo4j":
        for key, value in neo4j_env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("PLUGHOST_STORE", "neo4j")
    else:
        monkeypatch.setenv("PLUGHOST_STORE", "sqlite")


def wipe(store: Any, *accounts: str) -> None:
    """Remove the accounts' nodes from a shared Neo4j database (the embedded store is per test)."""
    if getattr(store, "backend", "") == "neo4j":
        for account in accounts:
            store.wipe_account(account)


RESULTS: dict[str, dict[str, int]] = {"sqlite": {}, "neo4j": {}}
_PARAM = {b: re.compile(rf"[\[-]{b}[\]-]") for b in RESULTS}


def is_neo4j(nodeid: str) -> bool:
    """A test of the Neo4j backend by its id: a ``neo4j`` parameter, or a Neo4j-only file."""
    return bool(_PARAM["neo4j"].search(nodeid)) or "/test_neo4j_" in nodeid


def record(nodeid: str, outcome: str, reason: str = "") -> None:
    """Count a test's outcome under the backend it ran on (its parameter id, a Neo4j-only file, or
    a skip for want of NEO4J_URI)."""
    for backend, pattern in _PARAM.items():
        if pattern.search(nodeid) or (backend == "neo4j" and (is_neo4j(nodeid) or SKIP_REASON in reason)):
            RESULTS[backend][outcome] = RESULTS[backend].get(outcome, 0) + 1


def server_version() -> str:
    """The Neo4j server's own version string (for the CI log)."""
    if not NEO4J_ENV.get("NEO4J_URI"):
        return "none"
    try:
        import neo4j

        env = NEO4J_ENV
        with neo4j.GraphDatabase.driver(env["NEO4J_URI"], auth=(env.get("NEO4J_USER", "neo4j"),
                                                                env.get("NEO4J_PASSWORD", ""))) as driver:
            rec = driver.execute_query("CALL dbms.components() YIELD name, versions, edition "
                                       "RETURN name, versions[0] AS v, edition").records[0]
            return f"{rec['name']} {rec['v']} {rec['edition']}".replace(" ", "-")
    except Exception as exc:  # noqa: BLE001 — a summary line, never a failure
        return f"unreachable({type(exc).__name__})"


def summary_lines() -> list[str]:
    if not RUN_NEO4J:  # one line: what ran, what was left out, why, and how to run it
        sqlite, skipped = RESULTS["sqlite"], RESULTS["neo4j"].get("skipped", 0)
        ran = (f"sqlite passed={sqlite.get('passed', 0)} failed={sqlite.get('failed', 0)}; " if sqlite else "")
        return [f"[backends] {ran}neo4j skipped={skipped}: NEO4J_URI is not set; to run them: {HOW_TO_RUN}"] \
            if skipped or sqlite else []
    lines = []
    for backend, counts in RESULTS.items():
        if counts:
            extra = f" server={server_version()}" if backend == "neo4j" else ""
            lines.append(f"[backends] backend={backend} passed={counts.get('passed', 0)} "
                         f"failed={counts.get('failed', 0)} skipped={counts.get('skipped', 0)}{extra}")
    return lines
