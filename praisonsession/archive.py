"""Portable session archives: one versioned JSON Lines file, written and read as a stream.

An archive holds a session's metadata, state, module documents, message logs (in pages of
messages), its snapshots (each the same sections again) and the long-term memories it added,
one JSON object per line, and ends with a line that counts the lines before it and gives their
SHA-256. Writing streams page by page, so a 100,000-message session exports in bounded memory;
the export reads from an atomic copy of the session, so it is consistent while others write.

Reading checks the whole file first (every line, the count, the digest, the version) and only
then writes, into hidden staging sessions that atomic copies put in place, the session last: a
corrupt or truncated archive imports nothing, and neither does a crash halfway. Staging
sessions expire (:data:`STAGING_TTL`), so a process killed while exporting or importing leaves
nothing that ``purge_expired`` does not remove in time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, NamedTuple

from .clock import now
from .errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    SessionCorruptedError,
    SessionNotFoundError,
    UnsupportedFormatError,
)
from .identifiers import check_key
from .json_data import check_json_data, dumps
from .stores.base import LogWrite, SessionBase
from .stores.hierarchy import SNAPSHOT, snapshot_id_of, snapshot_key, staging_key
from .stores.record import Key, SessionInfo, copy_conflict

__all__ = ["ARCHIVE_VERSION", "STAGING_TTL", "ArchiveSummary", "export_session", "import_session"]

#: Bumped when the layout changes; an archive of a newer version is refused.
ARCHIVE_VERSION = 1
_MAGIC = "praisonsession-archive"
_PAGE = 500  # messages per line
#: Seconds a staging session (the copy an export reads, the sections an import writes) lives
#: once no export or import touches it: what a killed one leaves is gone after this, at the
#: latest by the next ``purge_expired``. A running one keeps its own alive, however long.
STAGING_TTL = 3600.0

Progress = Callable[[int], None]  # told how many more messages were written or read


class ArchiveSummary(NamedTuple):
    """What an export wrote or an import read."""

    session_id: str
    user_id: str
    messages: int
    snapshots: int
    memories: int
    lines: int


class _Staging:
    """The hidden sessions one export or import works in. Each expires STAGING_TTL after it
    was last touched, so what a killed process leaves goes; while the work goes on, all of
    them are touched every quarter of that (whatever the store's sliding setting, and also
    the ones written earlier and only read at the end)."""

    def __init__(self, store: SessionBase, user_id: str) -> None:
        self.store = store
        self.user_id = user_id  # whose data they hold: erase_user removes them too
        self.keys: list[Key] = []
        self._touched = now()

    def new(self, kind: str) -> Key:
        key = staging_key(kind, self.user_id)
        self.keys.append(key)
        return key

    async def keep_alive(self) -> None:
        if now() - self._touched < STAGING_TTL / 4:
            return
        for key in self.keys:
            if await self.store._touch(key, STAGING_TTL) is None:
                raise SessionCorruptedError(
                    f"the staging session {key.session_id!r}", "it was deleted while in use"
                )
        self._touched = now()

    async def remove(self) -> None:
        for key in self.keys:
            await self.store._delete(key)
        self.keys.clear()


# -- writing ---------------------------------------------------------------------------------


class _Writer:
    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.digest = hashlib.sha256()
        self.lines = 0

    def write(self, record: dict[str, Any]) -> None:
        line = dumps(record).encode("utf-8") + b"\n"
        self.digest.update(line)
        self.file.write(line)
        self.lines += 1

    def close(self) -> None:
        self.file.write(
            dumps({"end": {"lines": self.lines, "sha256": self.digest.hexdigest()}}).encode()
            + b"\n"
        )


async def export_session(
    store: SessionBase,
    key: Key,
    destination: str | os.PathLike[str] | IO[bytes],
    memories: list[dict[str, Any]],
    progress: Progress | None = None,
) -> ArchiveSummary:
    """Write the session ``key`` of ``store`` to ``destination`` (a path, or a binary file)."""
    info = await store._info(key)  # what the archive says of the session: TTL, metadata, age
    if info is None:
        raise SessionNotFoundError(key.session_id, key.user_id)
    staging = _Staging(store, key.user_id)
    copy = staging.new("export")
    await store._copy(key, copy, None, {}, False, STAGING_TTL)  # a consistent view to read
    try:
        with _opened(destination) as file:
            writer = _Writer(file)
            writer.write(header_record())
            messages = await _write_session(store, copy, writer, info, progress, staging)
            await staging.remove()  # written: the snapshots are read where they are
            snapshots = await store.list_snapshots(key.session_id, key.user_id)
            for snapshot in snapshots:
                where = snapshot_key(key, snapshot.snapshot_id)
                writer.write({"snapshot": snapshot._asdict()})
                await _write_session(store, where, writer, None, progress, staging)
                writer.write({"snapshot_end": snapshot.snapshot_id})
            for memory in memories:
                writer.write({"memory": memory})
            writer.close()
    finally:
        await staging.remove()
    return ArchiveSummary(
        key.session_id, key.user_id, messages, len(snapshots), len(memories), writer.lines + 1
    )


async def _write_session(
    store: SessionBase,
    where: Key,
    writer: _Writer,
    session: SessionInfo | None,
    progress: Any,
    staging: _Staging,
) -> int:
    """One session's sections; ``session`` is its own metadata when ``where`` is a copy of it
    (else it is a snapshot, and goes under its own)."""
    contents = await store._contents(where)
    if contents is None:
        raise SessionCorruptedError(f"session copy {where.session_id!r}", "it vanished")
    if session is not None:
        writer.write({"session": session.to_json()})
    else:
        writer.write({"contents": contents.info.to_json()})
    writer.write({"state": contents.state})
    writer.write({"modules": contents.modules})
    total = 0
    for path, count in sorted(contents.logs.items()):
        writer.write({"log": path, "count": count})
        for start in range(0, count, _PAGE):
            await staging.keep_alive()
            page = await store._read_log(where, path, start, min(start + _PAGE, count))
            if len(page) != min(_PAGE, count - start):  # never write a short archive
                raise SessionCorruptedError(f"log {path!r} of the session", "it changed as read")
            writer.write({"messages": page})
            total += len(page)
            if progress is not None:
                progress(len(page))
    return total


@contextmanager
def _opened(destination: Any) -> Iterator[IO[bytes]]:
    if isinstance(destination, (str, os.PathLike)):
        path = Path(destination)
        partial = path.with_name(f".{path.name}.partial")
        with open(partial, "wb") as file:
            yield file
        os.replace(partial, path)  # a failed export leaves no file that looks complete
    elif hasattr(destination, "write"):
        yield destination
    else:
        raise InvalidValueError(
            f"export takes a path or a binary file, got {type(destination).__name__}."
        )


# -- reading ---------------------------------------------------------------------------------


def _lines(source: Any) -> Iterator[bytes]:
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as file:
                yield from file
        except FileNotFoundError:
            raise InvalidValueError(f"There is no archive {source}.") from None
    elif hasattr(source, "read"):
        source.seek(0)
        yield from source
    else:
        raise InvalidValueError(
            f"import_archive takes a path or a binary file, got {type(source).__name__}."
        )


def _named(source: Any) -> str:
    return f"the archive {source}" if isinstance(source, (str, os.PathLike)) else "the archive"


def verify(source: Any) -> int:
    """Check a whole archive before anything is written: its first line says it is one of
    ours and of a version this library reads, every line is JSON, and the last line's count
    and digest match. Returns the number of records."""
    what = _named(source)
    digest = hashlib.sha256()
    count = 0
    end: Any = None
    for number, line in enumerate(_lines(source)):
        if end is not None:
            raise SessionCorruptedError(what, f"there is data after its end (line {number + 1})")
        try:
            record = json.loads(line)
        except ValueError:
            raise SessionCorruptedError(what, f"line {number + 1} is not JSON") from None
        if number == 0:
            _check_header(record, what)
        if isinstance(record, dict) and "end" in record:
            end = record["end"]
            continue
        digest.update(line)
        count += 1
    if end is None:
        raise SessionCorruptedError(what, "it is cut short (no end line)")
    if not isinstance(end, dict) or end.get("lines") != count:
        raise SessionCorruptedError(what, "its line count does not match")
    if end.get("sha256") != digest.hexdigest():
        raise SessionCorruptedError(what, "its checksum does not match: it was altered")
    return count


def _check_header(record: Any, what: str) -> None:
    header = record.get("archive") if isinstance(record, dict) else None
    if not isinstance(header, dict) or header.get("format") != _MAGIC:
        raise SessionCorruptedError(what, "it is not a praisonsession archive")
    version = header.get("version")
    if not isinstance(version, int):
        raise SessionCorruptedError(what, "its version is missing")
    if version > ARCHIVE_VERSION:
        raise UnsupportedFormatError(what, version, ARCHIVE_VERSION)


class _Records:
    """The records of a verified archive, in order. The checksum only says the file is as it
    was written, not that an export wrote it (a hand-made file can be sealed too), so every
    record is checked to be what an export puts there: anything else is corruption."""

    def __init__(self, source: Any) -> None:
        self.what = _named(source)
        self._lines = _lines(source)
        self._ahead: Any = None
        self._peeked = False

    def corrupt(self, detail: str) -> SessionCorruptedError:
        return SessionCorruptedError(self.what, detail)

    def peek(self) -> dict[str, Any] | None:
        """The next record, left in place; None at the end."""
        if not self._peeked:
            line = next(self._lines, None)
            record = None if line is None else json.loads(line)
            if record is not None and not isinstance(record, dict):
                raise self.corrupt(f"a record is {type(record).__name__}, not an object")
            self._ahead = None if record is None or "end" in record else record
            self._peeked = True
        return self._ahead

    def next(self) -> dict[str, Any] | None:
        record = self.peek()
        self._peeked = False
        return record

    def take(self, name: str, kind: type | tuple[type, ...]) -> Any:
        """The next record, which must be ``{name: <kind>, ...}``; its value."""
        record = self.next()
        if record is None:
            raise self.corrupt(f"it ends where a {name!r} record belongs")
        return self.field(record, name, kind)

    def field(self, record: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
        value = record.get(name)
        if name not in record or not isinstance(value, kind) or isinstance(value, bool):
            found = f"a record with {sorted(record)[:3]}" if name not in record else repr(value)
            raise self.corrupt(f"a {name!r} record was expected, found {found:.80}")
        return value

    def check_data(self, value: Any, what: str) -> None:
        """Archived values are JSON, but JSON admits what a store does not (NaN, huge ints)."""
        try:
            check_json_data(value, what)
        except InvalidValueError as exc:
            raise self.corrupt(str(exc)) from None

    def check_name(self, name: str, what: str) -> None:
        try:
            check_key(name, what)
        except InvalidIdError as exc:
            raise self.corrupt(str(exc)) from None


async def import_session(
    store: SessionBase,
    source: Any,
    session_id: str | None,
    user_id: str | None,
    progress: Progress | None = None,
) -> tuple[SessionInfo, list[dict[str, Any]], ArchiveSummary]:
    """Read an archive into ``store`` (as ``session_id`` of ``user_id``, or as archived);
    returns the imported session, the memories to add, and a summary.

    The whole file is checked, then every section is written into hidden staging sessions,
    and only then copied into place: the snapshots first, the session last (that copy is what
    makes the import visible; should it fail, the snapshots placed for it go again). A
    conflict, a corrupt record or a crash halfway leaves no trace but staging sessions, which
    are deleted, or expire (:data:`STAGING_TTL`) if the process was killed.
    """
    verify(source)
    records = _Records(source)
    records.take("archive", dict)
    archived = SessionInfo.from_json(records.take("session", dict), f"{records.what}'s session")
    records.check_data(dict(archived.metadata), "the session's metadata")
    try:
        store._key(archived.session_id, archived.user_id)
    except InvalidIdError as exc:
        raise records.corrupt(str(exc)) from None
    target = store._key(
        archived.session_id if session_id is None else session_id,
        archived.user_id if user_id is None else user_id,
    )
    if await store._info(target) is not None:
        raise ConflictError(copy_conflict(target))
    staging = _Staging(store, target.user_id)
    snapshots: list[tuple[Key, dict[str, Any]]] = []
    memories: list[dict[str, Any]] = []
    try:
        session, messages = await _stage(store, records, staging, progress)
        record = records.next()
        while record is not None:
            if "memory" in record:
                memories.append(_memory(records, record))
            elif "snapshot" in record:
                snapshot = await _stage_snapshot(store, records, record, target, staging, progress)
                snapshots.append(snapshot)
            else:
                raise records.corrupt(f"it holds an unexpected record {sorted(record)[:3]}")
            record = records.next()
        info = await _place(store, session, target, archived, snapshots)
    finally:
        await staging.remove()
    summary = ArchiveSummary(
        target.session_id, target.user_id, messages, len(snapshots), len(memories), 0
    )
    return info, memories, summary


async def _stage(
    store: SessionBase, records: _Records, staging: _Staging, progress: Any
) -> tuple[Key, int]:
    """Write one session's sections (state, modules, logs) into a new staging session."""
    key = staging.new("import")
    await store._create(key, STAGING_TTL, {})
    state = records.take("state", dict)
    modules = records.take("modules", dict)
    records.check_data(state, "state")
    records.check_data(modules, "modules")
    for name, document in modules.items():
        records.check_name(name, "module name")
        if not isinstance(document, dict):
            raise records.corrupt(f"module {name!r} is not an object")
    await store._patch(key, state, [], True, None, False)
    await store._save_modules(key, modules, [])
    total = 0
    while (records.peek() or {}).get("log") is not None:
        record = records.next() or {}
        path = records.field(record, "log", str)
        records.check_name(path, "log name")
        left = records.field(record, "count", int)
        while left > 0:
            page = records.take("messages", list)
            if not page or len(page) > left:
                raise records.corrupt(f"the pages of log {path!r} do not add up to its count")
            records.check_data(page, f"messages of log {path!r}")
            if not all(isinstance(message, dict) for message in page):
                raise records.corrupt(f"a message of log {path!r} is not an object")
            await staging.keep_alive()
            await store._append(key, LogWrite(path, page, -1))
            left -= len(page)
            total += len(page)
            if progress is not None:
                progress(len(page))
    return key, total


