"""memory-search latency on the embedded store with 100,000 nodes, against the store and raw floors.

    python bench/search_latency.py [--nodes 100000] [--queries 200] [--work DIR] [--pool 100]

Builds (or reuses, with ``--work``) an embedded SQLite store of N nodes: text drawn from the
installed manual pages' word distribution, random unit vectors of 384 dimensions (latency does
not depend on the vector values), two typed edges per node. Then times the memory-search
pipeline per call — guards, vector + BM25, fusion, dedup, slice, 1-hop graph expansion and
formatting — with the shipped defaults (``SearchFlags.from_env``: stemmed BM25, stop words,
normalised fusion over the shipped candidate pool), expansion off and on, with the wider pool
``--pool`` (``PLUGHOST_GS_CANDIDATES``), and with the baseline flags (query embedding
excluded: the vectors are precomputed), and times the real query embedding separately. The main
variant is split per stage (the pipeline's ``stats``: store vector, store BM25, fusion, graph
expansion, hydrate, format) and its process time is printed beside the wall time. Two floors run
in the same loop: the store's own two calls alone (``fulltext_search`` + ``vector_search`` at
the pool size), and the raw floor: bare FTS5 (``MATCH`` + ``bm25()`` ``ORDER BY`` + ``LIMIT`` k,
on the full-text table and with the query text the store's call gets) plus one bare numpy matmul
(matrix · q + ``argpartition`` top-k) over the same vectors, held as the store holds them (float32,
unit rows, C order). Both parts of the floor are printed, with the BLAS pool (library, kernel,
threads) the floor and the store ran on, the store's scoring threads, the load and the cores.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sqlite3
import sys
import tempfile
import time
from contextlib import redirect_stderr
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

from plughost import Principal

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ACCOUNT = "bench-latency"
DIMS = 384
STAGES = {"vector": "store vector_search", "bm25": "store fulltext_search", "fuse": "fusion, dedup, sort, slice",
          "graph": "1-hop graph expansion", "hydrate": "hydrate (survivors' properties, fields projection)",
          "format": "format", "rest": "the rest (validation, routing, embedding lookup, log line)"}
"""The pipeline's per-stage timings (``SearchOutcome.stats``) the bench splits the main variant into."""
LABELS = ["KnowledgeDocument", "Chunk", "Person", "Event", "Service", "Task", "Concept", "Message"]


