"""Retrieval quality of memory-search on two evaluation sets, per configuration of the pipeline.

    apt-get install -y manpages manpages-dev      # plus whatever pages the machine already has
    pip install -e '.[dev,embed]'                 # the local embedder (all-MiniLM-L6-v2 int8)
    python bench/retrieval_quality.py [--set manpages|conversations|all] [--work DIR] [--grid]

* ``manpages``: known-item search over the installed manual pages (query = a page's NAME line,
  the one relevant document = its DESCRIPTION, ≤ 1,200 chars), see ``bench/manpages.py``.
* ``conversations``: turn-level evidence retrieval over generated multi-session, multi-speaker
  conversations with planted facts and paraphrased questions, see ``bench/conversations.py``.
  The sessions go in through ``memory import`` (Conversation + Message nodes, HAS_MESSAGE
  edges), which gives each turn its indexed form (``PLUGHOST_MESSAGE_CONTEXT_TURNS``); one
  store per context setting.

Every query runs through the memory-search pipeline once per configuration; nDCG@10, R@5, R@10
and MRR@10 are printed, then the acceptance lines: the best hybrid against the best single path
(BM25 alone, stemmed BM25 alone, vector alone) and against a stemmed Okapi BM25 implemented
here (Snowball English stemmer, the same stop words, k1 1.2, b 0.75, over the bare turn or
page text). ``--grid`` also sweeps the fusion weights, RRF k and candidate pool. Nothing derived
is committed; the stores and embeddings are kept between runs in a work dir (``--work``, default
``~/.cache/plughost/bench-quality``), named by a digest of their content, so a second run on the
same pages and seed only searches.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ACCOUNT = "bench-quality"
OFF = {"PLUGHOST_GS_STEM": "0", "PLUGHOST_GS_STOPWORDS": "0", "PLUGHOST_GS_NORMALIZE": "0", "PLUGHOST_GS_RRF": "0",
       "PLUGHOST_GS_DEDUP": "0", "PLUGHOST_GS_BOOSTS": "0", "PLUGHOST_GS_EXPANSION": "0", "PLUGHOST_GS_ROUTE": "0",
       "PLUGHOST_GS_CANDIDATES": "50", "PLUGHOST_GS_VECTOR_WEIGHT": "0.7", "PLUGHOST_GS_RRF_K": "60",
       "PLUGHOST_GS_NEIGHBOURS": "0", "PLUGHOST_GS_NEIGHBOURS_BACK": "0"}
"""The SPEC 9.4 baseline, spelled out: configurations below change only what they name."""
STEM = {"PLUGHOST_GS_STEM": "1", "PLUGHOST_GS_STOPWORDS": "1"}
SHIPPED_FUSION = {**STEM, "PLUGHOST_GS_NORMALIZE": "1", "PLUGHOST_GS_VECTOR_WEIGHT": "0.5", "PLUGHOST_GS_CANDIDATES": "100"}

CONFIGS: list[tuple[str, dict[str, str]]] = [
    ("BM25 only (SPEC)", {"PLUGHOST_GS_PATHS": "bm25"}),
    ("BM25 stemmed", {"PLUGHOST_GS_PATHS": "bm25", "PLUGHOST_GS_STEM": "1"}),
    ("BM25 stemmed + stop words", {"PLUGHOST_GS_PATHS": "bm25", **STEM}),
    ("vector only", {"PLUGHOST_GS_PATHS": "vector"}),
    ("BM25 stemmed + stop words + neighbours 0.3", {"PLUGHOST_GS_PATHS": "bm25", **STEM, "PLUGHOST_GS_CANDIDATES": "100",
                                                   "PLUGHOST_GS_NEIGHBOURS": "0.3"}),
    ("vector only + neighbours 0.3", {"PLUGHOST_GS_PATHS": "vector", "PLUGHOST_GS_NORMALIZE": "1",
                                      "PLUGHOST_GS_CANDIDATES": "100", "PLUGHOST_GS_NEIGHBOURS": "0.3"}),
    ("baseline weighted 0.7/0.3 (SPEC)", {}),
    ("RRF k=60 (SPEC flag)", {"PLUGHOST_GS_RRF": "1"}),
    ("normalised weighted", {"PLUGHOST_GS_NORMALIZE": "1"}),
    ("stem+stop, weighted 0.7/0.3", {**STEM}),
    ("stem+stop, RRF k=60", {**STEM, "PLUGHOST_GS_RRF": "1"}),
    ("stem+stop, normalised 0.7/0.3", {**STEM, "PLUGHOST_GS_NORMALIZE": "1"}),
    ("stem+stop, normalised 0.5/0.5, pool 100", {**STEM, "PLUGHOST_GS_NORMALIZE": "1",
                                                 "PLUGHOST_GS_VECTOR_WEIGHT": "0.5", "PLUGHOST_GS_CANDIDATES": "100"}),
    ("stem+stop, RRF k=20, pool 100", {**STEM, "PLUGHOST_GS_RRF": "1", "PLUGHOST_GS_RRF_K": "20",
                                       "PLUGHOST_GS_CANDIDATES": "100"}),
    ("stem+stop, normalised 0.5/0.5, pool 200", {**STEM, "PLUGHOST_GS_NORMALIZE": "1",
                                                 "PLUGHOST_GS_VECTOR_WEIGHT": "0.5", "PLUGHOST_GS_CANDIDATES": "200"}),
    ("shipped fusion + neighbours 0.3", {**SHIPPED_FUSION, "PLUGHOST_GS_NEIGHBOURS": "0.3"}),
    ("shipped fusion + neighbours 0.5", {**SHIPPED_FUSION, "PLUGHOST_GS_NEIGHBOURS": "0.5"}),
    ("shipped fusion + neighbours 0.3, back 0.2", {**SHIPPED_FUSION, "PLUGHOST_GS_NEIGHBOURS": "0.3",
                                                   "PLUGHOST_GS_NEIGHBOURS_BACK": "0.2"}),
    ("shipped fusion + neighbours 0.3, pool 200", {**SHIPPED_FUSION, "PLUGHOST_GS_NEIGHBOURS": "0.3",
                                                   "PLUGHOST_GS_CANDIDATES": "200"}),
    ("stem+stop, RRF k=60 + neighbours 0.3", {**STEM, "PLUGHOST_GS_RRF": "1", "PLUGHOST_GS_NEIGHBOURS": "0.3",
                                             "PLUGHOST_GS_CANDIDATES": "100"}),
    ("defaults (no PLUGHOST_GS_* set)", None),  # type: ignore[list-item]
]
SINGLE = ("BM25 only (SPEC)", "BM25 stemmed", "BM25 stemmed + stop words", "vector only",
          "BM25 stemmed + stop words + neighbours 0.3", "vector only + neighbours 0.3")
"""Single paths: one retrieval path, no fusion (the neighbour stage on one path counts as single)."""
GRID_WEIGHTS = ("0.2", "0.3", "0.4", "0.5", "0.6")
GRID_RRF_K = ("10", "30", "60")
GRID_POOL = ("100", "200")


class CachedEmbedder:
    """The real embedder behind a text → vector table kept on disk (``--work``)."""

    def __init__(self, inner, path: Path | None):
        self.inner, self.path = inner, path
        self.name, self.dimensions = inner.name, inner.dimensions
        self.table: dict[str, list[float]] = {}
        self.seconds, self.count = 0.0, 0
        if path and path.is_file():
            self.table = json.loads(path.read_text())

    def embed(self, texts):
        missing = list(dict.fromkeys(t for t in texts if t not in self.table))
        for i in range(0, len(missing), 64):
            part = missing[i:i + 64]
            started = time.perf_counter()
            for t, v in zip(part, self.inner.embed(part), strict=True):
                self.table[t] = [round(float(x), 7) for x in v]
            self.seconds += time.perf_counter() - started
            self.count += len(part)
        return [self.table[t] for t in texts]

    def save(self) -> None:
        if self.path:
            self.path.write_text(json.dumps(self.table))


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {"nDCG@10": sum(1 / math.log2(r + 1) for r in ranks if r and r <= 10) / n,
            "R@5": sum(1 for r in ranks if r and r <= 5) / n,
            "R@10": sum(1 for r in ranks if r and r <= 10) / n,
            "MRR@10": sum(1 / r for r in ranks if r and r <= 10) / n}


class OkapiBM25:
    """The bench's own stemmed BM25 reference (Snowball English, stop words out, k1 1.2, b 0.75)."""

    def __init__(self, docs: dict[str, str], k1: float = 1.2, b: float = 0.75):
        import snowballstemmer

        from plugins.memory.retrieval.keyterms import STOP_WORDS

        self.stem = snowballstemmer.stemmer("english").stemWord
        self.stop = STOP_WORDS
        self.k1, self.b = k1, b
        self.postings: dict[str, dict[str, int]] = {}
        self.length: dict[str, int] = {}
        for did, text in docs.items():
            terms = self.terms(text)
            self.length[did] = len(terms)
            for term, tf in Counter(terms).items():
                self.postings.setdefault(term, {})[did] = tf
        self.avg = sum(self.length.values()) / max(1, len(self.length))
        self.n = len(docs)

    def terms(self, text: str) -> list[str]:
        import re

        return [self.stem(w) for w in re.findall(r"[^\W_]+", text.lower()) if w not in self.stop]

    def search(self, query: str, k: int = 10) -> list[str]:
        scores: dict[str, float] = {}
        for term in set(self.terms(query)):
            docs = self.postings.get(term)
            if not docs:
                continue
            idf = math.log(1 + (self.n - len(docs) + 0.5) / (len(docs) + 0.5))
            for did, tf in docs.items():
                norm = tf + self.k1 * (1 - self.b + self.b * self.length[did] / self.avg)
                scores[did] = scores.get(did, 0.0) + idf * tf * (self.k1 + 1) / norm
        return sorted(scores, key=lambda d: (-scores[d], d))[:k]


