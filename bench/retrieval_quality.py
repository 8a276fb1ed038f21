"""Retrieval quality of memory-search on three evaluation sets, per configuration of the pipeline.

    apt-get install -y manpages manpages-dev      # plus whatever pages the machine already has
    apt-get install -y debian-faq                 # the realtext set's passages
    pip install -e '.[dev,embed]'  # the local embedder; dev carries snowballstemmer (the bench's reference BM25)
    python bench/retrieval_quality.py [--set manpages|conversations|realtext|all|a,b] [--seeds 22,23] [--grid]

* ``manpages``: known-item search over the installed manual pages (query = a page's NAME line,
  the one relevant document = its DESCRIPTION, <= 1,200 chars), see ``bench/manpages.py``; every
  page and every query. Measured: the single paths, the baseline (docs/retrieval.md#baseline) and the defaults.
* ``conversations``: turn-level evidence retrieval over generated multi-session, multi-speaker
  conversations with planted facts and paraphrased questions, see ``bench/conversations.py``.
  The sessions go in through ``memory import`` (Conversation + Message nodes, HAS_MESSAGE
  edges), which gives each turn its indexed form (``PLUGHOST_MESSAGE_CONTEXT_TURNS``,
  ``PLUGHOST_MESSAGE_EMBED``); one store per form. The first seed is the tuning set (the stages
  one by one, ``--grid``); the others are built the same way with other sessions, speakers and
  questions and are held out: only the single paths, the baseline and the defaults run
  there, then every seed together. Each seed also has 60 multi-hop questions (two facts said in
  two sessions, both turns the evidence).
* ``realtext``: passage retrieval over real text not written by us: the Debian FAQ of the
  installed ``debian-faq`` package, cut into passages (see ``bench/realtext.py``), imported as
  KnowledgeDocument nodes (the FAQ is not threaded, so not as Messages), with hand-written
  questions and their evidence passages in ``bench/data/realtext_questions.json``: single,
  multi-hop (two or more passages), temporal and open-domain (an inference from a passage). Only
  the single paths, the baseline and the defaults run: it is a development set, nothing is tuned
  on it.

A question may have several evidence items (multi-hop): R@k is the fraction of its evidence found
in the top k, averaged over questions (the plain hit rate for one item), nDCG@10 has every
evidence item relevant (ideal DCG over min(items, 10)), MRR@10 is the first evidence item's rank.
Every question carries a type (the man pages are all ``single``): after each set's table comes a
per-type table for every configuration (type, questions, R@5, R@10, and "all@5", the share of
questions whose every evidence item is in the top 5).

Each query runs through the real memory-search pipeline once per configuration, in this process,
with every query vector embedded up front in batches; the store's answers are memoised per query
(configurations asking the same search share it, see :class:`MemoStore`; ``--no-memo`` turns
that off). nDCG@10, R@5, R@10 and MRR@10 are printed per configuration, then one acceptance line
per set (on realtext a comparison only, no target): the defaults against the best single path (BM25, stemmed BM25, vector, over any index
form) and against a stemmed Okapi BM25 implemented here (Snowball English stemmer, the same stop
words, k1 1.2, b 0.75, over the bare turn or page text). Nothing derived is committed; the
stores and embeddings are kept between runs in a work dir (``--work``, default
``~/.cache/plughost/bench-quality``), named by a digest of their content, so a second run on the
same pages and seeds only searches.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ACCOUNT = "bench-quality"
OFF = {"PLUGHOST_GS_STEM": "0", "PLUGHOST_GS_STOPWORDS": "0", "PLUGHOST_GS_NORMALIZE": "0", "PLUGHOST_GS_RRF": "0",
       "PLUGHOST_GS_DEDUP": "0", "PLUGHOST_GS_BOOSTS": "0", "PLUGHOST_GS_EXPANSION": "0", "PLUGHOST_GS_ROUTE": "0",
       "PLUGHOST_GS_CANDIDATES": "50", "PLUGHOST_GS_VECTOR_WEIGHT": "0.7", "PLUGHOST_GS_RRF_K": "60",
       "PLUGHOST_GS_NEIGHBOURS": "0", "PLUGHOST_GS_NEIGHBOURS_BACK": "0", "PLUGHOST_GS_SPEAKER": "0",
       "PLUGHOST_GS_SESSION": "0", "PLUGHOST_GS_MESSAGE_WEIGHT": "1", "PLUGHOST_GS_DATES": "0"}
"""The baseline (docs/retrieval.md#baseline), spelled out: configurations below change only what they name."""
STEM = {"PLUGHOST_GS_STEM": "1", "PLUGHOST_GS_STOPWORDS": "1"}
DEFAULTS = "defaults (no PLUGHOST_GS_* set)"
ENTITY_FORM = " + entities"
"""The store name suffix of the form whose turns' entities were written (``--entities``)."""
ENTITIES = "defaults + entities (PLUGHOST_GS_ENTITIES=1)"


def _shipped(key: str) -> str:
    from plughost.plugins.memory.retrieval.flags import SETTINGS

    return str(SETTINGS[key].default)  # the shipped value, also where it is the baseline's


def _pool() -> str:
    return _shipped("candidates")


def single_configs(set_name: str) -> list[tuple[str, dict[str, str]]]:
    """One retrieval path, no fusion. On conversations the neighbour stage on one path counts as
    single too (over the shipped pool, so a hybrid is never compared with a smaller pool)."""
    out = [("BM25 (baseline)", {"PLUGHOST_GS_PATHS": "bm25"}),
           ("BM25 stemmed + stop words", {"PLUGHOST_GS_PATHS": "bm25", **STEM}),
           ("vector", {"PLUGHOST_GS_PATHS": "vector"})]
    if set_name == "conversations":
        pool = {"PLUGHOST_GS_CANDIDATES": _pool(), "PLUGHOST_GS_NEIGHBOURS": "0.3"}
        out += [("BM25 stemmed + stop words + neighbours 0.3", {"PLUGHOST_GS_PATHS": "bm25", **STEM, **pool}),
                ("vector + neighbours 0.3", {"PLUGHOST_GS_PATHS": "vector", "PLUGHOST_GS_NORMALIZE": "1", **pool})]
    return out


def hybrid_configs(set_name: str, tuning: bool) -> list[tuple[str, dict[str, str] | None]]:
    """The baseline and the defaults everywhere; on the tuning conversation set, the stages one
    by one on top of the baseline too."""
    out: list[tuple[str, dict[str, str] | None]] = [
        ("baseline: weighted 0.7/0.3, pool 50", {}),
        # the alternative the defaults were weighed against: the same stages, RRF instead of the weighted sum
        ("defaults with RRF k=60 (PLUGHOST_GS_RRF=1)", {**STEM, "PLUGHOST_GS_RRF": "1", "PLUGHOST_GS_CANDIDATES": _pool(),
                                                        "PLUGHOST_GS_NEIGHBOURS": _shipped("neighbours")})]
    if set_name == "conversations" and tuning:
        last = {**STEM, "PLUGHOST_GS_NORMALIZE": "1", "PLUGHOST_GS_VECTOR_WEIGHT": "0.5"}
        out += [("baseline flag: RRF k=60, pool 50", {"PLUGHOST_GS_RRF": "1"}),
                ("stem+stop, weighted 0.7/0.3, pool 50", {**STEM}),
                ("stem+stop, normalised 0.5/0.5, pool 100", {**last, "PLUGHOST_GS_CANDIDATES": "100"}),
                ("stem+stop, normalised 0.5/0.5, pool 100, neighbours 0.3 (last round's defaults)",
                 {**last, "PLUGHOST_GS_CANDIDATES": "100", "PLUGHOST_GS_NEIGHBOURS": "0.3"})]
    return out + stage_configs() + [(DEFAULTS, None)]


BEFORE = {**STEM, "PLUGHOST_GS_NORMALIZE": "1", "PLUGHOST_GS_VECTOR_WEIGHT": "0.5", "PLUGHOST_GS_CANDIDATES": "200",
          "PLUGHOST_GS_NEIGHBOURS": "0.3"}
"""The defaults before this round's stages (issue #34), spelled out: the "before" of every set."""
STAGES = (
    ("MMR λ 0.85", {"PLUGHOST_GS_MMR": "0.85"}),
    ("MMR λ 0.7", {"PLUGHOST_GS_MMR": "0.7"}),
    ("MMR λ 0.7, same conversation 0.5", {"PLUGHOST_GS_MMR": "0.7", "PLUGHOST_GS_MMR_SESSION": "0.5"}),
    ("compound questions", {"PLUGHOST_GS_COMPOUND": "1"}),
    ("classify, dated turns 0.3", {"PLUGHOST_GS_CLASSIFY": "1", "PLUGHOST_GS_DATED": "0.3"}),
    ("recency 0.1", {"PLUGHOST_GS_RECENCY": "0.1"}),
    ("expansion (rule-based, 3-5 variants)", {"PLUGHOST_GS_EXPANSION": "1"}),
)
"""This round's stages, each alone on top of :data:`BEFORE`, on every set (the ablation)."""


def stage_configs() -> list[tuple[str, dict[str, str]]]:
    return [("before: last round's defaults", BEFORE)] + [(f"before + {name}", {**BEFORE, **env})
                                                           for name, env in STAGES]


def entity_configs(tuning: bool) -> list[tuple[str, dict[str, str] | None]]:
    """On the store whose entities were written: the defaults (the path off: Entity nodes change
    nothing) and the defaults with the entity path; on the tuning seed, its weight and RRF too."""
    out: list[tuple[str, dict[str, str] | None]] = [(DEFAULTS, None),
                                                    (ENTITIES, OverDefaults(PLUGHOST_GS_ENTITIES="1"))]
    if tuning:
        out += [(f"defaults + entities, weight {w}", OverDefaults(PLUGHOST_GS_ENTITIES="1", PLUGHOST_GS_ENTITY_WEIGHT=w))
                for w in ENTITY_WEIGHTS]
        out.append(("defaults with RRF + entities", OverDefaults(PLUGHOST_GS_ENTITIES="1", PLUGHOST_GS_RRF="1")))
    return out


class OverDefaults(dict):
    """A configuration's variables over the shipped defaults (the others are over the baseline)."""


ENTITY_WEIGHTS = ("0.1", "0.2", "0.4", "0.5")


def grid_configs() -> list[tuple[str, dict[str, str]]]:
    """``--grid``: fusion weight × pool × neighbour share (normalised weighted), and RRF k × pool."""
    out = []
    for pool in GRID_POOL:
        for nb in GRID_NEIGHBOURS:
            for w in GRID_WEIGHTS:
                out.append((f"grid: normalised w={w}, pool {pool}, neighbours {nb}",
                            {**STEM, "PLUGHOST_GS_NORMALIZE": "1", "PLUGHOST_GS_VECTOR_WEIGHT": w,
                             "PLUGHOST_GS_CANDIDATES": pool, "PLUGHOST_GS_NEIGHBOURS": nb}))
        for k in GRID_RRF_K:
            out.append((f"grid: RRF k={k}, pool {pool}, neighbours 0.3",
                        {**STEM, "PLUGHOST_GS_RRF": "1", "PLUGHOST_GS_RRF_K": k, "PLUGHOST_GS_CANDIDATES": pool,
                         "PLUGHOST_GS_NEIGHBOURS": "0.3"}))
    return out


GRID_WEIGHTS = ("0.4", "0.5", "0.6")
GRID_NEIGHBOURS = ("0", "0.3")
GRID_RRF_K = ("20", "60")
GRID_POOL = ("100", "200", "300")


class MemoStore:
    """The store, with its search answers kept for the query being evaluated.

    Every configuration runs the whole pipeline on every query; configurations that ask the store
    the same thing (same vector or text, same k, same index) get the same answer from memory
    instead of a second search, which is what makes the whole man-page set affordable. The hits
    are read-only to the pipeline (it builds rows around them), so sharing them changes nothing:
    ``--no-memo`` runs every store call for real, for checking.
    """

    def __init__(self, store, enabled: bool = True):
        self.store, self.enabled = store, enabled
        self.memo: dict[tuple, list] = {}
        self.calls = self.saved = 0

    def clear(self) -> None:
        self.memo.clear()

    def _cached(self, key: tuple, call):
        if not self.enabled:
            self.calls += 1
            return call()
        hits = self.memo.get(key)
        if hits is None:
            self.calls += 1
            hits = self.memo[key] = call()
        else:
            self.saved += 1
        return list(hits)

    def vector_search(self, vector, k, *, guards, labels=None, **kw):
        key = ("vector", tuple(vector), k, tuple(labels or ()), tuple(sorted(kw.items())))
        return self._cached(key, lambda: self.store.vector_search(vector, k, guards=guards, labels=labels, **kw))

    def fulltext_search(self, query, k, *, guards, labels=None, **kw):
        key = ("bm25", query, k, tuple(labels or ()), tuple(sorted(kw.items())))
        return self._cached(key, lambda: self.store.fulltext_search(query, k, guards=guards, labels=labels, **kw))

    def __getattr__(self, name):
        return getattr(self.store, name)


class CachedEmbedder:
    """The real embedder behind a text → vector table kept on disk (``--work``)."""

    def __init__(self, inner, path: Path | None):
        self.inner, self.path = inner, path
        self.name, self.dimensions = inner.name, inner.dimensions
        self.table: dict[str, list[float]] = {}
        self.seconds, self.count = 0.0, 0
        self.seen: float | None = None  # the file's mtime when last read or written here
        if path and path.is_file():
            self.seen = path.stat().st_mtime
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
        """Write the table; if another run wrote the file since, its vectors are kept too (the
        table is keyed by text, so the union is right), and the file is replaced in one rename."""
        if not self.path:
            return
        if self.path.is_file() and self.path.stat().st_mtime != self.seen:
            with contextlib.suppress(ValueError, OSError):
                self.table = {**json.loads(self.path.read_text()), **self.table}
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.table))
        tmp.replace(self.path)
        self.seen = self.path.stat().st_mtime


