"""The ``fields`` projection: a read-side trim after ranking (related nodes are not projected)."""

from __future__ import annotations

from collections.abc import Sequence

from plughost.plugins.memory.retrieval.rows import HIDDEN_PROPERTIES, Row


def project(rows: Sequence[Row], fields: Sequence[str] | None) -> tuple[int, int]:
    """Narrow each row's properties to ``fields``; returns (returnedProps, droppedProps).

    ``None`` keeps every visible property; ``[]`` keeps none; unknown keys are skipped and a row
    lacking a requested key simply omits it.
    """
    returned = dropped = 0
    for row in rows:
        visible = {k: v for k, v in row.node.properties.items() if k not in HIDDEN_PROPERTIES}
        if fields is None:
            row.properties = visible
            returned += len(visible)
            continue
        wanted = set(fields)
        row.properties = {k: v for k, v in visible.items() if k in wanted}
        returned += len(row.properties)
        dropped += len(visible) - len(row.properties)
    return returned, dropped
