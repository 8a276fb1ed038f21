"""Staged bulk import for the embedded store: lines → validated batches → set-based SQL.

Parsing and validating JSON lines is Python work; writing the store is SQLite work. A staged
batch is an in-memory SQLite database holding one batch of validated rows (``STAGE_SCHEMA``),
serialised to bytes. The store attaches it and writes every table with one ``INSERT ...
SELECT`` each (:meth:`plughost.plugins.graph.sqlite_store.SqliteStore.bulk_import`), so the per-row
cost on the writing side is SQLite's alone.

For big files a worker process builds the batches (``python -m plughost.plugins.graph.import_worker FILE
ACCOUNT BATCH [--no-lookup]``) while the importing process writes the previous one, so the two
halves run on two cores. It streams frames on stdout: an 8-byte big-endian length, then a staged batch; a
zero length ends the stream. Small files are staged in-process (a process start costs more
than it saves). Either way the same validation (:func:`plughost.plugins.graph.common.prepare_row`)
decides every line, so the error messages and the stored result do not depend on the mode.

A row is *fast* when plain SQL can write it: no embedding, no null property, a new id, and not
a document re-ingest. Anything else (and any fast row whose id turns out to exist in the store)
goes through the store's ordinary upsert, in line order, inside the same transaction.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

import orjson

from plughost import UserError, log
from plughost.api.settings import FALSE, TRUE
from plughost.api.store import (
    LONE_SURROGATE,
    BadLine,
    ImportRow,
    WaitingEdges,
    has_lone_surrogate,
    line_id,
    parse_line,
)
from plughost.api.util import gc_paused
from plughost.plugins.graph.common import (
    env_dimensions,
    keywords_of,
    labels_json,
    prepare_row,
    text_of,
    to_json,
)
from plughost.plugins.graph.settings import IMPORT_WORKER

STAGE_SCHEMA = """
-- Every accepted row. seq is its position in the batch from 1, given by insert order (not bound);
-- a fast row's rid is the batch's base + seq.
CREATE TABLE nodes (
  seq        INTEGER PRIMARY KEY,
  id         TEXT    NOT NULL,      -- '' only for a slow row the store names (re-ingest)
  labels     TEXT    NOT NULL,      -- JSON array
  properties TEXT    NOT NULL,      -- JSON object, as stored (fast) or as given (slow)
  scope,                            -- a string, or 0 for none
  agents,                           -- JSON array, or 0
  text                              -- the BM25 text union (fast rows), or 0
);
-- The rows the store's ordinary upsert writes (embedding: JSON array, or 0). The store adds the
-- fast rows whose id it already has.
CREATE TABLE slow (seq INTEGER NOT NULL, embedding NOT NULL);
CREATE TABLE keywords (keyword TEXT NOT NULL, seq INTEGER NOT NULL);   -- fast rows only
-- Edge types by code: every edge table holds a type's code.
CREATE TABLE types (code INTEGER PRIMARY KEY, name TEXT NOT NULL);
-- An edge's properties are a JSON object or 0 throughout. Its pid (batch << 32 | n) names it
-- across frames.
-- Edges from this batch's rows to a row the file had by the end of the batch (dst: its key).
CREATE TABLE edges (seq INTEGER NOT NULL, type INTEGER NOT NULL, dst INTEGER NOT NULL, properties NOT NULL);
-- Edges from this batch's rows to an id the file had not had yet: the store may have it.
CREATE TABLE edges_by_id (pid INTEGER NOT NULL, seq INTEGER NOT NULL, type INTEGER NOT NULL, dst TEXT NOT NULL,
                          properties NOT NULL);
-- Edges of earlier batches whose target first appears in this batch: both ends are row keys.
CREATE TABLE late (pid INTEGER NOT NULL, src INTEGER NOT NULL, type INTEGER NOT NULL, dst INTEGER NOT NULL,
                   properties NOT NULL);
