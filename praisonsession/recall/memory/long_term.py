"""Long-term memory: what a user told any of their sessions, searchable by meaning.

The index is the user's own collection (``vectors.scope``), and every memory also carries its
user and session. Searches see the user's memories from all their sessions; clearing removes
only the current session's. No call can reach another user's.

A memory has a stable id. The same text added again returns that id; a close paraphrase
(``memory.paraphrase``) updates the memory instead of adding a second one. Updates and
deletions are recorded, with the time, in the user's history collection, which is what
``memory_history`` reads. A fork copies the session's memories with their ids: the copy is the
fork's own (clearing either leaves the other), and a search shows one hit per id, the
current session's copy first.

A fork's copies are written before the fork itself exists, *staged*: under a session id no
session can have (``staged_session``), marked with the fork attempt's token, and left out of
every read. The fork's record names that token, so the fork adopts them (``adopt``), right
after its copy or at its next opening of memory after a crash; copies no fork names stay
out of sight until a fork to that id adopts its own, or the user is erased.
"""

from __future__ import annotations

import builtins
import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

from ... import clock
from ..._internal.json_data import check_json_data, dumps, loads
from ..._internal.progress import progress_bar
from ...errors import InvalidValueError
from ..embeddings import Embedder
from ..vectors import Hit, ScopedIndex, Where, memory_scope
from .lifecycle import ADD, DELETE, NONE, UPDATE, MemoryId, memory_id_for, normalised, text_key
from .paraphrase import DEFAULT_THRESHOLD, is_paraphrase
from .recency import newer_first, said_time

if TYPE_CHECKING:
    from ..._internal.sealing import TextSealer
    from ..vectors import Vault

RESERVED = frozenset(
    {"user_id", "session_id", "memory_type", "created_at", "updated_at", "memory_id", "dedupe"}
    | {"said_at"}
)
#: Fields a filter may name besides the metadata given: kept by the library itself.
SYSTEM_FIELDS = ("created_at", "updated_at", "said_at", "session_id")
#: Memories embedded and upserted together by ``add_many``: large enough that the model and
#: Chroma work on whole batches, small enough that a progress bar moves.
BATCH = 256
#: Memories held that a new one is compared with: a repeat of it need not be the nearest (a
#: turn of the same speaker on the same day can be nearer), but it is among the first few.
NEIGHBOURS = 3
_META = "meta_"  # prefix of the metadata given, flattened so that Chroma can filter on it
#: A change for the history: (memory id, event, text, previous text).
Event = tuple[str, str, str | None, str | None]
#: An entry to store: (id, text, metadata, vector).
Row = tuple[str, str, dict[str, Any], list[float]]
#: The session id of the copies staged for a fork: ids are printable, so no session has it.
_STAGED = "\x1ffork\x1f"
#: The metadata naming the fork attempt a staged copy was written by.
_ATTEMPT = "fork_attempt"


def staged_session(session_id: str) -> str:
    """The session id a fork to ``session_id`` stages its memories under."""
    return _STAGED + session_id


def _staged(hit: Hit) -> bool:
    return str(hit.metadata.get("session_id", "")).startswith(_STAGED)


def stored_field(field: str) -> str:
    """The Chroma metadata key a filter field is kept under."""
    return field if field in SYSTEM_FIELDS else _META + field


