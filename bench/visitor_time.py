"""What per-visitor memory and time on tasks cost, on the embedded store.

    python bench/visitor_time.py [--visitors 500] [--slices 5] [--tasks 300] [--entries 10] [--turns 200]

Per-visitor memory: ``--visitors`` visitors with ``--slices`` ended conversations each (their
slices written by the same code a turn runs), then ``--turns`` returning visitors' reads through
the ``plughost_visitor_memory`` hook (end what ended, read their slices): ms per read (p50, p95),
and what one conversation's slice costs to write. Time on tasks: ``--tasks`` Tasks with
``--entries`` stopped timers and an adjustment each, then the census over them all (ms), and one
start + stop round trip (ms, p50).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

from plughost import Principal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ACCOUNT = "acct-bench"
SENTENCES = ("Hi, my name is {name} and I live in {city}.", "My order is ORD-{n:04d}-77.",
             "I need a cake for {n} guests on 4 March 2027.", "Do you deliver on Sundays?")
NAMES = ("Ana", "Rui", "Maja", "Ole", "Ines", "Tom")
CITIES = ("Lisbon", "Porto", "Oslo", "Bergen")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--visitors", type=int, default=500)
    ap.add_argument("--slices", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--entries", type=int, default=10)
    ap.add_argument("--turns", type=int, default=200)
    bench_results.add_flag(ap)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="plughost-bench-visitor-"))
    os.environ.update(PLUGHOST_HOME=str(home), ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none")
    from plughost.plugins.memory.conversations.visitor_memory import end_conversations
    from plughost.plugins.memory.work.tasks import Tasks
    from plughost.plugins.memory.work.worktime import WorkTime, census
    from plughost.ports.graph import MESSAGE_LABEL, visitor_key
    from plughost.runtime import hooktable
    from plughost.runtime.accounts import create_account
    from plughost.runtime.host import Host

    create_account(ACCOUNT, home)
    host = Host(env=dict(os.environ)).load()
    store, rng = host.store(), random.Random(37)
    real_stderr, sys.stderr = sys.stderr, open(os.devnull, "w")  # noqa: SIM115  (the log lines, not the figures)
    try:
        # per-visitor memory: every visitor's ended conversations, then returning visitors' reads
        keys = [visitor_key(ACCOUNT, f"webchat:bench-{v:05d}-token") for v in range(args.visitors)]
        base_ns, n = time.time_ns() - 10 * 86400 * 10**9, 0
        slice_ms: list[float] = []
        for v, key in enumerate(keys):
            for c in range(args.slices):
                conv = f"conv-bench-{v}-{c}"
                rows = []
                for i, sentence in enumerate(SENTENCES):
                    n += 1
                    rows.append({"id": f"msg-bench-{n}", "labels": [MESSAGE_LABEL, "WebchatMessage"], "properties": {
                        "role": "user", "channel": "webchat", "conversationId": conv, "scope": "public",
                        "text": sentence.format(name=rng.choice(NAMES), city=rng.choice(CITIES), n=n),
                        "receivedNs": base_ns + (c * 3600 + i) * 10**9, "visitorKey": key, "slicePending": True}})
                store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
                started = time.perf_counter()
                end_conversations(store, ACCOUNT, idle_s=1800, key=key, current="conv-now")
                slice_ms.append((time.perf_counter() - started) * 1000)
        read_ms: list[float] = []
        for _ in range(args.turns):
            key = rng.choice(keys)
            started = time.perf_counter()
            lines = host.first(hooktable.VISITOR_MEMORY, account_id=ACCOUNT, visitor_key=key, conversation_id="conv-now")
            read_ms.append((time.perf_counter() - started) * 1000)
            assert lines, "a returning visitor with slices got none"
        # time on tasks
        tasks = [Tasks(host).create(kind="client-work", title=f"t{t}")["taskId"] for t in range(args.tasks)]
        clock = [1_800_000_000.0]
        work = WorkTime(host, clock=lambda: clock[0])
        trip_ms: list[float] = []
        for task in tasks:
            for _ in range(args.entries):
                started = time.perf_counter()
                work.start(taskId=task)
                clock[0] += rng.randint(1, 900)
                work.stop(taskId=task)
                trip_ms.append((time.perf_counter() - started) * 1000)
            work.adjust(taskId=task, delta=rng.randint(0, 600), reason="bench")
        started = time.perf_counter()
        found = census(store, ACCOUNT)
        census_ms = (time.perf_counter() - started) * 1000
    finally:
        sys.stderr.close()
        sys.stderr = real_stderr
        host.close()
    assert found["drifted"] == [] and found["tasks"] == args.tasks
    print(f"per-visitor memory, embedded store, {args.visitors} visitors x {args.slices} slices "
          f"({args.visitors * args.slices * len(SENTENCES)} Messages):")
    print(f"  a returning visitor's read (end what ended, read their slices), {args.turns} reads: "
          f"p50 {statistics.median(read_ms):.2f} ms, p95 {_pct(read_ms, 0.95):.2f} ms")
    print(f"  one conversation's slice written (4 messages): p50 {statistics.median(slice_ms):.2f} ms, "
          f"p95 {_pct(slice_ms, 0.95):.2f} ms")
    print(f"time on tasks, {args.tasks} tasks x {args.entries} timers + 1 adjustment each:")
    print(f"  work-time start + stop: p50 {statistics.median(trip_ms):.2f} ms, p95 {_pct(trip_ms, 0.95):.2f} ms")
    print(f"  the census over {found['tasks']} tasks ({args.tasks * (args.entries + 1)} records): {census_ms:.1f} ms, "
          f"drifted {len(found['drifted'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("visitor_time", main))
