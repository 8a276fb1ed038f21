"""DEDUP: collapse rows that are the same thing; the highest-scoring representative survives.

Baseline: node id only. ``PLUGHOST_GS_DEDUP`` runs the four layers in order — nodeId, slug,
canonicalName (case-insensitive, falling back to ``name``), contentHash (sha256 of
``compiledTruth`` or ``content``). A row missing a layer's key passes that layer untouched, so
there is never a false collision on "no value".
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from plughost.plugins.memory.retrieval.rows import Row

KeyFn = Callable[[Row], str | None]


def node_id_key(row: Row) -> str | None:
    return row.id


def slug_key(row: Row) -> str | None:
    value = row.props.get("slug")
    return str(value) if value not in (None, "") else None


def canonical_name_key(row: Row) -> str | None:
    value = row.props.get("canonicalName")
    if value in (None, ""):
        value = row.props.get("name")
    if value in (None, ""):
        return None
    text = str(value).strip().casefold()
    return text or None


def content_hash_key(row: Row) -> str | None:
    value = row.props.get("compiledTruth")
    if value in (None, ""):
        value = row.props.get("content")
    if value in (None, ""):
        return None
    return hashlib.sha256(str(value).encode("utf-8")).hexdigest()


LAYERS: tuple[tuple[str, KeyFn], ...] = (
    ("nodeId", node_id_key),
    ("slug", slug_key),
    ("canonicalName", canonical_name_key),
    ("contentHash", content_hash_key),
)


def by_score(rows: Sequence[Row]) -> list[Row]:
    """Descending score; ties broken by node id so every run orders alike."""
    return sorted(rows, key=lambda r: (-r.score, r.id))


def dedup_layer(rows: Sequence[Row], key: KeyFn) -> list[Row]:
    """Keep the best row per key (rows without a key all pass), in descending score order."""
    seen: set[str] = set()
    out: list[Row] = []
    for row in by_score(rows):
        k = key(row)
        if k is None:
            out.append(row)
        elif k not in seen:
            seen.add(k)
            out.append(row)
    return out


def best_per_id(rows: Sequence[Row]) -> list[Row]:
    """The nodeId layer without its sort: the best row per node id, in first-seen order (the caller
    orders them); the same rows as ``dedup(rows, layered=False)``."""
    best: dict[str, Row] = {}
    for row in rows:
        have = best.get(row.id)
        if have is None or row.score > have.score:  # a tie keeps the first, as the sort's stability does
            best[row.id] = row
    return list(best.values())


def dedup(rows: Sequence[Row], *, layered: bool) -> list[Row]:
    """nodeId only (baseline) or all four layers."""
    layers = LAYERS if layered else LAYERS[:1]
    out = list(rows)
    for _name, key in layers:
        out = dedup_layer(out, key)
    return out