async def _stage_snapshot(
    store: SessionBase,
    records: _Records,
    record: dict[str, Any],
    target: Key,
    staging: _Staging,
    progress: Any,
) -> tuple[Key, dict[str, Any]]:
    """Stage one snapshot; its staging key and the metadata it gets under the target."""
    about = records.field(record, "snapshot", dict)
    try:
        snapshot_id = snapshot_id_of(about.get("snapshot_id"))
    except InvalidIdError as exc:
        raise records.corrupt(str(exc)) from None
    label = about.get("label")
    created_at = about.get("created_at")
    if label is not None and not isinstance(label, str):
        raise records.corrupt(f"snapshot {snapshot_id!r} has a label that is not text")
    if not isinstance(created_at, (int, float)) or isinstance(created_at, bool):
        raise records.corrupt(f"snapshot {snapshot_id!r} has no time it was taken")
    counts = [about.get("version", 0), about.get("messages", 0)]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in counts):
        raise records.corrupt(f"snapshot {snapshot_id!r} has a count that is not a number")
    contents = records.take("contents", dict)
    metadata = contents.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise records.corrupt(f"snapshot {snapshot_id!r} has metadata that is not an object")
    records.check_data(metadata, "a snapshot's metadata")
    holding, _ = await _stage(store, records, staging, progress)
    if records.take("snapshot_end", str) != snapshot_id:
        raise records.corrupt(f"snapshot {snapshot_id!r} is not closed where it ends")
    moved = {
        "snapshot_id": snapshot_id,
        "session_id": target.session_id,
        "user_id": target.user_id,
        "label": label,
        "version": counts[0],
        "messages": counts[1],
        "created_at": created_at,  # when it was taken, not when it was imported
    }
    return holding, {**metadata, SNAPSHOT: moved}


