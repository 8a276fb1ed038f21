"""The staged bulk import writes exactly what the ordinary upsert path writes.

One tricky file (duplicate ids across and within batches, null properties, re-ingest, upserts
of stored and soft-deleted nodes, embeddings, forward/backward/self/duplicate edges, edge
properties, invalid lines, a foreign-account target) goes through ``graph import`` staged in
this process and in a worker process; a third store gets the same valid lines through
``upsert_many`` and ``create_edges`` one line at a time. All three databases must hold the same
nodes, side tables, BM25 text, edges and backlink counts.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from graph_support import big_file, indexed_terms, kill_once_committed

from plughost import Principal
from plughost.plugins.graph.common import prepare_row
from plughost.plugins.graph.importer import import_jsonl
from plughost.plugins.graph.sqlite_store import SqliteStore
from plughost.plugins.graph.staging import staged_batches
from plughost.ports.graph import Guards
from plughost.util.errors import UserError
from plughost.util.jsonparse import has_lone_surrogate
from tests.conftest import ensure_account

ACCOUNT = "acct-staged"
OTHER = "acct-foreign"
ENV = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": "3"}


def _lines() -> list[Any]:
    def row(i: Any, label: str = "Person", edges: list[Any] | None = None, **props: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"labels": [label], "properties": props}
        if i is not None:
            out["id"] = i
        if edges is not None:
            out["edges"] = edges
        return out

    return [
        row("a", name="Ada Lovelace", scope="public", edges=[{"type": "KNOWS", "to": "b"}, {"type": "KNOWS", "to": "a"}]),
        row("b", name="Bob", agents="bot", keywords="Alpha, beta ,alpha",
            edges=[{"type": "KNOWS", "to": "a"}, {"type": "LIKES", "to": "stored"},  # stored: in the store, later here
                   {"type": "LIKES", "to": "zz", "properties": {"v": 1}}]),  # waits for zz
        "{not json",
        row("a", name="Ada L.", title=None, edges=[{"type": "KNOWS", "to": "b", "properties": {"since": 2020}}]),
        row("c", label="Chunk", content="INV-2024-0042 w5 3.12", agents=["bot", "other", "bot"],
            keywords=["X", "y"], edges=[{"type": "PART_OF", "to": "doc1"}, {"type": "PART_OF", "to": "doc1"}]),
        row("doc1", label="KnowledgeDocument", title="Handbook", attachmentId="att-1",
            edges=[{"type": "HAS_SECTION", "to": "sec1"}]),
        row("sec1", label="Section", title="Intro", edges=[{"type": "HAS_CHUNK", "to": "c"}]),
        {"labels": ["bad label"], "properties": {}},
        row("stored", name="was stored, now updated", extra=1),
        row("gone", name="revived"),
        row("v1", label="Chunk", content="has a vector") | {"embedding": [0.1, 0.2, 0.3]},
        row(None, label="KnowledgeDocument", title="Handbook v2", attachmentId="att-1"),
        row("d", name="Dee", edges=[{"type": "KNOWS", "to": "foreign"}, {"type": "KNOWS", "to": "zz", "properties": {"w": 1}},
                                    {"type": "LIKES", "to": "stored", "properties": {}},
                                    {"type": "LIKES", "to": "zz", "properties": {"v": 2}}]),
        row("b", name="Bob again", description="ünïcödé text",
            edges=[{"type": "LIKES", "to": "zz", "properties": {"v": 3}}]),  # the same edge as line 2's: this wins
        b"\xff\xfe not utf-8",
        row("e", name="Eve", nested={"k": [1, 2, {"x": None}]}, edges=[{"type": "KNOWS", "to": "e"}]),
        row("z", name=None, value="z value"),
        row("zz", label="Person", name="late target"),
        row("f", label="Chunk", content="INV-2024-0042 w5 3.12", agents=["bot", "ägent", "bot"], keywords=["X", "y"]),
        row("s0", name="zero scope", scope="0"),  # staged rows stand 0 for a missing scope
        row("s1", name="empty scope", scope=""),
        row("big", name="big numbers", n=12345678901234567890123, neg=-9223372036854775809, u=18446744073709551615,
            f=1.5),
        '{"id": "sur", "labels": ["Person"], "properties": {"name": "half \\ud800 pair"}}',
        '{"id": "nan", "labels": ["Person"], "properties": {"x": NaN}}',
        '{"id": "deep", "labels": ["Person"], "properties": {"x": ' + "[" * 100000 + "]" * 100000 + "}}",
    ]


def _write(path: Path, lines: list[Any]) -> Path:
    with open(path, "wb") as fh:
        for line in lines:
            fh.write((line if isinstance(line, bytes) else (line if isinstance(line, str) else json.dumps(line)).encode())
                     + b"\n")
    return path


def _seed(db: Path, own: bool = True) -> SqliteStore:
    """Another account's node; with ``own``, nodes of the importing account too (stored, gone)."""
    foreign = SqliteStore(db, env={"ACCOUNT_ID": OTHER})
    foreign.upsert_node(["Person"], {"name": "elsewhere"},
                        guards=Principal.system(OTHER).guards, node_id="foreign")
    foreign.close()
    store = SqliteStore(db, env=ENV)
    if not own:
        return store
    store.upsert_node(["Person"], {"name": "stored", "keep": True},
                      guards=Principal.system(ACCOUNT).guards, node_id="stored")
    store.upsert_node(["Person"], {"name": "gone"}, guards=Principal.system(ACCOUNT).guards, node_id="gone")
    store.soft_delete("gone", guards=Guards(ACCOUNT))
    return store


