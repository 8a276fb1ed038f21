"""The channels plugin. Hook implementations live in :mod:`plugins.channels.hooks` (the entry point)."""
