"""Lease round trips: what a turn's lease costs on each store (docs/channels.md#several-servers-on-one-store).

Every stored message on a shared store takes one lease before it is written and releases it when
its turn is over: two write transactions more per turn. This times N take + release pairs from
one process on each store, and N takes raced by two threads on one name (one wins, the other is
refused), beside the floor: an empty write transaction (``RETURN 1``) on the same Neo4j server.

    NEO4J_URI=bolt://127.0.0.1:7687 .venv/bin/python bench/leases.py            # 500 pairs a store
    .venv/bin/python bench/leases.py --n 200                                  # the embedded store alone
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import results as bench_results  # bench/RESULTS.md, with --write-results

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50={statistics.median(ordered) * 1000:.2f}ms p95={p95 * 1000:.2f}ms"


def _time(n: int, step: Callable[[int], Any]) -> tuple[list[float], float]:
    samples = []
    started = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        step(i)
        samples.append(time.perf_counter() - t)
    return samples, time.perf_counter() - started


def bench_store(label: str, store: Any, n: int) -> None:
    prefix = f"bench:{uuid.uuid4().hex[:8]}:"

    def pair(i: int) -> None:
        assert store.take_lease(f"{prefix}{i}", "bench-owner", 30) is not None
        store.release_leases([f"{prefix}{i}"], "bench-owner")

    samples, total = _time(n, pair)
    print(f"{label}: take+release pairs={n} {_ms(samples)} pairs/s={n / total:.0f}")
    wins = [0, 0]
    start = threading.Barrier(2)

    def race(k: int) -> None:
        start.wait()
        for i in range(n):
            if store.take_lease(f"{prefix}race:{i}", f"owner-{k}", 30) is not None:
                wins[k] += 1

    threads = [threading.Thread(target=race, args=(k,)) for k in (0, 1)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - t0
    print(f"{label}: raced names={n} granted={sum(wins)} (owner-0={wins[0]} owner-1={wins[1]}) "
          f"takes/s={2 * n / took:.0f}")
    for k in (0, 1):
        store.release_leases([f"{prefix}race:{i}" for i in range(n)], f"owner-{k}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=500)
    bench_results.add_flag(parser)
    args = parser.parse_args()
    bench_results.floor("an empty write transaction (RETURN 1) on the same Neo4j server, same driver")
    from plughost.plugins.graph.sqlite_store import SqliteStore

    with tempfile.TemporaryDirectory(prefix="plughost-bench-leases-") as tmp:
        env = {**os.environ, "PLUGHOST_HOME": tmp, "ACCOUNT_ID": "acct-bench"}
        sqlite = SqliteStore(Path(tmp) / "graph.sqlite", env=env)
        try:
            bench_store("embedded", sqlite, args.n)
        finally:
            sqlite.close()
        if not os.environ.get("NEO4J_URI"):
            print("neo4j: skipped (NEO4J_URI not set)")
            return 0
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        neo = Neo4jStore.from_env(env)
        try:
            samples, total = _time(args.n, lambda i: neo.write(lambda tx: tx.run("RETURN 1").consume()))
            print(f"neo4j floor: empty write transactions={args.n} {_ms(samples)} tx/s={args.n / total:.0f}")
            bench_store("neo4j", neo, args.n)
        finally:
            neo.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("leases", main))
