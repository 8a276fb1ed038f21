"""A one-line progress bar drawn only on a terminal (reindex, import)."""

from __future__ import annotations

import time
from typing import TextIO


class Progress:
    def __init__(self, total: int, stream: TextIO, enabled: bool | None = None, *, unit: str = "items") -> None:
        self.total = max(total, 0)
        self.stream = stream
        self.enabled = (hasattr(stream, "isatty") and stream.isatty()) if enabled is None else enabled
        self.unit = unit
        self.started = time.perf_counter()
        self.drawn = False

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        rate = done / max(time.perf_counter() - self.started, 1e-9)
        if self.total:
            frac = min(done / self.total, 1.0)
            filled = int(frac * 30)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {frac * 100:5.1f}% "
        else:
            bar = ""
        self.stream.write(f"\r{bar}{done} {self.unit} {rate:,.0f}/s")
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
