"""The sorted ids of one user's sessions in the JSON store, so that a page of
``list_sessions`` reads its own sessions' files and no others.

Two files beside the user's session files, and a lock::

    .sessions.index    "praisonsession-index 1 <generation>", then one id a line, sorted
    .sessions.journal  "praisonsession-journal 1 <generation>", then "+id" / "-id" lines
    .sessions.lock     taken (flock) by every writer of the two files

A session is added before its file is first written and removed after its file is gone (both
under the session's lock), so whatever crashes, the index names every session that has a file;
listing reads each file anyway and passes over a name whose file is missing. Adding or
removing appends one line to the journal; once the journal outgrows a fraction of the index,
both are rewritten (a new generation: the index by rename, then the journal). A reader takes
no lock: it reads the journal, then the index, and uses them only if their generations agree.
The index is rebuilt from the session files when it is missing: a store written before it
existed, or one whose index was deleted.

Ids hold no control characters (``identifiers``), so a line is an id; UTF-8 bytes sort in code
point order, the order of every backend's listing.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ...._internal.file_lock import FileLock

INDEX = ".sessions.index"
JOURNAL = ".sessions.journal"
LOCK = ".sessions.lock"
_INDEX_HEADER = b"praisonsession-index 1 "
_JOURNAL_HEADER = b"praisonsession-journal 1 "
_COMPACT_AT = 32 * 1024  # journal bytes before a rewrite (or 1/32 of the index, if more)


class SessionIndex:
    """The index of one user directory. ``scan`` yields the session ids of the directory's
    session files (read only to rebuild a missing index)."""

    def __init__(
        self, folder: Path, scan: Callable[[], Iterable[str]], timeout: float, fsync: bool
    ) -> None:
        self.folder = folder
        self._scan = scan
        self._timeout = timeout
        self._fsync = fsync

    # -- writers (under the session's lock) -------------------------------------------------

    def add(self, session_id: str) -> None:
        """Before the session's file is first written."""
        self._append(b"+" + session_id.encode("utf-8") + b"\n")

    def discard(self, session_id: str) -> None:
        """After the session's file is removed."""
        self._append(b"-" + session_id.encode("utf-8") + b"\n")

    def _append(self, line: bytes) -> None:
        with FileLock(self.folder / LOCK, self._timeout):
            generation = self._ready()
            path = self.folder / JOURNAL
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
            try:
                size = os.fstat(fd).st_size
                if size and _byte_at(fd, size - 1) != b"\n":
                    # a torn line (a crash mid-append) is dropped, not continued
                    os.ftruncate(fd, _torn_from(path))
                os.write(fd, line)
                if self._fsync:
                    os.fsync(fd)
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if size > max(_COMPACT_AT, (self.folder / INDEX).stat().st_size // 32):
                self._rewrite(generation)

    def _ready(self) -> int:
        """The index's generation, once index and journal agree (rebuilt or repaired if not).
        Call under the index lock."""
        generation = _generation(self.folder / INDEX, _INDEX_HEADER)
        if generation is None:
            return self._rebuild(_generation(self.folder / JOURNAL, _JOURNAL_HEADER) or 0)
        journal = _generation(self.folder / JOURNAL, _JOURNAL_HEADER)
        if journal is None or journal > generation:  # lost or damaged: start afresh
            return self._rebuild(max(journal or 0, generation))
        if journal < generation:
            # a crash between the two renames of a rewrite: the index holds the journal already
            self._write(JOURNAL, _JOURNAL_HEADER + b"%d\n" % generation)
        return generation

    def _rebuild(self, previous: int) -> int:
        ids = sorted({session_id.encode("utf-8") for session_id in self._scan()})
        return self._replace(ids, previous + 1)

    def _rewrite(self, generation: int) -> None:
        """The journal folded into a new index (removed ids leave no trace), the journal
        emptied."""
        current = _Snapshot.read(self.folder)
        assert current is not None  # under the lock, after _ready
        with current:
            ids = list(current.ids_after(b""))
        self._replace(ids, generation + 1)

    def _replace(self, ids: list[bytes], generation: int) -> int:
        body = b"".join(session_id + b"\n" for session_id in ids)
        self._write(INDEX, _INDEX_HEADER + b"%d\n" % generation + body)
        self._write(JOURNAL, _JOURNAL_HEADER + b"%d\n" % generation)
        return generation

    def _write(self, name: str, data: bytes) -> None:
        target = self.folder / name
        temp = self.folder / f"{name}.{secrets.token_hex(4)}.tmp"
        with open(temp, "wb") as file:
            file.write(data)
            if self._fsync:
                file.flush()
                os.fsync(file.fileno())
        os.replace(temp, target)
        if self._fsync:
            fd = os.open(self.folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    # -- readers -----------------------------------------------------------------------------

    def ids_after(self, after: str | None) -> Iterator[str]:
        """The indexed ids greater than ``after`` (all if None), in order."""
        start = b"" if after is None else after.encode("utf-8")
        for _ in range(3):
            snapshot = _Snapshot.read(self.folder)
            if snapshot is not None:
                break
        else:  # missing, or mid-rewrite three times over: settle it under the lock
            with FileLock(self.folder / LOCK, self._timeout):
                self._ready()
                snapshot = _Snapshot.read(self.folder)
            assert snapshot is not None
        with snapshot:
            for session_id in snapshot.ids_after(start, after is not None):
                yield session_id.decode("utf-8")

    def remove(self) -> None:
        """Delete the index (an erased user keeps none)."""
        with FileLock(self.folder / LOCK, self._timeout) as held:
            for name in (INDEX, JOURNAL):
                (self.folder / name).unlink(missing_ok=True)
            for temp in self.folder.glob(".sessions.*.tmp"):
                temp.unlink(missing_ok=True)
            held.remove()

    def compact(self) -> None:
        """Rewrite the index without the ids its journal removed (after an erasure)."""
        if not self.folder.is_dir():
            return
        with FileLock(self.folder / LOCK, self._timeout):
            self._rewrite(self._ready())


class _Snapshot:
    """An index and the journal of its generation, read without the lock."""

    def __init__(self, index: mmap.mmap | bytes, body: int, added: list[bytes], gone: set[bytes]):
        self._index = index
        self._body = body
        self._added = added  # sorted
        self._gone = gone

    @classmethod
    def read(cls, folder: Path) -> _Snapshot | None:
        """None if the index is missing or of another generation than the journal (read
        first: a rewrite replaces the index before the journal)."""
        try:
            journal = (folder / JOURNAL).read_bytes()
            file = open(folder / INDEX, "rb")  # noqa: SIM115 (closed below or by the snapshot)
        except FileNotFoundError:
            return None
        with file:
            size = os.fstat(file.fileno()).st_size
            index: mmap.mmap | bytes = (
                mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
            )
        header_end = index.find(b"\n") + 1
        journal_end = journal.find(b"\n") + 1
        if (
            not header_end
            or not journal_end
            or index[: len(_INDEX_HEADER)] != _INDEX_HEADER
            or journal[len(_JOURNAL_HEADER) : journal_end] != index[len(_INDEX_HEADER) : header_end]
            or journal[: len(_JOURNAL_HEADER)] != _JOURNAL_HEADER
        ):
            if isinstance(index, mmap.mmap):
                index.close()
            return None
        state: dict[bytes, bool] = {}
        complete = journal.rfind(b"\n") + 1  # a torn last line (a crash mid-append) is ignored
        for line in journal[journal_end:complete].split(b"\n")[:-1]:
            if line[:1] == b"+":
                state[line[1:]] = True
            elif line[:1] == b"-":
                state[line[1:]] = False
        added = sorted(session_id for session_id, present in state.items() if present)
        gone = {session_id for session_id, present in state.items() if not present}
        return cls(index, header_end, added, gone)

    def __enter__(self) -> _Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        if isinstance(self._index, mmap.mmap):
            with contextlib.suppress(BufferError):
                self._index.close()

    def ids_after(self, after: bytes, strictly: bool = True) -> Iterator[bytes]:
        """The ids > ``after`` (>= when not ``strictly``: b"" then means all), merged from the
        index and the journal, in order."""
        index = self._index
        position = self._first_after(after) if strictly else self._body
        added = self._added
        next_added = bisect.bisect_right(added, after) if strictly else 0
        end = len(index)
        while position < end or next_added < len(added):
            if position < end:
                line_end = index.find(b"\n", position)
                if line_end < 0:
                    line_end = end
                stored = index[position:line_end]
            else:
                stored = None
            if next_added < len(added) and (stored is None or added[next_added] <= stored):
                candidate = added[next_added]
                next_added += 1
                if candidate == stored:
                    position = line_end + 1
            else:
                assert stored is not None
                candidate = stored
                position = line_end + 1
            if candidate and candidate not in self._gone:
                yield candidate

    def _first_after(self, after: bytes) -> int:
        """The offset of the index's first line whose id is greater than ``after``."""
        index = self._index
        low, high = self._body, len(index)
        while low < high:
            middle = (low + high) // 2
            line_start = index.rfind(b"\n", low, middle) + 1 or low
            line_end = index.find(b"\n", line_start)
            if line_end < 0:
                line_end = len(index)
            if index[line_start:line_end] <= after:
                low = line_end + 1
            else:
                high = line_start
        return low


def _generation(path: Path, header: bytes) -> int | None:
    try:
        with open(path, "rb") as file:
            first = file.readline(128)
    except FileNotFoundError:
        return None
    if not first.startswith(header) or not first.endswith(b"\n"):
        return None
    try:
        return int(first[len(header) :])
    except ValueError:
        return None


def _byte_at(fd: int, offset: int) -> bytes:
    """One byte of a file (``os.pread`` is POSIX only; an O_APPEND write ignores the seek)."""
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, 1)


def _torn_from(path: Path) -> int:
    """Where a torn last line of the journal starts."""
    data = path.read_bytes()
    return data.rfind(b"\n") + 1
