"""Tokenise, run the ONNX transformer and mean-pool: the heavy half of MiniLMEmbedder.

This is the only module that imports numpy, onnxruntime and tokenizers, and it is imported only
when a model is first needed, so importing praisonsession.recall.embeddings stays cheap.
"""

from __future__ import annotations

import threading

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

_OUTPUT = "last_hidden_state"
# Texts tokenised and length-sorted together; bounds memory for very long input lists.
_WINDOW = 4096
#: Rows of a batch from which it runs on every core (below, on the calling thread alone).
BULK_ROWS = 16


class SentenceEncoder:
    """Sentence vectors from a BERT-style ONNX model: mean pooling, then L2 normalisation.

    Texts are sorted by token count and each batch is padded only to its own longest text, so
    short texts never pay for long ones. ``encode`` is safe to call from several threads.
    """

    def __init__(self, model_path: str, tokenizer: Tokenizer, batch_size: int, max_tokens: int):
        self._model_path = model_path
        # A query or a turn (a few rows) runs on the calling thread alone: with onnxruntime's
        # defaults a call also wakes a pool thread per core that spins after it, which cost a
        # server 2.4x the CPU of the embedding itself (10.1 against 4.5 ms per short query,
        # measured beside one another) and took cores from the requests running meanwhile.
        self._session = _session(model_path, threads=1)
        # Bulk work (adding memories or knowledge) uses every core, in a session of its own.
        self._bulk: ort.InferenceSession | None = None
        self._bulk_lock = threading.Lock()
        # tokenizer.json ships fixed padding to 128; we pad per batch ourselves instead.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer = tokenizer
        self._batch_size = batch_size
        self._inputs = {node.name for node in self._session.get_inputs()}
        outputs = self._session.get_outputs()
        names = [node.name for node in outputs]
        self._output = _OUTPUT if _OUTPUT in names else names[0]
        width = outputs[names.index(self._output)].shape[-1]
        self.dimension: int | None = width if isinstance(width, int) else None

    def encode(self, texts: list[str]) -> np.ndarray:
        """Return a float32 array of shape ``[len(texts), dimension]`` with unit-norm rows."""
        chunks = [
            self._encode_window(texts[start : start + _WINDOW])
            for start in range(0, len(texts), _WINDOW)
        ]
        return np.concatenate(chunks) if len(chunks) > 1 else chunks[0]

    def _encode_window(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=True)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")
        result: np.ndarray | None = None
        for start in range(0, len(texts), self._batch_size):
            rows = order[start : start + self._batch_size]
            vectors = self._run([encodings[i].ids for i in rows], int(lengths[rows].max()))
            if result is None:
                result = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            result[rows] = vectors
        assert result is not None
        return result

    def _run(self, ids: list[list[int]], width: int) -> np.ndarray:
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, token_ids in enumerate(ids):
            input_ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session_for(len(ids)).run([self._output], feeds)[0]
        weights = mask.astype(np.float32)
        pooled = np.einsum("bsd,bs->bd", hidden, weights) / weights.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
        return unit

    def _session_for(self, rows: int) -> ort.InferenceSession:
        if rows < BULK_ROWS:
            return self._session
        with self._bulk_lock:
            if self._bulk is None:
                self._bulk = _session(self._model_path, threads=0)
            return self._bulk


def _session(model_path: str, threads: int) -> ort.InferenceSession:
    """An inference session on ``threads`` threads (0: one per core) that never spin-wait."""
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: keep onnxruntime chatter out of user logs
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(
        model_path, sess_options=options, providers=["CPUExecutionProvider"]
    )
