"""The embedded graph store (docs/graph.md#stores): one SQLite file, WAL, FTS5 BM25, exact numpy vectors.

``store`` (the :class:`SqliteStore` class: reads, edges, deletes, the write transaction),
``sql`` (guard layers and filters as SQL), ``writes`` (the steps of a node upsert),
``vectors`` (exact vector search and its caches), ``bulk`` (staged bulk import), ``schema``
(``schema.sql`` on a new file; any other version refused).
"""

from plughost.plugins.graph.sqlite_store.bulk import TYPES_INLINE, BulkImport, StagedBatch
from plughost.plugins.graph.sqlite_store.sql import guard_sql, label_sql, where_sql, within_sql
from plughost.plugins.graph.sqlite_store.store import SqliteStore
from plughost.plugins.graph.sqlite_store.vectors import vector_threads

__all__ = ["TYPES_INLINE", "BulkImport", "SqliteStore", "StagedBatch", "guard_sql", "label_sql", "vector_threads",
           "where_sql", "within_sql"]
