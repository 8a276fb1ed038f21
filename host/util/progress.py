"""A one-line terminal progress bar shared by the bulk commands (graph import, memory import, reindex).

Drawn only when the stream is a terminal (or when asked to), so logs and pipes stay clean.
"""

from __future__ import annotations

import time
from typing import TextIO

WIDTH = 30


class Progress:
    """``[####......]  42.0% 1200 nodes 3,456/s``: fraction of ``total``, a count and its rate.

    ``total`` 0 (unknown) draws the count and rate without the bar.
    """

    def __init__(self, total: int, stream: TextIO, enabled: bool | None = None, *, unit: str = "items") -> None:
        self.total = max(total, 0)
        self.stream = stream
        self.enabled = (hasattr(stream, "isatty") and stream.isatty()) if enabled is None else enabled
        self.unit = unit
        self.started = time.perf_counter()
        self.drawn = False

    def update(self, done: int, count: int | None = None) -> None:
        """Redraw at ``done`` of ``total``; ``count`` (default ``done``) is the figure shown and rated.

        An import measures its fraction in bytes read but shows nodes: ``update(bytes, nodes)``.
        """
        if not self.enabled:
            return
        shown = done if count is None else count
        rate = shown / max(time.perf_counter() - self.started, 1e-9)
        if self.total:
            frac = min(done / self.total, 1.0)
            filled = int(frac * WIDTH)
            bar = f"[{'#' * filled}{'.' * (WIDTH - filled)}] {frac * 100:5.1f}% "
        else:
            bar = ""
        self.stream.write(f"\r{bar}{shown} {self.unit} {rate:,.0f}/s")
        self.stream.flush()
        self.drawn = True

    def interrupt(self) -> None:
        """Move off the bar's line before another line is printed."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False

    def finish(self) -> None:
        self.interrupt()
