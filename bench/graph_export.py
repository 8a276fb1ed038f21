"""Graph export and migrate throughput beside the import and its floor (issue 36).

    .venv/bin/python bench/graph_export.py [--nodes 100000] [--edges 300000] [--dims 0] [--no-neo4j] [--no-admin]

One synthetic file (``bench/graph_store.py``'s shape) is imported into a fresh embedded store, then:

- ``graph export`` (JSON lines) of the account, and ``graph import`` of that export into a
  fresh store (the round trip), beside the embedded import floor: a bare FTS5 insert of the
  same raw lines into a fresh file, measured right after;
- ``graph migrate --to neo4j`` of the store into Neo4j (NEO4J_URI's server, else one started
  for the run), beside the same server's indexed floor (bare ``UNWIND CREATE`` under the store's
  uniqueness constraint and full-text index, ``bench/graph_store.py``'s ``neo4j_import_floor``);
- the neo4j-admin route: ``graph export --format neo4j-admin`` and Neo4j's own offline
  ``neo4j-admin database import full`` of those files into a fresh database folder (the
  harness's jars, ``scripts/neo4j/neo4j.sh lib``), when Java is here.

``--dims N`` gives every node an N-long embedding (0: none, as the import figures elsewhere).
Every line prints nodes/s wall, the load average and the cores.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("PLUGHOST_LOG_FILE", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import results as bench_results  # noqa: E402
from graph_store import ACCOUNT, build_file, neo4j_import_floor, start_neo4j  # noqa: E402

from plughost import Principal  # noqa: E402
from plughost.plugins.graph.export import export_jsonl  # noqa: E402
from plughost.plugins.graph.importer import import_jsonl  # noqa: E402
from plughost.plugins.graph.sqlite_store import SqliteStore  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def where() -> str:
    return f"load {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores"


def add_embeddings(store: SqliteStore, nodes: int, dims: int) -> None:
    import numpy as np

    rng = np.random.default_rng(5)
    for start in range(0, nodes, 5000):
        ids = range(start, min(start + 5000, nodes))
        store.set_embeddings([(f"n{i}", rng.standard_normal(dims).astype("float32").tolist()) for i in ids],
                             account_id=ACCOUNT)


def fts_floor(data: Path, tmp: Path, nodes: int) -> float:
    t0 = time.perf_counter()
    raw = sqlite3.connect(tmp / "floor.sqlite")
    raw.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    with open(data, encoding="utf-8") as fh:
        raw.executemany("INSERT INTO t (text) VALUES (?)", ((line,) for line in fh))
    raw.commit()
    raw.close()
    return nodes / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=300_000)
    ap.add_argument("--dims", type=int, default=0, help="an embedding of this length on every node (0: none)")
    ap.add_argument("--batch", type=int, default=5000, help="migrate: nodes a transaction (the command's default)")
    ap.add_argument("--no-neo4j", action="store_true")
    ap.add_argument("--no-admin", action="store_true")
    ap.add_argument("--dir", type=Path, default=None)
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("embedded: a bare FTS5 insert of the raw lines into a fresh file, right after the import; "
                        "Neo4j: bare UNWIND CREATE of the same nodes and edges under the store's uniqueness "
                        "constraint and full-text index (bench/graph_store.py neo4j_import_floor), one client thread")
    tmp = Path(tempfile.mkdtemp(dir=args.dir))
    env = {"ACCOUNT_ID": ACCOUNT, **({"PLUGHOST_EMBED_DIMENSIONS": str(args.dims)} if args.dims else {})}
    try:
        data = tmp / "nodes.jsonl"
        build_file(data, args.nodes, args.edges, random.Random(42))
        store = SqliteStore(tmp / "graph.sqlite", env=env)
        summary = import_jsonl(store, data, guards=Principal.owner(ACCOUNT).guards, progress=False)
        floor = fts_floor(data, tmp, args.nodes)
        print(f"embedded import         {summary.nodes:,} nodes, {summary.edges:,} edges: {summary.rate:,.0f} nodes/s; "
              f"floor {floor:,.0f} lines/s; ratio {floor / summary.rate:.1f}x ({where()})")
        if args.dims:
            add_embeddings(store, args.nodes, args.dims)
        out = tmp / "export.jsonl"
        with open(os.devnull, "w") as devnull:
            exported = export_jsonl(store, ACCOUNT, out, devnull)
        rate = exported["nodes"] / float(exported["seconds"])
        print(f"graph export (jsonl)    {exported['nodes']:,} nodes, {exported['edges']:,} edges, "
              f"{exported['embeddings']:,} embeddings, {out.stat().st_size / 1e6:,.0f} MB: {rate:,.0f} nodes/s; "
              f"{floor / rate:.1f}x the import floor's time ({where()})")
        fresh = SqliteStore(tmp / "fresh.sqlite", env=env)
        again = import_jsonl(fresh, out, guards=Principal.owner(ACCOUNT).guards, progress=False)
        fresh.close()
        print(f"import of the export    {again.nodes:,} nodes, {again.edges:,} edges (times restored): "
              f"{again.rate:,.0f} nodes/s; ratio {floor / again.rate:.1f}x the floor ({where()})")
        if not args.no_admin:
            admin_route(store, tmp, args, floor)
        if not args.no_neo4j:
            plain = None
            if args.dims:  # the floor writes no vectors: migrate a vector-less copy too, like for like
                plain = SqliteStore(tmp / "plain.sqlite", env={"ACCOUNT_ID": ACCOUNT})
                import_jsonl(plain, data, guards=Principal.owner(ACCOUNT).guards, progress=False)
            migrate_route(store, tmp, args, data, plain)
            if plain is not None:
                plain.close()
        store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def admin_route(store: SqliteStore, tmp: Path, args: argparse.Namespace, floor: float) -> None:
    from plughost.plugins.graph.neo4j_admin import export_neo4j_admin

    folder = tmp / "admin"
    t0 = time.perf_counter()
    summary = export_neo4j_admin(store, ACCOUNT, folder, dimensions=args.dims or 384)
    export_s = time.perf_counter() - t0
    print(f"export --format neo4j-admin  {summary['nodes']:,} nodes, {summary['edges']:,} edges: "
          f"{summary['nodes'] / export_s:,.0f} nodes/s (two passes) ({where()})")
    lib = None
    if shutil.which("java"):
        res = subprocess.run(["bash", str(ROOT / "scripts/neo4j/neo4j.sh"), "lib"], capture_output=True, text=True,
                             env={**os.environ, "PLUGHOST_NEO4J_CACHE": os.environ.get(
                                 "PLUGHOST_NEO4J_CACHE", str(Path.home() / ".cache/plughost/neo4j"))})
        lib = res.stdout.strip().splitlines()[-1] if res.returncode == 0 and res.stdout.strip() else None
    if lib is None:
        print("neo4j-admin import       not run (no Java, or the harness jars could not be fetched)")
        return
    home = tmp / "neo4j-home"
    (home / "conf").mkdir(parents=True)
    t0 = time.perf_counter()
    res = subprocess.run(["java", "-cp", f"{lib}/*", "org.neo4j.cli.AdminTool", "database", "import", "full",
                          f"--nodes={folder / 'nodes.csv'}", f"--relationships={folder / 'relationships.csv'}",
                          "--array-delimiter=U+001F", "--multiline-fields=true", "--overwrite-destination",
                          "--max-off-heap-memory=512m", "neo4j"], capture_output=True, text=True,
                         env={**os.environ, "NEO4J_HOME": str(home), "NEO4J_CONF": str(home / "conf")})
    tool_s = time.perf_counter() - t0
    if res.returncode != 0:
        print(f"neo4j-admin import       failed: {(res.stdout + res.stderr)[-300:]}")
        return
    nodes = re.search(r"^\s+(\d+) nodes$", res.stdout, re.MULTILINE)
    print(f"neo4j-admin import full  {int(nodes.group(1)) if nodes else 0:,} nodes: {args.nodes / tool_s:,.0f} nodes/s "
          f"(the tool's JVM start included; --multiline-fields=true reads on one thread); route total "
          f"(CSV export + tool) {args.nodes / (export_s + tool_s):,.0f} nodes/s; the indexes (schema.cypher) are "
          f"built after the database starts, not timed ({where()})")


def migrate_route(store: SqliteStore, tmp: Path, args: argparse.Namespace, data: Path,
                  plain: SqliteStore | None) -> None:
    from plughost.plugins.graph.migrate import STATE_FILE, migrate
    from plughost.plugins.graph.neo4j_store import Neo4jStore

    neo_env, run_dir = start_neo4j()
    try:
        env = {**neo_env, **({"PLUGHOST_EMBED_DIMENSIONS": str(args.dims)} if args.dims else {})}
        target = Neo4jStore.from_env({**env, "ACCOUNT_ID": ACCOUNT})
        target.wipe_account(ACCOUNT)
        ix_s = neo4j_import_floor(target, data, target.import_batch_size, indexed=True)[0]
        for source, what in ((store, f"{args.dims}-dimension vectors" if args.dims else "no vectors"),
                             (plain, "no vectors")):
            if source is None:
                continue
            (tmp / STATE_FILE).unlink(missing_ok=True)  # each migration from the start
            t0 = time.perf_counter()
            totals = migrate(source, lambda a: Neo4jStore.from_env({**env, "ACCOUNT_ID": a}), home=tmp,
                             target=neo_env["NEO4J_URI"], batch=args.batch, sample=20)
            seconds = time.perf_counter() - t0
            print(f"graph migrate --to neo4j {totals['nodes']:,} nodes ({what}), {totals['edges']:,} edges, verified "
                  f"(mismatches={totals['mismatches']}): {totals['nodes'] / seconds:,.0f} nodes/s with the edges and "
                  f"the verification; indexed floor (no vectors) {args.nodes / ix_s:,.0f} nodes/s; ratio "
                  f"{seconds / ix_s:.1f}x; {args.batch:,} nodes a transaction ({where()})")
            target.wipe_account(ACCOUNT)
        target.close()
    finally:
        if run_dir:
            subprocess.run(["bash", str(ROOT / "scripts/neo4j/neo4j.sh"), "stop", run_dir], check=False)


if __name__ == "__main__":
    raise SystemExit(bench_results.run("graph_export", main))
