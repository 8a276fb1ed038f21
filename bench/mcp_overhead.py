"""What serving memory-search over stdio MCP adds to the call itself: in-process against over MCP.

    python bench/mcp_overhead.py [--nodes 5000] [--queries 200] [--work DIR]

Builds (or reuses, with ``--work``) an embedded SQLite store of N text nodes (words drawn from a
fixed synthetic vocabulary with a skewed distribution), no embedder (``PLUGHOST_EMBEDDER=none``:
memory-search is BM25 only). Then times the same queries three ways: in process
(``tooltable.call_tool``, the argument checks MCP makes, no transport), and through a real
``python -m plughost.cli mcp serve memory`` with the SDK's client over stdio, once with the
tool-call audit on (the shipped default: each call's ToolCall queued for the background writer,
plugins/memory/toolcalls/writer.py) and once with ``PLUGHOST_AUDIT_MCP=0``, with a ``tools/list``
round trip before each of those calls (the transport alone). The floor in the same
run is bare FTS5 (``MATCH`` + ``bm25()`` + ``LIMIT``) on the same store file. Prints p50/p95, the
ratio to the floor, the overhead of MCP over the in-process call in ms, and checks the audited
server stored exactly one ToolCall per call once it exited.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

from plughost import Principal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ACCOUNT = "bench-mcp"
LABELS = ["KnowledgeDocument", "Chunk", "Person", "Event", "Concept"]
WARMUP = 10


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def vocabulary(rng: random.Random, size: int = 4000) -> tuple[list[str], list[float]]:
    """Pronounceable synthetic words with a Zipf-like weight (a skewed term distribution)."""
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words, [1.0 / (i + 1) for i in range(size)]


def build(store, n: int, words: list[str], weights: list[float], rng: random.Random) -> float:
    started = time.perf_counter()
    for start in range(0, n, 2000):
        rows = []
        for i in range(start, min(n, start + 2000)):
            props = {"name": " ".join(rng.choices(words, weights, k=3)),
                     "content": " ".join(rng.choices(words, weights, k=rng.randint(15, 60)))}
            rows.append({"id": f"n{i}", "labels": [LABELS[i % len(LABELS)]], "properties": props})
        store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
    return time.perf_counter() - started


def tool_call_rows(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM nodes WHERE labels LIKE '%ToolCall%'").fetchone()[0]
    finally:
        con.close()


def over_mcp(env: dict[str, str], queries: list[str], pings: list[float] | None = None) -> list[float]:
    """Each query's client-side wall time over a fresh stdio server (after WARMUP calls); with
    ``pings``, a ``tools/list`` round trip (the client's cache bypassed) before each call too: the
    transport alone, JSON-RPC both ways and the SDK's dispatch, no tool, no thread, no audit."""
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"], env=env)

    async def go() -> list[float]:
        times = []
        async with Client(params) as client:
            for q in queries[:WARMUP]:
                await client.call_tool("memory-search", {"query": q})
            for q in queries:
                if pings is not None:
                    t = time.perf_counter()
                    await client.list_tools(cache_mode="bypass")
                    pings.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                result = await client.call_tool("memory-search", {"query": q})
                times.append((time.perf_counter() - t) * 1000)
                if result.is_error:
                    raise SystemExit(f"memory-search failed over MCP: {result.content}")
        return times

    return anyio.run(go)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--work", type=Path, default=None, help="keep (and reuse) the store here")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("bare FTS5 (MATCH + bm25() + LIMIT 50) on the same store file, one thread")

    work = args.work or Path(tempfile.mkdtemp(prefix="plughost-bench-mcp-"))
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update(PLUGHOST_HOME=str(home), PLUGHOST_LOG_FILE="0", ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none")
    for key in ("CLAUDECODE", "PLUGHOST_STORE", "SESSION_ID", "PLUGHOST_SESSION_ID", "ALLOWED_SCOPES", "AGENT_SLUG"):
        os.environ.pop(key, None)

    from plughost.plugins.graph.common import fts_terms
    from plughost.ports.graph import Guards
    from plughost.runtime import tooltable
    from plughost.runtime.accounts import create_account
    from plughost.runtime.host import Host

    if not (home / "accounts" / ACCOUNT / "account.json").is_file():
        create_account(ACCOUNT, home)
    rng = random.Random(42)
    words, weights = vocabulary(rng)
    host = Host(env=dict(os.environ)).load()
    store = host.store()
    have = store.count(guards=Guards(ACCOUNT), labels=LABELS)
    if have != args.nodes:
        if have:
            print(f"work dir holds {have} nodes, not {args.nodes}: use another --work", file=sys.stderr)
            return 2
        secs = build(store, args.nodes, words, weights, rng)
        print(f"built {args.nodes} nodes in {secs:.1f} s")
    queries = [" ".join(rng.choices(words[:1500], k=rng.randint(2, 4))) for _ in range(args.queries)]

    # in process, and the floor, interleaved in one loop
    conn = sqlite3.connect(home / "graph.sqlite")
    for q in queries[:WARMUP]:
        tooltable.call_tool(host, "memory", "memory-search", {"query": q})
    inproc, fts = [], []
    for q in queries:
        t = time.perf_counter()
        tooltable.call_tool(host, "memory", "memory-search", {"query": q})
        inproc.append((time.perf_counter() - t) * 1000)
        match = " OR ".join('"' + " ".join(terms) + '"' for terms in fts_terms(q))
        t = time.perf_counter()
        conn.execute("SELECT rowid, bm25(node_text) AS r FROM node_text WHERE node_text MATCH ? ORDER BY r LIMIT 50",
                     (match,)).fetchall()
        fts.append((time.perf_counter() - t) * 1000)
    conn.close()
    host.close()

    env = dict(os.environ)
    before = tool_call_rows(home / "graph.sqlite")
    audited = over_mcp({**env, "PLUGHOST_AUDIT_MCP": "1"}, queries)
    stored = tool_call_rows(home / "graph.sqlite") - before
    pings: list[float] = []
    unaudited = over_mcp({**env, "PLUGHOST_AUDIT_MCP": "0"}, queries, pings)

    runs = {"raw floor: bare FTS5": fts, "memory-search in process (tooltable.call_tool)": inproc,
            "memory-search over stdio MCP, audit queued (default)": audited,
            "memory-search over stdio MCP, PLUGHOST_AUDIT_MCP=0": unaudited,
            "tools/list round trip over the same stdio server (the transport alone)": pings}
    floor50, floor95 = pct(fts, 0.5), pct(fts, 0.95)
    print(f"\n{args.nodes} nodes, {len(queries)} queries (BM25 only, no embedder), after {WARMUP} warm-up calls each\n")
    print("| measurement | p50 ms | p95 ms | p50 / floor | p95 / floor |")
    print("|---|---:|---:|---:|---:|")
    for name, values in runs.items():
        p50, p95 = pct(values, 0.5), pct(values, 0.95)
        print(f"| {name} | {p50:.2f} | {p95:.2f} | {p50 / floor50:.1f}x | {p95 / floor95:.1f}x |")
    base50, base95 = pct(inproc, 0.5), pct(inproc, 0.95)
    print()
    for name, values in (("audit queued", audited), ("audit off", unaudited)):
        print(f"MCP overhead over the in-process call ({name}): p50 +{pct(values, 0.5) - base50:.2f} ms, "
              f"p95 +{pct(values, 0.95) - base95:.2f} ms ({pct(values, 0.5) / base50:.2f}x in process at p50)")
    print(f"the audit's cost on the reply path: p50 {pct(audited, 0.5) - pct(unaudited, 0.5):+.2f} ms")
    print(f"the transport alone (tools/list round trip): p50 {pct(pings, 0.5):.2f} ms; the rest of the overhead (tools/call "
          f"dispatch, argument check, the handler's thread, the result): p50 "
          f"{pct(unaudited, 0.5) - base50 - pct(pings, 0.5):+.2f} ms")
    over = pct(audited, 0.5) - base50
    print(f"target (MCP overhead <= 2 ms p50 over the in-process call, audit queued): +{over:.2f} ms -> "
          f"{'PASS' if over <= 2 else 'MISS'} (its floor here: the transport alone, {pct(pings, 0.5):.2f} ms)")
    expected = len(queries) + WARMUP
    print(f"ToolCall rows the audited server stored by its exit: {stored} of {expected} calls -> "
          f"{'PASS' if stored == expected else 'MISS'}")
    print(f"load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; work dir: {work}")
    return 0 if stored == expected else 1


if __name__ == "__main__":
    raise SystemExit(bench_results.run("mcp_overhead", main))
