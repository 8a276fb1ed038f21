"""The graph plugin. Hook implementations live in :mod:`plughost.plugins.graph.hookimpls` (the entry point)."""

IMPORT_BATCH = 10000
"""Nodes per committed transaction in ``plughost graph import`` unless ``--batch-size`` says otherwise
(at most: a worker's first batches are smaller, see :func:`plughost.plugins.graph.staging.staged_batches`). Every
batch rewrites the index pages it touches, so fewer, bigger batches write less. A store may ask for
its own default (``import_batch_size``: Neo4j's is :data:`plughost.plugins.graph.neo4j_store.NEO4J_IMPORT_BATCH`)."""
