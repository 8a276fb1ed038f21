"""The bulk-import line format, read one line at a time (``graph import``, ``memory import``).

One node per line: ``{"id"?: str, "labels": [str], "properties": {...}, "embedding"?: [float],
"edges"?: [{"type": str, "to": str, "properties"?: {...}}], "stamps"?: {"createdAt": ISO, "updatedAt": ISO,
"deletedAt"?: ISO}}``. ``stamps`` (what ``plughost graph export`` writes) are the store-set times of an
exported node: ``graph import`` sets them on the node once it is written, so a round trip keeps them. A line that is not UTF-8 or not
JSON is reported by its number and skipped; the others still import. :func:`check_line` is
the format check (stores validate deeper on write); :class:`ImportSummary` is what an import
reports.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from plughost.ports.graph import reserved_label_problem
from plughost.util.errors import UserError
from plughost.util.jsonparse import BadLine, parse_line

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
"""Labels, edge types and property keys: identifier-safe in SQL and Cypher."""

LINE_KEYS = frozenset({"id", "labels", "properties", "embedding", "edges", "stamps"})
STAMP_KEYS = ("createdAt", "updatedAt", "deletedAt")
"""An exported node's ``stamps``: ``createdAt`` and ``updatedAt`` required, ``deletedAt`` when soft-deleted."""
EDGE_KEYS = frozenset({"type", "to", "properties"})
MAX_LABELS = 32
"""Labels per node, at most (a line with thousands is an attack on every label index)."""
STORE_SET_KEYS = frozenset({"createdAt", "updatedAt", "deletedAt", "backlinkCount"})
"""Property keys the store sets: a line naming one is refused, not silently dropped."""
INT_MIN, INT_MAX = -(2 ** 63), 2 ** 63 - 1
"""Integer property values must fit 64 bits (what both stores and Neo4j hold exactly)."""

Skip = Callable[[int, str], None]
"""``skip(line number, reason)``: report one rejected line."""


@dataclass
class ImportSummary:
    """What one bulk import did (logged by the importer as its ``done`` line)."""

    file: str
    lines: int = 0
    nodes: int = 0
    edges: int = 0
    skipped: int = 0
    embedded: int = 0
    embed_failed: int = 0
    not_embedded: dict[str, int] = field(default_factory=dict)  # why a node got no vector: reason -> nodes
    batches: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.nodes / self.seconds if self.seconds > 0 else 0.0


class JsonLines:
    """Iterate ``(line number, parsed value)`` over a JSON-lines file, skipping blank lines.

    Unreadable lines (:func:`parse_line`) go to ``skip`` with the reason and are not yielded.
    ``lines`` and ``done_bytes`` follow the reading (for the summary and the progress bar);
    ``size`` is the file's size in bytes.
    """

    def __init__(self, path: Path, skip: Skip, *, raw: bool = False) -> None:
        self.raw = raw  # yield ``(line number, value, the line's bytes)``
        try:
            self._fh = open(path, "rb")  # noqa: SIM115 - closed by close() / the context manager
        except OSError as exc:
            raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
        self.size = Path(path).stat().st_size
        self.skip = skip
        self.lines = 0
        self.done_bytes = 0

    def __iter__(self) -> Iterator[Any]:
        skip, with_raw = self.skip, self.raw
        for lineno, raw in enumerate(self._fh, start=1):
            self.done_bytes += len(raw)
            self.lines = lineno
            if not raw.strip():
                continue
            try:
                row = parse_line(raw)
            except BadLine as exc:
                skip(lineno, str(exc))
                continue
            yield (lineno, row, raw) if with_raw else (lineno, row)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> JsonLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def line_id(lineno: int, raw: bytes) -> str:
    """The id of an id-less line: from its content and line number, so a re-run of an interrupted
    import lands on the rows it already wrote instead of duplicating them."""
    return "ln-" + hashlib.sha256(b"%d\x1f%s" % (lineno, raw.strip())).hexdigest()[:32]


def line_text(row: Any) -> bytes:
    """A parsed line's canonical text, for :func:`line_id` where the raw line is not at hand."""
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "replace")


