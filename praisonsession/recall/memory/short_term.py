"""Short-term memory: the session's own running notes, kept as a message log in the store.

It lives with the session (so it expires, moves and is deleted with it, and a fork, snapshot or
archive carries it with its ids). The log is append-only: an update or a deletion is appended
as an event naming the note, and the notes are what the events add up to, which is also their
history. Notes are searched by meaning over the most recent entries; vectors are cached per
text, so repeated searches embed only what is new.
"""

from __future__ import annotations

import builtins
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol

from ... import clock
from ..embeddings import Embedder
from ..vectors import Where
from .lifecycle import ADD, DELETE, NONE, UPDATE, MemoryId, memory_id_for, text_key
from .long_term import check_metadata, page_of
from .paraphrase import DEFAULT_THRESHOLD, is_paraphrase
from .recency import prefer_newer

LOG = "$memory/short_term"
SEARCH_WINDOW = 2000
_CACHE_SIZE = 10_000
_ROLES = {"memory": ADD, "memory_update": UPDATE, "memory_delete": DELETE}


class SessionLogs(Protocol):
    """The part of a session that short-term memory needs: its named message logs."""

    async def append_messages(self, log: str, messages: list[dict[str, Any]]) -> int: ...

    async def read_messages(
        self, log: str, start: int = 0, stop: int | None = None
    ) -> list[dict[str, Any]]: ...

    async def message_count(self, log: str) -> int: ...

    async def clear_messages(self, log: str) -> None: ...


