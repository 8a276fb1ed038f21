"""The memory plugin. Hook implementations live in :mod:`plugins.memory.hooks` (the entry point)."""