def stamps_of(value: Any, what: str = "stamps") -> tuple[float, float, float | None]:
    """An exported line's ``stamps`` as epoch seconds ``(created, updated, deleted or None)``;
    raises :class:`UserError` naming the key when one is not an ISO 8601 time."""
    if not isinstance(value, dict) or not set(value) <= set(STAMP_KEYS):
        raise UserError(f"{what}: expected an object {{createdAt, updatedAt, deletedAt?}}")
    out: list[float | None] = []
    for key in STAMP_KEYS:
        raw = value.get(key)
        if raw is None and key == "deletedAt":
            out.append(None)
            continue
        try:
            when = datetime.fromisoformat(raw) if isinstance(raw, str) else None
        except ValueError:
            when = None
        if when is None:
            raise UserError(f"{what}.{key}: expected an ISO 8601 time such as 2026-01-31T12:00:00.000Z, "
                            f"got {raw!r:.60}")
        out.append((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp())
    return out[0], out[1], out[2]  # type: ignore[return-value]


def int_problem(value: Any, what: str) -> str | None:
    """The first integer outside 64 bits in a property value (a scalar or a list), or None."""
    items = value if isinstance(value, list) else (value,)
    for item in items:
        if type(item) is int and not INT_MIN <= item <= INT_MAX:
            return f"{what}: integer {str(item)[:24]}… does not fit 64 bits"
    return None


def check_line(row: Any, dims: int | None = None) -> str | None:
    """The first problem with one line's object against the line format, or None.

    The same rules the graph store's write validation applies (:func:`plughost.plugins.graph.common.prepare`),
    for importers that cannot use it: identifier labels (at most ``MAX_LABELS``, none reserved) and
    property keys, no store-set keys, 64-bit integers, and ``dims``-long embeddings when ``dims`` is given.
    """
    if not isinstance(row, dict):
        return "expected an object {id?, labels, properties, edges?}"
    unknown = sorted(set(row) - LINE_KEYS)
    if unknown:
        return f"unknown key '{unknown[0]}' (expected id, labels, properties, embedding, edges, stamps)"
    if "id" in row and (not isinstance(row["id"], str) or not row["id"].strip()):
        return "id: expected a non-empty string"
    return (labels_problem(row.get("labels")) or _properties_problem(row.get("properties", {}))
            or _embedding_problem(row.get("embedding"), dims) or _stamps_problem(row.get("stamps"))
            or _edges_problem(row.get("edges", [])))


def labels_problem(labels: Any, what: str = "labels") -> str | None:
    """The one line that refuses a node's ``labels`` (every importer and the graph store's writes say
    it alike), or None: a non-empty list of at most ``MAX_LABELS`` identifiers, none reserved."""
    if isinstance(labels, str) or not isinstance(labels, Sequence) or not labels:
        return f"{what}: expected a non-empty list of labels, got {labels!r:.60}"
    if len(labels) > MAX_LABELS:
        return f"{what}: {len(labels)} labels; expected at most {MAX_LABELS}"
    reserved = reserved_label_problem(labels, what)
    if reserved:
        return reserved
    for i, label in enumerate(labels):
        if not isinstance(label, str) or not NAME_RE.match(label):
            return f"{what}[{i}]: expected an identifier ([A-Za-z_][A-Za-z0-9_]*), got {label!r:.60}"
    return None


def _properties_problem(props: Any) -> str | None:
    if not isinstance(props, dict):
        return "properties: expected an object"
    for key, value in props.items():
        if key in STORE_SET_KEYS:
            return f"properties.{key}: reserved; the store sets it"
        if not NAME_RE.match(key):
            return f"properties.{key[:40]}: expected an identifier key ([A-Za-z_][A-Za-z0-9_]*)"
        problem = int_problem(value, f"properties.{key}")
        if problem:
            return problem
    return None


def _embedding_problem(emb: Any, dims: int | None) -> str | None:
    if emb is None:
        return None
    if not isinstance(emb, list) or not all(isinstance(v, (int, float)) for v in emb):
        return "embedding: expected a list of numbers"
    if dims is not None and len(emb) != dims:
        return f"embedding: {len(emb)} numbers; this store indexes {dims}-dimension vectors"
    return None


def _stamps_problem(stamps: Any) -> str | None:
    if stamps is None:
        return None
    try:
        stamps_of(stamps)
    except UserError as exc:
        return str(exc)
    return None


def _edges_problem(edges: Any) -> str | None:
    if not isinstance(edges, list):
        return "edges: expected a list of {type, to, properties?}"
    for j, edge in enumerate(edges):
        if not isinstance(edge, dict) or not isinstance(edge.get("type"), str) or not NAME_RE.match(edge["type"]):
            return f"edges[{j}].type: expected an identifier"
        if not isinstance(edge.get("to"), str) or not edge["to"]:
            return f"edges[{j}].to: expected a node id"
        if edge.get("properties") is not None and not isinstance(edge["properties"], dict):
            return f"edges[{j}].properties: expected an object"
    return None