def _reference(db: Path, lines: list[Any], batch_size: int, own: bool = True) -> None:
    """The same valid lines through the ordinary upsert path: nodes one line at a time; after each
    batch, the edges whose two ends exist (the batch's own first, then those that waited)."""
    store = _seed(db, own)
    waiting: list[tuple[str, str, str, Any]] = []

    def exists(nid: str) -> bool:
        return store.get(nid, guards=Guards(ACCOUNT), include_deleted=True) is not None

    for start in range(0, len(lines), batch_size):
        own = []
        for line in lines[start:start + batch_size]:
            try:
                row = json.loads(line)
                item, row_edges = prepare_row(row, ACCOUNT, "node")
            except (ValueError, UserError, RecursionError):
                continue
            if has_lone_surrogate(line if isinstance(line, bytes) else line.encode(), row):
                continue
            store.upsert_many([{k: v for k, v in row.items() if k != "edges"}], guards=Guards(ACCOUNT))  # the import writes as the account's admin
            nid = item.id or store.conn.execute("SELECT id FROM nodes ORDER BY updated_at DESC, rid DESC "
                                                "LIMIT 1").fetchone()[0]
            own.extend((nid, t, to, p) for t, to, p in row_edges)
        ready = [e for e in own + waiting if exists(e[2])]
        waiting = [e for e in waiting + own if not exists(e[2])]
        store.create_edges(ready, guards=Principal.system(ACCOUNT).guards)
    store.create_edges(waiting, guards=Principal.system(ACCOUNT).guards)
    store.close()


