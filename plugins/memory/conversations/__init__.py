"""The channels' conversations (docs/memory.md#conversations): :mod:`.service` searches and appends
their Messages; :mod:`.visitor_memory` keeps what a visitor told us for them alone.
"""
