"""What full-text search costs once a store holds a second account (docs/graph.md#per-account-statistics).

    python bench/account_bm25.py [--nodes 5000] [--queries 200] [--seed 7] [--neo4j-only]
    (with NEO4J_URI set, Neo4j too)

Builds an embedded store of one account (``--nodes`` nodes of 20-60 words drawn from a Zipf
distribution over 3,000 words), times ``fulltext_search`` (stemmed, top 20) for ``--queries``
searches of one to three words: FTS5's ``bm25()`` window, the one-account path. Then writes a
second account of as many nodes into the same file and times the first account's searches again,
interleaved per query with the statement the store ran before per-account statistics (FTS5's
``bm25()`` window over the whole index, which ranked with both accounts' statistics). On Neo4j
(NEO4J_URI), the same two accounts under fresh ids, the first's searches timed before and after
the second is written. ``--neo4j-only`` leaves the embedded store out: with ``PYTHONPATH`` on
another tree's ``plughost`` (its ``host/`` with ``plugins/`` linked in) it times that code's
Neo4j search on the same corpus. Prints p50 / p95 in ms per case and how many searches matched.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plughost import Guards


class _Skip(Exception):
    """--neo4j-only: the embedded part is left out."""


def corpus(rng: random.Random, n: int, vocab: list[str], weights: list[float]) -> list[str]:
    return [" ".join(rng.choices(vocab, weights, k=rng.randint(20, 60))) for _ in range(n)]


def fill(store: Any, account: str, texts: list[str]) -> None:
    g = Guards(account_id=account)
    for start in range(0, len(texts), 500):
        store.upsert_many([{"labels": ["Note"], "properties": {"body": t}} for t in texts[start:start + 500]], guards=g)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000.0, out


def line(name: str, ms: list[float], hits: int) -> None:
    p95 = sorted(ms)[max(0, int(len(ms) * 0.95) - 1)]
    print(f"[account_bm25] case={name} p50_ms={statistics.median(ms):.2f} p95_ms={p95:.2f} "
          f"searches={len(ms)} with_hits={hits}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--neo4j-only", action="store_true", help="leave the embedded store out")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    vocab = [f"word{i}" for i in range(3000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    mine, theirs = corpus(rng, args.nodes, vocab, weights), corpus(rng, args.nodes, vocab, weights)
    queries = [" ".join(rng.choices(vocab, weights, k=rng.randint(1, 3))) for _ in range(args.queries)]
    k = 20

    from plughost.plugins.graph.common import fts_terms
    from plughost.plugins.graph.sqlite_store import SqliteStore

    home = Path(tempfile.mkdtemp(prefix="plughost-bench-acct-"))
    try:
        if args.neo4j_only:
            raise _Skip
        a = SqliteStore(home / "graph.sqlite", env={"ACCOUNT_ID": "acct-a"})
        b = SqliteStore(home / "graph.sqlite", env={"ACCOUNT_ID": "acct-b"})
        g = Guards(account_id="acct-a")
        fill(a, "acct-a", mine)
        for q in queries[:20]:  # warm-up
            a.fulltext_search(q, k, guards=g, stemmed=True)
        ms, hits = [], 0
        for q in queries:
            t, out = timed(lambda q=q: a.fulltext_search(q, k, guards=g, stemmed=True))
            ms.append(t)
            hits += bool(out)
        line(f"embedded one-account nodes={args.nodes}", ms, hits)
        fill(b, "acct-b", theirs)
        for q in queries[:20]:
            a.fulltext_search(q, k, guards=g, stemmed=True)
        new, old, hits = [], [], 0
        for q in queries:
            t, out = timed(lambda q=q: a.fulltext_search(q, k, guards=g, stemmed=True))
            new.append(t)
            hits += bool(out)

            def before(q: str = q) -> Any:
                with a._snapshot():
                    return a._fts_window("node_text_stem", fts_terms(q), k, g, ("n.account_id = ? AND n.deleted_at IS NULL",
                                                                                ["acct-a"]), ("", []), None)
            old.append(timed(before)[0])
        line(f"embedded two-accounts per-account nodes={args.nodes}+{args.nodes}", new, hits)
        line(f"embedded two-accounts whole-index-bm25 (before) nodes={args.nodes}+{args.nodes}", old, hits)
        a.close()
        b.close()
    except _Skip:
        pass
    finally:
        shutil.rmtree(home, ignore_errors=True)

    if os.environ.get("NEO4J_URI"):
        from plughost.plugins.graph.neo4j_store import Neo4jStore

        ids = [f"bench-acct-{uuid.uuid4().hex[:8]}" for _ in range(2)]
        env = {key: v for key, v in os.environ.items() if key.startswith("NEO4J_")}
        stores = [Neo4jStore.from_env({**env, "ACCOUNT_ID": acct}) for acct in ids]
        try:
            g = Guards(account_id=ids[0])
            for case, texts, store, acct in (("one-account", mine, stores[0], ids[0]),
                                             ("two-accounts", theirs, stores[1], ids[1])):
                fill(store, acct, texts)
                for q in queries[:20]:
                    stores[0].fulltext_search(q, k, guards=g)
                ms, hits = [], 0
                for q in queries:
                    t, out = timed(lambda q=q: stores[0].fulltext_search(q, k, guards=g))
                    ms.append(t)
                    hits += bool(out)
                line(f"neo4j {case} nodes={args.nodes}" + (f"+{args.nodes}" if case == "two-accounts" else ""), ms, hits)
        finally:
            for s, acct in zip(stores, ids, strict=True):
                s.wipe_account(acct)
                s.close()
    else:
        print("[account_bm25] neo4j=skipped reason=no-NEO4J_URI", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
