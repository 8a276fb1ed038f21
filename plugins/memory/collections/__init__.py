"""Folder collections: a folder of notes kept in the graph as KnowledgeDocument/Section/Chunk.

``registry`` names the collections of an account; ``markdown`` is the built-in source (a
brand adds others through ``plughost_collection_sources``); ``state`` is the per-collection
record of what was synced (sqlite, so a killed sync leaves it consistent); ``sync`` walks the
folder and writes only what changed; ``watch`` keeps registered collections fresh under
``plughost serve``.
"""
