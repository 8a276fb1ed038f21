"""The row that flows through the stages after fusion."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plughost import Neighbor, Node

HIDDEN_PROPERTIES = frozenset({"embedding", "accountId", "searchContext"})
"""Never shown to the agent (docs/retrieval.md#format; ``searchContext`` is derived from the neighbouring turns)."""


@dataclass
class Row:
    """One fused result: the node, its per-path scores, the ranking score and later its context."""

    node: Node
    vector: float = 0.0
    bm25: float = 0.0
    entity: float = 0.0
    score: float = 0.0
    bump: float = 0.0
    related: list[Neighbor] = field(default_factory=list)
    properties: dict[str, Any] | None = None  # the projected view; None = every visible property

    @property
    def id(self) -> str:
        return self.node.id

    @property
    def props(self) -> dict[str, Any]:
        return self.node.properties

    def visible_properties(self) -> dict[str, Any]:
        if self.properties is not None:
            return self.properties
        return {k: v for k, v in self.node.properties.items() if k not in HIDDEN_PROPERTIES}

    def as_dict(self) -> dict[str, Any]:
        """The shape hooks (rerank, boosts) and ``--json`` see."""
        return {
            "id": self.id,
            "labels": list(self.node.labels),
            "props": self.node.properties,
            "score": self.score,
            "vector": self.vector,
            "bm25": self.bm25,
            "entity": self.entity,
        }
