"""memory-search over MCP against a do-it-yourself hybrid served the same way, and the bare FTS5 floor.

    python bench/diy_hybrid.py [--pages 1000] [--queries 200] [--work DIR] [--write-results]

The do-it-yourself hybrid is what an engineer builds in an afternoon: stdlib ``sqlite3`` with an
FTS5 table, an exact numpy KNN over the document vectors (matrix @ q + argpartition), reciprocal
rank fusion (k=60) over each side's top 50, the same MiniLM int8 ``model.onnx`` and
``tokenizer.json`` plughost ships, run with onnxruntime the way plughost runs them (mean pooling,
L2 norm; intra-op threads at most 2, no spinning), one MCP tool served over stdio with the ``mcp``
SDK (``python bench/diy_hybrid.py --serve DIR``). It is this bench's floor for hybrid search.

The corpus is known-item search over the installed manual pages (``bench/manpages.py``: query = a
page's NAME line, the relevant document its DESCRIPTION). Each page is embedded once (cached in
the work dir) and goes into both: plughost's store (``memory import``'s path, KnowledgeDocument
nodes) and the DIY server's files. Then, per query, back to back in one loop so load swings hit
them alike: plughost ``memory-search`` over stdio MCP (``python -m plughost.cli mcp serve memory``,
shipped defaults, expandHops 0), the DIY tool over stdio MCP, a ``tools/list`` round trip on each
server (the transport alone), and bare FTS5 (``MATCH`` + ``bm25()`` + ``LIMIT 10``) in process on
the plughost store file. Prints p50/p95, each search figure's ratio to the DIY hybrid and to the
bare floor, MRR@10 of both hybrids, the load, each server's thread count after the warm-up and its
CPU time per call (``/proc``: user + system over the measured loop; the load stretches waits, much
less the CPU a call burns, so on a loaded machine it is the steadier comparison).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ACCOUNT = "bench-diy"
WARMUP = 10
TOP = 50  # each side's candidates in the DIY hybrid
RRF_K = 60


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# ---------------------------------------------------------------- the do-it-yourself server

def serve(folder: Path) -> None:
    """The afternoon hybrid: one MCP tool ``search`` over stdio."""
    import anyio
    import numpy as np
    import onnxruntime as ort
    from mcp.server import MCPServer
    from tokenizers import Tokenizer

    from plughost.plugins.memory.embedding.local import TOKENIZER_PATH, model_path

    docs = [json.loads(line) for line in (folder / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    matrix = np.load(folder / "vectors.npy")
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(text)")
    db.executemany("INSERT INTO docs(rowid, text) VALUES (?, ?)", ((i, d["text"]) for i, d in enumerate(docs)))
    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokenizer.enable_truncation(max_length=256)  # as plughost: the shipped file pads to 128 and cuts at 128
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, min(2, os.cpu_count() or 1))
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    session = ort.InferenceSession(str(model_path()), options, providers=["CPUExecutionProvider"])

    def embed(text: str) -> np.ndarray:
        enc = tokenizer.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden * mask[..., None]).sum(axis=1)[0] / max(1, int(mask.sum()))
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)

    def search(query: str, limit: int = 10) -> str:
        terms = re.findall(r"\w+", query.lower())
        fused: dict[int, float] = {}
        if terms:
            match = " OR ".join(f'"{t}"' for t in terms)
            rows = db.execute("SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?",
                              (match, TOP)).fetchall()
            for rank, (rowid,) in enumerate(rows):
                fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (RRF_K + rank + 1)
        scores = matrix @ embed(query)
        top = np.argpartition(-scores, TOP - 1)[:TOP]
        for rank, i in enumerate(top[np.argsort(-scores[top])]):
            fused[int(i)] = fused.get(int(i), 0.0) + 1.0 / (RRF_K + rank + 1)
        best = sorted(fused.items(), key=lambda kv: -kv[1])[:limit]
        return "\n---\n".join(f"(id: {docs[i]['id']}) (score: {s:.4f})\n{docs[i]['text'][:300]}" for i, s in best)

    server = MCPServer(name="diy-hybrid")

    @server.tool(name="search", description="Hybrid search (BM25 + vectors, RRF) over the documents")
    async def search_tool(query: str, limit: int = 10) -> str:
        return await anyio.to_thread.run_sync(search, query, limit)

    embed("warm up")
    server.run("stdio")


# ---------------------------------------------------------------- the bench

IDS = re.compile(r"\(id: ([^)]+)\)")


def server_stats() -> dict[str, tuple[int, float]]:
    """``(threads, CPU seconds so far)`` of each server this process started, by role (``/proc``;
    empty elsewhere): plughost, plughost with the audit off (quiet), the before tree's, the DIY one.
    CPU time per call is the figure the load moves least: a descheduled thread burns none."""
    found: dict[str, tuple[int, float]] = {}
    pids: list[str] = []
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            pids += Path(f"/proc/self/task/{task}/children").read_text().split()
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            status = Path(f"/proc/{pid}/status").read_text()
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        threads = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))
        cpu = (int(stat[11]) + int(stat[12])) / tick  # utime + stime (fields 14, 15)
        if b"--serve" in cmd:
            role = "diy"
        elif any(e.startswith(b"PYTHONPATH=") and e != b"PYTHONPATH=" for e in env) and b"plughost.cli" in cmd:
            role = "before"
        elif b"PLUGHOST_AUDIT_MCP=0" in env:
            role = "quiet"
        else:
            role = "plughost"
        found[role] = (max(found.get(role, (0, 0.0))[0], threads), found.get(role, (0, 0.0))[1] + cpu)
    return found


def first_rank(text: str, wanted: str) -> int | None:
    for i, found in enumerate(IDS.findall(text)[:10]):
        if found == wanted:
            return i + 1
    return None


def build(work: Path, pages_wanted: int, seed: int) -> tuple[Path, Path, list[tuple[str, str]]]:
    """The plughost home (store imported) and the DIY folder; [(query, relevant id)]."""
    import manpages
    import numpy as np

    from plughost.plugins.memory.embedding.local import LocalEmbedder

    pages = list(manpages.pages())
    if pages_wanted and pages_wanted < len(pages):
        pages = random.Random(seed).sample(pages, pages_wanted)
    ids = [f"man:{p.name}.{p.section}" for p in pages]
    digest = hashlib.sha256("\x00".join(i + p.document for i, p in zip(ids, pages, strict=True)).encode()).hexdigest()[:8]
    folder = work / f"diy-{len(pages)}-{digest}"
    home = work / f"home-{len(pages)}-{digest}"
    texts = [f"{p.name}({p.section}) {p.document}" for p in pages]
    if not (folder / "vectors.npy").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        vectors = LocalEmbedder(batch_size=32).embed([p.document for p in pages])
        print(f"  embedded {len(pages)} pages in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        with open(folder / "docs.jsonl", "w", encoding="utf-8") as fh:
            for nid, text in zip(ids, texts, strict=True):
                fh.write(json.dumps({"id": nid, "text": text}) + "\n")
        np.save(folder / "vectors.npy", np.asarray(vectors, dtype=np.float32))
        (folder / "nodes.jsonl").write_text("".join(
            json.dumps({"id": nid, "labels": ["KnowledgeDocument"],
                        "properties": {"title": f"{p.name}({p.section})", "content": p.document},
                        "embedding": v}) + "\n" for nid, p, v in zip(ids, pages, vectors, strict=True)),
            encoding="utf-8")
    if not (home / "graph.sqlite").is_file():
        from plughost import Principal
        from plughost.plugins.memory.bulk_import import import_jsonl
        from plughost.runtime.accounts import create_account
        from plughost.runtime.host import Host

        home.mkdir(parents=True, exist_ok=True)
        create_account(ACCOUNT, home)
        host = Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}).load()
        summary = import_jsonl(host.store(), None, folder / "nodes.jsonl", guards=Principal.owner(ACCOUNT).guards, progress=False)
        if summary.nodes != len(pages):
            raise SystemExit(f"imported {summary.nodes} of {len(pages)} pages: {summary.errors[:1]}")
        host.close()
    return home, folder, [(p.query, nid) for p, nid in zip(pages, ids, strict=True)]


def main() -> int:
    import results as bench_results

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--work", type=Path, default=None, help="keep (and reuse) the stores and vectors here")
    ap.add_argument("--serve", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--before", type=Path, default=None,
                    help="a source tree of another plughost (a folder holding its plughost package, e.g. the "
                         "previous commit's host/ with plugins/ linked in): its server runs interleaved too")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve)
        return 0
    bench_results.floor("the do-it-yourself hybrid (stdlib sqlite3 FTS5 + exact numpy KNN, RRF k=60 over each "
                        "side's top 50, the same MiniLM int8 files, one MCP tool over stdio, this file's --serve) "
                        "and bare FTS5 bm25() LIMIT 10 in process on plughost's store file; interleaved per query")
    work = args.work or Path(tempfile.mkdtemp(prefix="plughost-bench-diy-"))
    work.mkdir(parents=True, exist_ok=True)
    for key in ("CLAUDECODE", "PLUGHOST_STORE", "SESSION_ID", "PLUGHOST_SESSION_ID", "ALLOWED_SCOPES", "AGENT_SLUG",
                "ACCOUNT_ID", "PLUGHOST_HOME"):
        os.environ.pop(key, None)
    os.environ["PLUGHOST_LOG_FILE"] = "0"
    home, folder, evaluated = build(work, args.pages, args.seed)
    rng = random.Random(args.seed + 1)
    rng.shuffle(evaluated)
    # warm-up queries are none of the measured ones: no call is answered from a cache it warmed
    warmup = [q for q, _ in evaluated[args.queries:args.queries + WARMUP]] or ["warm up query"] * WARMUP
    evaluated = evaluated[:args.queries]

    import anyio
    from mcp import Client, StdioServerParameters

    from plughost.plugins.graph.common import fts_terms

    env = {**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "local"}
    plug = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"], env=env)
    quiet = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"],
                                  env={**env, "PLUGHOST_AUDIT_MCP": "0"})
    diy = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).resolve()), "--serve", str(folder)],
                                env=dict(os.environ))
    keys = ("plughost", "quiet", *(("before",) if args.before else ()), "diy", "fts", "plughost_ping", "quiet_ping",
            *(("before_ping",) if args.before else ()), "diy_ping")
    runs: dict[str, list[float]] = {k: [] for k in keys}
    ranks: dict[str, list[int | None]] = {k: [] for k in ("plughost", "quiet", "before", "diy") if k in runs}
    before = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", "memory"],
                                   env={**env, "PYTHONPATH": str(args.before or "")}, cwd=str(args.before or "."))
    conn = sqlite3.connect(home / "graph.sqlite")
    fts_sql = "SELECT rowid, bm25(node_text) AS r FROM node_text WHERE node_text MATCH ? ORDER BY r LIMIT 10"
    load_start = os.getloadavg()[0]

    async def go() -> None:
        async with contextlib.AsyncExitStack() as stack:
            pc = await stack.enter_async_context(Client(plug))
            qc = await stack.enter_async_context(Client(quiet))
            dc = await stack.enter_async_context(Client(diy))
            bc = await stack.enter_async_context(Client(before)) if args.before else None
            for q in warmup:
                if bc is not None:
                    await bc.call_tool("memory-search", {"query": q, "expandHops": 0})
                await pc.call_tool("memory-search", {"query": q, "expandHops": 0})
                await qc.call_tool("memory-search", {"query": q, "expandHops": 0})
                await dc.call_tool("search", {"query": q})
            warm.update(server_stats())
            for q, wanted in evaluated:
                order = [("plughost", pc, "memory-search", {"query": q, "expandHops": 0}),
                         ("quiet", qc, "memory-search", {"query": q, "expandHops": 0}),
                         ("diy", dc, "search", {"query": q})]
                if bc is not None:
                    order.insert(2, ("before", bc, "memory-search", {"query": q, "expandHops": 0}))
                shift = len(runs["fts"]) % len(order)
                order = order[shift:] + order[:shift]  # none always goes first
                for name, client, tool, arguments in order:
                    t = time.perf_counter()
                    await client.list_tools(cache_mode="bypass")
                    runs[f"{name}_ping"].append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    result = await client.call_tool(tool, arguments)
                    runs[name].append((time.perf_counter() - t) * 1000)
                    if result.is_error:
                        raise SystemExit(f"{tool} failed: {result.content}")
                    ranks[name].append(first_rank("\n".join(getattr(c, "text", "") for c in result.content), wanted))
                match = " OR ".join('"' + " ".join(terms) + '"' for terms in fts_terms(q))
                t = time.perf_counter()
                if match:
                    conn.execute(fts_sql, (match,)).fetchall()
                runs["fts"].append((time.perf_counter() - t) * 1000)
            done.update(server_stats())

    warm: dict[str, tuple[int, float]] = {}
    done: dict[str, tuple[int, float]] = {}
    anyio.run(go)
    conn.close()
    diy50, diy95 = pct(runs["diy"], 0.5), pct(runs["diy"], 0.95)
    fts50, fts95 = pct(runs["fts"], 0.5), pct(runs["fts"], 0.95)
    labels = {"plughost": "plughost memory-search hybrid over stdio MCP (expandHops 0)",
              "quiet": "plughost memory-search hybrid over stdio MCP, PLUGHOST_AUDIT_MCP=0 (no tool-call audit)",
              "before": f"plughost memory-search over stdio MCP, the code in {args.before} (before)",
              "before_ping": "tools/list round trip, the before server (transport)",
              "diy": "do-it-yourself hybrid over stdio MCP (floor)",
              "fts": "bare FTS5 bm25() LIMIT 10, in process (raw floor)",
              "plughost_ping": "tools/list round trip, plughost server (transport)",
              "quiet_ping": "tools/list round trip, plughost server with the audit off (transport)",
              "diy_ping": "tools/list round trip, DIY server (transport)"}
    print(f"\n{len(evaluated)} known-item queries over {args.pages} manual pages, limit 10, after {WARMUP} warm-up "
          f"calls each; load {load_start:.2f} at the start on {os.cpu_count()} cores")
    print("| measurement | p50 ms | p95 ms | p50 / DIY | p95 / DIY | p50 / bare | p95 / bare | MRR@10 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")

    def mrr(name: str) -> float:
        return sum(1.0 / r for r in ranks[name] if r) / max(1, len(ranks[name]))

    for key, values in runs.items():
        p50, p95 = pct(values, 0.5), pct(values, 0.95)
        quality = f"{mrr(key):.3f}" if key in ranks else ""
        print(f"| {labels[key]} | {p50:.2f} | {p95:.2f} | {p50 / diy50:.2f}x | {p95 / diy95:.2f}x | "
              f"{p50 / fts50:.1f}x | {p95 / fts95:.1f}x | {quality} |")
    r50 = pct(runs["plughost"], 0.5) / diy50
    r95 = pct(runs["plughost"], 0.95) / diy95
    ok = r50 <= 1.2 and r95 <= 1.2 and mrr("plughost") >= 0.80
    print(f"\ntarget: plughost / DIY <= 1.2 at p50 and p95, MRR@10 >= 0.80: p50 {r50:.2f}x, p95 {r95:.2f}x, "
          f"MRR@10 {mrr('plughost'):.3f} (DIY {mrr('diy'):.3f}) -> {'PASS' if ok else 'MISS'}")
    q50, q95 = pct(runs["quiet"], 0.5) / diy50, pct(runs["quiet"], 0.95) / diy95
    print(f"the same with the tool-call audit off (the DIY keeps none): p50 {q50:.2f}x, p95 {q95:.2f}x -> "
          f"{'PASS' if q50 <= 1.2 and q95 <= 1.2 and mrr('quiet') >= 0.80 else 'MISS'}")
    blas = " ".join(f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
                    if k in os.environ) or "BLAS thread variables unset"
    print("threads per server process after warm-up: " + ", ".join(f"{k} {v[0]}" for k, v in sorted(warm.items()))
          + f"; {blas}")
    if done:
        cpu = {k: (done[k][1] - warm[k][1]) * 1000 / len(evaluated) for k in done if k in warm}
        print("server CPU per call (user+sys, the search and its tools/list round trip, the audit thread's "
              "work included): " + ", ".join(f"{k} {v:.1f} ms" for k, v in sorted(cpu.items()))
              + (f"; plughost / DIY {cpu['plughost'] / cpu['diy']:.2f}x" if cpu.get("diy") else ""))
    print(f"load average while measuring: {os.getloadavg()[0]:.2f} (start {load_start:.2f}) on {os.cpu_count()} "
          f"cores; work dir: {work}")
    return 0


if __name__ == "__main__":
    import results as _results

    raise SystemExit(_results.run("diy_hybrid", main))
