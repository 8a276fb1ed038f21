"""Embedding and bulk-write throughput (issue 6 bench). Prints figures; asserts nothing.

1. Local embedder (all-MiniLM-L6-v2 int8 ONNX): model load time, sentences/s for short
   sentences and ~700-character passages at batch 32, against the raw floor measured in the
   same run (bare ``InferenceSession.run`` on pre-tokenised batches: the wrapper's cost is
   tokenising, pooling and normalising).
2. ``plughost memory import`` of N nodes (default 10,000) through the real CLI: without
   embeddings, with the local embedder, and ``plughost graph import`` as the raw store floor;
   nodes/s and the share of wall time spent embedding.

Usage: ``.venv/bin/python bench/embed.py [--nodes 10000] [--skip-import] [--skip-local]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

WORDS = ("invoice payment customer delivery schedule meeting garden harbour ferry winter coast market "
         "bakery order refund contract service booking table review question answer colony gull tern "
         "engine battery charger warranty return address phone email office morning evening").split()


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def passage(rng: random.Random, chars: int = 700) -> str:
    out = ""
    while len(out) < chars:
        out += sentence(rng, rng.randint(8, 16)) + " "
    return out[:chars]


def bench_local(rng: random.Random) -> None:
    import numpy as np

    from plughost.plugins.memory.embedding.local import LocalEmbedder

    emb = LocalEmbedder(batch_size=32)
    t0 = time.perf_counter()
    emb._load()
    load_s = time.perf_counter() - t0
    print(f"local embedder: load {load_s:.2f} s (onnxruntime session + tokenizer)")
    for label, texts in (("short sentences (~60 chars)", [sentence(rng, 9) for _ in range(512)]),
                         ("passages (~700 chars)", [passage(rng) for _ in range(128)])):
        emb.embed(texts[:32])  # warm-up
        t0 = time.perf_counter()
        emb.embed(texts)
        wall = time.perf_counter() - t0
        # raw floor: the same batches pre-tokenised, bare session.run
        batches = []
        for i in range(0, len(texts), 32):
            enc = emb._tokenizer.encode_batch(texts[i:i + 32])
            batches.append({"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                            "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64)})
        t0 = time.perf_counter()
        for feed in batches:
            emb._session.run(None, feed)
        raw = time.perf_counter() - t0
        tokens = sum(int(b["attention_mask"].sum()) for b in batches) / len(texts)
        print(f"  {label:30s} batch 32: {len(texts) / wall:8.1f} texts/s   raw session.run floor "
              f"{len(texts) / raw:8.1f} texts/s   ratio {wall / raw:.2f}x   (avg {tokens:.0f} tokens)")


def make_nodes(path: Path, n: int, rng: random.Random) -> None:
    labels = (["Person"] * 3 + ["Event"] * 3 + ["Company"] * 2 + ["Question", "Review"])
    with path.open("w") as fh:
        for i in range(n):
            label = labels[i % len(labels)]
            props = {"name": f"{label.lower()} {i}", "description": sentence(rng, rng.randint(6, 20))}
            if label == "Person":
                props["email"] = f"p{i}@example.com"
            row = {"id": f"n{i}", "labels": [label], "properties": props}
            if i and i % 3 == 0:
                row["edges"] = [{"type": "RELATED_TO", "to": f"n{rng.randrange(i)}"}]
            fh.write(json.dumps(row) + "\n")


def run_import(args: list[str], home: Path, **env: str) -> tuple[float, dict[str, str]]:
    full = dict(os.environ, PLUGHOST_HOME=str(home), ACCOUNT_ID="bench", PLUGHOST_LOG_FILE="0", **env)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "plughost.cli", *args], capture_output=True, text=True, env=full,
                          cwd=REPO)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr[-800:]}")
    fields = dict(re.findall(r"(\w+)=([\w.]+)", done.stdout + "\n" + done.stderr.splitlines()[-1]))
    return wall, fields


def bench_import(n: int, rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "nodes.jsonl"
        make_nodes(data, n, rng)
        print(f"\nbulk import of {n:,} nodes (80% of a vector-indexed label, {n // 3:,} edges), real CLI subprocess:")
        rows = []
        wall, f = run_import(["graph", "import", str(data), "--no-progress"], Path(tmp) / "h0",
                             PLUGHOST_EMBEDDER="none")
        rows.append(("graph import (raw store floor)", wall, float(f.get("seconds", wall)), 0.0))
        wall, f = run_import(["memory", "import", str(data), "--no-embed", "--no-progress"], Path(tmp) / "h1",
                             PLUGHOST_EMBEDDER="none")
        rows.append(("memory import --no-embed", wall, float(f["seconds"]), float(f["embedSeconds"])))
        try:
            from plughost.plugins.memory.embedding.local import check_available

            check_available()
            wall, f = run_import(["memory", "import", str(data), "--no-progress"], Path(tmp) / "h2",
                                 PLUGHOST_EMBEDDER="local", EMBED_DIMENSIONS="384")
            rows.append((f"memory import, local embedder ({f.get('embedded')} embedded)", wall,
                         float(f["seconds"]), float(f["embedSeconds"])))
        except Exception as exc:  # the embed extra is not installed
            print(f"  (local embedder not available: {exc})")
        floor = rows[0][2]
        for label, wall, seconds, embed_s in rows:
            share = f"{embed_s / seconds * 100:5.1f}% embedding" if embed_s else "   no embedding"
            print(f"  {label:48s} {n / seconds:9.0f} nodes/s  ({seconds:6.2f} s in-process, {wall:6.2f} s wall)  "
                  f"{share}   {seconds / floor:5.2f}x the floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--skip-import", action="store_true")
    parser.add_argument("--skip-local", action="store_true")
    bench_results.add_flag(parser)
    args = parser.parse_args()
    bench_results.floor("bare onnxruntime session.run on the same batches, pre-tokenised (library default intra-op threads); plughost graph import without embeddings as the store floor")
    rng = random.Random(6)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    if not args.skip_local:
        bench_local(rng)
    if not args.skip_import:
        bench_import(args.nodes, rng)


if __name__ == "__main__":
    raise SystemExit(bench_results.run("embed", main))
