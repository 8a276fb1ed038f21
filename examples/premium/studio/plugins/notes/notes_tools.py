"""Tool handlers of the notes example plugin."""

from __future__ import annotations

from plughost import Tool, hookimpl


def note_count(text: str) -> dict[str, int]:
    """Count the words of a note."""
    return {"words": len(text.split())}


@hookimpl
def plughost_tools(host: object) -> list[Tool]:
    return [Tool.from_function(note_count)]