class LongTermMemory:
    """A user's long-term memories (see the module docstring).

    When the store is encrypted (``encryption_key``), ``sealer`` seals the texts Chroma keeps
    and ``digest_key`` keys the ids and duplicate keys of new memories (HMACs, not plain hashes
    of their texts); ``vault`` is the user's on a Chroma server. The history gets the same: it
    holds the memories' texts.
    """

    def __init__(
        self,
        client: Any,
        namespace: str,
        embedder: Embedder,
        user_id: str,
        session_id: str,
        threshold: float = DEFAULT_THRESHOLD,
        *,
        sealer: TextSealer | None = None,
        digest_key: bytes | None = None,
        vault: Vault | None = None,
    ) -> None:
        scope = memory_scope(namespace, user_id)
        self.index = ScopedIndex(client, scope, embedder, sealer=sealer, vault=vault)
        self.history_index = ScopedIndex(  # read by memory id, never searched
            client,
            scope.related("memory_history"),
            embedder,
            sealer=sealer,
            vault=vault,
            searched=False,
        )
        self.embedder = embedder
        self.user_id = user_id
        self.session_id = session_id
        self.threshold = threshold
        self.digest_key = digest_key

    # -- adding ---------------------------------------------------------------------------

    def add(self, text: str, metadata: dict[str, Any], dedupe: bool = True) -> MemoryId:
        return self.add_many([text], metadata, dedupe=dedupe)[0]

    def add_many(
        self,
        texts: list[str],
        metadata: dict[str, Any],
        progress: bool = False,
        dedupe: bool = True,
        said: list[float] | None = None,
    ) -> list[MemoryId]:
        """Remember ``texts`` (with the same metadata), embedding and upserting them in batches
        of :data:`BATCH`; their ids, in order. A batch is stored whole or not at all.
        ``said`` holds when each text was said (None: now, when it is added).

        With ``dedupe``, a text already held (or earlier in ``texts``) returns that memory's
        id, and a true repeat in other words updates it (see ``MemoryId.event``)."""
        check_metadata(metadata)
        results: list[MemoryId] = []
        show = progress and len(texts) > BATCH
        batches = [texts[start : start + BATCH] for start in range(0, len(texts), BATCH)]
        with (
            progress_bar(len(texts), show, "memory", "Adding memories") as bar,
            _ahead(self.embedder.embed, batches) as embedded,
        ):
            for number, (batch, vectors) in enumerate(zip(batches, embedded, strict=False)):
                start = number * BATCH
                when = None if said is None else said[start : start + BATCH]
                results += self._add_batch(batch, vectors, metadata, dedupe, when)
                bar.update(len(batch))
        return results

    def _add_batch(
        self,
        texts: list[str],
        vectors: list[list[float]],
        metadata: dict[str, Any],
        dedupe: bool,
        said: list[float] | None,
    ) -> list[MemoryId]:
        at = clock.now()
        whens = [at] * len(texts) if said is None else said
        fresh, added_before = self._new_ids(texts, stable=dedupe)
        results: list[MemoryId] = []
        new: list[int] = []  # positions of the texts to add
        updates: dict[str, tuple[Hit, int]] = {}  # memory id -> (the entry held, position)
        keys = [self._key(text) for text in texts] if dedupe else []
        held = self._held_by_key(keys) if dedupe else {}
        held_near = dedupe and not self.index.empty()
        nearest = self.index.query_many(vectors, NEIGHBOURS) if held_near else []
        earlier_of = self._in_batch(texts, keys, vectors) if dedupe else {}
        rekeyed: list[Hit] = []  # held under another duplicate key: given the current one
        for i, text in enumerate(texts):
            if not dedupe:
                new.append(i)
                results.append(MemoryId(fresh[i], ADD))
                continue
            first = earlier_of.get(i)
            earlier = None if first is None else str(results[first])
            same = held.get(keys[i]) or added_before.get(fresh[i])
            near = nearest[i] if nearest else []
            close = near[0] if near else None
            repeated = next((hit for hit in near if self._repeats(text, hit)), None)
            if earlier is not None:
                results.append(MemoryId(earlier, NONE))
            elif same is not None:
                results.append(MemoryId(same.metadata.get("memory_id", same.id), NONE))
            elif close is not None and normalised(close.text) == normalised(text):
                # the same text under another duplicate key: stored before the key changed
                # (encryption turned on, or a new key); it gets this one, and keeps its id
                results.append(MemoryId(close.metadata.get("memory_id", close.id), NONE))
                rekeyed.append(close)
            elif repeated is not None:
                memory_id = repeated.metadata.get("memory_id", repeated.id)
                if memory_id in updates:
                    results.append(MemoryId(memory_id, NONE))
                else:
                    updates[memory_id] = (repeated, i)
                    results.append(MemoryId(memory_id, UPDATE, previous=repeated.text))
            else:
                new.append(i)
                results.append(MemoryId(fresh[i], ADD))
        ids = [fresh[i] for i in new]
        self.index.add(
            ids,
            [texts[i] for i in new],
            [self._metadata(fresh[i], texts[i], metadata, at, at, whens[i]) for i in new],
            [vectors[i] for i in new],
        )
        self._rekey(rekeyed)
        events: list[Event] = [(fresh[i], ADD, texts[i], None) for i in new]
        targets = self._targets_of(list(updates))  # every update's entries, found at once
        rewritten: list[Row] = []
        for memory_id, (entry, i) in updates.items():
            found = targets.get(memory_id) or [entry]
            rewritten += self._rewritten(found, texts[i], vectors[i], metadata, at, whens[i])
            events.append((memory_id, UPDATE, texts[i], entry.text))
        self._store(rewritten)  # one write for all of the batch's updates
        self._record(events, at)
        return results

    def _repeats(self, text: str, hit: Hit) -> bool:
        return is_paraphrase(hit.score, text, hit.text, self.threshold)

    def _key(self, text: str) -> str:
        return text_key(text, self.digest_key, self.user_id)

    def _rekey(self, entries: list[Hit]) -> None:
        """Store ``entries`` again under their current duplicate key, nothing else changed."""
        if not entries:
            return
        stored = {hit.id: hit for hit in self.index.get([hit.id for hit in entries], vectors=True)}
        kept = [stored[hit.id] for hit in entries if hit.id in stored]
        self.index.add(
            [hit.id for hit in kept],
            [hit.text for hit in kept],
            [{**hit.metadata, "text_key": self._key(hit.text)} for hit in kept],
            [list(hit.vector or []) for hit in kept],
        )

    def _in_batch(
        self, texts: list[str], keys: list[str], vectors: list[list[float]]
    ) -> dict[int, int]:
        """For each text of the batch that repeats or paraphrases an earlier one, the first
        such earlier one (position -> position). The batch's cosines come from one matrix
        product, and only the pairs that reach the threshold are read as texts: the rest
        cannot be paraphrases (``is_paraphrase`` needs the threshold first)."""
        import numpy as np  # installed with the memory extra

        firsts: dict[int, int] = {}
        first_of_key: dict[str, int] = {}
        cosines = _cosines(vectors) if len(texts) > 1 else None
        for i, key in enumerate(keys):
            first = first_of_key.setdefault(key, i)
            found = first if first < i else None
            if cosines is not None:
                row = cosines[i, : i if found is None else found]
                for j in np.flatnonzero(row >= self.threshold):
                    if is_paraphrase(float(row[j]), texts[i], texts[j], self.threshold):
                        found = int(j)
                        break
            if found is not None:
                firsts[i] = found
        return firsts

    def _new_ids(self, texts: list[str], stable: bool) -> tuple[list[str], dict[str, Hit]]:
        """Ids from the text (the same in two processes adding it at once), and the memories
        that hold such an id already: the text was added before and has been updated since, so
        a rerun of the add finds that memory (a deleted one is added again, same id)."""
        if not stable:
            return [uuid.uuid4().hex for _ in texts], {}
        ids = [memory_id_for(self.user_id, text, self.digest_key) for text in texts]
        copies = _own_first(self._copies_of(ids), self.session_id)
        return ids, {hit.metadata.get("memory_id", hit.id): hit for hit in copies}

    def _held_by_key(self, keys: list[str]) -> dict[str, Hit]:
        found = self.index.get(where={"text_key": {"$in": sorted(set(keys))}})
        return {hit.metadata["text_key"]: hit for hit in _own_first(found, self.session_id)}

    def _metadata(
        self,
        memory_id: str,
        text: str,
        metadata: dict[str, Any],
        created: float,
        updated: float,
        said: float,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        return {
            "session_id": self.session_id if session_id is None else session_id,
            "memory_type": "long",
            "memory_id": memory_id,
            "text_key": self._key(text),
            "created_at": created,
            "updated_at": updated,
            "said_at": said,
            "extra": dumps(metadata),
            **{_META + key: value for key, value in metadata.items() if _scalar(value)},
        }

    # -- one memory -----------------------------------------------------------------------

    def _copies_of(self, ids: list[str]) -> list[Hit]:
        """Every entry of these memory ids (by Chroma id too: memories from before ids)."""
        if not ids:
            return []
        wanted = sorted(set(ids))
        found = {hit.id: hit for hit in self.index.get(where={"memory_id": {"$in": wanted}})}
        for hit in self.index.get(wanted):
            found.setdefault(hit.id, hit)
        return [hit for hit in found.values() if not _staged(hit)]

    def _targets(self, memory_id: str) -> list[Hit]:
        """The entries a change to ``memory_id`` applies to: this session's copy if it has one
        (a fork's copy is its own), else the user's."""
        return self._targets_of([memory_id]).get(memory_id, [])

    def _targets_of(self, memory_ids: builtins.list[str]) -> dict[str, builtins.list[Hit]]:
        """:meth:`_targets` of each of ``memory_ids``, read together."""
        copies: dict[str, builtins.list[Hit]] = {}
        for hit in self._copies_of(memory_ids):
            copies.setdefault(hit.metadata.get("memory_id", hit.id), []).append(hit)
        chosen = {}
        for memory_id, found in copies.items():
            own = [hit for hit in found if hit.metadata.get("session_id") == self.session_id]
            chosen[memory_id] = own or found
        return chosen

    def get(self, memory_id: str) -> dict[str, Any] | None:
        copies = _own_first(self._copies_of([memory_id]), self.session_id)
        return as_result(copies[0], scored=False) if copies else None

    def update(
        self, memory_id: str, text: str | None, metadata: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Change a memory's text and/or metadata (merged); the memory as it is now, or None
        when there is no such memory."""
        check_metadata(metadata)
        targets = self._targets(memory_id)
        if not targets:
            return None
        if all(_unchanged(entry, text, metadata) for entry in targets):
            return self.get(memory_id)  # a rerun of the same update records nothing
        at = clock.now()
        vector = self.embedder.embed([text])[0] if text is not None else None
        self._rewrite(targets, text, vector, metadata, at)
        self._record([(memory_id, UPDATE, text or targets[0].text, targets[0].text)], at)
        return self.get(memory_id)

    def _rewrite(
        self,
        entries: builtins.list[Hit],
        text: str | None,
        vector: builtins.list[float] | None,
        metadata: dict[str, Any],
        at: float,
    ) -> None:
        self._store(self._rewritten(entries, text, vector, metadata, at))

    def _rewritten(
        self,
        entries: builtins.list[Hit],
        text: str | None,
        vector: builtins.list[float] | None,
        metadata: dict[str, Any],
        at: float,
        said: float | None = None,
    ) -> builtins.list[Row]:
        """The entries as a change of text and/or metadata leaves them, to store; a repeat
        gives the time it was said (``said``), an update by id keeps the memory's."""
        rows: builtins.list[Row] = []
        for entry in entries:
            stored = dict(entry.metadata)
            extra = {**_extra(stored, entry.id), **metadata}
            check_json_data(extra, "memory metadata")
            kept = {k: v for k, v in stored.items() if not k.startswith(_META)}
            new_text = entry.text if text is None else text
            kept.update(
                extra=dumps(extra),
                updated_at=at,
                said_at=stored.get("said_at", stored.get("created_at")) if said is None else said,
                text_key=self._key(new_text),
                **{_META + key: value for key, value in extra.items() if _scalar(value)},
            )
            if vector is None:  # the text stays: so does its vector (get gives it as a list)
                vector = cast(
                    builtins.list[float], self.index.get([entry.id], vectors=True)[0].vector
                )
            rows.append((entry.id, new_text, kept, vector))
        return rows

    def _store(self, rows: builtins.list[Row]) -> None:
        if rows:
            ids, texts, metadatas, vectors = (list(column) for column in zip(*rows, strict=True))
            self.index.add(ids, texts, metadatas, vectors)

    def delete(self, memory_id: str) -> bool:
        targets = self._targets(memory_id)
        if not targets:
            return False
        self.index.delete([hit.id for hit in targets])
        self._record([(memory_id, DELETE, None, targets[0].text)], clock.now())
        return True

    # -- history --------------------------------------------------------------------------

    def _record(self, events: list[Event], at: float) -> None:
        """Write ``(memory id, event, text, previous)`` to the history, all at time ``at``.

        Texts go in the entries' documents only (sealed like the memories when an encryption
        key is set): a deletion keeps the text deleted, and what an update replaced is read
        back from the event before it."""
        if not events:
            return
        base = time.time_ns()
        self.history_index.add(
            [uuid.uuid4().hex for _ in events],
            [(previous if event == DELETE else text) or "" for _, event, text, previous in events],
            [
                {
                    "memory_id": memory_id,
                    "event": event,
                    "at": at,
                    "seq": base + n,
                    "session_id": self.session_id,
                }
                for n, (memory_id, event, _, _) in enumerate(events)
            ],
            _spread(len(events), self.embedder.dimension, base),
        )

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        found = self.history_index.get(where={"memory_id": memory_id})
        found.sort(key=lambda hit: (hit.metadata.get("at", 0), hit.metadata.get("seq", 0)))
        changes: list[dict[str, Any]] = []
        last: str | None = None
        for hit in found:
            event = hit.metadata.get("event")
            deleted = event == DELETE
            changes.append(
                {
                    "id": memory_id,
                    "event": event,
                    "text": None if deleted else hit.text,
                    "previous": hit.text if deleted else (last if event == UPDATE else None),
                    "at": hit.metadata.get("at"),
                    "session_id": hit.metadata.get("session_id"),
                }
            )
            last = None if deleted else hit.text
        return changes

    # -- reading --------------------------------------------------------------------------

    def candidates(
        self,
        query: str,
        vector: list[float],
        limit: int,
        where: Where | None = None,
        prefer_recent: bool = False,
    ) -> list[Hit]:
        """The hits a search of ``limit`` ranks, best first (by meaning and by words: the
        vector index's hybrid search), one per memory id (with their vectors when
        ``prefer_recent`` is to reorder them)."""
        # Room for the copies a fork made (one hit per id) and for recency to reorder.
        wanted = limit * 3 if prefer_recent else limit + 4
        chroma_where = where.to_chroma(stored_field) if where is not None else None
        hits = self.index.search(query, vector, wanted, chroma_where, vectors=prefer_recent)
        return _own_first(hits, self.session_id, keep_order=True)

    def search(
        self,
        query: str,
        vector: list[float],
        limit: int,
        where: Where | None = None,
        prefer_recent: bool = False,
    ) -> list[dict[str, Any]]:
        hits = self.candidates(query, vector, limit, where, prefer_recent)
        if prefer_recent:
            hits = _newer_first(hits, limit)
        # Results (metadata parsed back from JSON) only for the hits returned.
        return [as_result(hit) for hit in hits[:limit]]

    def list(
        self, where: Where | None = None, limit: int = 100, after: str | None = None
    ) -> list[dict[str, Any]]:
        """The user's memories, oldest first, one per id; ``after`` is the last id of the page
        before."""
        chroma_where = where.to_chroma(stored_field) if where is not None else None
        hits = _own_first(self.index.get(where=chroma_where), self.session_id)
        hits.sort(key=lambda hit: (hit.metadata.get("created_at", 0), as_result(hit)["id"]))
        return page_of([as_result(hit, scored=False) for hit in hits], limit, after)

    # from here on ``list`` names the method above: annotations say ``builtins.list``

    def clear(self) -> int:
        return self.index.delete(where={"session_id": self.session_id})

    def session_memories(self) -> builtins.list[dict[str, Any]]:
        """What this session added, portable: id, text, the metadata given, and when."""
        found = []
        for hit in self.index.get(where={"session_id": self.session_id}):
            stored = hit.metadata
            found.append(
                {
                    "id": stored.get("memory_id", hit.id),
                    "text": hit.text,
                    "metadata": _extra(stored, hit.id),
                    "created_at": stored.get("created_at"),
                    "updated_at": stored.get("updated_at", stored.get("created_at")),
                    "said_at": stored.get("said_at", stored.get("created_at")),
                }
            )
        return sorted(found, key=lambda memory: (memory["created_at"] or 0, memory["text"]))

    def restore(self, memories: builtins.list[dict[str, Any]], attempt: str | None = None) -> int:
        """Add memories another session (or an archive) added, as this session's own, with
        their ids; one the session holds already is not added twice. With ``attempt`` (a
        fork's token), staged instead: out of sight until the fork adopts them."""
        held = {memory["id"] for memory in self.session_memories()}
        owner = self.session_id if attempt is None else staged_session(self.session_id)
        marks = {} if attempt is None else {_ATTEMPT: attempt}
        todo = []
        for memory in memories:
            memory_id = memory.get("id")
            if not isinstance(memory_id, str) or not memory_id.isalnum() or len(memory_id) > 64:
                memory_id = uuid.uuid4().hex  # an archive from before memories had ids
            if memory_id not in held:
                held.add(memory_id)
                todo.append((memory_id, memory))
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            texts = [str(memory["text"]) for _, memory in batch]
            metadatas = []
            for memory_id, memory in batch:
                extra = dict(memory.get("metadata") or {})
                check_metadata(extra)
                created = float(memory.get("created_at") or clock.now())
                updated = float(memory.get("updated_at") or created)
                given = memory.get("said_at")
                said = created
                if isinstance(given, (int, float)) and not isinstance(given, bool):
                    said = float(given)
                text = str(memory["text"])
                stored = self._metadata(memory_id, text, extra, created, updated, said, owner)
                metadatas.append({**stored, **marks})
            # a staged copy's entry is the attempt's own: two attempts never write one entry
            entry_owner = owner if attempt is None else owner + "\x1f" + attempt
            ids = [_entry_id(memory_id, entry_owner) for memory_id, _ in batch]
            self.index.add(ids, texts, metadatas)
            recorded = {
                hit.metadata["memory_id"]
                for hit in self.history_index.get(
                    where={"memory_id": {"$in": [memory_id for memory_id, _ in batch]}}
                )
            }
            for memory_id, memory in batch:
                if memory_id not in recorded:
                    at = float(memory.get("created_at") or clock.now())
                    self._record([(memory_id, ADD, str(memory["text"]), None)], at)
        return len(todo)

    def adopt(self, attempt: str) -> int:
        """Make the copies staged by the fork attempt ``attempt`` this session's own (the
        fork's record names that attempt: the fork exists), and remove what other attempts
        staged for this id (each was killed, or fails now that the fork exists). Idempotent:
        a crash halfway is finished by the next call. How many were adopted."""
        staged = self.index.get(where={"session_id": staged_session(self.session_id)}, vectors=True)
        ours = [hit for hit in staged if hit.metadata.get(_ATTEMPT) == attempt]
        rows: builtins.list[Row] = []
        for hit in ours:
            kept = {k: v for k, v in hit.metadata.items() if k != _ATTEMPT}
            kept["session_id"] = self.session_id
            rows.append((hit.id, hit.text, kept, cast(builtins.list[float], hit.vector)))
        self._store(rows)  # the same entries, rewritten in place: no moment without them
        self.index.delete([hit.id for hit in staged if hit.metadata.get(_ATTEMPT) != attempt])
        return len(rows)

    def unstage(self, attempt: str) -> int:
        """Remove the copies the fork attempt ``attempt`` staged (the fork was not made)."""
        staged = self.index.get(where={"session_id": staged_session(self.session_id)})
        ours = [hit.id for hit in staged if hit.metadata.get(_ATTEMPT) == attempt]
        self.index.delete(ours)
        return len(ours)


def page_of(memories: list[dict[str, Any]], limit: int, after: str | None) -> list[dict[str, Any]]:
    """``limit`` memories from the one after the id ``after`` (from the start without it)."""
    if after is not None:
        ids = [memory["id"] for memory in memories]
        if after not in ids:
            raise InvalidValueError(
                f"after={after!r} is not the id of a memory on this list; pass the 'id' of "
                "the last memory of the page before, or None for the first page."
            )
        memories = memories[ids.index(after) + 1 :]
    return memories[:limit]


def _entry_id(memory_id: str, session_id: str) -> str:
    """The Chroma id of a copy of ``memory_id`` that a fork or an import made for a session
    (the first copy's Chroma id is the memory id itself)."""
    return f"{memory_id}.{memory_id_for(session_id, memory_id)[1:17]}"


def _own_first(hits: list[Hit], session_id: str, keep_order: bool = False) -> list[Hit]:
    """One hit per memory id: this session's copy when it has one, else the first seen.
    Copies staged for a fork are no session's yet: they are left out."""
    chosen: dict[str, Hit] = {}
    for hit in hits:
        if _staged(hit):
            continue
        memory_id = hit.metadata.get("memory_id", hit.id)
        best = chosen.get(memory_id)
        if best is None or (
            hit.metadata.get("session_id") == session_id
            and best.metadata.get("session_id") != session_id
        ):
            chosen[memory_id] = hit
    picked = list(chosen.values())
    if keep_order:
        order = {id(hit): n for n, hit in enumerate(hits)}
        picked.sort(key=lambda hit: order[id(hit)])
    return picked


def _newer_first(hits: list[Hit], limit: int) -> list[Hit]:
    """Hits in ``prefer_recent`` order (see ``memory.recency``), ranked on what Chroma returned."""
    order = newer_first(
        [said_time(hit.metadata) for hit in hits],
        [hit.text for hit in hits],
        [hit.score for hit in hits],
        [[] if hit.vector is None else hit.vector for hit in hits],
        limit,
    )
    return [hits[i] for i in order]


def _cosines(vectors: list[list[float]]) -> Any:
    """The batch's cosine matrix (numpy, float32)."""
    import numpy as np  # installed with the memory extra

    matrix = np.asarray(vectors, dtype=np.float32)
    matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return matrix @ matrix.T


def _spread(count: int, dimension: int, seed: int) -> list[list[float]]:
    """Vectors for history entries, which are read by id and never searched: distinct and
    random, because Chroma's index slows down on many identical vectors."""
    import numpy as np  # installed with the memory extra

    vectors = np.random.default_rng(seed).standard_normal((count, dimension))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    spread: list[list[float]] = vectors.astype(np.float32).tolist()
    return spread


def _unchanged(entry: Hit, text: str | None, metadata: dict[str, Any]) -> bool:
    extra = _extra(entry.metadata, entry.id)
    same_text = text is None or text == entry.text
    return same_text and all(
        key in extra and extra[key] == value for key, value in metadata.items()
    )


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _extra(stored: dict[str, Any], entry_id: str) -> dict[str, Any]:
    extra = loads(stored.get("extra", "{}"), f"metadata of memory {entry_id}")
    return dict(extra) if isinstance(extra, dict) else {}


def check_metadata(metadata: dict[str, Any]) -> None:
    clash = RESERVED & metadata.keys()
    if clash:
        raise InvalidValueError(
            f"Memory metadata may not set {sorted(clash)}: praisonsession records them itself."
        )
    check_json_data(metadata, "memory metadata")


def as_result(hit: Hit, scored: bool = True) -> dict[str, Any]:
    """A search result: id, text, score (cosine similarity; None when not searched) and the
    metadata as given, with the user, session, type and times."""
    stored = {k: v for k, v in hit.metadata.items() if not k.startswith(_META)}
    extra = _extra(stored, hit.id)
    for internal in ("extra", "text_key", "memory_id"):
        stored.pop(internal, None)
    stored.setdefault("said_at", stored.get("created_at"))  # stored before memories kept it
    memory_id = hit.metadata.get("memory_id", hit.id)
    score = hit.score if scored else None
    return {"id": memory_id, "text": hit.text, "score": score, "metadata": {**extra, **stored}}


@contextlib.contextmanager
def _ahead(
    embed: Callable[[list[str]], list[list[float]]], batches: list[list[str]]
) -> Iterator[Iterator[list[list[float]]]]:
    """The batches' vectors, in order, each next batch embedded in a thread of its own while
    the one before it is checked and written (the vector store's write, the lexical index's,
    a Chroma server's round trip): the model is most of the work, and it need not wait for
    the store. A batch alone is embedded here, with no thread."""
    if len(batches) < 2:
        yield (embed(batch) for batch in batches)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="praisonsession-embed") as pool:

        def embedded() -> Iterator[list[list[float]]]:
            pending = pool.submit(embed, batches[0])
            for following in [*batches[1:], None]:
                vectors = pending.result()
                if following is not None:
                    pending = pool.submit(embed, following)
                yield vectors

        yield embedded()
