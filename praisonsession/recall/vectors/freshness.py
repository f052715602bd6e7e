"""Embedded Chroma's vector index, kept current with what other processes write.

Embedded Chroma (chromadb 1.x) holds each collection's HNSW index in the memory of every
process that uses it: loaded from disk and caught up from the write log (``embeddings_queue``
in ``chroma.sqlite3``) at the process's first use of the collection, and moved after that
only by the process's own writes. Another process's entries reach this one's metadata reads
at once (a listing, a get by id), never its index: a search misses them, a filtered search
or a read of their vectors fails with ``InternalError: Error finding id`` (``Nothing found
on disk`` when the collection was empty here), and when this process next saves its index
(each 1,000 entries it writes, by Chroma's default ``sync_threshold``) it writes it over the
other's on disk, after which nobody's search finds the other's entries (measured: none of 22
of 1,100 found by its own vector).

Chroma records per collection how far into the log its metadata is (``max_seq_id`` of the
collection's metadata segment); every writer moves it. :class:`Freshness` keeps, per
collection, a position this process's index is known to hold; before the index is searched,
its vectors read, or written to, a position someone else moved reopens the store's engine
(each index then loads from disk and the log at its next use). ``PRAGMA data_version`` on a
connection of our own says whether anything at all was committed since a collection was last
found current. Those reads run in a helper process (``chroma_file``: two copies of SQLite in one
process corrupt each other's files), one round trip per search.

A reopened engine (or a new process) adds to each index again, from the log, the entries
written since it was last saved; :data:`SAVED_EVERY` keeps them few.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import chroma_file
from .index_files import clear_unused

__all__ = ["SAVED_EVERY", "STALE_ERRORS", "Freshness", "engine_of", "saved_often"]

#: Entries an embedded collection's index takes before Chroma saves it to disk (its
#: ``sync_threshold``: 1,000 by default; the least it allows is its ``batch_size``, 100). A
#: reopened engine adds up to 999 again otherwise: at 20,000 entries its first query took
#: 666-786 ms, 87-106 ms at 100, with writes no slower (measured at load 6 on 2 cores).
SAVED_EVERY = 100

#: What embedded Chroma says when an index lacks what its metadata holds (another process's
#: entries): reopening the engine and trying once more answers it.
STALE_ERRORS = ("Error finding id", "Nothing found on disk", "Error getting embedding")


def engine_of(client: Any) -> Any:
    """The embedded client's engine, whose ``start`` opens the folder afresh (chromadb's
    ``RustBindingsAPI``), or None when the client has none (a server's, another version's)."""
    server = getattr(client, "_server", None)
    if type(server).__name__ != "RustBindingsAPI" or not hasattr(server, "bindings"):
        return None
    return server


def saved_often(collection: Any) -> None:
    """A collection made before :data:`SAVED_EVERY` (or by another program) is saved that
    often from now on: a change to its configuration, made once."""
    hnsw = (getattr(collection, "configuration_json", None) or {}).get("hnsw") or {}
    least = max(SAVED_EVERY, int(hnsw.get("batch_size", SAVED_EVERY)))
    if int(hnsw.get("sync_threshold", least)) > least:
        _modified(collection, {"hnsw": {"sync_threshold": least}})


#: Seconds a configuration change waits for another writer of the file, as a read of ours does
#: (``chroma_file``'s busy timeout).
LOCKED_FOR = 30.0


def _modified(collection: Any, configuration: dict[str, Any]) -> None:
    """``collection.modify(configuration=...)``, run again while another writer holds the file.

    Chroma's configuration change reads, then writes, in one transaction: with a writer at work
    (another process's, or another connection of Chroma's own in this one) SQLite refuses it at
    once, "database is locked", without waiting (a wait there could deadlock), and the answer
    is to run the transaction again. Chroma's other writes wait for the writer instead.
    """
    deadline = time.monotonic() + LOCKED_FOR
    pause = 0.005
    while True:
        try:
            collection.modify(configuration=configuration)
            return
        except Exception as exc:  # chromadb.errors.InternalError; chromadb is imported lazily
            if "database is locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.1)


class Freshness:
    """Per embedded Chroma folder and process: which log position each collection's index
    holds here, and a reopening of the engine when another process moved one."""

    def __init__(self, folder: Path, reopen: Callable[[], None]) -> None:
        self._path = folder / "chroma.sqlite3"
        self._reopen = reopen  # starts a new engine on the folder (the old one goes with it)
        self._lock = threading.Lock()
        self._held: dict[str, Any] = {}  # collection id -> the log position its index holds
        self._checked: dict[str, int] = {}  # collection id -> data_version it was current at
        self._cleared: set[tuple[int, str]] = set()  # (generation, collection id)
        self.generation = 0  # engines opened since: one a reopening
        self.reopened = 0

    def track(self, collection: str) -> None:
        """Before a collection's first use here: the position its index will hold at least
        (the engine catches up at that first use). Kept when it is tracked already."""
        with self._lock:
            if collection not in self._held:
                self._held[collection] = self._positions([collection])[0]

    def current(self, collection: str) -> int:
        """Make sure the engine's index of ``collection`` holds what the log does, reopening
        the engine when another process wrote since; the engine's generation."""
        with self._lock:
            version, position = self._version_and_position(collection)
            if self._checked.get(collection) != version:
                if collection in self._held and self._held[collection] != position:
                    self._restart()
                else:
                    self._held[collection] = position
                self._checked[collection] = version
            return self.generation

    def wrote(self, collection: str, generation: int) -> None:
        """After this process wrote to ``collection``, with no other writer able to (its
        lexical file's write lock held): its index holds the log to here. Not when the engine
        was reopened meanwhile: the new one may have caught up before the write."""
        with self._lock:
            if generation == self.generation:
                version, position = self._version_and_position(collection)
                self._held[collection] = position
                self._checked[collection] = version

    def clear_index(self, collection: str) -> None:
        """After a write to ``collection`` (the store's write lock held): its index files, which
        a new engine's first write may have made, cleared of the stale memory Chroma wrote into
        them (``index_files``); once per engine."""
        with self._lock:
            key = (self.generation, collection)
            if key in self._cleared:
                return
            (rows,) = chroma_file.run(self._path, [(_VECTOR_SEGMENT, (collection,))])
            if rows:
                clear_unused(self._path.parent / rows[0][0])
            self._cleared.add(key)

    def restart(self) -> None:
        """Reopen the engine now (an index found lacking entries its metadata holds)."""
        with self._lock:
            self._restart()

    def _restart(self) -> None:
        # read first: the new engine catches each index up at its first use, so to here
        held = dict(zip(self._held, self._positions(list(self._held)), strict=True))
        self._reopen()
        self._held = held
        self._checked.clear()
        self.generation += 1
        self.reopened += 1

    def _version_and_position(self, collection: str) -> tuple[int, Any]:
        """``PRAGMA data_version`` (moved by any commit since the last) and how far into the log
        the collection's metadata is, in one round trip to the helper (``chroma_file``)."""
        version, position = chroma_file.run(
            self._path, [("PRAGMA data_version", ()), (_POSITION, (collection,))]
        )
        return version[0][0], _position_of(position)

    def _positions(self, collections: list[str]) -> list[Any]:
        found = chroma_file.run(self._path, [(_POSITION, (name,)) for name in collections])
        return [_position_of(rows) for rows in found]


#: How far into the log a collection's metadata is: no row when the collection is gone.
_POSITION = (
    "SELECT m.seq_id FROM segments s LEFT JOIN max_seq_id m ON m.segment_id = s.id "
    "WHERE s.collection = ? AND s.scope = 'METADATA'"
)
_VECTOR_SEGMENT = "SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'"


def _position_of(rows: list[tuple[Any, ...]]) -> Any:
    """A collection's position from its ``_POSITION`` rows: None when it is gone, 0 when its
    metadata holds nothing of the log yet."""
    if not rows:
        return None
    return 0 if rows[0][0] is None else rows[0][0]
