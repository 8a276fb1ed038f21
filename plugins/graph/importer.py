"""`plughost graph import FILE.jsonl`: bulk load one node per line, in batched transactions.

Line shape: ``{"id"?: str, "labels": [str], "properties": {...}, "embedding"?: [float],
"edges"?: [{"type": str, "to": str, "properties"?: {...}}]}``. ``id`` (when given) is the node's
id, so re-importing upserts; ``edges[].to`` names a node in the file or already in the store.
Every batch commits on its own, so an interrupted import keeps each committed batch. An
invalid line is reported by its number and skipped; edges whose target appears later in the
file are created once that target is in (and reported by line if it never appears).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from host.errors import UserError
from host.log import log
from plugins.graph.common import Prepared, prepare_row

DEFAULT_BATCH = 2000


@dataclass
class ImportSummary:
    file: str
    lines: int = 0
    nodes: int = 0
    edges: int = 0
    skipped: int = 0
    batches: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.nodes / self.seconds if self.seconds > 0 else 0.0


class Progress:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self, total_bytes: int, stream: TextIO, enabled: bool | None = None) -> None:
        self.total = max(total_bytes, 1)
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self.started = time.perf_counter()
        self.drawn = False

    def update(self, done_bytes: int, nodes: int) -> None:
        if not self.enabled:
            return
        frac = min(done_bytes / self.total, 1.0)
        width = 30
        filled = int(frac * width)
        rate = nodes / max(time.perf_counter() - self.started, 1e-9)
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {frac * 100:5.1f}% {nodes} nodes "
                          f"{rate:,.0f}/s")
        self.stream.flush()
        self.drawn = True

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def import_jsonl(store: Any, path: Path, *, account_id: str, batch_size: int = DEFAULT_BATCH,
                 progress: bool | None = None, stream: TextIO | None = None) -> ImportSummary:
    """Import ``path`` into ``store`` for ``account_id``; returns the summary (also logged)."""
    if batch_size < 1:
        raise UserError(f"--batch-size: expected a positive integer, got {batch_size}")
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    stream = stream or sys.stderr
    summary = ImportSummary(str(path))
    bar = Progress(path.stat().st_size, stream, progress)
    started = time.perf_counter()
    items: list[Prepared] = []
    edges: list[tuple[int, int, str, str, Any]] = []
    lines_of: list[int] = []
    deferred: list[tuple[str, str, str, Any, int]] = []  # (source id, type, to, props, line)
    done_bytes = 0

    def skip(lineno: int, message: str) -> None:
        summary.skipped += 1
        summary.errors.append(f"line {lineno}: {message}")
        if bar.drawn:
            stream.write("\n")
        log("graph-import", "skip", line=lineno, reason=message)

    def flush() -> None:
        if not items:
            return
        ids, missing = store.import_batch(items, edges, account_id=account_id)
        summary.batches += 1
        summary.nodes += len(items)
        summary.edges += len(edges) - len(missing)
        for pos in missing:
            i, _, etype, to, props = edges[pos]
            deferred.append((ids[i], etype, to, props, lines_of[i]))
        items.clear()
        edges.clear()
        lines_of.clear()
        bar.update(done_bytes, summary.nodes)

    with fh:
        for lineno, raw in enumerate(fh, start=1):
            done_bytes += len(raw)
            summary.lines = lineno
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except UnicodeDecodeError:
                skip(lineno, "not UTF-8")
                continue
            except json.JSONDecodeError as exc:
                skip(lineno, f"invalid JSON ({exc.msg} at column {exc.colno})")
                continue
            try:
                item, row_edges = prepare_row(row, account_id, "node")
            except UserError as exc:
                skip(lineno, str(exc))
                continue
            index = len(items)
            items.append(item)
            lines_of.append(lineno)
            if row_edges:
                edges.extend([(index, j, t, to, p) for j, (t, to, p) in enumerate(row_edges)])
            if len(items) >= batch_size:
                flush()
        flush()
    if deferred:
        missing = store.create_edges([(s, t, to, p) for s, t, to, p, _ in deferred], account_id=account_id,
                                     validated=True)
        summary.edges += len(deferred) - len(missing)
        for pos in missing:
            _, etype, to, _, lineno = deferred[pos]
            skip(lineno, f"edge {etype} -> '{to}': target node not found in the file or the store")
        summary.skipped -= len(missing)  # the node itself was imported; only its edge was dropped
    bar.finish()
    summary.seconds = time.perf_counter() - started
    log("graph-import", "done", file=path.name, nodes=summary.nodes, edges=summary.edges,
        skipped=summary.skipped, errors=len(summary.errors), batches=summary.batches,
        seconds=f"{summary.seconds:.2f}", rate=f"{summary.rate:.0f}")
    return summary
