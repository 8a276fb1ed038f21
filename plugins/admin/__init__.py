"""The admin plugin. Hook implementations live in :mod:`plughost.plugins.admin.hookimpls` (the entry point)."""