def open_store(path: Path, dims: int):
    from plugins.graph.sqlite_store import SqliteStore

    return SqliteStore(path, env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": str(dims)})


def manpage_set(work: Path, embedder: CachedEmbedder, args) -> tuple[dict, list[tuple[str, str]], dict[str, str]]:
    """{name: store}, [(query, relevant id)], {id: bare text} for the man pages."""
    import manpages

    from host.graph import Guards
    from plugins.memory.bulk_import import import_jsonl

    pages = list(manpages.pages())
    if args.pages and args.pages < len(pages):
        pages = random.Random(args.seed).sample(pages, args.pages)
    ids = [f"man:{p.name}.{p.section}" for p in pages]
    digest = hashlib.sha256("\x00".join(i + p.document for i, p in zip(ids, pages, strict=True)).encode()).hexdigest()[:8]
    store = open_store(work / f"manpages-{len(pages)}-{digest}.sqlite", embedder.dimensions)
    if store.count(guards=Guards(ACCOUNT)) != len(pages):
        jsonl = work / "pages.jsonl"
        # a KnowledgeDocument embeds its summary (else its title): a page is embedded by its text
        vectors = embedder.embed([p.document for p in pages])
        embedder.save()
        with open(jsonl, "w", encoding="utf-8") as fh:
            for nid, page, vector in zip(ids, pages, vectors, strict=True):
                fh.write(json.dumps({"id": nid, "labels": ["KnowledgeDocument"],
                                     "properties": {"title": f"{page.name}({page.section})",
                                                    "content": page.document}, "embedding": vector}) + "\n")
        import_jsonl(store, embedder, jsonl, account_id=ACCOUNT, progress=False)
        jsonl.unlink()
    evaluated = list(zip((p.query for p in pages), ids, strict=True))
    if args.queries and args.queries < len(evaluated):
        evaluated = random.Random(args.seed + 1).sample(evaluated, args.queries)
    print(f"manpages: {len(pages)} pages from {manpages.MAN_ROOT}, {len(evaluated)} queries")
    return {"": store}, evaluated, {nid: f"{p.name}({p.section}) {p.document}" for nid, p in zip(ids, pages, strict=True)}


def conversation_set(work: Path, embedder: CachedEmbedder, args) -> tuple[dict, list[tuple[str, str]], dict[str, str]]:
    """One store per context setting, imported through memory import; the questions; the bare turns."""
    import conversations

    from host.graph import Guards
    from plugins.memory.bulk_import import import_jsonl

    data = conversations.build(seed=args.seed)
    digest = hashlib.sha256("\x00".join(t.id + t.speaker + t.text + t.at.isoformat()
                                      for t in data.turns).encode()).hexdigest()[:8]
    stores = {}
    settings = [(turns, mode) for turns in args.context for mode in (args.embed if turns else ["turn"])]
    for turns, mode in settings:
        store = open_store(work / f"conversations-{digest}-c{turns}-{mode}.sqlite", embedder.dimensions)
        if store.count(guards=Guards(ACCOUNT), labels=["Message"]) != len(data.turns):
            jsonl = work / "conversations.jsonl"
            with open(jsonl, "w", encoding="utf-8") as fh:
                for sid, session in data.sessions.items():
                    for t in session:
                        fh.write(json.dumps({"id": t.id, "labels": ["Message"], "properties": {
                            "role": "assistant" if t.speaker == "assistant" else "user", "sender": t.speaker,
                            "text": t.text, "conversationId": sid, "sentAt": t.at.isoformat() + "Z"}}) + "\n")
                    fh.write(json.dumps({"id": sid, "labels": ["Conversation"],
                                         "properties": {"title": f"chat {sid}", "startedAt": session[0].at.isoformat()},
                                         "edges": [{"type": "HAS_MESSAGE", "to": t.id} for t in session]}) + "\n")
            os.environ["PLUGHOST_MESSAGE_CONTEXT_TURNS"] = str(turns)
            os.environ["PLUGHOST_MESSAGE_EMBED"] = mode
            started = time.perf_counter()
            import_jsonl(store, embedder, jsonl, account_id=ACCOUNT, progress=False)
            print(f"  imported {len(data.turns)} turns (context {turns}, embed {mode}) in "
                  f"{time.perf_counter() - started:.1f} s")
            jsonl.unlink()
        stores[f"context {turns}, embed {mode}" if turns else "context 0"] = store
    kinds = Counter(q.kind for q in data.questions)
    print(f"conversations: {len(data.sessions)} sessions, {len(data.turns)} turns, {len(data.questions)} questions "
          f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}); seed {args.seed}")
    return stores, [(q.text, q.answer) for q in data.questions], {t.id: t.text for t in data.turns}