class ShortTermMemory:
    def __init__(
        self,
        logs: SessionLogs,
        embedder: Embedder,
        session_id: str = "",
        threshold: float = DEFAULT_THRESHOLD,
    ) -> None:
        self.logs = logs
        self.embedder = embedder
        self.session_id = session_id
        self.threshold = threshold
        self._vectors_lock = threading.Lock()  # rank() runs in worker threads
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    # -- writing --------------------------------------------------------------------------

    async def add(self, text: str, metadata: dict[str, Any], dedupe: bool = True) -> MemoryId:
        return (await self.add_many([text], metadata, dedupe))[0]

    async def add_many(
        self,
        texts: list[str],
        metadata: dict[str, Any],
        dedupe: bool = True,
        said: list[float] | None = None,
    ) -> list[MemoryId]:
        """Append the notes in one atomic step; their ids. With ``dedupe``, a note already held
        (or a true repeat of one) is not appended again: see ``MemoryId.event``. ``said``
        holds when each was said (None: now)."""
        check_metadata(metadata)
        at = clock.now()
        whens = [at] * len(texts) if said is None else said
        held = list((await self.notes()).values()) if dedupe else []
        if dedupe and (held or len(texts) > 1):
            from ..._internal.runtime import (
                offload,  # vectors cached now, so the loop below never blocks
            )

            await offload(self._embed, [note["content"] for note in held] + texts)
        entries: list[dict[str, Any]] = []
        results: list[MemoryId] = []
        ids_held = {note["id"]: note for note in held}
        for text, when in zip(texts, whens, strict=True):
            found = self._same_as(text, held) if dedupe else None
            before = ids_held.get(memory_id_for(self.session_id, text)) if dedupe else None
            if found is None and before is not None:
                found = NONE, before  # added before, updated since: a rerun finds it
            if found is not None:
                event, note = found
                if event == UPDATE:
                    entries.append(_event("memory_update", note["id"], text, {}, at))
                    results.append(MemoryId(note["id"], UPDATE, previous=note["content"]))
                    note["content"] = text
                else:
                    results.append(MemoryId(note["id"], NONE))
                continue
            stable = memory_id_for(self.session_id, text)
            entry: dict[str, Any] = {
                "id": stable if dedupe and stable not in ids_held else uuid.uuid4().hex,
                "role": "memory",
                "content": text,
                "metadata": metadata,
                "created_at": at,
                "said_at": when,
            }
            entries.append(entry)
            results.append(MemoryId(entry["id"], ADD))
            held.append({"id": entry["id"], "content": text})
            ids_held[entry["id"]] = held[-1]
        if entries:
            await self.logs.append_messages(LOG, entries)
        return results

    def _same_as(self, text: str, held: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        key = text_key(text)
        for note in held:
            if text_key(note["content"]) == key:
                return NONE, note
        if not held:
            return None
        import numpy as np

        vectors = self._embed([note["content"] for note in held] + [text])
        matrix = np.asarray(vectors[:-1], dtype=np.float32)
        query = np.asarray(vectors[-1], dtype=np.float32)
        scores = (matrix @ query) / np.maximum(
            np.linalg.norm(matrix, axis=1) * np.linalg.norm(query), 1e-12
        )
        best = int(np.argmax(scores))
        if is_paraphrase(float(scores[best]), text, held[best]["content"], self.threshold):
            return UPDATE, held[best]
        return None

    async def update(
        self, memory_id: str, text: str | None, metadata: dict[str, Any]
    ) -> dict[str, Any] | None:
        check_metadata(metadata)
        note = (await self.notes()).get(memory_id)
        if note is None:
            return None
        held = note.get("metadata") or {}
        same_text = text is None or text == note.get("content")
        if same_text and all(key in held and held[key] == v for key, v in metadata.items()):
            return await self.get(memory_id)  # a rerun of the same update records nothing
        event = _event("memory_update", memory_id, text, metadata, clock.now())
        await self.logs.append_messages(LOG, [event])
        return await self.get(memory_id)

    async def delete(self, memory_id: str) -> bool:
        if memory_id not in await self.notes():
            return False
        await self.logs.append_messages(
            LOG, [_event("memory_delete", memory_id, None, {}, clock.now())]
        )
        return True

    async def clear(self) -> int:
        count = len(await self.notes())
        await self.logs.clear_messages(LOG)
        return count

    # -- reading --------------------------------------------------------------------------

    async def entries(self) -> list[dict[str, Any]]:
        count = await self.logs.message_count(LOG)
        return await self.logs.read_messages(LOG, max(0, count - SEARCH_WINDOW))

    async def notes(self) -> dict[str, dict[str, Any]]:
        """The notes as they are now (updates applied, deletions gone), oldest first."""
        return fold(await self.entries())

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        note = (await self.notes()).get(memory_id)
        return None if note is None else _result(note, None, self.session_id)

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        found = []
        for entry in await self.entries():
            role = entry.get("role")
            target = entry.get("id") if role == "memory" else entry.get("target")
            if role in _ROLES and target == memory_id:
                event = _ROLES[role]
                found.append(
                    {
                        "id": memory_id,
                        "event": event,
                        "text": entry.get("content") if event != DELETE else None,
                        "at": entry.get("created_at"),
                        "session_id": self.session_id,
                    }
                )
        previous = None
        for change in found:  # what each change replaced
            change["previous"] = previous if change["event"] != ADD else None
            if change["event"] == UPDATE and change["text"] is None:
                change["text"] = previous  # a change of metadata only
            previous = change["text"] if change["event"] != DELETE else None
        return found

    async def list(
        self, where: Where | None = None, limit: int = 100, after: str | None = None
    ) -> list[dict[str, Any]]:
        notes = [n for n in (await self.notes()).values() if _passes(n, where, self.session_id)]
        return page_of([_result(note, None, self.session_id) for note in notes], limit, after)

    # from here on ``list`` names the method above: annotations say ``builtins.list``

    def _embed(self, texts: builtins.list[str]) -> builtins.list[builtins.list[float]]:
        with self._vectors_lock:
            missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
            if missing:
                for text, embedded in zip(missing, self.embedder.embed(missing), strict=True):
                    self._vectors[text] = embedded
            vectors = [self._vectors[text] for text in texts]
            while len(self._vectors) > _CACHE_SIZE:
                self._vectors.popitem(last=False)
        return vectors

    def rank(
        self,
        entries: builtins.list[dict[str, Any]],
        vector: builtins.list[float],
        limit: int,
        where: Where | None = None,
        prefer_recent: bool = False,
    ) -> builtins.list[dict[str, Any]]:
        """The ``limit`` notes closest to ``vector`` (blocking: it may embed notes)."""
        results, vectors = self.candidates(entries, vector, limit, where, prefer_recent)
        if prefer_recent:
            results = prefer_newer(results, vectors, limit)
        return results[:limit]

    def candidates(
        self,
        entries: builtins.list[dict[str, Any]],
        vector: builtins.list[float],
        limit: int,
        where: Where | None = None,
        prefer_recent: bool = False,
    ) -> tuple[builtins.list[dict[str, Any]], builtins.list[Sequence[float]]]:
        """The notes a ranking of ``limit`` starts from, best first, with their vectors (which
        a ranking of all memories joins with long-term hits' array rows)."""
        notes = [n for n in fold(entries).values() if _passes(n, where, self.session_id)]
        if not notes:
            return [], []
        import numpy as np  # installed with the memory extra (onnxruntime needs it)

        vectors = self._embed([str(note["content"]) for note in notes])
        matrix = np.asarray(vectors, dtype=np.float32)
        query = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
        scores = (matrix @ query) / np.maximum(norms, 1e-12)
        wanted = limit * 3 if prefer_recent else limit
        order = np.lexsort((-np.arange(len(notes)), -scores))[:wanted]  # ties: newest first
        results = [_result(notes[i], float(scores[i]), self.session_id) for i in order]
        return results, [vectors[i] for i in order]


def fold(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The notes a log's entries add up to, by id, oldest first."""
    notes: dict[str, dict[str, Any]] = {}
    for entry in entries:
        role = entry.get("role")
        if role == "memory":
            note = dict(entry)
            note["updated_at"] = entry.get("created_at")
            notes[str(entry.get("id"))] = note
        elif role in ("memory_update", "memory_delete"):
            target = str(entry.get("target"))
            if target not in notes:
                continue
            if role == "memory_delete":
                del notes[target]
                continue
            note = notes[target] = dict(notes[target])
            if entry.get("content") is not None:
                note["content"] = entry["content"]
            note["metadata"] = {**(note.get("metadata") or {}), **(entry.get("metadata") or {})}
            note["updated_at"] = entry.get("created_at")
    return notes


def _event(
    role: str, target: str, text: str | None, metadata: dict[str, Any], at: float
) -> dict[str, Any]:
    return {
        "id": uuid.uuid4().hex,
        "role": role,
        "target": target,
        "content": text,
        "metadata": metadata,
        "created_at": at,
    }


def _fields(note: dict[str, Any], session_id: str) -> dict[str, Any]:
    return {
        **(note.get("metadata") or {}),
        "created_at": note.get("created_at"),
        "updated_at": note.get("updated_at"),
        "said_at": note.get("said_at", note.get("created_at")),
        "session_id": session_id,
    }


def _passes(note: dict[str, Any], where: Where | None, session_id: str) -> bool:
    return where is None or where.matches(_fields(note, session_id))


def _result(note: dict[str, Any], score: float | None, session_id: str) -> dict[str, Any]:
    metadata = {
        **(note.get("metadata") or {}),
        "memory_type": "short",
        "session_id": session_id,
        "created_at": note.get("created_at"),
        "updated_at": note.get("updated_at"),
        "said_at": note.get("said_at", note.get("created_at")),
    }
    return {
        "id": note.get("id"),
        "text": note.get("content", ""),
        "score": None if score is None else round(score, 6),
        "metadata": metadata,
    }
