"""One ranking whichever store: the demo on the embedded store, migrated to Neo4j, asked the same
questions on both; the top-5 overlap per query. Then a large store migrated the same way.

    eval "$(bash scripts/neo4j/neo4j.sh start)"; export NEO4J_URI
    python bench/store_agreement.py [--work DIR] [--nodes 20000] [--queries 200]

Seeds the demo (``plughost demo``: the bakery's handbook, FAQ and three entities) in a fresh home
under a fresh account, runs ``plughost graph migrate --to neo4j --no-record`` (its verification
line is printed: top-5 overlap, the searched node found, the threshold, mismatches), then asks
each demo query of both stores twice: the store's full-text search alone (``fulltext_search``,
stemmed, top 5) and the whole ``memory search`` (the CLI, ``PLUGHOST_STORE=sqlite`` and
``neo4j``, top 5). The overlap of a query is the share of the embedded top 5 that Neo4j's top 5
holds; the target is a mean of at least :data:`TARGET` for both. The account is left in Neo4j
(a fresh id per run).

``--nodes N`` (default 20,000; 0 leaves it out): the synthetic store of ``bench/graph_store.py``
(``build_file``: N nodes, 3N edges, random words of a 700-word vocabulary, so ties are common)
imported into a second fresh home and migrated with ``plughost graph migrate --to neo4j`` as an
install is, recorded: its verification line (top-5 overlap, the node found, the rank correlation,
the same result sets, the thresholds) and whether it recorded are printed. Then ``--queries``
searches of one to three of its words on both stores: the mean top-5 overlap, the mean rank
correlation of the shared top 10 (Kendall's tau, :func:`plughost.plugins.graph.migrate.rank_correlation`)
and how many of the searches with fewer than 10 hits found the same set.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

QUERIES = ("opening hours", "wedding cakes", "delivery fee", "gluten-free bread", "pay by card", "parking",
           "bread orders for events", "Harbour Street Bakery")
"""The demo's questions: one per section of its documents, and its business's name."""
TARGET = 0.9


def cli(env: dict[str, str], *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "plughost.cli", *args], env=env, capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise SystemExit(f"store_agreement: plughost {' '.join(args[:2])} failed ({out.returncode}): "
                         f"{(out.stdout + out.stderr).strip()[-600:]}")
    return out.stdout + out.stderr


def overlap(here: list[str], there: list[str]) -> float:
    from plughost.plugins.graph.migrate import top_overlap

    return top_overlap(here, there)


def large(base: dict[str, str], nodes: int, queries: int) -> None:
    """The synthetic store of ``nodes`` nodes migrated and recorded; its searches on both stores."""
    from graph_store import build_file

    from plughost.plugins.graph.importer import import_jsonl
    from plughost.plugins.graph.migrate import by_score, rank_correlation, top_overlap
    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from plughost.plugins.graph.sqlite_store import SqliteStore
    from plughost.ports.graph import Guards

    home = Path(tempfile.mkdtemp(prefix="plughost-agreement-large-"))
    account = f"large-{uuid.uuid4().hex[:8]}"
    env = {**base, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": account}
    vocab = build_file(home / "nodes.jsonl", nodes, 3 * nodes, random.Random(42))
    embedded = SqliteStore(home / "graph.sqlite", env={"ACCOUNT_ID": account})
    summary = import_jsonl(embedded, home / "nodes.jsonl", guards=Guards(account), progress=False)
    embedded.close()
    migrated = cli({k: v for k, v in env.items() if k != "ACCOUNT_ID"}, "graph", "migrate", "--to", "neo4j")  # the operator
    print(f"\n{summary.nodes:,} nodes, {summary.edges:,} edges: home {home}, account {account}")
    print("\n".join(line for line in migrated.splitlines()
                    if "] verified" in line or "mismatch" in line or "] done" in line))
    g = Guards(account)
    embedded = SqliteStore(home / "graph.sqlite")
    neo = Neo4jStore.from_env({**env, "PLUGHOST_STORE": "neo4j"})
    rng = random.Random(7)
    overlaps, taus, same = {"as returned": [], "ties by id": []}, {"as returned": [], "ties by id": []}, []
    try:
        for _ in range(queries):
            q = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 3)))
            a = embedded.fulltext_search(q, 20, guards=g, stemmed=True)
            b = neo.fulltext_search(q, 20, guards=g, stemmed=True)
            for how, here, there in (("as returned", [h.node.id for h in a[:10]], [h.node.id for h in b[:10]]),
                                     ("ties by id", by_score(a)[:10], by_score(b)[:10])):
                overlaps[how].append(top_overlap(here, there))
                taus[how].append(rank_correlation(here, there))
            if len(a) < 10 or len(b) < 10:
                same.append({h.node.id for h in a} == {h.node.id for h in b})
    finally:
        neo.close()
        embedded.close()
    print(f"{queries} searches of 1-3 of its words; the same result set for {sum(same)}/{len(same)} of those "
          "with fewer than 10 hits")
    for how in overlaps:
        o, t = overlaps[how], taus[how]
        print(f"  {how}: full-text top-5 overlap {sum(o) / len(o):.3f} (min {min(o):.2f}), "
              f"rank correlation of the shared top 10 {sum(t) / len(t):.3f} (min {min(t):.2f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=None, help="the home to seed (default: a fresh temporary one)")
    ap.add_argument("--nodes", type=int, default=20_000, help="the large store's nodes (0: leave it out)")
    ap.add_argument("--queries", type=int, default=200, help="searches asked of the large store on both sides")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    if not os.environ.get("NEO4J_URI"):
        print("store_agreement: NEO4J_URI is not set; start a server: "
              'eval "$(bash scripts/neo4j/neo4j.sh start)"; export NEO4J_URI', file=sys.stderr)
        return 2
    home = args.work or Path(tempfile.mkdtemp(prefix="plughost-agreement-"))
    account = f"demo-{uuid.uuid4().hex[:8]}"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PLUGHOST_GS_", "CLAUDE"))}
    base.update(PLUGHOST_HOME=str(home), PLUGHOST_LOG_FILE="0", ACCOUNT_ID=account, PLUGHOST_STORE="sqlite")
    base.setdefault("PLUGHOST_EMBEDDER", "local")
    cli(base, "demo", "--account", account)
    migrated = cli(base, "graph", "migrate", "--to", "neo4j", "--no-record")
    print(f"home {home}, account {account}")
    print("\n".join(line for line in migrated.splitlines() if "verified" in line or "mismatch" in line))

    from plughost.plugins.graph.neo4j_store import Neo4jStore
    from plughost.plugins.graph.sqlite_store import SqliteStore
    from plughost.ports.graph import Guards

    g = Guards(account)
    embedded = SqliteStore(home / "graph.sqlite")
    neo = Neo4jStore.from_env({**base, "PLUGHOST_STORE": "neo4j"})
    rows, text_mean, search_mean = [], 0.0, 0.0
    try:
        for q in QUERIES:
            here = [h.node.id for h in embedded.fulltext_search(q, 5, guards=g, stemmed=True)]
            there = [h.node.id for h in neo.fulltext_search(q, 5, guards=g, stemmed=True)]
            ranked = {}
            for store in ("sqlite", "neo4j"):
                out = cli({**base, "PLUGHOST_STORE": store}, "memory", "search", q, "--limit", "5", "--json",
                          "--expand-hops", "0")
                ranked[store] = [r["id"] for r in json.loads(out[out.index("{"):out.rindex("}") + 1])["results"]]
            t, s = overlap(here, there), overlap(ranked["sqlite"], ranked["neo4j"])
            text_mean += t / len(QUERIES)
            search_mean += s / len(QUERIES)
            rows.append(f"| {q} | {len(here)} / {len(there)} | {t:.2f} | {s:.2f} |")
    finally:
        neo.close()
        embedded.close()
    print("\n| query | full-text hits (embedded / neo4j) | full-text top-5 overlap | memory search top-5 overlap |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    print(f"| mean | | {text_mean:.2f} | {search_mean:.2f} |")
    print(f"\ntarget: a mean top-5 overlap of at least {TARGET}: full-text "
          f"{'met' if text_mean >= TARGET else 'NOT met'}, memory search {'met' if search_mean >= TARGET else 'NOT met'}")
    if args.nodes > 0:
        large(base, args.nodes, args.queries)
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("store_agreement", main))
