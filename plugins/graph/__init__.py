"""The graph plugin. Hook implementations live in :mod:`plugins.graph.hooks` (the entry point)."""