def _dump(db: Path) -> dict[str, Any]:
    con = sqlite3.connect(db)
    hexid = re.compile(r"^[0-9a-f]{32}$")

    def name(nid: str) -> str:
        return "<generated>" if hexid.match(nid) else nid

    rid_name = {rid: name(nid) for rid, nid in con.execute("SELECT rid, id FROM nodes")}
    terms = indexed_terms(con)
    nodes = {}
    for rid, nid, account, labels, props, scope, agents, deleted, dims in con.execute(
            "SELECT rid, id, account_id, labels, properties, scope, agents, deleted_at, dims FROM nodes"):
        nodes[name(nid)] = {
            "account": account, "labels": json.loads(labels), "properties": json.loads(props), "scope": scope,
            "agents": json.loads(agents) if agents is not None else None, "deleted": deleted is not None, "dims": dims,
            "text": terms.get(rid),
            "side": {t: sorted(r[0] for r in con.execute(f"SELECT {c} FROM {t} WHERE node = ?", (rid,)))
                     for t, c in (("node_labels", "label"), ("node_agents", "agent"), ("node_keywords", "keyword"))},
            "vector": con.execute("SELECT embedding FROM node_vectors WHERE node = ?", (rid,)).fetchone(),
            "backlinks": con.execute("SELECT count(*) FROM edges WHERE target = ?", (rid,)).fetchone()[0],
        }
    edges = sorted((rid_name[s], t, rid_name[d], json.loads(p) if p else None)
                   for s, t, d, p in con.execute("SELECT source, type, target, properties FROM edges"))
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    return {"nodes": nodes, "edges": edges}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("staged")
    lines = _lines()
    src = _write(tmp / "tricky.jsonl", lines)
    out: dict[str, Any] = {}
    # "empty": the importing account has no node yet, so no edge is staged for a store lookup.
    for mode, worker, own in (("inline", False, True), ("worker", True, True), ("empty", True, False)):
        db = tmp / f"{mode}.sqlite"
        store = _seed(db, own)
        out[mode] = import_jsonl(store, src, guards=Principal.owner(ACCOUNT).guards, batch_size=3, progress=False, worker=worker)
        store.close()
        out[mode + "_dump"] = _dump(db)
    texts = [line if isinstance(line, bytes) else (line if isinstance(line, str) else json.dumps(line))
             for line in lines]
    for name, own in (("reference", True), ("reference_empty", False)):
        _reference(tmp / f"{name}.sqlite", texts, 3, own)
        out[name + "_dump"] = _dump(tmp / f"{name}.sqlite")
    return out


@pytest.mark.parametrize("mode", ["inline", "worker", "empty"])
def test_staged_import_writes_what_the_upsert_path_writes(imported: dict[str, Any], mode: str) -> None:
    got, want = imported[mode + "_dump"], imported["reference_empty_dump" if mode == "empty" else "reference_dump"]
    assert got["nodes"].keys() == want["nodes"].keys()
    for nid in want["nodes"]:
        assert got["nodes"][nid] == want["nodes"][nid], nid
    assert got["edges"] == want["edges"]


def test_staged_import_semantics(imported: dict[str, Any]) -> None:
    nodes, edges = imported["inline_dump"]["nodes"], imported["inline_dump"]["edges"]
    assert nodes["a"]["properties"] == {"name": "Ada L.", "scope": "public"}  # merged; a null removes a key
    assert nodes["b"]["agents"] == ["bot"] and nodes["b"]["side"]["node_keywords"] == ["alpha", "beta"]
    assert nodes["f"]["side"]["node_agents"] == ["bot", "ägent"] and nodes["f"]["agents"] == ["bot", "ägent", "bot"]
    assert nodes["f"]["side"]["node_keywords"] == ["x", "y"] and "inv 2024 0042" in " ".join(t for t, _ in nodes["f"]["text"])
    assert nodes["gone"]["deleted"] is False and nodes["stored"]["properties"]["keep"] is True
    assert nodes["v1"]["dims"] == 3 and nodes["v1"]["vector"] is not None
    assert nodes["doc1"]["properties"]["title"] == "Handbook v2"  # re-ingest reused the document
    assert "sec1" not in nodes and "c" not in nodes  # ... and dropped the hierarchy the file gave it
    assert ("a", "KNOWS", "b", {"since": 2020}) in edges and ("e", "KNOWS", "e", None) in edges
    assert ("d", "KNOWS", "zz", {"w": 1}) in edges  # a forward reference, with properties
    assert ("b", "LIKES", "zz", {"v": 3}) in edges and ("d", "LIKES", "zz", {"v": 2}) in edges
    assert ("b", "LIKES", "stored", None) in edges  # found in the store, then upserted by the file
    assert nodes["s0"]["scope"] == "0" and nodes["s1"]["scope"] == ""
    assert nodes["z"]["scope"] == "admin" and nodes["z"]["properties"]["scope"] == "admin"  # a line naming no scope
    assert nodes["stored"]["scope"] is None  # a re-imported node keeps its own (here a legacy unscoped one)
    assert "big" not in nodes  # integers past 64 bits: refused by line, as memory-write refuses them
    assert "sur" not in nodes  # a lone surrogate: no UTF-8 text can hold it
    assert nodes["a"]["backlinks"] == 2 and nodes["stored"]["backlinks"] == 2
    assert "foreign" not in {d for _, _, d, _ in edges}


