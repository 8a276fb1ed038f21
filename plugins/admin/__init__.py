"""The admin plugin. Hook implementations live in :mod:`plugins.admin.hookimpls` (the entry point)."""
