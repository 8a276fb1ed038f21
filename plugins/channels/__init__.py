"""The channels plugin. Hook implementations live in :mod:`plughost.plugins.channels.hookimpls` (the entry point)."""