def test_staged_modes_report_the_same(imported: dict[str, Any]) -> None:
    a, b = imported["inline"], imported["worker"]
    assert a.errors == b.errors
    assert (a.nodes, a.edges, a.skipped, a.batches, a.lines) == (b.nodes, b.edges, b.skipped, b.batches, b.lines)
    assert a.lines == 25 and a.nodes == 18 and a.skipped == 7
    assert [e.split(":")[0] for e in a.errors] == ["line 3", "line 8", "line 15", "line 22", "line 23", "line 24",
                                                   "line 25", "line 13"]
    assert "not UTF-8" in a.errors[2] and "does not fit 64 bits" in a.errors[3]
    assert "lone" not in a.errors[4] and "without its pair" in a.errors[4]
    assert "not JSON-serialisable" in a.errors[5] and "recursion limit" in a.errors[6] and "'foreign'" in a.errors[7]
    empty = imported["empty"]  # no store lookups: the same lines and nodes
    assert (empty.lines, empty.nodes, empty.skipped) == (25, 18, 7) and empty.errors[:7] == a.errors[:7]


@pytest.mark.parametrize("types", [3, 40])  # 40: past TYPES_INLINE, the type names come from a lookup
def test_staged_edge_types_arrive_by_name(tmp_path: Path, types: int) -> None:
    from plughost.plugins.graph.sqlite_store import TYPES_INLINE
    assert types <= TYPES_INLINE or types > TYPES_INLINE + 1
    rows = [{"id": f"n{i}", "labels": ["Person"], "properties": {"name": f"n{i}"},
             "edges": [{"type": f"T{i % types}", "to": f"n{(i + 1) % 60}"},  # forward: waits for its target
                       {"type": f"T{(i + 7) % types}", "to": f"n{i // 2}", "properties": {"i": i}}]}
            for i in range(60)]
    store = SqliteStore(tmp_path / "g.sqlite", env=ENV)
    summary = import_jsonl(store, _write(tmp_path / "t.jsonl", rows), guards=Principal.owner(ACCOUNT).guards, batch_size=7,
                           progress=False, worker=False)
    got = sorted(store.conn.execute("SELECT s.id, e.type, t.id, e.properties FROM edges e JOIN nodes s ON s.rid = "
                                    "e.source JOIN nodes t ON t.rid = e.target"))
    want = sorted({(f"n{i}", f"T{i % types}", f"n{(i + 1) % 60}", None) for i in range(60)}
                  | {(f"n{i}", f"T{(i + 7) % types}", f"n{i // 2}", json.dumps({"i": i}, separators=(",", ":")))
                     for i in range(60)})
    assert summary.edges == 120 and [(s, t, d, p and json.loads(p)) for s, t, d, p in got] == \
        [(s, t, d, p and json.loads(p)) for s, t, d, p in want]
    store.close()


