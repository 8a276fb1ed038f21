"""Entities and facts without a language model (docs/graph.md#entities): :mod:`.extract` finds what a
turn names, :mod:`.graph` writes it as ``Entity`` / ``Fact`` nodes through the GraphStore port, and
``plugins/memory/retrieval/entities.py`` reads it back as the third retrieval path."""

from plughost.plugins.memory.entities.graph import (
    DERIVED_LABELS,
    ENTITY_LABEL,
    FACT_LABEL,
    MENTIONS,
    derivation,
    enabled,
    extractable,
    sweep,
    withdraw,
    write,
    write_stored,
)

__all__ = ["DERIVED_LABELS", "ENTITY_LABEL", "FACT_LABEL", "MENTIONS", "derivation", "enabled", "extractable",
           "sweep", "withdraw", "write", "write_stored"]
