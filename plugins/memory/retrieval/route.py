"""ROUTE (``PLUGHOST_GS_ROUTE``): a label filter and fusion weights per ``retrievalClass``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from plughost.plugins.memory.retrieval.fuse import BM25_WEIGHT, VECTOR_WEIGHT

RETRIEVAL_CLASSES = ("entity", "temporal", "event", "general", "none")


@dataclass(frozen=True)
class RoutePlan:
    """What to search and how to weigh it. ``skip`` means no lookup at all (class ``none``)."""

    labels: tuple[str, ...] | None
    vector_weight: float = VECTOR_WEIGHT
    bm25_weight: float = BM25_WEIGHT
    skip: bool = False

    @property
    def use_vector(self) -> bool:
        return self.vector_weight > 0 and not self.skip

    @property
    def use_bm25(self) -> bool:
        return self.bm25_weight > 0 and not self.skip

    def rrf_weights(self) -> dict[str, float]:
        """RRF per-channel weights: the baseline (unrouted) and ``general`` plans give plain RRF (1, 1)."""
        if (self.vector_weight, self.bm25_weight) == (VECTOR_WEIGHT, BM25_WEIGHT):
            return {"vector": 1.0, "bm25": 1.0}
        return {"vector": 2 * self.vector_weight, "bm25": 2 * self.bm25_weight}


ROUTES: dict[str, RoutePlan] = {
    "entity": RoutePlan(("Person", "Company", "Concept"), 0.85, 0.15),
    "temporal": RoutePlan(("Event",), 0.3, 0.7),
    "event": RoutePlan(("Event",), 0.0, 1.0),
    "general": RoutePlan(None, 0.5, 0.5),
    "none": RoutePlan(None, 0.0, 0.0, skip=True),
}


def plan(retrieval_class: str | None, *, enabled: bool, labels: Sequence[str] | None = None) -> RoutePlan:
    """The plan for one call. Off (or no class): baseline weights over the caller's labels.

    Caller-named ``labels`` win over the class's label filter (the caller asked for them); the
    class's weights still apply.
    """
    caller = tuple(labels) if labels else None
    if not enabled or not retrieval_class:
        return RoutePlan(caller)
    routed = ROUTES[retrieval_class]
    return RoutePlan(caller or routed.labels, routed.vector_weight, routed.bm25_weight, routed.skip)
