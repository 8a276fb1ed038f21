"""The memory plugin. Hook implementations live in :mod:`plugins.memory.hookimpls` (the entry point)."""
