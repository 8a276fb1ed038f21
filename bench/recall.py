"""Recall tracking's effect on ranking, on the retrieval-quality man-page set.

    python bench/recall.py [--pages 600] [--history 200] [--fresh 200] [--repeats 3] [--work DIR]

The man-page set of ``bench/retrieval_quality.py`` (query = a page's NAME line, the relevant
document = its DESCRIPTION). A busy day is simulated on the *history* queries: each is asked
``--repeats`` times in its own session, surfacing shows the top 4 results (recorded exactly as
the hook records them), and the reply uses the relevant page when it was shown (recorded as the
Stop hook records it). ``plughost memory recall``'s candidates are then all accepted: pin
candidates pinned, snooze candidates snoozed. nDCG@10 and MRR@10 are measured with
``PLUGHOST_RECALL_RANKING`` off and on, on the history queries asked again and on *fresh*
queries that never had a history (where snoozes could only hurt).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import tempfile
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=600)
    ap.add_argument("--history", type=int, default=200)
    ap.add_argument("--fresh", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--work", type=Path, default=None, help="keep the store and embeddings here between runs")
    bench_results.add_flag(ap)
    args = ap.parse_args()

    work = (args.work or Path(tempfile.mkdtemp(prefix="plughost-bench-recall-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    home = work / f"home-{os.getpid()}"
    os.environ.update(PLUGHOST_HOME=str(home), PLUGHOST_LOG_FILE="0")
    os.environ.setdefault("PLUGHOST_EMBEDDER", "local")
    import retrieval_quality as rq

    os.environ["ACCOUNT_ID"] = rq.ACCOUNT
    from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
    from plughost.plugins.memory.surfacing import recall, sessions
    from plughost.ports.graph import Guards
    from plughost.runtime.host import Host

    host = Host(env=dict(os.environ)).load()
    inner = host.embedder()
    if inner is None:
        print("no embedder (pip install -e '.[embed]')", file=sys.stderr)
        return 1
    key = hashlib.sha256(inner.name.encode()).hexdigest()[:8]
    embedder = rq.CachedEmbedder(inner, work / f"vectors-{key}.json")
    ns = argparse.Namespace(pages=args.pages, queries=None, seed=args.seed)
    stores, evaluated, _docs = rq.manpage_set(work, embedder, ns)
    store = stores[""]
    embedder.save()
    rng = random.Random(args.seed)
    rng.shuffle(evaluated)
    hist, fresh = evaluated[: args.history], evaluated[args.history: args.history + args.fresh]
    guards = Guards(rq.ACCOUNT)
    base_flags = SearchFlags.from_env(rq.OFF)

    def ranked(query: str, flags: SearchFlags, boosts: list) -> list[str]:
        out = search(store, SearchRequest(query, limit=10, expand_hops=0), guards=guards, embedder=embedder,
                     flags=flags, extra_boosts=boosts, emit_log=False)
        return [r.id for r in out.rows]

    # the simulated day: surfaced = top 4; the reply uses the relevant page when it was shown
    for r in range(args.repeats):
        for i, (query, relevant) in enumerate(hist):
            shown = ranked(query, base_flags, [])[:4]
            path = sessions.session_path(home, rq.ACCOUNT, f"day-{r}-{i}")
            sessions.append(path, {"query": query, "base": query, "items": shown,
                                   "shown": {s: {"title": s, "text": ""} for s in shown}})
            if relevant in shown:
                sessions.append(path, {"used": [relevant], "candidates": len(shown)})
    found = recall.candidates(home, rq.ACCOUNT, min_surfaced=args.repeats, min_used=2, limit=100_000)
    recall.decide(home, rq.ACCOUNT, [h["id"] for h in found["pin"]], "pinned")
    recall.decide(home, rq.ACCOUNT, [h["id"] for h in found["snooze"]], "snoozed")
    on_flags = SearchFlags.from_env({**rq.OFF, "PLUGHOST_GS_BOOSTS": "1"})
    boosts = [recall.boost(home, rq.ACCOUNT)]

    def measure(queries: list[tuple[str, str]], on: bool) -> dict[str, float]:
        ranks = []
        for query, relevant in queries:
            ids = ranked(query, on_flags if on else base_flags, boosts if on else [])
            ranks.append(ids.index(relevant) + 1 if relevant in ids else None)
        return rq.metrics(ranks)

    rows = [("history queries, recall ranking off", measure(hist, False)),
            ("history queries, recall ranking on", measure(hist, True)),
            ("fresh queries, recall ranking off", measure(fresh, False)),
            ("fresh queries, recall ranking on", measure(fresh, True))]
    embedder.save()
    host.close()
    print(f"\n{len(hist)} history queries asked {args.repeats}x (top 4 surfaced), {len(fresh)} fresh queries; "
          f"{len(found['pin'])} pinned, {len(found['snooze'])} snoozed from plughost memory recall's candidates")
    print("| configuration | nDCG@10 | R@5 | R@10 | MRR@10 |")
    print("|---|---|---|---|---|")
    for name, m in rows:
        print(f"| {name} | {m['nDCG@10']:.4f} | {m['R@5']:.4f} | {m['R@10']:.4f} | {m['MRR@10']:.4f} |")
    h_off, h_on, f_off, f_on = (m["nDCG@10"] for _, m in rows)
    print(f"\nhistory nDCG@10 {h_off:.4f} -> {h_on:.4f} ({(h_on / h_off - 1) * 100:+.1f}%); "
          f"fresh {f_off:.4f} -> {f_on:.4f} ({(f_on / f_off - 1) * 100:+.1f}%)")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; work dir: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("recall", main))