-- Final frame: edges whose target the file never had (the store's lookup decides them).
CREATE TABLE unresolved (pid INTEGER NOT NULL, src INTEGER NOT NULL, type INTEGER NOT NULL, dst TEXT NOT NULL,
                         properties NOT NULL, lineno INTEGER NOT NULL);
CREATE TABLE skips (lineno INTEGER NOT NULL, message TEXT NOT NULL);
CREATE TABLE meta (batch INTEGER NOT NULL, lines INTEGER NOT NULL, bytes INTEGER NOT NULL);  -- -1: final
"""
"""Staged rows never hold NULL, and hold as few strings as they can: binding ``None`` costs the
``sqlite3`` module an adapter lookup per value, and binding a string costs SQLite an allocation
and a copy, several times what an integer costs. So ``0`` stands for none (in columns without
affinity, where the string ``'0'`` stays a string) and the store reads ``nullif(..., 0)``; edge
types travel as codes."""

RAMP_FIRST = 1000
"""Lines in a worker's first batch (see :func:`_batches`)."""
WORKER_MIN_BYTES = 4 << 20
"""Files at least this big are staged by a worker process (``PLUGHOST_IMPORT_WORKER`` overrides)."""
NO_LOOKUP = "--no-lookup"
"""Worker flag: the account was empty when the import began (:class:`Stager` ``lookup=False``)."""
FINAL_BATCH = -1
"""``meta.batch`` of a final frame (batches count from 0)."""

_FRAME = struct.Struct("!Q")
_DIGITS = bytes.maketrans(bytes(range(256)), bytes(48 if 48 <= b <= 57 else 32 for b in range(256)))
_LONG_INT = b"0" * 19  # a run of 19 digits, once ``_DIGITS`` mapped every digit to 0


def _loads(raw: bytes) -> tuple[Any, bool]:
    """One line → ``(value, plain)``, raising what ``json.loads`` raises.

    orjson parses the usual line (about twice as fast as ``json``), and what it returns is
    *plain*: str keys, finite floats, 64-bit integers, no lone surrogates, all of which
    ``orjson.dumps`` encodes exactly (:func:`_plain_json`). Anything orjson rejects, and any
    line with a run of 19+ digits (orjson turns integers past 64 bits into floats), goes
    through ``json`` for its exact value and error message.
    """
    if raw.translate(_DIGITS).find(_LONG_INT) < 0:  # not ``in``: bytes ``in`` tries an int first, raising
        try:
            return orjson.loads(raw), True
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw.decode()), False


def _read_line(raw: bytes) -> tuple[Any, bool]:
    """:func:`_loads` for :func:`plughost.util.jsonparse.parse_line`: orjson rejects lone surrogates, so only
    the lines ``json`` parsed need that check."""
    value, plain = _loads(raw)
    if not plain and has_lone_surrogate(raw, value):
        raise BadLine(LONE_SURROGATE)
    return value, plain


def _plain_json(value: Any) -> str:
    """JSON text of a plain value (see :func:`_loads`): ``orjson.dumps``, several times faster than
    ``json.dumps``; the text differs only in spacing and escapes, and parses to the same value."""
    return orjson.dumps(value).decode()


KEY_BITS = 32
"""A staged row's key is ``batch << KEY_BITS | seq``: the store maps it to a rid without a lookup."""


Waiter = tuple[int, int, int, "str | int", int]
"""An edge waiting for its target: (pid, source key, type code, properties JSON or 0, line)."""


