"""Stored rows (``NODE_COLS``) → :class:`plughost.ports.graph.Node`: built at once, or lazily for search hits.

A search path returns a pool of candidates (100 per path by default) of which only the requested
few survive fusion; building every candidate's ``properties`` (a JSON parse and three ISO
timestamps) was a fifth of ``memory-search``. A :class:`LazyNode` has its id, labels and account
at once and builds ``properties`` from the row it already holds, on first read: the survivors
(and whatever a stage reads) pay, the rest cost one tuple. Both give equal nodes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from plughost import Node
from plughost.plugins.graph.common import iso


@lru_cache(maxsize=4096)
def labels_of(text: str) -> tuple[str, ...]:
    """The stored labels JSON as a tuple (label sets repeat: parsed once each)."""
    return tuple(json.loads(text))


def node_properties(row: Sequence[Any]) -> dict[str, Any]:
    """The node's properties as the port returns them: stored ones plus the derived keys."""
    _, _, account, _, props, deleted, created, updated, _, backlinks = row[:10]
    properties = json.loads(props)
    properties["accountId"] = account
    properties["createdAt"] = iso(created)
    properties["updatedAt"] = iso(updated)
    if deleted is not None:
        properties["deletedAt"] = iso(deleted)
    properties["backlinkCount"] = backlinks or 0
    return properties


def stored_node(row: Sequence[Any]) -> Node:
    return Node(row[1], labels_of(row[3]), node_properties(row), row[2], row[8] is not None)


class LazyNode(Node):
    """A :class:`Node` whose ``properties`` are built from its stored row when first read."""

    def __init__(self, row: Sequence[Any]) -> None:  # noqa: D107 (no dataclass __init__: nothing parsed yet)
        self.id = row[1]
        self.labels = labels_of(row[3])
        self.account_id = row[2]
        self.has_embedding = row[8] is not None
        self._row: Sequence[Any] | None = row
        self._properties: dict[str, Any] | None = None

    @property
    def properties(self) -> dict[str, Any]:
        if self._properties is None:
            assert self._row is not None
            self._properties, self._row = node_properties(self._row), None
        return self._properties

    @properties.setter
    def properties(self, value: dict[str, Any]) -> None:
        self._properties, self._row = value, None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return (self.id, self.labels, self.properties, self.account_id, self.has_embedding) == (
            other.id, other.labels, other.properties, other.account_id, other.has_embedding)

    __hash__ = None  # type: ignore[assignment]  # as the dataclass: mutable, not hashable
