"""Embedded graph store import throughput only (a quick variant of ``bench/graph_store.py``).

    .venv/bin/python bench/graph_import.py [--nodes 20000] [--edges 60000] [--batch N] [--runs N] [--profile]

Imports the same synthetic JSON lines as the full bench through ``import_jsonl`` (no embeddings)
and prints nodes/s wall and per CPU-second, beside a bare FTS5 insert of the raw lines measured
in the same run. ``--profile`` prints the top of a cProfile of the import.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("PLUGHOST_LOG_FILE", "0")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results as bench_results  # noqa: E402  (bench/RESULTS.md, with --write-results)
from graph_store import ACCOUNT, build_file  # noqa: E402

from plughost import Principal  # noqa: E402
from plughost.plugins.graph import IMPORT_BATCH  # noqa: E402
from plughost.plugins.graph.importer import import_jsonl  # noqa: E402
from plughost.plugins.graph.sqlite_store import SqliteStore  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--edges", type=int, default=60_000)
    ap.add_argument("--batch", type=int, default=IMPORT_BATCH)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=1, help="repeat the import (fresh store each time); prints the median")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("a bare FTS5 insert of the raw lines into a fresh file right after each import")
    tmp = Path(tempfile.mkdtemp(dir=args.dir))
    data = tmp / "nodes.jsonl"
    build_file(data, args.nodes, args.edges, random.Random(42))
    prof = cProfile.Profile() if args.profile else None
    rates = []
    for run in range(args.runs):
        # Each run: the import into a fresh store, then the bare FTS5 floor right after it, so
        # the ratio compares two measurements taken under the same machine conditions.
        store = SqliteStore(tmp / f"graph{run}.sqlite", env={"ACCOUNT_ID": ACCOUNT})
        cpu0 = time.process_time()
        if prof:
            prof.enable()
        summary = import_jsonl(store, data, guards=Principal.owner(ACCOUNT).guards, batch_size=args.batch, progress=False)
        if prof:
            prof.disable()
        cpu = time.process_time() - cpu0
        store.close()
        t0, cpu0 = time.perf_counter(), time.process_time()
        raw = sqlite3.connect(tmp / f"floor{run}.sqlite")
        raw.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
        with open(data, encoding="utf-8") as fh:
            raw.executemany("INSERT INTO t (text) VALUES (?)", ((line,) for line in fh))
        raw.commit()
        raw.close()
        floor_s, floor_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        rates.append(summary.nodes / summary.seconds)
        print(f"import {summary.nodes} nodes, {summary.edges} edges in {summary.seconds:.2f} s = "
              f"{rates[-1]:,.0f} nodes/s wall, {summary.nodes / cpu:,.0f} per CPU-second; "
              f"floor {args.nodes / floor_s:,.0f} lines/s wall, {args.nodes / floor_cpu:,.0f} per CPU-second; "
              f"ratio {summary.seconds / floor_s:.1f}x wall, {cpu / floor_cpu:.1f}x CPU; "
              f"load {os.getloadavg()[0]:.2f}")
    if args.runs > 1:
        print(f"median of {args.runs} runs: {statistics.median(rates):,.0f} nodes/s wall "
              f"(min {min(rates):,.0f}, max {max(rates):,.0f})")
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("graph_import", main))