@dataclass
class _Frame:
    """One batch's staged tables as they fill, flattened (a row is its table's width of values in
    a row): no tuple per row to build, walk and free, and each INSERT takes a slice as it is."""

    shift: int  # batch << KEY_BITS: a row's key is shift | seq
    seq: int = 0
    nodes: list[Any] = field(default_factory=list)
    slow: list[Any] = field(default_factory=list)
    keywords: list[Any] = field(default_factory=list)
    skips: list[Any] = field(default_factory=list)
    late: list[Any] = field(default_factory=list)
    row_edges: list[tuple[int, int, list[tuple[str, str, dict | None]]]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


class Stager:
    """Validates lines into staged batches, resolving edges to rows seen earlier in the file.

    An edge whose target id appeared earlier (or anywhere in the same batch) is staged with
    that row's key, so the store resolves it arithmetically. Any other edge waits here
    (:class:`plughost.ports.importing.WaitingEdges`): the batch where its target first appears
    carries it in its ``late`` table with both ends as keys, and the final frame lists the ones
    whose target never appeared. Edges to later lines are so written while the file is still
    being read, not after it.

    ``lookup`` (the account had nodes when the import began): an edge to an id the file has not
    had yet is also staged by id (``edges_by_id``), so the store can write it at once when it
    has that node. Into an empty account no such lookup can hit, so none is staged.
    """

    def __init__(self, account_id: str, *, lookup: bool = True, dims: int | None = None) -> None:
        self.account_id, self.lookup = account_id, lookup
        self.dims = env_dimensions(os.environ) if dims is None else dims  # embeddings must be this long
        self.waits: WaitingEdges[int, Waiter] = WaitingEdges()  # id -> key of its first accepted row
        self.codes: dict[str, int] = {}  # edge type -> its code (the ``types`` table)

    def stage(self, batch: int, lines: Sequence[tuple[int, bytes]], *, read_lines: int, read_bytes: int) -> bytes:
        """Validate ``(line number, raw line)`` pairs into batch number ``batch`` (from 0), serialised."""
        out = _Frame(batch << KEY_BITS)
        for lineno, raw in lines:
            try:
                row, plain = parse_line(raw, _read_line, surrogates=False)
            except BadLine as exc:
                out.skips += (lineno, str(exc))
                continue
            self._row(out, lineno, raw, row, plain)
        return self._frame(batch, out, read_lines, read_bytes)

    def stage_rows(self, batch: int, rows: Sequence[ImportRow], *, read_lines: int, read_bytes: int) -> bytes:
        """The lines an import session read and checked (and an enrichment may have changed), serialised."""
        out = _Frame(batch << KEY_BITS)
        for r in rows:
            self._row(out, r.line, r.raw, r.row, False)
        return self._frame(batch, out, read_lines, read_bytes)

    def _row(self, out: _Frame, lineno: int, raw: bytes, row: Any, plain: bool) -> None:
        """Stage one parsed line: a fast row (plain SQL writes it) or a slow one (the store's upsert)."""
        encode = _plain_json if plain else to_json
        try:
            item, row_edges = prepare_row(row, self.account_id, "node", parsed=True, encode=encode, small_ints=plain,
                                          dims=self.dims, strict=True)
        except UserError as exc:
            out.skips += (lineno, str(exc))
            return
        out.seq = seq = out.seq + 1
        nid, props = item.id, item.properties
        reingest = nid is None and "KnowledgeDocument" in item.labels and props.get("attachmentId")
        if nid is None and not reingest:
            nid = line_id(lineno, raw)  # a re-run lands on the same row
        if item.embedding is None and item.props_json is not None and nid not in out.seen and not reingest:
            row_agents, scope = props.get("agents"), props.get("scope")
            out.nodes += (nid, labels_json(item.labels), item.props_json, 0 if scope is None else scope,
                          0 if row_agents is None else encode(row_agents), text_of(props) or 0)
            if props.get("keywords") is not None:
                for kw in keywords_of(props):
                    out.keywords += (kw, seq)
        else:
            out.nodes += (nid or "", json.dumps(list(item.labels)), json.dumps(props), 0, 0, 0)
            out.slow += (seq, 0 if item.embedding is None else json.dumps(item.embedding))
        if nid is not None:
            out.seen.add(nid)
            row_key = out.shift | seq
            for w_pid, w_src, w_type, w_props, _ in self.waits.arrive(nid, row_key):
                out.late += (w_pid, w_src, w_type, row_key, w_props)
        if row_edges:
            out.row_edges.append((seq, lineno, row_edges))

    def _frame(self, batch: int, out: _Frame, read_lines: int, read_bytes: int) -> bytes:
        """The batch's edges (after its rows, so in-batch forward edges resolve), serialised with its rows."""
        edges: list[Any] = []
        by_id: list[Any] = []
        get, wait, lookup, codes = self.waits.where.get, self.waits.wait, self.lookup, self.codes
        pid = shift = out.shift
        for seq, lineno, row_edges in out.row_edges:
            for etype, to, p in row_edges:
                code = codes.get(etype) or codes.setdefault(etype, len(codes) + 1)
                pj = json.dumps(p) if p else 0
                key = get(to)  # a staged row's key (int), waiting edges (list) or None
                if type(key) is int:
                    edges += (seq, code, key, pj)
                    continue
                pid += 1
                wait(to, (pid, shift | seq, code, pj, lineno))
                if lookup:
                    by_id += (pid, seq, code, to, pj)
        return _serialise(batch, read_lines, read_bytes, nodes=out.nodes, slow=out.slow, keywords=out.keywords,
                          types=self._types(), edges=edges, edges_by_id=by_id, late=out.late, skips=out.skips)

    def _types(self) -> list[Any]:
        return [v for name, code in self.codes.items() for v in (code, name)]

    def final(self, *, read_lines: int, read_bytes: int) -> bytes:
        """The last frame: the end of this stager's stream, with the edges still waiting (their
        target ids the file never had; the store's lookup decides them)."""
        unresolved: list[Any] = []
        for to, (pid, src, etype, p, lineno) in self.waits.left():
            unresolved += (pid, src, etype, to, p, lineno)
        return _serialise(FINAL_BATCH, read_lines, read_bytes, types=self._types(), unresolved=unresolved)


def _serialise(batch: int, lines: int, size: int, **tables: list[Any]) -> bytes:
    """The staged batch as bytes; ``tables`` holds each table's rows flattened."""
    con = sqlite3.connect(":memory:")
    try:
        con.executescript(STAGE_SCHEMA)
        for table, values in tables.items():
            if values:
                _insert(con, table, values)
        con.execute("INSERT INTO meta VALUES (?,?,?)", (batch, lines, size))
        con.commit()
        return con.serialize()
    finally:
        con.close()


ROWS_PER_INSERT = 64
"""Rows per multi-row ``INSERT ... VALUES``: about half the cost per row of ``executemany``."""


def _bound_columns() -> dict[str, list[str]]:
    con = sqlite3.connect(":memory:")
    con.executescript(STAGE_SCHEMA)
    tables = [name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    # table_info rows: (cid, name, type, notnull, default, pk)
    columns = {name: [c[1] for c in con.execute(f"PRAGMA table_info({name})")
                      if not (c[1] == "seq" and c[5] == 1)] for name in tables}
    con.close()
    return columns


BOUND = _bound_columns()
"""The columns a staged table's rows bind, read from ``STAGE_SCHEMA`` itself: all but a ``seq
INTEGER PRIMARY KEY``, which insert order gives."""


def _insert(con: sqlite3.Connection, table: str, values: list[Any]) -> None:
    """Insert flattened rows: ``ROWS_PER_INSERT`` rows per statement, each a slice of ``values``."""
    columns = BOUND[table]
    width = len(columns)
    head = f"INSERT INTO {table} ({','.join(columns)}) VALUES "
    row, rows = f"({','.join('?' * width)})", len(values) // width
    whole, size = rows - rows % ROWS_PER_INSERT, ROWS_PER_INSERT * width
    if whole:
        sql = head + ",".join([row] * ROWS_PER_INSERT)
        for start in range(0, whole * width, size):
            con.execute(sql, values[start:start + size])
    if whole < rows:
        con.execute(head + ",".join([row] * (rows - whole)), values[whole * width:])


def _batches(fh: BinaryIO, account_id: str, batch_size: int, *, lookup: bool = True,
             ramp: bool = False, dims: int | None = None) -> Iterator[bytes]:
    """Staged batches of ``batch_size`` non-blank lines each, read from ``fh``, then the final frame.

    ``ramp`` (a worker's stream): the first batch has ``RAMP_FIRST`` lines and each next one twice
    as many, up to ``batch_size``, so the writing process starts early and big batches follow.
    """
    stager = Stager(account_id, lookup=lookup, dims=dims)
    pending: list[tuple[int, bytes]] = []
    done = lineno = batch = 0
    size = min(batch_size, RAMP_FIRST) if ramp else batch_size
    for lineno, raw in enumerate(fh, start=1):
        done += len(raw)
        if not raw.strip():
            continue
        pending.append((lineno, raw))
        if len(pending) >= size:
            yield stager.stage(batch, pending, read_lines=lineno, read_bytes=done)
            pending, batch, size = [], batch + 1, min(batch_size, size * 2)
    if pending:
        yield stager.stage(batch, pending, read_lines=lineno, read_bytes=done)
    yield stager.final(read_lines=lineno, read_bytes=done)


def use_worker(path: Path, env: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """``PLUGHOST_IMPORT_WORKER``: ``1`` always, ``0`` never, unset/``auto``: files of
    ``WORKER_MIN_BYTES`` or more on a machine with 2+ cores."""
    mode = IMPORT_WORKER.read(env)
    if mode in TRUE:
        return True
    if mode in FALSE:
        return False
    return (os.cpu_count() or 1) > 1 and path.stat().st_size >= WORKER_MIN_BYTES


def staged_batches(path: Path, account_id: str, batch_size: int, *, worker: bool,
                   lookup: bool = True, dims: int | None = None) -> Generator[bytes, None, None]:
    """The file's frames in file order, staged by a worker process or in this one (``lookup``:
    see :class:`Stager`; ``dims``: the store's vector length, default from the environment)."""
    if not worker:
        try:
            fh = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
        with fh, gc_paused():
            yield from _batches(fh, account_id, batch_size, lookup=lookup, dims=dims)
        return
    env = dict(os.environ)  # the worker imports this code as this interpreter does: from its site-packages
    if dims is not None:
        env["PLUGHOST_EMBED_DIMENSIONS"] = str(dims)  # the worker's Stager reads it
    args = [str(path), account_id, str(batch_size), *([] if lookup else [NO_LOOKUP])]
    log("graph-import", "worker")
    # -P: not the working directory first on the path, which may hold another ``plughost`` folder
    # (another checkout); this code comes from the interpreter's site-packages.
    proc = subprocess.Popen([sys.executable, "-P", "-m", "plughost.plugins.graph.import_worker", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        while (data := _read_frame(proc.stdout)) is not None:
            yield data
        err = proc.stderr.read().decode("utf-8", "replace").strip()
        if proc.wait() != 0:
            last = err.splitlines()[-1] if err else f"exit status {proc.returncode}"
            raise UserError(f"{path}: the import worker failed ({last})")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame from the worker, or None at the end of its stream (or if it died)."""
    head = stream.read(_FRAME.size)
    if len(head) < _FRAME.size:
        return None
    (size,) = _FRAME.unpack(head)
    if size == 0:
        return None
    data = stream.read(size)
    return data if len(data) == size else None


def main(argv: Sequence[str]) -> int:
    """Worker entry point: stream the staged batches of ``FILE`` as frames on stdout."""
    if len(argv) not in (3, 4) or argv[3:] not in ([], [NO_LOOKUP]):
        print(f"usage: python -m plughost.plugins.graph.import_worker FILE ACCOUNT BATCH [{NO_LOOKUP}]", file=sys.stderr)
        return 2
    path, account_id, batch_size = Path(argv[0]), argv[1], int(argv[2])
    gc.disable()
    out = sys.stdout.buffer
    try:
        with open(path, "rb") as fh:
            for data in _batches(fh, account_id, batch_size, lookup=NO_LOOKUP not in argv, ramp=True):
                out.write(_FRAME.pack(len(data)))
                out.write(data)
                out.flush()
        out.write(_FRAME.pack(0))
        out.flush()
    except OSError as exc:
        print(f"{path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0