Ranks = list[int | None]
"""The rank (1-based) of each of one question's evidence items in its results, None if absent."""


def ranks_of(ids: list[str], evidence: tuple[str, ...]) -> Ranks:
    return [ids.index(e) + 1 if e in ids else None for e in evidence]


def metrics(ranked: list[Ranks]) -> dict[str, float]:
    """Means over questions; with one evidence item each, the usual hit rates, nDCG and MRR."""
    n = len(ranked) or 1

    def recall(ranks: Ranks, k: int) -> float:
        return sum(1 for r in ranks if r and r <= k) / max(1, len(ranks))

    def ndcg(ranks: Ranks) -> float:
        ideal = sum(1 / math.log2(i + 1) for i in range(1, min(len(ranks), 10) + 1))
        return sum(1 / math.log2(r + 1) for r in ranks if r and r <= 10) / max(ideal, 1e-9)

    def rr(ranks: Ranks) -> float:
        first = min((r for r in ranks if r and r <= 10), default=None)
        return 1 / first if first else 0.0

    return {"nDCG@10": sum(ndcg(r) for r in ranked) / n,
            "R@5": sum(recall(r, 5) for r in ranked) / n,
            "R@10": sum(recall(r, 10) for r in ranked) / n,
            "MRR@10": sum(rr(r) for r in ranked) / n,
            "all@5": sum(1 for r in ranked if r and all(x and x <= 5 for x in r)) / n}


