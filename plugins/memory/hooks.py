"""Hook implementations of the memory plugin.

Kept cheap to import: everything heavy (numpy, onnxruntime, httpx, mcp) is imported inside
the functions that need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from host.hookspecs import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from host.manager import Host


@hookimpl
def plughost_embedder(host: Host) -> Any:
    """local (default) | ollama | none, from PLUGHOST_EMBEDDER."""
    from plugins.memory.embedder import select_embedder

    return select_embedder(host.env)


__all__ = ["plughost_embedder"]
