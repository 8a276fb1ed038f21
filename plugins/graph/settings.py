"""The graph plugin's ``PLUGHOST_*`` settings (published through ``plughost_settings``).

Each is read through its object (``VECTOR_THREADS.read(env)``): see :mod:`plughost.util.settings`.
The store choice (``PLUGHOST_STORE``) and ``PLUGHOST_GRAPH_READ_ONLY`` are the host's: other
plugins read them too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plughost import Setting
from plughost.api.settings import declared

GRAPH_DB: Setting[Path | None] = Setting(
    "PLUGHOST_GRAPH_DB", "path", None, "the embedded store's SQLite file (unset: <PLUGHOST_HOME>/graph.sqlite)")
EMBED_DIMENSIONS: Setting[int | None] = Setting(
    "PLUGHOST_EMBED_DIMENSIONS", "int", None, "vector dimensions the store indexes (unset: EMBED_DIMENSIONS, else 384)",
    minimum=1)
VECTOR_THREADS: Setting[int | None] = Setting(
    "PLUGHOST_VECTOR_THREADS", "int", None,
    "threads one vector search uses (unset: the cores, at most 4; the Neo4j store then asks in one query, the "
    "embedded one leaves a threaded BLAS to split its matmul)", minimum=1)
IMPORT_WORKER: Setting[str] = Setting(
    "PLUGHOST_IMPORT_WORKER", "choice", "auto",
    "stage a graph import in a worker process: 1 always, 0 never, auto for big files on 2+ cores",
    choices=("auto", "1", "0", "on", "off", "true", "false", "yes", "no"))
GRAPH_OUTPUT_CHARS: Setting[int] = Setting(
    "PLUGHOST_GRAPH_OUTPUT_CHARS", "int", 20000, "characters of a graph tool's answer at most", minimum=1)

ALL: tuple[Setting[Any], ...] = declared(vars())
