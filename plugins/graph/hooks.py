"""Hook implementations of the graph plugin."""

from __future__ import annotations

from host.hookspecs import hookimpl  # noqa: F401

__all__: list[str] = []
