"""The channels plugin. Hook implementations live in :mod:`plugins.channels.hookimpls` (the entry point)."""