def by_type(ranked: list[Ranks], types: list[str]) -> dict[str, tuple[int, dict[str, float]]]:
    """{type: (questions, metrics)}, in TYPE_ORDER, then every question with one evidence item
    (:data:`ONE`, where some have more) and "all"."""
    out = {}
    for t in sorted(set(types), key=lambda t: (TYPE_ORDER.index(t) if t in TYPE_ORDER else 99, t)):
        part = [r for r, ty in zip(ranked, types, strict=True) if ty == t]
        out[t] = (len(part), metrics(part))
    one = [r for r in ranked if len(r) == 1]
    if 0 < len(one) < len(ranked):
        out[ONE] = (len(one), metrics(one))
    out["all"] = (len(ranked), metrics(ranked))
    return out


TYPE_ORDER = ["single", "temporal", "multi-hop", "open-domain"]
ONE = "one evidence item"
"""On conversations, the questions the set had before it had multi-hop ones: the acceptance line's."""


class OkapiBM25:
    """The bench's own stemmed BM25 reference (Snowball English, stop words out, k1 1.2, b 0.75)."""

    def __init__(self, docs: dict[str, str], k1: float = 1.2, b: float = 0.75):
        import snowballstemmer

        from plughost.plugins.memory.retrieval.keyterms import STOP_WORDS

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
    from plughost.plugins.graph.sqlite_store import SqliteStore

    return SqliteStore(path, env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": str(dims)})


Evaluated = list[tuple[str, tuple[str, ...], str]]
"""(query, its evidence ids, its type) per question."""


def manpage_set(work: Path, embedder: CachedEmbedder, args) -> tuple[dict, Evaluated, dict[str, str]]:
    """{name: store}, [(query, (relevant id,), "single")], {id: bare text} for the man pages."""
    import manpages

    from plughost import Principal
    from plughost.plugins.memory.bulk_import import import_jsonl
    from plughost.ports.graph import Guards

    pages = list(manpages.pages())
    if args.pages and args.pages < len(pages):
        pages = random.Random(args.seed).sample(pages, args.pages)
    ids = [f"man:{p.name}.{p.section}" for p in pages]
    digest = hashlib.sha256("\x00".join(i + p.document for i, p in zip(ids, pages, strict=True)).encode()).hexdigest()[:8]
    stores = {}
    for with_entities in (False, True) if args.entities else (False,):
        suffix = "-entities" if with_entities else ""
        store = open_store(work / f"manpages-{len(pages)}-{digest}{suffix}.sqlite", embedder.dimensions)
        if store.count(guards=Guards(ACCOUNT), labels=["KnowledgeDocument"]) != len(pages):
            jsonl = work / "pages.jsonl"
            # a KnowledgeDocument embeds its summary (else its title): a page is embedded by its text
            vectors = embedder.embed([p.document for p in pages])
            embedder.save()
            with open(jsonl, "w", encoding="utf-8") as fh:
                for nid, page, vector in zip(ids, pages, vectors, strict=True):
                    fh.write(json.dumps({"id": nid, "labels": ["KnowledgeDocument"],
                                         "properties": {"title": f"{page.name}({page.section})",
                                                        "content": page.document}, "embedding": vector}) + "\n")
            os.environ["PLUGHOST_MEMORY_ENTITIES"] = "1" if with_entities else "0"
            started = time.perf_counter()
            import_jsonl(store, embedder, jsonl, guards=Principal.owner(ACCOUNT).guards, progress=False)
            os.environ.pop("PLUGHOST_MEMORY_ENTITIES")
            print(f"  imported {len(pages)} pages{' with entities' if with_entities else ''} in "
                  f"{time.perf_counter() - started:.1f} s")
            jsonl.unlink()
        stores[ENTITY_FORM.lstrip() if with_entities else ""] = store
    evaluated = [(p.query, (nid,), "single") for p, nid in zip(pages, ids, strict=True)]
    if args.queries and args.queries < len(evaluated):
        evaluated = random.Random(args.seed + 1).sample(evaluated, args.queries)
    print(f"manpages: {len(pages)} pages from {manpages.MAN_ROOT}, {len(evaluated)} queries")
    return stores, evaluated, {nid: f"{p.name}({p.section}) {p.document}" for nid, p in zip(ids, pages, strict=True)}


def conversation_set(work: Path, embedder: CachedEmbedder, args,
                     seed: int | None = None) -> tuple[dict, Evaluated, dict[str, str]]:
    """One store per context setting, imported through memory import; the questions; the bare turns."""
    import conversations

    from plughost import Principal
    from plughost.plugins.memory.bulk_import import import_jsonl
    from plughost.ports.graph import Guards

    seed = args.seed if seed is None else seed
    data = conversations.build(seed=seed)
    digest = hashlib.sha256("\x00".join(t.id + t.speaker + t.text + t.at.isoformat()
                                      for t in data.turns).encode()).hexdigest()[:8]
    stores = {}
    settings = [(turns, mode, False) for turns in args.context for mode in (args.embed if turns else ["turn"])]
    if args.entities:  # the shipped form once more, its turns' entities and facts written (PLUGHOST_MEMORY_ENTITIES=1)
        from plughost.plugins.memory.embedding.indexed_form import DEFAULT_EMBED, DEFAULT_TURNS

        settings.append((DEFAULT_TURNS, DEFAULT_EMBED, True))
    for turns, mode, with_entities in settings:
        suffix = "-entities" if with_entities else ""
        store = open_store(work / f"conversations-{digest}-c{turns}-{mode}{suffix}.sqlite", embedder.dimensions)
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
            os.environ["PLUGHOST_MEMORY_ENTITIES"] = "1" if with_entities else "0"
            started = time.perf_counter()
            import_jsonl(store, embedder, jsonl, guards=Principal.owner(ACCOUNT).guards, progress=False)
            embedder.save()
            os.environ.pop("PLUGHOST_MEMORY_ENTITIES")
            print(f"  imported {len(data.turns)} turns (context {turns}, embed {mode}{', entities' if with_entities else ''}) "
                  f"in {time.perf_counter() - started:.1f} s")
            jsonl.unlink()
        name = f"context {turns}, embed {mode}" if turns else "context 0"
        stores[name + (ENTITY_FORM if with_entities else "")] = store
    kinds = Counter(q.kind for q in data.questions)
    types = Counter(q.type for q in data.questions)
    print(f"conversations: {len(data.sessions)} sessions, {len(data.turns)} turns, {len(data.questions)} questions "
          f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}; by type "
          f"{', '.join(f'{k} {v}' for k, v in sorted(types.items()))}); seed {seed}")
    return stores, [(q.text, q.evidence, q.type) for q in data.questions], {t.id: t.text for t in data.turns}


