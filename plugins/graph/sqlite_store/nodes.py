"""Stored rows (``NODE_COLS``) → :class:`plughost.ports.graph.Node`: built at once, or lazily for search hits.

A search path returns a pool of candidates (100 per path by default) of which only the requested
few survive fusion; building every candidate's ``properties`` (a JSON parse and three ISO
timestamps) was a fifth of ``memory-search``. A :class:`LazyNode` has its id, labels and account
at once and builds ``properties`` from the row it already holds, on first read: the survivors
(and whatever a stage reads) pay, the rest cost one tuple. Both give equal nodes.

A search window goes further: its statement reads no properties at all (a 4 KB document is a third
of a row's cost, read for the hits fusion drops), and a :class:`Deferred` reads them later, for the
nodes :meth:`Node.read_all` names or, on a first read of any, for all of them, in one statement
under the guards that selected them. A node deleted or narrowed in between is withdrawn (empty
properties): nothing the caller may no longer see is read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
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


class Deferred:
    """The nodes of one search statement that read no properties (``LIGHT_COLS``); ``fetch`` reads
    full rows by rid under the statement's guards, in one read of the file."""

    def __init__(self, fetch: Callable[[list[int]], dict[int, Sequence[Any]]]) -> None:
        self.fetch = fetch
        self.pending: dict[int, LazyNode] = {}
        self.lock = threading.Lock()  # one read at a time: a node is filled before another thread sees it read

    def node(self, row: Sequence[Any]) -> LazyNode:
        node = LazyNode(row, self)
        self.pending[row[0]] = node
        return node

    def read(self, nodes: Sequence[Node] | None = None) -> None:
        """Read ``nodes`` (all pending ones when None); those the guards no longer pass are withdrawn."""
        with self.lock:
            rids = list(self.pending) if nodes is None else [
                rid for rid in dict.fromkeys(getattr(n, "rid", None) for n in nodes) if rid in self.pending]
            if not rids:
                return
            rows = self.fetch(rids)
            for rid in rids:
                node, row = self.pending.pop(rid), rows.get(rid)
                # a row id freed by a hard delete and taken by a new node since is not this node
                node._fill(row if row is not None and row[1] == node.id else None)


class LazyNode(Node):
    """A :class:`Node` whose ``properties`` are built from its stored row when first read (or read
    first, for a search window's row: :class:`Deferred`)."""

    def __init__(self, row: Sequence[Any], deferred: Deferred | None = None) -> None:  # noqa: D107
        self.id = row[1]
        self.labels = labels_of(row[3])
        self.account_id = row[2]
        self.has_embedding = row[8] is not None
        self.rid = row[0]
        self._row: Sequence[Any] | None = row
        self._properties: dict[str, Any] | None = None
        self._deferred = deferred
        self._withdrawn = False

    def _fill(self, row: Sequence[Any] | None) -> None:
        self._deferred = None
        if row is None:
            self._withdrawn, self._row, self._properties = True, None, {}
        else:
            self._row = row

    def deferred(self) -> Deferred | None:
        return self._deferred

    def __getstate__(self) -> dict[str, Any]:
        """A copy or a pickle holds the properties (read now), never the store's reader."""
        self.properties  # noqa: B018
        return {**self.__dict__, "_deferred": None}

    @property
    def withdrawn(self) -> bool:
        return self._withdrawn

    @property
    def properties(self) -> dict[str, Any]:
        if self._properties is None:
            if self._deferred is not None:  # a stage reads one: it reads most, so the whole statement's
                self._deferred.read()
            if self._properties is None:
                assert self._row is not None
                self._properties, self._row = node_properties(self._row), None
        return self._properties

    @properties.setter
    def properties(self, value: dict[str, Any]) -> None:
        deferred = self._deferred
        if deferred is not None:
            with deferred.lock:
                deferred.pending.pop(self.rid, None)
                self._deferred = None
        self._properties, self._row = value, None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return (self.id, self.labels, self.properties, self.account_id, self.has_embedding) == (
            other.id, other.labels, other.properties, other.account_id, other.has_embedding)

    __hash__ = None  # type: ignore[assignment]  # as the dataclass: mutable, not hashable
