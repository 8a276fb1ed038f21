"""conversation-search latency over 50,000 messages on the embedded store, against the raw floor.

    python bench/conversation_search.py [--messages 50000] [--per-conversation 20] [--queries 200]
                                        [--no-vectors] [--work DIR]

Builds an embedded SQLite store holding N Message nodes in the channels' stored shape
(Conversation -HAS_MESSAGE-> Message, ``conversationId`` on each Message), text drawn from a
Zipf-distributed synthetic vocabulary, and (unless ``--no-vectors``) random unit vectors of 384
dimensions. Then times ``Conversations.search`` per call for admin (every conversation) and for
a session (its own conversation, filtered inside the store query; its one-time Conversation
lookup is timed separately), with embedder ``none``
(BM25 only) and with a fixed random-vector embedder (BM25 + cosine; query embedding cost is
nil, so this is the search path alone). The raw floor in the same run is a bare FTS5 query
(``MATCH`` + ``ORDER BY rank`` + ``LIMIT``) on the same file.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import time
from contextlib import redirect_stderr
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

from plughost import Principal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ACCOUNT = "bench-conversations"
DIMS = 384
LIMIT = 10


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def vocabulary(rng: random.Random, size: int = 5000) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(size)})
    rng.shuffle(words)
    return words, [1.0 / (i + 1) for i in range(len(words))]


class RandomEmbedder:
    """A fixed random-vector embedder: exercises the vector path without model cost."""

    name = "random"
    dimensions = DIMS

    def __init__(self, seed: int = 7) -> None:
        import numpy as np

        self.rng = np.random.default_rng(seed)

    def embed(self, texts: list[str]) -> list[list[float]]:
        vecs = self.rng.standard_normal((len(texts), DIMS)).astype("float32")
        return (vecs / ((vecs ** 2).sum(axis=1, keepdims=True) ** 0.5)).tolist()


def build(store, n: int, per_conv: int, words, weights, rng: random.Random, vectors: bool) -> float:
    import numpy as np

    from plughost.ports.graph import HAS_MESSAGE

    started = time.perf_counter()
    np_rng = np.random.default_rng(1)
    batch = 5000
    for start in range(0, n, batch):
        rows = []
        convs: dict[str, list[str]] = {}
        count = min(batch, n - start)
        vecs = np_rng.standard_normal((count, DIMS)).astype("float32") if vectors else None
        for j in range(count):
            i = start + j
            conv = f"conv-{i // per_conv:06d}"
            mid = f"msg-{i:07d}"
            text = " ".join(rng.choices(words, weights, k=rng.randint(6, 24)))
            row = {"id": mid, "labels": ["Message", "WebchatMessage"],
                   "properties": {"role": "user" if i % 2 == 0 else "assistant", "text": text,
                                  "conversationId": conv, "channel": "webchat", "scope": "admin",
                                  "sentAt": f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}Z"}}
            if vecs is not None:
                row["embedding"] = vecs[j].tolist()
            rows.append(row)
            convs.setdefault(conv, []).append(mid)
        for conv, mids in convs.items():
            rows.append({"id": conv, "labels": ["Conversation"],
                         "properties": {"channel": "webchat", "sessionId": f"session-{conv}", "scope": "admin"},
                         "edges": [{"type": HAS_MESSAGE, "to": m} for m in mids]})
        store.upsert_many(rows, guards=Principal.system(ACCOUNT).guards)
    return time.perf_counter() - started


def timed(fn, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--per-conversation", type=int, default=20)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-vectors", action="store_true")
    ap.add_argument("--work", help="directory for the store (reused if it exists)")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("a bare FTS5 query with the same escaped MATCH expression the store builds")

    from plughost.plugins.graph.common import fts_terms
    from plughost.plugins.graph.sqlite_store import SqliteStore
    from plughost.plugins.memory.conversations.service import Conversations

    rng = random.Random(3)
    words, weights = vocabulary(rng)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="conv-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / "graph.sqlite"
    fresh = not path.exists()
    env = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": str(DIMS), "PLUGHOST_HOME": str(work)}
    store = SqliteStore(path, env=env)
    if fresh:
        secs = build(store, args.messages, args.per_conversation, words, weights, rng, not args.no_vectors)
        print(f"built {args.messages} messages in {secs:.1f}s at {path}")
    conversations = args.messages // args.per_conversation
    queries = [" ".join(rng.choices(words, weights, k=2)) for _ in range(args.queries)]
    sessions = [f"session-conv-{rng.randrange(conversations):06d}" for _ in queries]

    raw = sqlite3.connect(path)

    def floor(q: str) -> None:  # the same escaped MATCH expression the store builds
        match = " OR ".join('"' + " ".join(t) + '"' for t in fts_terms(q))
        raw.execute("SELECT rowid, rank FROM node_text WHERE node_text MATCH ? ORDER BY rank LIMIT ?",
                    (match, LIMIT * 3)).fetchall()

    results: dict[str, list[float]] = {}
    with open(work / "bench.log", "a") as sink, redirect_stderr(sink):
        for name, embedder in (("none", None), ("random", None if args.no_vectors else RandomEmbedder())):
            if name == "random" and embedder is None:
                continue
            admin = Conversations(store, embedder, env)
            timed(lambda q, a=admin: a.search(query=q, limit=LIMIT), queries[:10])  # warm caches
            results[f"admin  embedder={name}"] = timed(lambda q, a=admin: a.search(query=q, limit=LIMIT), queries)
            it = iter(sessions * 2)

            def session_search(q: str, e=embedder, it=it) -> None:
                Conversations(store, e, {**env, "SESSION_ID": next(it)}).search(query=q, limit=LIMIT)

            if name == "none":  # a session resolves its Conversation once per process (sessionId lookup)
                results["session resolve (once)"] = timed(
                    lambda s: Conversations(store, None, {**env, "SESSION_ID": s}).session_conversation(), sessions)
            timed(session_search, queries[:10])
            results[f"session embedder={name}"] = timed(session_search, queries[10:] + queries[:10])
        timed(floor, queries[:10])
        results["raw FTS5 floor"] = timed(floor, queries)
    base = pct(results["raw FTS5 floor"], 0.5)
    print(f"conversation-search over {args.messages} messages in {conversations} conversations, "
          f"{len(queries)} queries, limit {LIMIT}")
    for key, values in results.items():
        p50, p95 = pct(values, 0.5), pct(values, 0.95)
        print(f"  {key:24s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  ratio to raw floor p50 {p50 / base:6.1f}x")
    store.close()


if __name__ == "__main__":
    raise SystemExit(bench_results.run("conversation_search", main))
