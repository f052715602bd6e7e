"""Tokenise, run the ONNX transformer and mean-pool: the heavy half of MiniLMEmbedder.

This is the only module that imports numpy, onnxruntime and tokenizers, and it is imported only
when a model is first needed, so importing praisonsession.embeddings stays cheap.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

_OUTPUT = "last_hidden_state"
# Texts tokenised and length-sorted together; bounds memory for very long input lists.
_WINDOW = 4096


class SentenceEncoder:
    """Sentence vectors from a BERT-style ONNX model: mean pooling, then L2 normalisation.

    Texts are sorted by token count and each batch is padded only to its own longest text, so
    short texts never pay for long ones. ``encode`` is safe to call from several threads.
    """

    def __init__(self, model_path: str, tokenizer: Tokenizer, batch_size: int, max_tokens: int):
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: keep onnxruntime chatter out of user logs
        self._session = ort.InferenceSession(
            model_path, sess_options=options, providers=["CPUExecutionProvider"]
        )
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
        hidden = self._session.run([self._output], feeds)[0]
        weights = mask.astype(np.float32)
        pooled = np.einsum("bsd,bs->bd", hidden, weights) / weights.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
