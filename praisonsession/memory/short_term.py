"""Short-term memory: the session's own running notes, kept as a message log in the store.

It lives with the session (so it expires, moves and is deleted with it) and is searched by
meaning over its most recent entries. Vectors are cached per text, so repeated searches embed
only what is new.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from typing import Any

from ..embeddings import Embedder
from ..stores.base import SessionBase
from .long_term import check_metadata

LOG = "$memory/short_term"
SEARCH_WINDOW = 2000
_CACHE_SIZE = 10_000


class ShortTermMemory:
    def __init__(
        self, store: SessionBase, session_id: str, user_id: str, embedder: Embedder
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.user_id = user_id
        self.embedder = embedder
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    async def add(self, text: str, metadata: dict[str, Any]) -> str:
        check_metadata(metadata)
        memory_id = uuid.uuid4().hex
        entry = {
            "id": memory_id,
            "role": "memory",
            "content": text,
            "metadata": metadata,
            "created_at": time.time(),
        }
        await self.store.append_messages(self.session_id, self.user_id, LOG, [entry])
        return memory_id

    async def entries(self) -> list[dict[str, Any]]:
        count = await self.store.message_count(self.session_id, self.user_id, LOG)
        start = max(0, count - SEARCH_WINDOW)
        return await self.store.read_messages(self.session_id, self.user_id, LOG, start)

    def rank(
        self, entries: list[dict[str, Any]], vector: list[float], limit: int
    ) -> list[dict[str, Any]]:
        texts = [str(entry.get("content", "")) for entry in entries]
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        for text, embedded in zip(missing, self.embedder.embed(missing), strict=True):
            self._vectors[text] = embedded
        while len(self._vectors) > _CACHE_SIZE:
            self._vectors.popitem(last=False)
        if not entries:
            return []
        import numpy as np  # installed with the memory extra (onnxruntime needs it)

        matrix = np.asarray([self._vectors[text] for text in texts], dtype=np.float32)
        query = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
        scores = (matrix @ query) / np.maximum(norms, 1e-12)
        order = np.lexsort((-np.arange(len(texts)), -scores))[:limit]  # ties: newest first
        return [_result(entries[i], float(scores[i])) for i in order]

    async def clear(self) -> int:
        count = await self.store.message_count(self.session_id, self.user_id, LOG)
        await self.store.clear_messages(self.session_id, self.user_id, LOG)
        return count


def _result(entry: dict[str, Any], score: float) -> dict[str, Any]:
    metadata = {
        **(entry.get("metadata") or {}),
        "memory_type": "short",
        "created_at": entry.get("created_at"),
    }
    return {
        "id": entry.get("id"),
        "text": entry.get("content", ""),
        "score": round(score, 6),
        "metadata": metadata,
    }