def vocabulary(limit_pages: int = 1500) -> tuple[list[str], list[float]]:
    """Words and their frequencies from the manual pages (a real, skewed term distribution)."""
    import manpages

    counts: dict[str, int] = {}
    for i, page in enumerate(manpages.pages()):
        for w in re.findall(r"[a-z][a-z0-9]{2,}", (page.query + " " + page.document).lower()):
            counts[w] = counts.get(w, 0) + 1
        if i >= limit_pages:
            break
    words = sorted(counts, key=counts.get, reverse=True)
    return words, [counts[w] for w in words]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def build(store, n: int, words: list[str], weights: list[float], rng: random.Random) -> float:
    import numpy as np

    started = time.perf_counter()
    np_rng = np.random.default_rng(1)
    batch = 5000
    for start in range(0, n, batch):
        size = min(batch, n - start)
        vecs = np_rng.standard_normal((size, DIMS)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        rows = []
        for j in range(size):
            i = start + j
            text = " ".join(rng.choices(words, weights, k=rng.randint(15, 60)))
            props = {"name": " ".join(rng.choices(words, weights, k=3)), "content": text}
            if i % 10 == 0:
                props["scope"] = "admin"
            edges = [{"type": "RELATES_TO", "to": f"n{rng.randrange(0, max(i, 1))}"}] if i else []
            rows.append({"id": f"n{i}", "labels": [LABELS[i % len(LABELS)]], "properties": props,
                         "embedding": vecs[j].tolist(), "edges": edges})
        store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
        print(f"  built {start + size}/{n} nodes ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--work", type=Path, default=None, help="keep (and reuse) the store here")
    ap.add_argument("--build-only", action="store_true", help="build the store and stop")
    ap.add_argument("--pool", type=int, default=100, help="another candidate pool to compare "
                    "(PLUGHOST_GS_CANDIDATES; the shipped one is 200; default 100, the earlier default)")
    bench_results.add_flag(ap)
    args = ap.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="plughost-bench-latency-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.update(PLUGHOST_HOME=str(work / "home"), PLUGHOST_LOG_FILE="0", ACCOUNT_ID=ACCOUNT,
                      PLUGHOST_EMBED_DIMENSIONS=str(DIMS))
    os.environ.setdefault("PLUGHOST_EMBEDDER", "local")

    import numpy as np

    from plughost.plugins.graph.sqlite_store import vectors as store_vectors
    from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
    from plughost.plugins.memory.retrieval.expand import rule_based
    from plughost.ports.graph import Guards
    from plughost.runtime.host import Host

    rng = random.Random(42)
    words, weights = vocabulary()
    host = Host(env=dict(os.environ)).load()
    store = host.store()
    admin = Guards(ACCOUNT)
    have = store.count(guards=admin)
    if have != args.nodes:
        if have:
            print(f"work dir holds {have} nodes, not {args.nodes}: use another --work", file=sys.stderr)
            return 2
        secs = build(store, args.nodes, words, weights, rng)
        print(f"built {args.nodes} nodes in {secs:.1f} s ({args.nodes / secs:.0f} nodes/s, with vectors and edges)")
    if args.build_only:
        return 0

    queries = [" ".join(rng.choices(words[:5000], k=rng.randint(2, 4))) for _ in range(args.queries)]
    np_rng = np.random.default_rng(7)
    qvecs = np_rng.standard_normal((len(queries), DIMS)).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    table = {q: v.tolist() for q, v in zip(queries, qvecs, strict=True)}

    class Precomputed:
        name, dimensions = "precomputed", DIMS

        def embed(self, texts):
            return [table.get(t) or qvecs[hash(t) % len(qvecs)].tolist() for t in texts]

    public = Guards(ACCOUNT, ("public", "shared"))
    shipped = SearchFlags.from_env({"PLUGHOST_GS_EXPANSION": "0"})
    pool = args.pool
    wide = SearchFlags.from_env({"PLUGHOST_GS_EXPANSION": "0", "PLUGHOST_GS_CANDIDATES": str(pool)})
    main_name = f"memory-search, expansion off, shipped pool {shipped.candidates} (admin)"
    variants = [
        (main_name, shipped, admin),
        ("memory-search, expansion off, expandHops 0 (admin)", shipped, admin),
        ("memory-search, expansion off (public scopes)", shipped, public),
        (f"memory-search, expansion off, candidate pool {pool} (admin)", wide, admin),
        ("memory-search, expansion on (admin)", SearchFlags.from_env({"PLUGHOST_GS_EXPANSION": "1"}), admin),
        ("memory-search, baseline flags (admin)", SearchFlags.baseline(), admin),
    ]
    runs: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    cpu: list[float] = []  # process time of the main variant (every thread's), steadier than wall under load
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    searched = 0  # queries (the request and its paraphrases) the expansion-on calls searched

    # raw floor: bare FTS5 + bare numpy on the same data
    from plughost.plugins.graph.common import fts_terms
    from plughost.plugins.memory.retrieval.keyterms import strip_stop_words

    conn = sqlite3.connect(str(store.path))
    try:  # schema v2 keeps vectors in node_vectors; v1 in nodes.embedding
        rows = conn.execute("SELECT v.embedding FROM node_vectors v JOIN nodes n ON n.rid = v.node "
                            "WHERE n.account_id = ? ORDER BY n.rid", (ACCOUNT,)).fetchall()
    except sqlite3.OperationalError:
        rows = conn.execute("SELECT embedding FROM nodes WHERE account_id = ? ORDER BY rid", (ACCOUNT,)).fetchall()
    matrix = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), DIMS).copy()
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)  # unit rows, float32, C order: as the store holds them
    fts, vec, vec1, store_bm25, store_vec, diy = [], [], [], [], [], []
    busy = 0  # queries during which the store scored its slices in turn (load at or above the cores)
    k = shipped.candidates
    fts_table = "node_text_stem" if shipped.stem else "node_text"  # the table and text the store's call gets
    fts_sql = f"SELECT rowid, bm25({fts_table}) AS r FROM {fts_table} WHERE {fts_table} MATCH ? ORDER BY r LIMIT ?"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None

    # every measurement of one query back to back, so load swings hit them alike
    with open(os.devnull, "w") as null, redirect_stderr(null):
        for _, flags, guards in variants:  # warm the caches (matrix, candidates) once
            search(store, SearchRequest(queries[0]), guards=guards, embedder=Precomputed(), flags=flags,
                   expander=rule_based)
        hops = {name: 0 if "expandHops 0" in name else 1 for name, _, _ in variants}
        for q, qv in zip(queries, qvecs, strict=True):
            for name, flags, guards in variants:
                t, c = time.perf_counter(), time.process_time()
                out = search(store, SearchRequest(q, expand_hops=hops[name]), guards=guards,
                             embedder=Precomputed(), flags=flags, expander=rule_based)
                runs[name].append((time.perf_counter() - t) * 1000)
                searched += len(out.queries) if flags.expansion else 0
                if name == main_name:
                    cpu.append((time.process_time() - c) * 1000)
                    split = [out.stats[f"{stage}_ms"] for stage in STAGES if stage != "rest"]
                    for stage, ms in zip(STAGES, [*split, out.stats["ms"] - sum(split)], strict=True):
                        stages[stage].append(ms)
            # the store-level floor: the two store calls memory-search makes, alone
            t = time.perf_counter()
            store.fulltext_search(strip_stop_words(q), k, guards=admin, stemmed=shipped.stem)
            store_bm25.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            store.vector_search(qv.tolist(), k, guards=admin)
            store_vec.append((time.perf_counter() - t) * 1000)
            busy += store_vectors.cores_busy()
            text = strip_stop_words(q) if shipped.stopwords else q
            match = " OR ".join('"' + " ".join(t) + '"' for t in fts_terms(text))
            t = time.perf_counter()
            if match:  # the store makes no statement either for a query of stop words alone
                conn.execute(fts_sql, (match, k)).fetchall()
            fts.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            scores = matrix @ qv
            top = np.argpartition(-scores, k - 1)[:k]
            top[np.argsort(-scores[top])]
            vec.append((time.perf_counter() - t) * 1000)
            # the do-it-yourself hybrid (bench/diy_hybrid.py, in process): both sides' top 50, RRF k=60
            t = time.perf_counter()
            fused: dict[int, float] = {}
            if match:
                for rank, (rowid, _) in enumerate(conn.execute(fts_sql, (match, 50)).fetchall()):
                    fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (61 + rank)
            scores = matrix @ qv
            top = np.argpartition(-scores, 49)[:50]
            for rank, i in enumerate(top[np.argsort(-scores[top])].tolist()):
                fused[-1 - i] = fused.get(-1 - i, 0.0) + 1.0 / (61 + rank)
            sorted(fused.items(), key=lambda kv: -kv[1])[:10]
            diy.append((time.perf_counter() - t) * 1000)
            if threadpool_limits is not None:  # the same matmul on one BLAS thread: what threads buy here
                with threadpool_limits(1):
                    t = time.perf_counter()
                    scores = matrix @ qv
                    top = np.argpartition(-scores, k - 1)[:k]
                    top[np.argsort(-scores[top])]
                    vec1.append((time.perf_counter() - t) * 1000)
    runs[f"store floor: fulltext_search, k={k} (admin)"] = store_bm25
    runs[f"store floor: vector_search, k={k} (admin)"] = store_vec
    store_floor = [a + b for a, b in zip(store_bm25, store_vec, strict=True)]
    runs["store floor: both"] = store_floor
    runs[f"raw floor: bare FTS5 bm25() top-{k} ({fts_table})"] = fts
    runs[f"raw floor: bare numpy matrix @ q + top-{k}"] = vec
    runs["raw floor: FTS5 + numpy"] = [a + b for a, b in zip(fts, vec, strict=True)]
    if vec1:
        runs[f"bare numpy matrix @ q + top-{k} on 1 BLAS thread (not in the floor)"] = vec1
    runs["do-it-yourself hybrid in process: bare FTS5 top-50 + numpy top-50, RRF k=60"] = diy

    embedder = host.embedder()
    if embedder is not None:
        embedder.embed(["warm up"])
        samples = []
        for q in queries[:50]:
            t = time.perf_counter()
            embedder.embed([q])
            samples.append((time.perf_counter() - t) * 1000)
        runs[f"query embedding ({embedder.name}, excluded above)"] = samples

    import results as kernels  # the BLAS pools as loaded now, after the floor's and the store's matmuls

    _, store_matrix = store._matrix(ACCOUNT, DIMS)
    layout = {name: f"{m.dtype} {'C order' if m.flags.c_contiguous else 'strided'} {m.shape[0]}x{m.shape[1]}"
              for name, m in (("floor", matrix), ("store", store_matrix))}
    pools = kernels.blas_pools()
    if store.vector_split:
        scoring = (f"store vector_search: {store.vector_threads} slice(s) on as many threads at >= "
                   f"{store.vector_split_rows} rows (PLUGHOST_VECTOR_THREADS set or a one-thread BLAS), in turn on "
                   f"the calling thread while the load is at or above the cores ({busy} of {len(queries)} queries "
                   "here); each slice one matmul on the same BLAS pool")
    else:
        scoring = ("store vector_search: one matmul on the same BLAS pool as the floor's (the BLAS threads it; "
                   f"the store's own slices only with PLUGHOST_VECTOR_THREADS set or a one-thread BLAS); load at or "
                   f"above the cores during {busy} of {len(queries)} queries")
    bench_results.floor(f"bare FTS5 bm25() ORDER BY LIMIT {k} on {fts_table} (the store call's table and text) "
                        f"+ one bare numpy matrix @ q + argpartition top-{k} over the account's vectors "
                        f"({layout['floor']}; the store's: {layout['store']}), measured interleaved with the "
                        f"store, one process; {bench_results.numpy_kernels()}; {scoring}")
    floor50 = pct(runs["raw floor: FTS5 + numpy"], 0.5)
    floor95 = pct(runs["raw floor: FTS5 + numpy"], 0.95)
    print()
    print(f"{args.nodes} nodes, {len(queries)} queries, limit 10, candidate pool {k} unless named, "
          "expandHops 1 unless named")
    diy50, diy95 = pct(diy, 0.5), pct(diy, 0.95)
    print("| measurement | p50 ms | p95 ms | p50 / floor | p95 / floor | p50 / DIY | p95 / DIY |")
    print("|---|---|---|---|---|---|---|")
    for name, samples in runs.items():
        p50, p95 = pct(samples, 0.5), pct(samples, 0.95)
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {p50 / floor50:.2f}x | {p95 / floor95:.2f}x | "
              f"{p50 / diy50:.2f}x | {p95 / diy95:.2f}x |")
    print(f"\n{main_name}, per stage (query embedding excluded: precomputed, timed apart above)")
    print("| stage | p50 ms | p95 ms | share of the p50 sum |")
    print("|---|---|---|---|")
    total = sum(pct(v, 0.5) for v in stages.values()) or 1.0
    for stage, samples in stages.items():
        print(f"| {STAGES[stage]} | {pct(samples, 0.5):.1f} | {pct(samples, 0.95):.1f} | "
              f"{pct(samples, 0.5) / total:.0%} |")
    off = runs[main_name]
    p50, p95 = pct(off, 0.5), pct(off, 0.95)
    sf50 = pct(store_floor, 0.5)
    print(f"process time per call (every thread): p50 {pct(cpu, 0.5):.1f} ms; "
          f"memory-search p50 / store floor p50: {p50 / sf50:.2f}x")
    fts50, vec50 = pct(fts, 0.5), pct(vec, 0.5)
    print(f"\nraw floor p50 {floor50:.1f} ms = bare FTS5 bm25() top-{k} on {fts_table} {fts50:.1f} ms + bare numpy "
          f"matrix @ q + top-{k} {vec50:.1f} ms (p50 of each; the floor is the p50 of their per-query sums)")
    print(f"vectors: floor {layout['floor']}, store {layout['store']}; {pools}; {scoring}"
          + (f"; the bare matmul on 1 BLAS thread p50 {pct(vec1, 0.5):.1f} ms" if vec1 else ""))
    on = runs["memory-search, expansion on (admin)"]
    print(f"ratios to the raw floor (p50): memory-search {p50 / floor50:.2f}x, the store's two calls "
          f"{sf50 / floor50:.2f}x (fulltext_search {pct(store_bm25, 0.5) / fts50:.2f}x its bare FTS5, vector_search "
          f"{pct(store_vec, 0.5) / vec50:.2f}x its bare numpy), expansion on {pct(on, 0.5) / floor50:.2f}x")
    ok = p50 < 50 and p95 < 150 and p50 <= 2 * floor50
    print(f"\ntargets (expansion off): p50 < 50 ms, p95 < 150 ms, within 2x the raw floor: "
          f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, {p50 / floor50:.2f}x floor -> {'PASS' if ok else 'MISS'}")
    per_call = searched / len(queries)
    print(f"expansion on: p50 {pct(on, 0.5):.1f} ms, {pct(on, 0.5) / floor50:.2f}x floor -> "
          f"{'PASS' if pct(on, 0.5) <= 3 * floor50 else 'MISS'} (within 3x); it searches {per_call:.2f} queries a "
          f"call (the request and its paraphrases): {pct(on, 0.5) / floor50 / per_call:.2f}x the floor per query")
    h0 = runs["memory-search, expansion off, expandHops 0 (admin)"]
    print(f"expansion off, expandHops 0: p50 {pct(h0, 0.5):.1f} ms, p95 {pct(h0, 0.95):.1f} ms "
          f"({pct(h0, 0.5) / floor50:.2f}x floor) -> {'PASS' if pct(h0, 0.5) < 50 else 'MISS'} (p50 < 50 ms)")
    w = runs[f"memory-search, expansion off, candidate pool {pool} (admin)"]
    print(f"expansion off, candidate pool {pool}: p50 {pct(w, 0.5):.1f} ms, p95 {pct(w, 0.95):.1f} ms "
          f"({pct(w, 0.5) / floor50:.2f}x floor) -> {'PASS' if pct(w, 0.5) < 50 else 'MISS'} (p50 < 50 ms)")
    print(f"load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; work dir: {work}")
    host.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("search_latency", main))
