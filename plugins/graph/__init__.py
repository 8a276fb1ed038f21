"""The graph plugin. Hook implementations live in :mod:`plugins.graph.hooks` (the entry point)."""

IMPORT_BATCH = 5000
"""Nodes per committed transaction in ``plughost graph import`` unless ``--batch-size`` says otherwise."""
