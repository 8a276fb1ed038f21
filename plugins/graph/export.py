"""`plughost graph export`: an account's graph as import lines, or as ``neo4j-admin`` CSV files.

The lines are the import format (:mod:`plughost.ports.jsonl`): one node a line with its labels,
its own properties (``scope`` and ``agents`` among them), its embedding, its outgoing edges and
its ``stamps`` (``createdAt``, ``updatedAt``, ``deletedAt``), so ``graph import`` of the file into
another home gives the same nodes, edges and search results. ``accountId`` is left out (the
importing process's account is the one written) and ``backlinkCount`` too (the store counts it).
Soft-deleted nodes are exported with their ``deletedAt``. Edge creation times are not kept.

Both stores are read a page at a time (:meth:`plughost.ports.graph.GraphStore.scan_nodes`, the page's
edges and vectors), so an export holds one page in memory whatever the store's size. A file
(``--out``) is written next to its final name and renamed into place once complete: an
interrupted export leaves no half-written file.

This is the whole graph of one account, for moving it. ``plughost export --contact`` (the memory
plugin) is a different thing: one person's data, for a subject access request.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

from plughost import UserError, log
from plughost.api.store import RESERVED_PROPERTIES

PAGE = 1000
"""Nodes read per page (one scan, one edge query and one vector query each)."""


def export_rows(store: Any, account_id: str, *, page: int = PAGE, after: str = "",
                edges: bool = True, backlinks: bool = False) -> Iterator[dict[str, Any]]:
    """Every node of the account as an import line (a dict), in id order, one page in memory;
    ``backlinks``: each with the store's ``backlinkCount`` too (not a line key: the CSV export's)."""
    while True:
        nodes = store.scan_nodes(account_id=account_id, after=after, limit=page)
        if not nodes:
            return
        ids = [n.id for n in nodes]
        vectors = store.export_embeddings([n.id for n in nodes if n.has_embedding], account_id=account_id)
        out_edges: dict[str, list[dict[str, Any]]] = {}
        if edges:
            mine = set(ids)
            for source, etype, target, props in store.node_edges(ids, account_id=account_id):
                if source in mine:
                    edge: dict[str, Any] = {"type": etype, "to": target}
                    if props:
                        edge["properties"] = props
                    out_edges.setdefault(source, []).append(edge)
        for node in nodes:
            row = line_of(node, vectors.get(node.id), out_edges.get(node.id))
            if backlinks:
                row["backlinkCount"] = int(node.properties.get("backlinkCount") or 0)
            yield row
        if len(nodes) < page:
            return
        after = nodes[-1].id


def line_of(node: Any, vector: Any, edges: list[dict[str, Any]] | None) -> dict[str, Any]:
    props = node.properties
    row: dict[str, Any] = {"id": node.id, "labels": list(node.labels),
                           "properties": {k: v for k, v in props.items() if k not in RESERVED_PROPERTIES}}
    if vector is not None:
        row["embedding"] = vector
    if edges:
        row["edges"] = edges
    stamps = {"createdAt": props.get("createdAt"), "updatedAt": props.get("updatedAt")}
    if props.get("deletedAt") is not None:
        stamps["deletedAt"] = props["deletedAt"]
    row["stamps"] = stamps
    return row


@contextmanager
def output(out: Path | None, stdout: IO[str]) -> Iterator[IO[str]]:
    """``out`` written as ``.<name>.partial`` and renamed into place on success (removed on failure);
    None: ``stdout``."""
    if out is None:
        yield stdout
        return
    if out.is_dir():
        raise UserError(f"--out: {out} is a folder; expected a file name")
    if out.is_symlink() or (out.exists() and not out.is_file()):
        raise UserError(f"--out: {out} is not a regular file (a link, a device or a pipe); expected a new file "
                        "or one an earlier export wrote")
    if not out.parent.is_dir():
        raise UserError(f"--out: {out.parent}: no such folder")
    partial = out.with_name(f".{out.name}.partial")
    try:
        try:
            partial.unlink(missing_ok=True)
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as exc:  # admin-scope data: never world-readable, never through a link
            raise UserError(f"--out: {out}: cannot write here ({exc.strerror or exc})") from None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def export_jsonl(store: Any, account_id: str, out: Path | None, stdout: IO[str]) -> dict[str, Any]:
    """Write the account's lines to ``out`` (or ``stdout``); returns the counts (also logged)."""
    started = time.perf_counter()
    nodes = edges = vectors = 0
    with output(out, stdout) as fh:
        for row in export_rows(store, account_id):
            fh.write(orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY).decode())
            nodes += 1
            edges += len(row.get("edges", ()))
            vectors += "embedding" in row
    seconds = time.perf_counter() - started
    summary = {"nodes": nodes, "edges": edges, "embeddings": vectors, "seconds": f"{seconds:.2f}",
               "rate": f"{nodes / seconds:.0f}" if seconds > 0 else "0"}
    log("graph-export", "done", account=account_id[:8], format="jsonl",
        file=out.name if out is not None else "-", **summary)
    return summary
