"""Embeddings (docs/memory.md#embeddings): :mod:`.provider` picks the ``plughost_embedder`` (:mod:`.local`
or :mod:`.ollama`, tuned by :mod:`.settings`); :mod:`.text` is what each node embeds, :mod:`.indexed_form`
a conversation turn's indexed form; :mod:`.queue` embeds stored turns in the background and
:mod:`.reindex` backfills what lacks a vector.
"""
