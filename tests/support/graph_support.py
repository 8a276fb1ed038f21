"""Bulk-import test helpers: JSON-lines files (a mixed good/bad one, a big chained one) and a
SIGKILL timed by what the store file already holds."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

MIXED_LINES: list[object] = [
    {"id": "a", "labels": ["Person"], "properties": {"name": "Ada"}, "edges": [{"type": "KNOWS", "to": "b"}]},
    "{not json",
    {"id": "b", "labels": ["Person"], "properties": {"name": "Bob", "scope": "public"}},
    {"labels": ["bad label"], "properties": {}},
    "",
    {"id": "c", "labels": ["Person"], "properties": {}, "edges": [{"type": "KNOWS", "to": "ghost"}]},
    {"id": "d", "labels": ["Person"], "properties": {"accountId": "other"}},
    [1, 2],
    {"id": "e", "labels": ["Person"], "properties": {}, "extra": 1},
]
"""Nine import lines, the same file for both backends: nodes a, b and c import (a's edge to b
resolves; c's edge to a missing node is an error); broken JSON, a bad label, another account, a
non-object and an unknown key are skipped lines; the blank line is ignored."""

CASCADE_ROWS: list[dict[str, object]] = [
    {"id": "c1", "labels": ["Chunk"], "properties": {"content": "x", "scope": "public"}},
    {"id": "s1", "labels": ["Section"], "properties": {"body": "pub", "scope": "public"},
     "edges": [{"type": "HAS_CHUNK", "to": "c1"}]},
    {"id": "s2", "labels": ["Section"], "properties": {"body": "secret", "scope": "admin"}},
    {"id": "d", "labels": ["KnowledgeDocument"], "properties": {"title": "d", "scope": "public"},
     "edges": [{"type": "HAS_SECTION", "to": "s1"}, {"type": "HAS_SECTION", "to": "s2"}]},
]
"""A public document with a public and an admin section: a public soft delete cascades to three
nodes and leaves the admin section (both backends' guard tests)."""


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def big_file(path: Path, n: int, prefix: str = "n") -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            row = {"id": f"{prefix}{i}", "labels": ["Chunk"], "properties": {"content": f"chunk number {i} w5"}}
            if i:
                row["edges"] = [{"type": "NEXT", "to": f"{prefix}{i - 1}"}]
            fh.write(json.dumps(row) + "\n")
    return path


def kill_once_committed(proc: subprocess.Popen, db: Path, rows: int) -> int:
    """SIGKILL ``proc`` once ``db`` holds at least ``rows`` nodes; returns the count last seen."""
    seen = 0
    deadline = time.time() + 60
    try:
        while time.time() < deadline and proc.poll() is None and seen < rows:
            if db.exists():
                try:
                    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
                    seen = con.execute("SELECT count(*) FROM nodes").fetchone()[0]
                    con.close()
                except sqlite3.OperationalError:
                    seen = 0
            time.sleep(0.02)
        assert proc.poll() is None, "import finished before it could be killed; make the file bigger"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return seen


def indexed_terms(con: sqlite3.Connection, table: str = "node_text") -> dict[int, list[tuple[str, int]]]:
    """What a full-text index holds, by rowid: each document's ``(term, position)`` in order, read
    through ``fts5vocab`` (a contentless index cannot give its text back; its terms it can)."""
    vocab = f"temp.vocab_{table}"
    con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} USING fts5vocab(main, {table}, instance)")
    out: dict[int, list[tuple[str, int]]] = {}
    for doc, term, offset in con.execute(f"SELECT doc, term, offset FROM {vocab} ORDER BY doc, offset, term"):
        out.setdefault(doc, []).append((term, offset))
    return out


def expected_terms(con: sqlite3.Connection, tokenize: str) -> dict[int, list[tuple[str, int]]]:
    """The terms each live node row's ``text_of`` gives under ``tokenize``: the oracle of
    :func:`indexed_terms` (a fresh index of exactly the rows the store holds)."""
    from plughost.plugins.graph.common import text_of

    con.execute("DROP TABLE IF EXISTS temp.oracle_text")
    con.execute(f"CREATE VIRTUAL TABLE temp.oracle_text USING fts5 (text, tokenize = '{tokenize}')")
    rows = [(rid, text_of(json.loads(props))) for rid, props in con.execute("SELECT rid, properties FROM nodes")]
    con.executemany("INSERT INTO temp.oracle_text (rowid, text) VALUES (?, ?)", [(r, t) for r, t in rows if t])
    con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_oracle USING fts5vocab(temp, oracle_text, instance)")
    out: dict[int, list[tuple[str, int]]] = {}
    for doc, term, offset in con.execute("SELECT doc, term, offset FROM temp.vocab_oracle ORDER BY doc, offset, term"):
        out.setdefault(doc, []).append((term, offset))
    return out


WORDS = ("oven", "sourdough", "rye", "croissant", "opening", "hours", "delivery", "gluten", "vegan", "cake",
         "wedding", "price", "butter", "flour", "monday", "sunday", "catering", "order", "birthday", "tart",
         "almond", "seeds", "loaf", "baguette", "coffee", "tea", "holiday", "closed", "parking", "allergy")
LABELS = ("Chunk", "Person", "Task", "KnowledgeDocument", "Question", "Concept")


def graph_rows(n: int, dims: int, seed: int = 7, prefix: str = "g") -> list[dict[str, object]]:
    """``n`` varied import lines: several labels, scopes and agents, text from ``WORDS``, a
    ``dims``-long embedding on most, edges to earlier and later lines, awkward property values
    (quotes, commas, new lines, a nested object, lists, booleans, floats)."""
    import random

    rnd = random.Random(seed)
    rows: list[dict[str, object]] = []
    for i in range(n):
        words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 9)))
        props: dict[str, object] = {"name": f"{prefix} {i} {words[:20]}", "content": words,
                                    "scope": rnd.choice(("public", "admin", "team")), "rank": i,
                                    "weight": round(rnd.random(), 6), "flag": i % 3 == 0}
        if i % 5 == 0:
            props["agents"] = [rnd.choice(("bot", "sales"))]
        if i % 7 == 0:
            props["note"] = f'say "hi", then\nleave; {words}'
            props["meta"] = {"k": i, "tags": ["x", "y"]}
            props["keywords"] = ["Bread", "oven"]
        row: dict[str, object] = {"id": f"{prefix}{i:05d}", "labels": [LABELS[i % len(LABELS)]], "properties": props}
        if i % 4:
            row["embedding"] = [round(rnd.uniform(-1, 1), 4) for _ in range(dims)]
        edges = []
        if i:
            edges.append({"type": "NEXT", "to": f"{prefix}{i - 1:05d}"})
        if i + 3 < n and i % 2:
            edges.append({"type": "MENTIONS", "to": f"{prefix}{i + 3:05d}", "properties": {"w": i}})
        if edges:
            row["edges"] = edges
        rows.append(row)
    return rows


def store_snapshot(store, account: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Every node of the account (id, labels, properties with the store-set ones, embedding) and every edge,
    read through the port's scan: what a round trip must keep."""
    nodes, edges, after = [], [], ""
    while True:
        page = store.scan_nodes(account_id=account, after=after, limit=500)
        if not page:
            break
        vectors = store.export_embeddings([n.id for n in page], account_id=account)
        for node in page:
            props = {k: v for k, v in node.properties.items() if k != "accountId"}
            vec = vectors.get(node.id)
            nodes.append((node.id, tuple(sorted(node.labels)), props, [round(float(v), 5) for v in vec] if vec is not None else None))
        mine = {n.id for n in page}
        edges += [(s, t, d, p) for s, t, d, p in store.node_edges(sorted(mine), account_id=account) if s in mine]
        after = page[-1].id
    return nodes, sorted(edges, key=lambda e: (e[0], e[1], e[2]))