def realtext_set(work: Path, embedder: CachedEmbedder, args) -> tuple[dict, Evaluated, dict[str, str]]:
    """The Debian FAQ's passages as KnowledgeDocument nodes, imported through memory import; the
    hand-written questions; the bare passages (heading and paragraph)."""
    import realtext

    from plughost import Principal
    from plughost.plugins.memory.bulk_import import import_jsonl
    from plughost.ports.graph import Guards

    passages, questions, source = realtext.load()
    digest = hashlib.sha256("\x00".join(p.id + p.document for p in passages).encode()).hexdigest()[:8]
    stores = {}
    for with_entities in (False, True) if args.entities else (False,):
        suffix = "-entities" if with_entities else ""
        store = open_store(work / f"realtext-{len(passages)}-{digest}{suffix}.sqlite", embedder.dimensions)
        if store.count(guards=Guards(ACCOUNT), labels=["KnowledgeDocument"]) != len(passages):
            jsonl = work / "realtext.jsonl"
            # like a chunk, a passage is embedded with its heading (the FAQ question it answers)
            vectors = embedder.embed([p.document for p in passages])
            embedder.save()
            with open(jsonl, "w", encoding="utf-8") as fh:
                for p, vector in zip(passages, vectors, strict=True):
                    fh.write(json.dumps({"id": p.id, "labels": ["KnowledgeDocument"],
                                         "properties": {"title": p.heading, "content": p.text},
                                         "embedding": vector}) + "\n")
            os.environ["PLUGHOST_MEMORY_ENTITIES"] = "1" if with_entities else "0"
            started = time.perf_counter()
            import_jsonl(store, embedder, jsonl, guards=Principal.owner(ACCOUNT).guards, progress=False)
            os.environ.pop("PLUGHOST_MEMORY_ENTITIES")
            print(f"  imported {len(passages)} passages{' with entities' if with_entities else ''} in "
                  f"{time.perf_counter() - started:.1f} s")
            jsonl.unlink()
        stores[ENTITY_FORM.lstrip() if with_entities else ""] = store
    types = Counter(q.type for q in questions)
    print(f"realtext: {len(passages)} passages of {source}, {len(questions)} questions "
          f"({', '.join(f'{k} {v}' for k, v in sorted(types.items()))})")
    return stores, [(q.text, q.evidence, q.type) for q in questions], {p.id: p.document for p in passages}