def run(store, evaluated, embedder, env: dict[str, str] | None) -> tuple[dict[str, float], float]:
    from host.graph import Guards
    from plugins.memory.retrieval import SearchFlags, SearchRequest, search
    from plugins.memory.retrieval.expand import rule_based

    flags = SearchFlags.from_env({} if env is None else {**OFF, **env})
    ranks: list[int | None] = []
    started = time.perf_counter()
    for query, relevant in evaluated:
        out = search(store, SearchRequest(query, limit=10, expand_hops=0), guards=Guards(ACCOUNT), embedder=embedder,
                     flags=flags, expander=rule_based, emit_log=False)
        ids = [r.id for r in out.rows]
        ranks.append(ids.index(relevant) + 1 if relevant in ids else None)
    return metrics(ranks), (time.perf_counter() - started) * 1000 / max(1, len(evaluated))


def row(name: str, m: dict[str, float], ms: float | None = None) -> str:
    cells = " | ".join(f"{m[k]:.4f}" for k in ("nDCG@10", "R@5", "R@10", "MRR@10"))
    return f"| {name} | {cells} | {'' if ms is None else f'{ms:.1f}'} |"


TARGETS: list[str] = []


def evaluate(set_name: str, stores: dict, evaluated, docs: dict[str, str], embedder, args) -> dict:
    from plugins.memory.retrieval.indexed_form import DEFAULT_EMBED, DEFAULT_TURNS

    shipped_form = f"context {DEFAULT_TURNS}, embed {DEFAULT_EMBED}" if set_name == "conversations" else ""
    target = f"{set_name} target: no defaults row"
    embedder.embed([q for q, _ in evaluated])  # query vectors up front, once
    embedder.save()
    reference = OkapiBM25(docs)
    ref = metrics([(lambda ids, rel: ids.index(rel) + 1 if rel in ids else None)(reference.search(q), rel)
                   for q, rel in evaluated])
    results: dict[str, dict[str, float]] = {}
    print(f"\n### {set_name}\n")
    print("| configuration | nDCG@10 | R@5 | R@10 | MRR@10 | ms/query |")
    print("|---|---|---|---|---|---|")
    print(row("bench reference: Okapi BM25, Snowball-stemmed, stop words", ref), flush=True)
    for store_name, store in stores.items():
        for name, env in CONFIGS:
            if args.configs and not name.startswith(tuple(args.configs)) and name not in SINGLE:
                continue
            label = f"{store_name}: {name}" if store_name else name
            m, ms = run(store, evaluated, embedder, env)
            results[label] = m
            print(row(label, m, ms), flush=True)
        if args.grid:
            for w in GRID_WEIGHTS:
                for pool in GRID_POOL:
                    env = {**STEM, "PLUGHOST_GS_NORMALIZE": "1", "PLUGHOST_GS_VECTOR_WEIGHT": w,
                           "PLUGHOST_GS_CANDIDATES": pool}
                    m, ms = run(store, evaluated, embedder, env)
                    label = f"{store_name}: grid stem+stop, normalised w={w}, pool {pool}"
                    results[label] = m
                    print(row(label, m, ms), flush=True)
            for k in GRID_RRF_K:
                for pool in GRID_POOL[:1]:
                    env = {**STEM, "PLUGHOST_GS_RRF": "1", "PLUGHOST_GS_RRF_K": k, "PLUGHOST_GS_CANDIDATES": pool}
                    m, ms = run(store, evaluated, embedder, env)
                    label = f"{store_name}: grid stem+stop, RRF k={k}, pool {pool}"
                    results[label] = m
                    print(row(label, m, ms), flush=True)
    print()
    singles = {n: m for n, m in results.items() if n.split(": ", 1)[-1] in SINGLE}
    single_name = max(singles, key=lambda n: (singles[n]["R@5"], singles[n]["nDCG@10"]))
    print(f"{set_name} single paths (R@5): " + "; ".join(f"{n} {m['R@5']:.4f}" for n, m in singles.items()))
    hybrid = {n: m for n, m in results.items() if n not in singles}
    best_name = max(hybrid, key=lambda n: (hybrid[n]["R@5"], hybrid[n]["nDCG@10"]))
    defaults = [n for n in results if n.endswith("defaults (no PLUGHOST_GS_* set)")]
    for what, name in [("best hybrid", best_name)] + [("defaults", n) for n in defaults]:
        m = results[name]
        gain = (m["R@5"] / max(results[single_name]["R@5"], 1e-9) - 1) * 100
        if what == "defaults" and name == (f"{shipped_form}: " if shipped_form else "") + defaults[0].split(": ")[-1]:
            ok = gain >= 15 if set_name == "conversations" else m["nDCG@10"] >= 0.81
            goal = "hybrid R@5 >= 1.15x the best single path" if set_name == "conversations" else "nDCG@10 >= 0.81"
            target = (f"{set_name} target ({goal}): defaults R@5 {m['R@5']:.4f}, nDCG@10 {m['nDCG@10']:.4f}, "
                      f"{gain:+.1f}% over {single_name} -> {'PASS' if ok else 'MISS'}")
        print(f"{set_name} {what}: {name}: R@5 {m['R@5']:.4f} nDCG@10 {m['nDCG@10']:.4f}; best single path "
              f"(any index form) {single_name} R@5 {results[single_name]['R@5']:.4f} ({gain:+.1f}%); bench stemmed "
              f"BM25 R@5 {ref['R@5']:.4f} ({(m['R@5'] / max(ref['R@5'], 1e-9) - 1) * 100:+.1f}%)")
    print(target)
    TARGETS.append(target)
    return results
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=("manpages", "conversations", "all"), default="all")
    ap.add_argument("--pages", type=int, default=None, help="sample this many man pages (default: every usable page)")
    ap.add_argument("--queries", type=int, default=None, help="evaluate a sample of this many man-page queries")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--context", type=lambda s: [int(x) for x in s.split(",")], default=None,
                    help="conversation context settings to compare, e.g. 0,2 (default: 0 and the shipped default)")
    ap.add_argument("--embed", type=lambda s: s.split(","), default=None,
                    help="Message embedding forms to compare: context,turn (default: the shipped one)")
    ap.add_argument("--configs", type=lambda s: s.split(","), default=None,
                    help="only the configurations whose names start with one of these (comma list)")
    ap.add_argument("--work", type=Path, default=None, help="keep the stores and embeddings here between runs")
    ap.add_argument("--grid", action="store_true", help="also sweep fusion weights, RRF k and the candidate pool")
    args = ap.parse_args()

    work = args.work or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "plughost" / "bench-quality"
    work.mkdir(parents=True, exist_ok=True)
    os.environ.update(PLUGHOST_HOME=str(work / "home"), PLUGHOST_LOG_FILE="0", ACCOUNT_ID=ACCOUNT)
    os.environ.setdefault("PLUGHOST_EMBEDDER", "local")
    from host.manager import Host
    from plugins.memory.retrieval.indexed_form import DEFAULT_EMBED, DEFAULT_TURNS

    args.context = args.context or sorted({0, DEFAULT_TURNS})
    args.embed = args.embed or list(dict.fromkeys([DEFAULT_EMBED, "context", "turn"]))
    host = Host(env=dict(os.environ)).load()
    inner = host.embedder()
    if inner is None:
        print("no embedder available (pip install -e '.[embed]'): vector configurations cannot run", file=sys.stderr)
        return 1
    key = hashlib.sha256(inner.name.encode()).hexdigest()[:8]
    embedder = CachedEmbedder(inner, work / f"vectors-{key}.json")
    started = time.perf_counter()
    try:
        if args.set in ("manpages", "all"):
            evaluate("manpages", *manpage_set(work, embedder, args), embedder, args)
        if args.set in ("conversations", "all"):
            evaluate("conversations", *conversation_set(work, embedder, args), embedder, args)
    finally:
        embedder.save()
        host.close()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for line in TARGETS:
        print(line)
    print(f"\nembedder: {inner.name} ({inner.dimensions} dims), {embedder.count} texts embedded in "
          f"{embedder.seconds:.1f} s this run; total {time.perf_counter() - started:.0f} s; work dir: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