def test_a_worker_stream_ramps_up_to_the_batch_size(tmp_path: Path) -> None:
    """The worker's first batch is small (the writer starts early), each next one twice as big;
    in-process staging (no pipeline to fill) uses the batch size throughout."""
    from plughost.plugins.graph.staging import RAMP_FIRST

    src = big_file(tmp_path / "r.jsonl", RAMP_FIRST * 8)
    for worker, batches in ((True, 4), (False, 1)):  # 1, 2, 4, then the last 1 thousand; or one batch
        store = SqliteStore(tmp_path / f"{worker}.sqlite", env=ENV)
        summary = import_jsonl(store, src, guards=Principal.owner(ACCOUNT).guards, batch_size=RAMP_FIRST * 8, progress=False,
                               worker=worker)
        assert (summary.batches, summary.nodes, summary.edges) == (batches, RAMP_FIRST * 8, RAMP_FIRST * 8 - 1)
        store.close()


def test_worker_runs_this_code_whatever_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A working directory with its own ``plugins`` package (a brand's plugin folders, say) must
    not shadow the worker's code."""
    fake = tmp_path / "cwd" / "plugins" / "graph"
    fake.mkdir(parents=True)
    for name in ("../__init__.py", "__init__.py"):
        (fake / name).write_text("")
    (fake / "staging.py").write_text("raise SystemExit('not this staging')\n")
    monkeypatch.chdir(tmp_path / "cwd")
    store = SqliteStore(tmp_path / "g.sqlite", env=ENV)
    src = _write(tmp_path / "w.jsonl", [{"id": "w1", "labels": ["Person"], "properties": {"name": "w"}}])
    assert import_jsonl(store, src, guards=Principal.owner(ACCOUNT).guards, progress=False, worker=True).nodes == 1
    store.close()


@pytest.mark.parametrize("worker", [False, True])
def test_another_accounts_id_is_a_new_node_of_this_account(tmp_path: Path, worker: bool) -> None:
    """Ids are per account (docs/guards.md#the-guards): a line naming an id another account uses imports as this
    account's own node; the other account's node is untouched, and nothing says it exists."""
    db = tmp_path / "g.sqlite"
    store = _seed(db)
    src = _write(tmp_path / "f.jsonl", [{"id": "ok1", "labels": ["Person"], "properties": {}},
                                        {"id": "foreign", "labels": ["Person"], "properties": {"name": "mine"}}])
    summary = import_jsonl(store, src, guards=Principal.owner(ACCOUNT).guards, progress=False, worker=worker)
    assert (summary.nodes, summary.skipped) == (2, 0)
    assert store.get("foreign", guards=Guards(ACCOUNT)).properties["name"] == "mine"
    other = SqliteStore(db, env={"ACCOUNT_ID": OTHER})
    assert other.get("foreign", guards=Guards(OTHER)).properties["name"] == "elsewhere"
    other.close()
    assert store.integrity_check() == "ok"
    store.close()


def test_worker_setting_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SqliteStore(tmp_path / "g.sqlite", env=ENV)
    src = _write(tmp_path / "x.jsonl", [{"labels": ["Person"], "properties": {}}])
    monkeypatch.setenv("PLUGHOST_IMPORT_WORKER", "sometimes")
    with pytest.raises(UserError, match="PLUGHOST_IMPORT_WORKER: expected one of auto, 1, 0"):
        import_jsonl(store, src, guards=Principal.owner(ACCOUNT).guards, progress=False)
    monkeypatch.setenv("PLUGHOST_IMPORT_WORKER", "1")
    assert import_jsonl(store, src, guards=Principal.owner(ACCOUNT).guards, progress=False).nodes == 1
    store.close()


def _processes_with(needle: str) -> list[int]:
    """Pids whose command line (NUL-separated, as in /proc) contains ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes().decode("utf-8", "replace"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_worker_failure_is_one_clear_error(tmp_path: Path) -> None:
    batches = staged_batches(tmp_path / "vanished.jsonl", ACCOUNT, 10, worker=True)
    with pytest.raises(UserError, match=r"vanished\.jsonl: the import worker failed \(.*No such file"):
        list(batches)


def test_sigkill_during_a_worker_import_leaves_no_worker_and_whole_batches(tmp_path: Path) -> None:
    home = tmp_path / "home"
    src = big_file(tmp_path / "big.jsonl", 40000)
    env = dict(os.environ, ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(home), PLUGHOST_IMPORT_WORKER="1")
    ensure_account(env)
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "graph", "import", str(src), "--batch-size", "500",
                             "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    seen = kill_once_committed(proc, home / "graph.sqlite", 2000)
    for _ in range(100):  # the worker notices on its next write and exits
        if not _processes_with(f"plughost.plugins.graph.import_worker\0{src}"):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the import worker outlived the killed import")
    con = sqlite3.connect(home / "graph.sqlite")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    count = con.execute("SELECT count(*) FROM nodes").fetchone()[0]
    assert count >= seen and count % 500 == 0 and count < 40000
    assert {r[0] for r in con.execute("SELECT id FROM nodes")} == {f"n{i}" for i in range(count)}
    assert con.execute("SELECT count(*) FROM edges").fetchone()[0] == count - 1
    con.close()


def test_two_imports_through_one_store_object_take_turns(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "g.sqlite", env=ENV)
    files = [big_file(tmp_path / f"{p}.jsonl", 3000, prefix=p) for p in ("a", "b")]
    results: list[Any] = []
    threads = [threading.Thread(target=lambda f=f: results.append(
        import_jsonl(store, f, guards=Principal.owner(ACCOUNT).guards, batch_size=200, progress=False, worker=False))) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted((r.nodes, r.edges, len(r.errors)) for r in results) == [(3000, 2999, 0)] * 2
    assert store.count(guards=Guards(ACCOUNT)) == 6000 and store.integrity_check() == "ok"
    store.close()


@pytest.mark.parametrize("raw", [
    b'{"a": 1, "b": [1.5, -0.0, 1e308, 5e-324, 2.5e-324, true, null], "c": {"d": "\\u00e9\\ud83d\\ude00"}}',
    b'{"n": 123456789012345678, "m": -9223372036854775808, "u": 18446744073709551615}',
    b'{"n": 12345678901234567890123}', b'{"n": -9223372036854775809}', b'{"n": 1e400}', b'{"x": NaN}',
    b'{"a": 1, "a": 2}', b'  {"a": "spaced"}  \r\n', b'{"s": "\\ud800"}', b'[1, 2]', b'"text"',
    b'{"k": "\xc3\xa9t\xc3\xa9"}', b'{"deep": ' + b'[' * 60 + b']' * 60 + b'}',
])
def test_line_parser_gives_what_json_gives(raw: bytes) -> None:
    """orjson parses the usual line; every value matches json.loads exactly, and what it calls
    plain re-encodes (orjson.dumps) to text that json reads back as the same value."""
    from plughost.plugins.graph.staging import _loads, _plain_json

    value, plain = _loads(raw)
    want = json.loads(raw.decode())
    assert repr(value) == repr(want)
    if plain:
        assert repr(json.loads(_plain_json(value))) == repr(want)
    if b"123456789012345678901" in raw or b"9223372036854775809" in raw or b"NaN" in raw or b"1e400" in raw:
        assert not plain  # orjson would round it or rejects it: json decides


@pytest.mark.parametrize("raw", [b'{"a": ', b'{"a": 1} x', b'{"a": 01}', b"\xff"])
def test_line_parser_errors_are_jsons(raw: bytes) -> None:
    from plughost.plugins.graph.staging import _loads

    with pytest.raises((json.JSONDecodeError, UnicodeDecodeError)) as got:
        _loads(raw)
    with pytest.raises(type(got.value)) as want:
        json.loads(raw.decode())
    assert str(got.value) == str(want.value)
