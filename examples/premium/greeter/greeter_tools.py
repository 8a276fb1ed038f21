"""Tool handlers of the greeter example plugin."""

from __future__ import annotations

from plughost import Tool, hookimpl


def greet(name: str) -> str:
    """Return a greeting for a name."""
    return f"Hello, {name}!"


@hookimpl
def plughost_tools(host: object) -> list[Tool]:
    return [Tool.from_function(greet)]
