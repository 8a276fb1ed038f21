"""Python's cyclic garbage collector paused for a bulk pass (import, staging, a first sync)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for the duration, as it was after. A bulk pass holds tens of
    thousands of live containers that form no cycles; every full collection walks them all again
    (measured: half the client CPU of a 100k-line Neo4j import)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


SERVER_YOUNG = 20_000
"""Allocations between two collections of the youngest generation in a server (Python's default: 700)."""


def settle_heap() -> None:
    """A long-running server, once booted: what boot built leaves the collector's sight
    (``gc.freeze``: a full collection no longer walks the modules, the plugins and their schemas; in a
    search server such a pause took 13 ms), and the youngest generation is collected every
    :data:`SERVER_YOUNG` allocations, not 700: a search allocates thousands of rows that are freed
    when it returns, and collections run inside it at 700, promoting them to be walked again."""
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(SERVER_YOUNG, middle, oldest)
