"""The admin plugin. Hook implementations live in :mod:`plugins.admin.hooks` (the entry point)."""
