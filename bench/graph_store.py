"""Graph store benchmark: import rate, BM25 / vector / expansion latency, per backend.

    .venv/bin/python bench/graph_store.py [--backend sqlite|neo4j|both] [--nodes 100000] [--edges 300000]
                                          [--dims 384] [--dir DIR]

``--backend neo4j`` uses NEO4J_URI, or starts a Neo4j with scripts/neo4j/neo4j.sh for the run
(and stops it); ``both`` (the default) runs the embedded store and then Neo4j over the same
file and vectors and ends with a side-by-side table (neo4j / sqlite ratios).

Builds a synthetic account (nodes with text, scopes, agent tags; random typed edges), imports
it through the real `plughost graph import` code path (JSON lines staged by a worker process →
batched set-based transactions, no embeddings), attaches 384-dim vectors, then measures p50/p95 latency of guarded top-10 BM25,
guarded exact vector top-10 and guarded 1-hop expansion. The raw floor is measured in the same
run on the same data: a bare FTS5 MATCH + bm25() query, a bare numpy matmul + argpartition over
the same matrix (also sliced on the store's scoring threads, PLUGHOST_VECTOR_THREADS), and a bare
edge lookup; the ratio store/floor is printed beside each figure.
On Neo4j the import and its floor meet a warm server: a file of ``--warmup`` lines (default
20,000) of the same shape is imported and floored into a scratch account first, since a fresh
JVM compiles Neo4j's write path during its first imports (the warm-up's rate is printed as the
cold figure).
On Neo4j the floors are the bare procedures and pattern (``db.index.fulltext.queryNodes`` with
``limit: 10``, ``db.index.vector.queryNodes`` top-10, an unguarded 1-hop MATCH) over the same
data, each in its own read transaction like the store's queries.
Targets (embedded): import >= 20,000 nodes/s; BM25 and vector p50 < 25 ms; expansion p50 < 2 ms.
Targets (Neo4j, this 2-core machine): import >= 5,000 nodes/s; BM25 and vector p50 < 50 ms;
expansion p50 < 10 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import results as bench_results  # bench/RESULTS.md, with --write-results

from plughost import Principal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("PLUGHOST_LOG_FILE", "0")

from plughost.plugins.graph.importer import import_jsonl  # noqa: E402
from plughost.plugins.graph.sqlite_store import SqliteStore  # noqa: E402
from plughost.ports.graph import Guards  # noqa: E402

ACCOUNT = "bench-account"
WARMUP_ACCOUNT = "bench-warmup"
LABELS = ["Chunk", "Question", "Service", "Person", "CreativeWork", "Message"]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def timed(fn, args_list) -> list[float]:
    out = []
    for args in args_list:
        t0 = time.perf_counter()
        fn(*args)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def row(name: str, ms: list[float], floor: list[float] | None = None) -> str:
    p50, p95 = pct(ms, 50), pct(ms, 95)
    text = f"{name:<34} p50={p50:8.2f} ms  p95={p95:8.2f} ms"
    if floor:
        f50, f95 = pct(floor, 50), pct(floor, 95)
        text += f"   floor p50={f50:7.2f} ms p95={f95:7.2f} ms   ratio p50={p50 / max(f50, 1e-6):5.2f}x"
    return text


def build_file(path: Path, nodes: int, edges: int, rng: random.Random) -> list[str]:
    vocab = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "po", "ru", "sa", "ti", "vu", "ze")
             for b in ("ba", "de", "fi", "go", "hu", "ja", "ke", "li", "mo", "nu", "pa", "qe", "ri", "so", "tu",
                       "vi", "wo", "xa", "yo", "zu")] * 1
    vocab += [f"w{i}" for i in range(200)] + [f"code{i}" for i in range(300)]
    per_node = [0] * nodes
    for _ in range(edges):
        per_node[rng.randrange(nodes)] += 1
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(nodes):
            words = " ".join(rng.choice(vocab) for _ in range(rng.randint(8, 30)))
            props = {"name": f"node {i} INV-2024-{i:05d}", "content": words}
            r = rng.random()
            if r < 0.5:
                props["scope"] = "public"
            elif r < 0.6:
                props["scope"] = "admin"
            if rng.random() < 0.5:
                props["agents"] = ["bot"] if rng.random() < 0.8 else ["other"]
            if rng.random() < 0.1:
                props["keywords"] = [rng.choice(vocab)]
            line = {"id": f"n{i}", "labels": [rng.choice(LABELS)], "properties": props}
            if per_node[i]:
                line["edges"] = [{"type": rng.choice(["MENTIONS", "RELATED_TO", "PART_OF"]), "to": f"n{rng.randrange(nodes)}"}
                                 for _ in range(per_node[i])]
            fh.write(json.dumps(line) + "\n")
    return vocab


def bench_sqlite(args: argparse.Namespace, tmp: Path, data: Path, vocab: list[str], vectors: np.ndarray,
                 rng: random.Random) -> dict[str, float]:
    db = tmp / "graph.sqlite"
    print(f"\n== sqlite (embedded) db={db}")
    store = SqliteStore(db, env={"ACCOUNT_ID": ACCOUNT})
    cpu0 = time.process_time()
    summary = import_jsonl(store, data, guards=Principal.owner(ACCOUNT).guards, progress=False)  # the CLI default batch
    cpu = time.process_time() - cpu0
    figures = {"import nodes/s": summary.nodes / summary.seconds}
    print(f"import (no embeddings)             {summary.nodes} nodes, {summary.edges} edges in {summary.seconds:.2f} s"
          f" = {summary.nodes / summary.seconds:,.0f} nodes/s wall, {summary.nodes / cpu:,.0f} nodes/s per CPU-second"
          f" (target >= 20,000)")
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    raw_floor = sqlite3.connect(tmp / "floor.sqlite")
    raw_floor.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    with open(data, encoding="utf-8") as fh:
        raw_floor.executemany("INSERT INTO t (text) VALUES (?)", ((line,) for line in fh))
    raw_floor.commit()
    raw_floor.close()
    floor_s = time.perf_counter() - t0
    print(f"import floor (bare FTS5 insert of the raw lines) {args.nodes / floor_s:,.0f} lines/s wall, "
          f"{args.nodes / (time.process_time() - cpu0):,.0f} per CPU-second; "
          f"ratio {summary.seconds / floor_s:.1f}x")

    t0 = time.perf_counter()
    cpu0 = time.process_time()
    for start in range(0, args.nodes, 5000):
        store.set_embeddings([(f"n{i}", vectors[i]) for i in range(start, min(start + 5000, args.nodes))],
                             account_id=ACCOUNT)
    emb_s = time.perf_counter() - t0
    print(f"attach embeddings                  {args.nodes / emb_s:,.0f} vectors/s wall, "
          f"{args.nodes / (time.process_time() - cpu0):,.0f} per CPU-second")
    figures["embeddings vectors/s"] = args.nodes / emb_s

    admin = Guards(ACCOUNT)
    public_bot = Guards(ACCOUNT, ("public",), "bot")
    queries, qvecs, origins = workload(args, vocab, rng)

    t0 = time.perf_counter()
    store.vector_search(qvecs[0], 10, guards=admin)
    print(f"vector matrix cache build (cold)   {(time.perf_counter() - t0) * 1000:.0f} ms (first search only; later writes are patched in by sequence)")
    store.vector_search(qvecs[0], 10, guards=public_bot)

    raw = sqlite3.connect(db)
    matrix = np.frombuffer(b"".join(r[0] for r in raw.execute("SELECT embedding FROM node_vectors ORDER BY node")),
                           dtype=np.float32).reshape(-1, args.dims).copy()
    matrix /= np.linalg.norm(matrix, axis=1)[:, None]

    def raw_fts(q: str) -> None:
        match = " OR ".join(f'"{w}"' for w in q.split())
        raw.execute("SELECT rowid, bm25(node_text) AS r FROM node_text WHERE node_text MATCH ? ORDER BY r LIMIT 10",
                    (match,)).fetchall()

    def raw_vec(q: np.ndarray) -> None:
        s = matrix @ (q / np.linalg.norm(q))
        top = np.argpartition(-s, 10)[:10]
        top[np.argsort(-s[top])]

    rid_of = dict(raw.execute("SELECT id, rid FROM nodes"))

    def raw_expand(nid: str) -> None:
        rid = rid_of[nid]
        raw.execute("SELECT target FROM edges WHERE source = ? UNION ALL SELECT source FROM edges WHERE target = ? "
                    "LIMIT 20", (rid, rid)).fetchall()

    for q in queries[:10]:  # warm the page cache for both sides alike
        raw_fts(q)
        store.fulltext_search(q, 10, guards=admin)

    print()
    figures.update(latencies(store, queries, qvecs, origins, raw_fts, raw_vec, raw_expand))
    if store.vector_threads > 1:  # the store scores in slices on parallel threads: the same, bare
        pool = ThreadPoolExecutor(store.vector_threads - 1)

        def raw_vec_sliced(q: np.ndarray) -> None:
            q, out = q / np.linalg.norm(q), np.empty(len(matrix), dtype=np.float32)
            step = -(-len(matrix) // store.vector_threads)
            parts = [pool.submit(np.matmul, matrix[i:i + step], q, out=out[i:i + step])
                     for i in range(step, len(matrix), step)]
            np.matmul(matrix[:step], q, out=out[:step])
            for part in parts:
                part.result()
            top = np.argpartition(-out, 10)[:10]
            top[np.argsort(-out[top])]

        print(row(f"vector floor on {store.vector_threads} threads (sliced)", timed(raw_vec_sliced, [(q,) for q in qvecs]),
                  timed(raw_vec, [(q,) for q in qvecs])) + "   (ratio: against one thread)")
        pool.shutdown()
    figures.update(after_write(store, qvecs, raw_vec))
    store.close()
    raw.close()
    return figures


def workload(args: argparse.Namespace, vocab: list[str], rng: random.Random) -> tuple[list[str], list, list[str]]:
    """The same queries, vectors and origins for every backend (its own seeded generator)."""
    rng = random.Random(4242)
    queries = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 3))) for _ in range(args.queries)]
    qvecs = [np.random.default_rng(100 + i).standard_normal(args.dims).astype(np.float32) for i in range(args.queries)]
    origins = [f"n{rng.randrange(args.nodes)}" for _ in range(args.queries * 2)]
    return queries, qvecs, origins


def latencies(store, queries, qvecs, origins, raw_fts, raw_vec, raw_expand) -> dict[str, float]:
    """The guarded top-10 searches and expansions, each beside its bare floor; returns the p50/p95s."""
    admin = Guards(ACCOUNT)
    public_bot = Guards(ACCOUNT, ("public",), "bot")
    out: dict[str, float] = {}

    def measure(name: str, fn, args_list, floor) -> None:
        cpu0, jvm0 = time.process_time(), server_cpu()
        ms = timed(fn, args_list)
        cpu, jvm = (time.process_time() - cpu0) * 1000 / len(args_list), (server_cpu() - jvm0) * 1000 / len(args_list)
        print(row(name, ms, floor) + (f"   CPU/query client {cpu:.2f} + server {jvm:.2f} ms" if jvm == jvm else ""))
        out[f"{name} p50"], out[f"{name} p95"] = pct(ms, 50), pct(ms, 95)

    bm25_floor = timed(raw_fts, [(q,) for q in queries])
    measure("BM25 top-10 (admin guards)", lambda q: store.fulltext_search(q, 10, guards=admin),
            [(q,) for q in queries], bm25_floor)
    measure("BM25 top-10 (public + agent)", lambda q: store.fulltext_search(q, 10, guards=public_bot),
            [(q,) for q in queries], bm25_floor)
    vec_floor = timed(raw_vec, [(q,) for q in qvecs])
    measure("vector top-10 (admin guards)", lambda q: store.vector_search(q, 10, guards=admin),
            [(q,) for q in qvecs], vec_floor)
    measure("vector top-10 (public + agent)", lambda q: store.vector_search(q, 10, guards=public_bot),
            [(q,) for q in qvecs], vec_floor)
    exp_floor = timed(raw_expand, [(o,) for o in origins])
    measure("1-hop expansion (admin guards)", lambda o: store.expand([o], guards=admin),
            [(o,) for o in origins], exp_floor)
    measure("1-hop expansion (public + agent)", lambda o: store.expand([o], guards=public_bot),
            [(o,) for o in origins], exp_floor)
    return out


def after_write(store, qvecs, raw_vec) -> dict[str, float]:
    admin = Guards(ACCOUNT)
    ms = []
    writes = min(20, len(qvecs))  # --queries below 20 has fewer query vectors to write
    for i in range(writes):
        store.upsert_node(["Chunk"], {"content": f"fresh {i}"},
                          guards=Principal.system(ACCOUNT).guards, node_id=f"fresh{i}",
                          embedding=qvecs[i].tolist())
        t0 = time.perf_counter()
        store.vector_search(qvecs[i], 10, guards=admin)
        ms.append((time.perf_counter() - t0) * 1000)
    print(row("vector top-10 right after a write", ms, timed(raw_vec, [(q,) for q in qvecs[:writes]])))
    return {"vector top-10 right after a write p50": pct(ms, 50)}


def start_neo4j() -> tuple[dict[str, str], str | None]:
    """NEO4J_URI's server, or one started for this run (returned run dir: stop it after)."""
    if os.environ.get("NEO4J_URI"):
        return {k: v for k, v in os.environ.items() if k.startswith("NEO4J_")}, None
    script = Path(__file__).resolve().parent.parent / "scripts" / "neo4j" / "neo4j.sh"
    env = {**os.environ, "NEO4J_HEAP": os.environ.get("NEO4J_HEAP", "2g"),
           "NEO4J_PAGECACHE": os.environ.get("NEO4J_PAGECACHE", "2g")}
    out = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, env=env, check=True).stdout
    started = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    os.environ["NEO4J_PID"] = started["NEO4J_PID"]  # for server_cpu()
    return {"NEO4J_URI": started["NEO4J_URI"]}, started["NEO4J_RUN_DIR"]