def run(store, evaluated: Evaluated, embedder, configs,
        memo: bool = True) -> tuple[dict[str, list[Ranks]], MemoStore]:
    """Every configuration on every query, query by query (the store answers memoised per query);
    the evidence ranks per configuration and question."""
    from plughost.plugins.memory.retrieval import SearchFlags, SearchRequest, search
    from plughost.plugins.memory.retrieval.expand import rule_based
    from plughost.ports.graph import Guards

    flags = [(name, SearchFlags.from_env({} if env is None else env if isinstance(env, OverDefaults) else {**OFF, **env}))
             for name, env in configs]
    cached = MemoStore(store, memo)
    guards = Guards(ACCOUNT)
    ranks: dict[str, list[Ranks]] = {name: [] for name, _ in flags}
    started = time.perf_counter()
    for i, (query, evidence, _type) in enumerate(evaluated, start=1):
        if i % 500 == 0:
            print(f"  {i}/{len(evaluated)} queries x {len(flags)} configurations, "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        cached.clear()
        request = SearchRequest(query, limit=10, expand_hops=0)
        for name, f in flags:
            out = search(cached, request, guards=guards, embedder=embedder, flags=f, expander=rule_based,
                         emit_log=False)
            ranks[name].append(ranks_of([r.id for r in out.rows], evidence))
    return ranks, cached


def row(name: str, m: dict[str, float]) -> str:
    return f"| {name} | " + " | ".join(f"{m[k]:.4f}" for k in ("nDCG@10", "R@5", "R@10", "MRR@10")) + " |"


TARGETS: list[str] = []


def shipped_form(set_name: str) -> str:
    from plughost.plugins.memory.embedding.indexed_form import DEFAULT_EMBED, DEFAULT_TURNS

    if set_name != "conversations":
        return ""
    return f"context {DEFAULT_TURNS}, embed {DEFAULT_EMBED}" if DEFAULT_TURNS else "context 0"


REFERENCE = "bench reference: Okapi BM25, Snowball-stemmed, stop words (bare text)"


def evaluate(set_name: str, stores: dict, evaluated: Evaluated, docs: dict[str, str], embedder, args,
             title: str | None = None, tuning: bool = True) -> tuple[dict[str, dict[str, float]], dict[str, float],
                                                                     dict[str, dict[str, tuple[int, dict]]]]:
    """Print the table of one set (every store form × its configurations), its per-type table and
    its acceptance line; returns the metrics per row, those of the bench's own stemmed BM25, and
    the per-type metrics per row (the reference's too)."""
    title = title or set_name
    started, cpu = time.perf_counter(), time.process_time()
    embedder.embed([q for q, _, _ in evaluated])  # every query vector up front, in batches
    embedder.save()
    types = [t for _, _, t in evaluated]
    reference = OkapiBM25(docs)
    ref_ranks = [ranks_of(reference.search(q), ev) for q, ev, _ in evaluated]
    ref = metrics(ref_ranks)
    typed: dict[str, dict[str, tuple[int, dict]]] = {REFERENCE: by_type(ref_ranks, types)}
    results: dict[str, dict[str, float]] = {}
    singles: set[str] = set()
    print(f"\n### {title} ({len(evaluated)} queries)\n")
    print("| configuration | nDCG@10 | R@5 | R@10 | MRR@10 |")
    print("|---|---|---|---|---|")
    print(row(REFERENCE, ref), flush=True)
    main_form = shipped_form(set_name)
    for store_name, store in stores.items():
        configs: list[tuple[str, dict[str, str] | None]] = [*single_configs(set_name)]
        if store_name == (main_form + ENTITY_FORM).lstrip():
            configs = entity_configs(tuning)
        elif store_name == main_form:
            configs += hybrid_configs(set_name, tuning)
            if args.grid and tuning:
                configs += grid_configs()
        elif set_name == "conversations":
            configs.append((DEFAULTS, None))
        if args.configs:
            keep = {n for n, _ in single_configs(set_name)}
            configs = [(n, e) for n, e in configs if n.startswith(tuple(args.configs)) or n in keep]
        measured, memo = run(store, evaluated, embedder, configs, memo=not args.no_memo)
        for name, ranked in measured.items():
            label = f"{store_name}: {name}" if store_name else name
            results[label] = metrics(ranked)
            typed[label] = by_type(ranked, types)
            if any(name == n for n, _ in single_configs(set_name)):
                singles.add(label)
            print(row(label, results[label]), flush=True)
    print(f"\n{title}: {len(evaluated)} queries in {time.perf_counter() - started:.0f} s "
          f"({time.process_time() - cpu:.0f} CPU-s)")
    type_table(title, typed)
    target_line(title, set_name, *acceptance_rows(set_name, results, ref, typed), singles, main_form)
    return results, ref, typed


def acceptance_rows(set_name: str, results: dict[str, dict[str, float]], ref: dict[str, float],
                    typed: dict[str, dict[str, tuple[int, dict]]]) -> tuple[dict[str, dict[str, float]],
                                                                             dict[str, float], str]:
    """What the acceptance line reads: on conversations the one-evidence questions (the target was
    set on those, before multi-hop questions existed), elsewhere every question."""
    if set_name != "conversations" or ONE not in typed.get(REFERENCE, {}):
        return results, ref, ""
    count, ref_one = typed[REFERENCE][ONE]
    return ({n: typed[n][ONE][1] for n in results if ONE in typed.get(n, {})}, ref_one,
            f" on the {count} one-evidence questions")


def type_table(title: str, typed: dict[str, dict[str, tuple[int, dict]]]) -> None:
    """Per configuration, R@5 and R@10 by question type (all@5: every evidence item in the top 5)."""
    print(f"\n#### {title}, by question type\n")
    print("| configuration | type | questions | R@5 | R@10 | all@5 |")
    print("|---|---|---|---|---|---|")
    for name, per in typed.items():
        for t, (n, m) in per.items():
            if t == "all" and len(per) == 2:
                continue  # one type only: its row is the whole set
            print(f"| {name} | {t} | {n} | {m['R@5']:.4f} | {m['R@10']:.4f} | {m['all@5']:.4f} |")
    print()


def target_line(title: str, set_name: str, results: dict[str, dict[str, float]], ref: dict[str, float],
                note: str, singles: set[str], main_form: str) -> None:
    defaults = f"{main_form}: {DEFAULTS}" if main_form else DEFAULTS
    if defaults not in results or not singles & results.keys():
        line = f"{title} target: no defaults row or no single path (see --configs)"
    else:
        best = max((n for n in singles if n in results), key=lambda n: (results[n]["R@5"], results[n]["nDCG@10"]))
        m, b = results[defaults], results[best]
        gain = (m["R@5"] / max(b["R@5"], 1e-9) - 1) * 100
        over_ref = (m["R@5"] / max(ref["R@5"], 1e-9) - 1) * 100
        if set_name == "conversations":
            ok = gain >= 15 and m["R@5"] > ref["R@5"]
            goal = "defaults R@5 >= 1.15x the best single path and > the bench's stemmed BM25"
        elif set_name == "realtext":
            ok = None
            goal = "a development set: no target, the defaults against the best single path and the bench's BM25"
        else:
            ok = m["nDCG@10"] >= 0.83
            goal = "defaults nDCG@10 >= 0.83"
        line = (f"{title} target ({goal}){note}: defaults nDCG@10 {m['nDCG@10']:.4f} R@5 {m['R@5']:.4f}; best single "
                f"path {best} R@5 {b['R@5']:.4f} ({gain:+.1f}%); bench stemmed BM25 R@5 {ref['R@5']:.4f} "
                f"({over_ref:+.1f}%) -> {'REPORT' if ok is None else 'PASS' if ok else 'MISS'}")
    print(line)
    TARGETS.append(line)


def pooled(runs: list[tuple[int, dict[str, dict[str, float]], dict[str, float],
                            dict[str, dict[str, tuple[int, dict]]]]]) -> None:
    """The conversation seeds together: every row measured on every seed, averaged by questions."""
    total = sum(n for n, _, _, _ in runs)
    common = set.intersection(*(set(r) for _, r, _, _ in runs))
    both = {name: {k: sum(n * r[name][k] for n, r, _, _ in runs) / total for k in runs[0][1][name]}
            for name in sorted(common)}
    ref = {k: sum(n * f[k] for n, _, f, _ in runs) / total for k in runs[0][2]}
    typed: dict[str, dict[str, tuple[int, dict]]] = {}
    for name in (n for n in runs[0][3] if all(n in t for _, _, _, t in runs)):
        per: dict[str, tuple[int, dict]] = {}
        for ty in runs[0][3][name]:
            parts = [t[name][ty] for _, _, _, t in runs if ty in t[name]]
            count = sum(c for c, _ in parts)
            per[ty] = (count, {k: sum(c * m[k] for c, m in parts) / max(1, count) for k in parts[0][1]})
        typed[name] = per
    print(f"\n### conversations, every seed ({total} questions)\n")
    print("| configuration | nDCG@10 | R@5 | R@10 | MRR@10 |")
    print("|---|---|---|---|---|")
    print(row(REFERENCE, ref))
    for name in (n for n in runs[0][1] if n in both):
        print(row(name, both[name]))
    type_table(f"conversations, every seed ({total} questions)", typed)
    singles = {n for n in both if n.split(": ", 1)[-1] in {s for s, _ in single_configs("conversations")}}
    target_line(f"conversations, every seed ({total} questions)", "conversations",
                *acceptance_rows("conversations", both, ref, typed), singles, shipped_form("conversations"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=lambda s: s.split(","), default=["all"],
                    help="manpages, conversations, realtext, all, or a comma list of them (one run)")
    ap.add_argument("--pages", type=int, default=None, help="sample this many man pages (default: every usable page)")
    ap.add_argument("--queries", type=int, default=None, help="evaluate a sample of this many man-page queries")
    ap.add_argument("--seed", type=int, default=22, help="the man-page sampling seed")
    ap.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[22, 23],
                    help="conversation sets to build: the first is the tuning set (every configuration, "
                         "--grid), the others are held out (single paths, baseline, defaults)")
    ap.add_argument("--context", type=lambda s: [int(x) for x in s.split(",")], default=None,
                    help="conversation context settings to compare, e.g. 0,2 (default: 0 and the shipped default)")
    ap.add_argument("--embed", type=lambda s: s.split(","), default=None,
                    help="Message embedding forms to compare: context,turn (default: both)")
    ap.add_argument("--configs", type=lambda s: s.split(","), default=None,
                    help="only the configurations whose names start with one of these (comma list)")
    ap.add_argument("--work", type=Path, default=None, help="keep the stores and embeddings here between runs")
    ap.add_argument("--grid", action="store_true",
                    help="also sweep fusion weight, pool, neighbour share and RRF k on the tuning conversation set")
    ap.add_argument("--entities", action="store_true",
                    help="also build the shipped form with its entities written and measure the entity path on it")
    ap.add_argument("--no-memo", action="store_true", help="run every store search for real (slow; for checking)")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    unknown = set(args.set) - {"manpages", "conversations", "realtext", "all"}
    if unknown:
        ap.error(f"--set: unknown set {', '.join(sorted(unknown))}")
    sets = {"manpages", "conversations", "realtext"} if "all" in args.set else set(args.set)

    work = args.work or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "plughost" / "bench-quality"
    work.mkdir(parents=True, exist_ok=True)
    os.environ.update(PLUGHOST_HOME=str(work / "home"), PLUGHOST_LOG_FILE="0", ACCOUNT_ID=ACCOUNT)
    os.environ.setdefault("PLUGHOST_EMBEDDER", "local")
    from plughost.plugins.memory.embedding.indexed_form import DEFAULT_EMBED, DEFAULT_TURNS
    from plughost.plugins.memory.retrieval.flags import SHIPPED
    from plughost.runtime.host import Host

    args.context = args.context or sorted({0, DEFAULT_TURNS})
    args.embed = args.embed or list(dict.fromkeys([DEFAULT_EMBED, "context", "turn"]))
    host = Host(env=dict(os.environ)).load()
    inner = host.embedder()
    if inner is None:
        print("no embedder available (pip install -e '.[embed]'): vector configurations cannot run", file=sys.stderr)
        return 1
    key = hashlib.sha256(inner.name.encode()).hexdigest()[:8]
    embedder = CachedEmbedder(inner, work / f"vectors-{key}.json")
    started, cpu = time.perf_counter(), time.process_time()
    print(f"defaults: {', '.join(f'{k}={v}' for k, v in SHIPPED.items())}; Message form: context {DEFAULT_TURNS} "
          f"turns, embed {DEFAULT_EMBED}; load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    try:
        if "manpages" in sets:
            evaluate("manpages", *manpage_set(work, embedder, args), embedder, args)
        if "realtext" in sets:
            import realtext

            try:
                parts = realtext_set(work, embedder, args)
            except realtext.MissingSource as exc:  # the package is missing, or its text moved on
                print(exc, file=sys.stderr)
                return 1
            evaluate("realtext", *parts, embedder, args)
        if "conversations" in sets:
            runs = []
            for i, seed in enumerate(args.seeds):
                stores, evaluated, docs = conversation_set(work, embedder, args, seed=seed)
                title = f"conversations, seed {seed} ({'tuning set' if i == 0 else 'held out'})"
                results, ref, typed = evaluate("conversations", stores, evaluated, docs, embedder, args,
                                               title=title, tuning=i == 0)
                runs.append((len(evaluated), results, ref, typed))
            if len(runs) > 1:
                pooled(runs)
    finally:
        embedder.save()
        host.close()
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for line in TARGETS:
        print(line)
    print(f"\nembedder: {inner.name} ({inner.dimensions} dims), {embedder.count} texts embedded in "
          f"{embedder.seconds:.1f} s this run; total {time.perf_counter() - started:.0f} s "
          f"({time.process_time() - cpu:.0f} CPU-s); work dir: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("retrieval_quality", main))