def _memory(records: _Records, record: dict[str, Any]) -> dict[str, Any]:
    memory = records.field(record, "memory", dict)
    text, metadata, created = memory.get("text"), memory.get("metadata"), memory.get("created_at")
    if not isinstance(text, str) or not isinstance(metadata, (dict, type(None))):
        raise records.corrupt("a memory has no text, or metadata that is not an object")
    if created is not None and (not isinstance(created, (int, float)) or isinstance(created, bool)):
        raise records.corrupt("a memory's time is not a number")
    records.check_data(memory, "a memory")
    return memory


async def _place(
    store: SessionBase,
    staged: Key,
    target: Key,
    archived: SessionInfo,
    snapshots: list[tuple[Key, dict[str, Any]]],
) -> SessionInfo:
    """Copy the staged snapshots into place, then the session; if its copy fails (another
    process created the session meanwhile), the snapshots placed for it are deleted again."""
    placed: list[Key] = []
    try:
        for holding, metadata in snapshots:
            where = snapshot_key(target, metadata[SNAPSHOT]["snapshot_id"])
            if await store._info(where) is None:  # else: left by an earlier import of it
                placed.append(where)
            await store._copy(holding, where, None, metadata, True, None)
        return await store._copy(staged, target, None, dict(archived.metadata), False, archived.ttl)
    except BaseException:
        for where in placed:
            await store._delete(where)
        raise


def header_record() -> dict[str, Any]:
    return {"archive": {"format": _MAGIC, "version": ARCHIVE_VERSION}}
