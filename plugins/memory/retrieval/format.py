"""FORMAT: the text an agent reads, within an 80,000-character budget (docs/retrieval.md#format).

Each result is ``[Label1, Label2] (id: <id>) (score: 0.XXX)``, then ``key: value`` lines, then a
``Related:`` block of ``--[TYPE]--> [Label] {k: v}`` / ``<--[TYPE]-- ...`` lines; results are
separated by ``---``. Over budget, related blocks are dropped from the lowest-ranked result
upwards (compact mode) until the text fits; only if it still does not fit are trailing results
left out, and as a last resort the text is cut.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from plughost import Neighbor
from plughost.plugins.memory.retrieval.rows import HIDDEN_PROPERTIES, Row

OUTPUT_BUDGET = 80_000
SEPARATOR = "\n---\n"
RELATED_VALUE_CAP = 200
NO_RESULTS = "No results."


def value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _short(value: Any) -> str:
    text = value_text(value).replace("\n", " ")
    return text if len(text) <= RELATED_VALUE_CAP else text[: RELATED_VALUE_CAP - 1] + "…"


def related_line(nb: Neighbor) -> str:
    props = ", ".join(f"{k}: {_short(v)}" for k, v in nb.node.properties.items() if k not in HIDDEN_PROPERTIES)
    labels = ", ".join(nb.node.labels)
    arrow = f"--[{nb.type}]-->" if nb.direction == "out" else f"<--[{nb.type}]--"
    return f"  {arrow} [{labels}] {{{props}}}"


def header(row: Row) -> str:
    return f"[{', '.join(row.node.labels)}] (id: {row.id}) (score: {row.score:.3f})"


def property_lines(props: Mapping[str, Any]) -> list[str]:
    return [f"{k}: {value_text(v)}" for k, v in props.items() if k not in HIDDEN_PROPERTIES]


def render_row(row: Row, *, with_related: bool = True) -> str:
    lines = [header(row), *property_lines(row.visible_properties())]
    if with_related and row.related:
        lines.append("Related:")
        lines.extend(related_line(nb) for nb in row.related)
    return "\n".join(lines)


def format_results(rows: Sequence[Row], budget: int = OUTPUT_BUDGET) -> tuple[str, bool]:
    """The output text and whether compact mode (or a further cut) was needed to fit ``budget``."""
    if not rows:
        return NO_RESULTS, False
    blocks = [render_row(r) for r in rows]
    size = sum(map(len, blocks)) + len(SEPARATOR) * (len(blocks) - 1)
    if size <= budget:
        return SEPARATOR.join(blocks), False
    bare = [render_row(r, with_related=False) if r.related else blocks[i] for i, r in enumerate(rows)]
    note = f"(compact: related nodes dropped to fit the {budget}-character output budget)"
    size += len(note) + 1
    for i in range(len(blocks) - 1, -1, -1):  # lowest-ranked first
        if blocks[i] is not bare[i]:
            size -= len(blocks[i]) - len(bare[i])
            blocks[i] = bare[i]
            if size <= budget:
                return note + "\n" + SEPARATOR.join(blocks), True
    while len(blocks) > 1 and size > budget:
        dropped = blocks.pop()
        size -= len(dropped) + len(SEPARATOR)
    omitted = len(rows) - len(blocks)
    tail = f"\n({omitted} more results left out to fit the output budget)" if omitted else ""
    text = note + "\n" + SEPARATOR.join(blocks)
    if len(text) + len(tail) > budget:
        cut = "\n… (cut to fit the output budget)"
        text = text[: max(0, budget - len(cut) - len(tail))] + cut
    return text + tail, True


BRIEF_TITLE_KEYS = ("title", "name", "headline")
BRIEF_BODY_KEYS = ("body", "content", "description", "summary", "text")
BRIEF_BODY_CAP = 160


def _first(props: Mapping[str, Any], keys: Sequence[str]) -> str:
    for key in keys:
        value = props.get(key)
        if value not in (None, "", [], {}):
            return " ".join(value_text(value).split())
    return ""


def brief_results(rows: Sequence[Row]) -> str:
    """Two lines a result for a person at a shell: rank, labels, title (or the title of the node it
    belongs to), score and id; then the start of its text. The full form is :func:`format_results`."""
    if not rows:
        return NO_RESULTS
    lines: list[str] = []
    for rank, row in enumerate(rows, 1):
        props = row.visible_properties()
        title = _first(props, BRIEF_TITLE_KEYS)
        if not title:
            owner = next((_first(nb.node.properties, BRIEF_TITLE_KEYS) for nb in row.related
                          if nb.direction != "out" and _first(nb.node.properties, BRIEF_TITLE_KEYS)), "")
            title = f"(in {owner})" if owner else ""
        lines.append(f"{rank}. [{', '.join(row.node.labels)}] {title} (score {row.score:.3f}, id {row.id})"
                     .replace("]  (", "] ("))
        body = _first(props, BRIEF_BODY_KEYS)
        if body:
            lines.append("   " + (body if len(body) <= BRIEF_BODY_CAP else body[: BRIEF_BODY_CAP - 1] + "…"))
    return "\n".join(lines)
