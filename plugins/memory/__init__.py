"""The memory plugin. Hook implementations live in :mod:`plughost.plugins.memory.hookimpls` (the entry point)."""