def server_java(store) -> str:
    """The server's Java runtime (its vector scoring uses SIMD only on Java 20-22 with the
    jdk.incubator.vector module, Lucene 9.11), or ``?`` when the server does not say."""
    try:
        return store.read(lambda tx: tx.run("CALL dbms.queryJmx('java.lang:type=Runtime') YIELD attributes "
                                            "RETURN attributes.VmVersion.value AS v").single()["v"])
    except Exception:  # noqa: BLE001 — a server that hides its JMX beans: the figures stand without it
        return "?"


def server_cpu() -> float:
    """CPU-seconds the Neo4j JVM has used (NEO4J_PID, a local server), or NaN when unknown."""
    try:
        fields = Path(f"/proc/{int(os.environ['NEO4J_PID'])}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (KeyError, ValueError, OSError):
        return float("nan")


THREAD_GROUPS = (("Bolt workers", ("neo4j.BoltWorke",)), ("GC", ("GC Thread", "G1 ")),
                 ("JIT compiler", ("C1 CompilerThre", "C2 CompilerThre")))
"""The server's threads by what they do (their /proc names, which Linux cuts to 15 characters)."""


def server_threads() -> dict[str, float]:
    """CPU-seconds the Neo4j JVM's threads have used, by :data:`THREAD_GROUPS` (``other``: the
    rest of the process, exited threads included); empty when the server is not local."""
    try:
        pid = int(os.environ["NEO4J_PID"])
        out = dict.fromkeys([name for name, _ in THREAD_GROUPS], 0.0)
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                raw = (task / "stat").read_text()
            except OSError:  # the thread ended meanwhile
                continue
            comm, fields = raw[raw.index("(") + 1:raw.rindex(")")], raw.rsplit(")", 1)[1].split()
            for name, prefixes in THREAD_GROUPS:
                if comm.startswith(prefixes):
                    out[name] += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        out["other"] = server_cpu() - sum(out.values())
        return out
    except (KeyError, ValueError, OSError):
        return {}


def thread_split(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU-seconds by thread group between two :func:`server_threads` (empty: not a local server)."""
    return {k: after[k] - before.get(k, 0.0) for k in after}


def split_text(split: dict[str, float]) -> str:
    """``Bolt workers 15.5, GC 12.0, JIT compiler 5.9, other 1.2``."""
    return ", ".join(f"{k} {v:.1f}" for k, v in split.items()) or "unknown (not a local server)"


def without_jit(split: dict[str, float]) -> float:
    return sum(v for k, v in split.items() if k != "JIT compiler")


def bench_neo4j(args: argparse.Namespace, data: Path, vocab: list[str], vectors: np.ndarray,
                rng: random.Random) -> dict[str, float]:
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    neo_env, run_dir = start_neo4j()
    try:
        store = Neo4jStore.from_env({**neo_env, "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": str(args.dims)})
        version = store.read(lambda tx: tx.run("CALL dbms.components() YIELD versions RETURN versions[0] AS v")
                             .single()["v"])
        print(f"\n== neo4j {version} java {server_java(store)} uri={neo_env['NEO4J_URI']}")
        store.wipe_account(ACCOUNT)
        return _bench_neo4j(store, args, data, vocab, vectors, rng)
    finally:
        if run_dir:
            subprocess.run(["bash", str(Path(__file__).resolve().parent.parent / "scripts" / "neo4j" / "neo4j.sh"),
                            "stop", run_dir], check=False)


def warm_neo4j(store, args, data: Path) -> None:
    """A fresh JVM compiles Neo4j's write path while it runs (the first 20k lines cost it several
    times the CPU of later ones): an import and a floor of a file of the same shape into a scratch
    account first, so the measured import and its floor both meet a warm server, as a long-running
    one is."""
    lines = min(args.warmup, args.nodes)
    if lines <= 0:
        print("server warm-up                     none (--warmup 0: the import below meets a cold JVM)")
        return
    part = data.with_name("warmup.jsonl")  # the same shape, its own ids and edges (all inside it)
    build_file(part, lines, max(1, round(lines * args.edges / max(args.nodes, 1))), random.Random(7))
    scratch = type(store)(store.driver, env={**store.env, "ACCOUNT_ID": WARMUP_ACCOUNT}, database=store.database,
                          apply_schema=False)
    cpu0, jvm0 = time.process_time(), server_cpu()
    summary = import_jsonl(scratch, part, guards=Principal.owner(WARMUP_ACCOUNT).guards, progress=False)
    cpu, jvm = time.process_time() - cpu0, server_cpu() - jvm0
    scratch.wipe_account(WARMUP_ACCOUNT)
    neo4j_import_floor(store, part, store.import_batch_size)
    neo4j_import_floor(store, part, store.import_batch_size, indexed=True)
    part.unlink()
    print(f"server warm-up                     {lines:,} lines into a scratch account at {summary.nodes / summary.seconds:,.0f} "
          f"nodes/s (client {cpu:.1f} + server {jvm:.1f} CPU-s), then both floors over them; --warmup 0 skips it")


def _bench_neo4j(store, args, data, vocab, vectors, rng) -> dict[str, float]:
    warm_neo4j(store, args, data)
    cpu0, jvm0, threads0 = time.process_time(), server_cpu(), server_threads()
    summary = import_jsonl(store, data, guards=Principal.owner(ACCOUNT).guards, progress=False)
    cpu, jvm, split = time.process_time() - cpu0, server_cpu() - jvm0, thread_split(threads0, server_threads())
    figures = {"import nodes/s": summary.nodes / summary.seconds}
    batch = store.import_batch_size
    floor_s, floor_cpu, floor_jvm, floor_split = neo4j_import_floor(store, data, batch)
    ix_s, ix_cpu, ix_jvm, ix_split = neo4j_import_floor(store, data, batch, indexed=True)
    figures["import floor nodes/s"] = args.nodes / floor_s
    figures["import indexed floor nodes/s"] = args.nodes / ix_s
    print(f"import (no embeddings)             {summary.nodes} nodes, {summary.edges} edges in {summary.seconds:.2f} s"
          f" = {summary.nodes / summary.seconds:,.0f} nodes/s wall (target >= 5,000; {batch:,} lines a transaction); "
          f"floor (bare UNWIND CREATE of the same nodes, then their edges by MATCH on an id index, {batch:,} lines / "
          f"{3 * batch:,} edges a transaction) {args.nodes / floor_s:,.0f} nodes/s; ratio {summary.seconds / floor_s:.1f}x")
    print(f"import indexed floor               the same bare statements into a label with the store's (accountId, id) "
          f"uniqueness constraint and full-text index, edges by (accountId, id): {args.nodes / ix_s:,.0f} nodes/s; "
          f"ratio {summary.seconds / ix_s:.1f}x")
    print(f"import CPU-seconds                 client {cpu:.1f} s + server {jvm:.1f} s; floor client {floor_cpu:.1f} s + "
          f"server {floor_jvm:.1f} s; ratio {(cpu + jvm) / max(floor_cpu + floor_jvm, 1e-9):.1f}x; indexed floor client "
          f"{ix_cpu:.1f} s + server {ix_jvm:.1f} s; ratio {(cpu + jvm) / max(ix_cpu + ix_jvm, 1e-9):.1f}x")
    if split:
        print(f"import server CPU by thread        store: {split_text(split)}; floor: {split_text(floor_split)}; "
              f"indexed floor: {split_text(ix_split)}; without the JIT: ratio {without_jit(split) / max(without_jit(floor_split), 1e-9):.1f}x "
              f"the floor, {without_jit(split) / max(without_jit(ix_split), 1e-9):.1f}x the indexed floor (a JVM compiles "
              f"Neo4j's write path during its first imports: most of it lands on the store's import, which runs first)")
    t0 = time.perf_counter()
    for start in range(0, args.nodes, 5000):
        store.set_embeddings([(f"n{i}", vectors[i].tolist()) for i in range(start, min(start + 5000, args.nodes))],
                             account_id=ACCOUNT)
    emb_s = time.perf_counter() - t0
    print(f"attach embeddings                  {args.nodes / emb_s:,.0f} vectors/s wall (HNSW inserts at commit, "
          f"5,000 a transaction)")
    figures["embeddings vectors/s"] = args.nodes / emb_s
    queries, qvecs, origins = workload(args, vocab, rng)
    from plughost.plugins.graph.neo4j_store import FULLTEXT_INDEX, lucene_query

    indexes = store._index_map()

    def raw_fts(q: str) -> None:
        store.read(lambda tx: list(tx.run("CALL db.index.fulltext.queryNodes($i, $q, {limit: 10}) YIELD node, score "
                                          "RETURN node.id, score", i=FULLTEXT_INDEX, q=lucene_query(q))))

    def raw_vec(q: np.ndarray) -> None:
        store.read(lambda tx: list(tx.run("CALL db.index.vector.queryNodes($i, 10, $v) YIELD node, score "
                                          "RETURN node.id, score", i=indexes["Chunk"][0], v=q.tolist())))

    def raw_expand(nid: str) -> None:
        store.read(lambda tx: list(tx.run("MATCH (o:GraphNode {accountId: $a, id: $id})--(m) RETURN m.id LIMIT 20",
                                          a=ACCOUNT, id=nid)))

    for v in qvecs[:10]:  # the indexes as the attach left them (one Lucene segment per transaction)
        raw_vec(v)
        store.vector_search(v, 10, guards=Guards(ACCOUNT))
    some = [(q,) for q in qvecs[:100]]
    cpu0, jvm0 = time.process_time(), server_cpu()
    ms = timed(lambda q: store.vector_search(q, 10, guards=Guards(ACCOUNT)), some)
    cpu, jvm = (time.process_time() - cpu0) * 1000 / len(some), (server_cpu() - jvm0) * 1000 / len(some)
    print(row("vector top-10 (admin), as attached", ms, timed(raw_vec, some))
          + (f"   CPU/query client {cpu:.2f} + server {jvm:.2f} ms" if jvm == jvm else "")
          + f"   ({-(-args.nodes // 5000)} attach transaction(s): a Lucene segment each in every index)")
    t0 = time.perf_counter()
    store.compact_vector_indexes()
    print(f"compact vector indexes             {time.perf_counter() - t0:.1f} s (plughost graph compact: each index "
          f"rebuilt in one pass; the figures below are after it)")
    for q, v in zip(queries[:10], qvecs[:10], strict=True):  # warm caches and query plans for both sides alike
        raw_fts(q)
        raw_vec(v)
        store.fulltext_search(q, 10, guards=Guards(ACCOUNT))
        store.vector_search(v, 10, guards=Guards(ACCOUNT))
        store.vector_search(v, 10, guards=Guards(ACCOUNT, ("public",), "bot"))
    print(f"(vector floor: one index (Chunk, 1/6 of the nodes); the store asks the index of every label in use, 6 here, "
          f"over PLUGHOST_VECTOR_THREADS={store.vector_threads} read transaction(s))\n")
    figures.update(latencies(store, queries, qvecs, origins, raw_fts, raw_vec, raw_expand))
    threads, store.vector_threads = store.vector_threads, 1 if store.vector_threads > 1 else 2
    ms = timed(lambda q: store.vector_search(q, 10, guards=Guards(ACCOUNT)), [(q,) for q in qvecs])
    print(row(f"vector top-10 (admin), threads={store.vector_threads}", ms, timed(raw_vec, [(q,) for q in qvecs]))
          + "   (PLUGHOST_VECTOR_THREADS)")
    store.vector_threads = threads
    figures.update(after_write(store, qvecs, raw_vec))
    store.wipe_account(ACCOUNT)
    store.close()
    return figures


FLOOR_LABEL = "BenchFloor"
FLOOR_IX_LABEL = "BenchFloorIx"


def floor_schema(indexed: bool) -> tuple[list[str], list[str]]:
    """(create, drop) statements of a floor's scratch label: an id index, or with ``indexed`` the
    store's own write-side indexes on it (the (accountId, id) uniqueness constraint and the
    full-text index over the store's text properties, as ``schema.cypher`` declares them)."""
    from plughost.plugins.graph.neo4j_store import (
        FULLTEXT_INDEX,
        fulltext_shape,
        schema_statements,
        statement_name,
    )

    if not indexed:
        return ([f"CREATE INDEX bench_floor_id IF NOT EXISTS FOR (n:{FLOOR_LABEL}) ON (n.id)"],
                ["DROP INDEX bench_floor_id IF EXISTS"])
    text = next(s for s in schema_statements(384) if statement_name(s) == FULLTEXT_INDEX)
    _, props = fulltext_shape(text)
    on = ", ".join(f"n.{p}" for p in props)
    return ([f"CREATE CONSTRAINT bench_floor_ix_key IF NOT EXISTS FOR (n:{FLOOR_IX_LABEL}) "
             "REQUIRE (n.accountId, n.id) IS UNIQUE",
             f"CREATE FULLTEXT INDEX bench_floor_ix_text IF NOT EXISTS FOR (n:{FLOOR_IX_LABEL}) ON EACH [{on}]",
             "CALL db.awaitIndexes(300)"],
            ["DROP CONSTRAINT bench_floor_ix_key IF EXISTS", "DROP INDEX bench_floor_ix_text IF EXISTS"])


def neo4j_import_floor(store, data: Path, batch: int, *, indexed: bool = False) -> tuple[float, float, float, dict[str, float]]:
    """Seconds (wall, client CPU, server CPU) and the server's CPU by thread group
    (:func:`thread_split`) for the server's own floor: the file's nodes and edges with bare
    ``CREATE`` (no MERGE, no guards, no indexes but a scratch label's), ``batch`` lines (the
    store's import batch) and then ``3 * batch`` edges a transaction.

    ``indexed``: the same statements into a scratch label carrying the store's uniqueness
    constraint and full-text index (:func:`floor_schema`), the nodes with their ``accountId``
    and the edges' ends found by (accountId, id): what Neo4j itself does with those indexes."""
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    label = FLOOR_IX_LABEL if indexed else FLOOR_LABEL
    create, drop = floor_schema(indexed)
    for statement in create:
        store._auto(statement)
    key = "{accountId: $a, id: row.%s}" if indexed else "{id: row.%s}"
    t0, cpu0, jvm0, threads0 = time.perf_counter(), time.process_time(), server_cpu(), server_threads()
    for start in range(0, len(rows), batch):
        part = [{"id": r["id"], "props": {k: v for k, v in r["properties"].items() if not isinstance(v, (dict, list))}}
                for r in rows[start:start + batch]]
        node = f"(n:{label} {{accountId: $a, id: row.id}})" if indexed else f"(n:{label} {{id: row.id}})"
        store.write(lambda tx, part=part, node=node: tx.run(f"UNWIND $rows AS row CREATE {node} SET n += row.props",
                                                            rows=part, a=WARMUP_ACCOUNT).consume())
    edges = [{"s": r["id"], "t": e["to"]} for r in rows for e in r.get("edges", [])]
    for start in range(0, len(edges), 3 * batch):
        part = edges[start:start + 3 * batch]
        store.write(lambda tx, part=part: tx.run(f"UNWIND $rows AS row MATCH (a:{label} {key % 's'}) "
                                                 f"MATCH (b:{label} {key % 't'}) CREATE (a)-[:E]->(b)",
                                                 rows=part, a=WARMUP_ACCOUNT).consume())
    seconds, cpu, jvm = time.perf_counter() - t0, time.process_time() - cpu0, server_cpu() - jvm0
    split = thread_split(threads0, server_threads())
    store._auto(f"MATCH (n:{label}) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF 10000 ROWS")
    for statement in drop:
        store._auto(statement)
    return seconds, cpu, jvm, split


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("sqlite", "neo4j", "both"), default="both")
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=300_000)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20_000,
                    help="Neo4j: lines imported (and floored) into a scratch account before the measured import")
    ap.add_argument("--dir", type=Path, default=None, help="where to put the database (default: a temp dir)")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("bare FTS5 MATCH + bm25(); bare numpy matrix · q + top-k on one thread, and sliced on the store's scoring threads (PLUGHOST_VECTOR_THREADS, printed in the run); a bare edge lookup; on Neo4j the bare procedures and UNWIND statements; " + bench_results.numpy_kernels())
    rng = random.Random(42)
    tmp = Path(tempfile.mkdtemp(dir=args.dir))
    data = tmp / "nodes.jsonl"
    print(f"graph store bench: backend={args.backend} nodes={args.nodes} edges~{args.edges} dims={args.dims}")
    t0 = time.perf_counter()
    vocab = build_file(data, args.nodes, args.edges, rng)
    print(f"generated {data.stat().st_size / 1e6:.1f} MB of JSON lines in {time.perf_counter() - t0:.1f} s")
    vectors = np.random.default_rng(7).standard_normal((args.nodes, args.dims)).astype(np.float32)
    results: dict[str, dict[str, float]] = {}
    if args.backend in ("sqlite", "both"):
        results["sqlite"] = bench_sqlite(args, tmp, data, vocab, vectors, rng)
    if args.backend in ("neo4j", "both"):
        results["neo4j"] = bench_neo4j(args, data, vocab, vectors, rng)
    if len(results) == 2:
        print(f"\n{'side by side':<44} {'sqlite':>10} {'neo4j':>10} {'neo4j/sqlite':>13}")
        for key, value in results["sqlite"].items():
            other = results["neo4j"].get(key)
            if other is not None:
                unit = "" if key.endswith("/s") else " ms"
                print(f"{key:<44} {value:>10,.1f} {other:>10,.1f} {other / max(value, 1e-9):>12.2f}x{unit}")
    print(f"\nload average during the run: {os.getloadavg()[0]:.2f} (machine has {os.cpu_count()} cores)")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("graph_store", main))
