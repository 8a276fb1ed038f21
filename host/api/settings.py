"""The host's own settings a plugin may read (the brand, the store and embedder choices, the
read-only flag), the boolean spellings, ``csv_list`` for comma lists, and ``declared`` to list a plugin's ``Setting`` objects
for ``plughost_settings`` (docs/configuration.md)."""

from plughost.util.settings import BRAND, EMBEDDER, FALSE, GRAPH_READ_ONLY, STORE, TRUE, csv_list, declared

__all__ = ["BRAND", "STORE", "EMBEDDER", "GRAPH_READ_ONLY", "TRUE", "FALSE", "declared", "csv_list"]
