"""The memory write path (docs/memory.md#writes): :mod:`.writer` (write, update, delete, restore,
ingest), :mod:`.tools` (the write tools served over MCP), :mod:`.outcome` (the one line each call
logs) and :mod:`.erase` (``plughost erase`` and ``plughost export``).
"""
