"""One call run on a thread beside the caller's, its result (or its exception) collected later.

The query's embedding runs inside onnxruntime and the text path inside SQLite, both outside the
GIL, so a search that starts EMBED → VECTOR here and runs BM25 meanwhile pays for the longer of
the two rather than their sum. A thread per search (about 0.1 ms) rather than a shared pool: no
state outlives the call, and one slow search never queues another's embedding.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Beside(Generic[T]):
    """``fn()`` started on its own daemon thread; :meth:`result` waits for it."""

    def __init__(self, fn: Callable[[], T], name: str = "plughost-beside") -> None:
        self._fn: Callable[[], T] | None = fn
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        fn, self._fn = self._fn, None
        try:
            self._value = fn() if fn is not None else None
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def result(self) -> T:
        """``fn``'s return value; its exception is raised here, in the caller's thread."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
