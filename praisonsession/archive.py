"""Portable session archives: one versioned JSON Lines file, written and read as a stream.

An archive holds a session's metadata, state, module documents, message logs (in pages of
messages), its snapshots (each the same sections again) and the long-term memories it added,
one JSON object per line, and ends with a line that counts the lines before it and gives their
SHA-256. Writing streams page by page, so a 100,000-message session exports in bounded memory;
the export reads from an atomic copy of the session, so it is consistent while others write.

Reading checks the whole file first (every line, the count, the digest, the version) and only
then writes, into a hidden session that one atomic copy turns into the imported one: a corrupt
or truncated archive imports nothing, and neither does a crash halfway.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, NamedTuple

from .errors import InvalidValueError, SessionCorruptedError, UnsupportedFormatError
from .json_data import check_json_data, dumps
from .stores.base import LogWrite, SessionBase
from .stores.hierarchy import SNAPSHOT, SNAPSHOT_OWNER, snapshot_key
from .stores.record import Key, SessionInfo

__all__ = ["ARCHIVE_VERSION", "ArchiveSummary", "export_session", "import_session"]

#: Bumped when the layout changes; an archive of a newer version is refused.
ARCHIVE_VERSION = 1
_MAGIC = "praisonsession-archive"
_PAGE = 500  # messages per line
_SEPARATOR = "\x1e"

Progress = Callable[[int], None]  # told how many more messages were written or read


class ArchiveSummary(NamedTuple):
    """What an export wrote or an import read."""

    session_id: str
    user_id: str
    messages: int
    snapshots: int
    memories: int
    lines: int


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
    copy = Key(SNAPSHOT_OWNER, f"export{_SEPARATOR}{secrets.token_hex(8)}")
    await store._copy(key, copy, None, {}, False, None)  # a consistent view to read from
    try:
        with _opened(destination) as file:
            writer = _Writer(file)
            writer.write(header_record())
            messages = await _write_session(store, copy, writer, key, progress)
            snapshots = await store.list_snapshots(key.session_id, key.user_id)
            for snapshot in snapshots:
                where = snapshot_key(key, snapshot.snapshot_id)
                writer.write({"snapshot": snapshot._asdict()})
                await _write_session(store, where, writer, None, progress)
                writer.write({"snapshot_end": snapshot.snapshot_id})
            for memory in memories:
                writer.write({"memory": memory})
            writer.close()
    finally:
        await store._delete(copy)
    return ArchiveSummary(
        key.session_id, key.user_id, messages, len(snapshots), len(memories), writer.lines + 1
    )


async def _write_session(
    store: SessionBase, where: Key, writer: _Writer, identity: Key | None, progress: Any
) -> int:
    contents = await store._contents(where)
    if contents is None:
        raise SessionCorruptedError(f"session copy {where.session_id!r}", "it vanished")
    info = contents.info.to_json()
    if identity is not None:  # the copy's metadata, under the session's own identity
        info.update(session_id=identity.session_id, user_id=identity.user_id)
    writer.write({"session": info} if identity is not None else {"contents": info})
    writer.write({"state": contents.state})
    writer.write({"modules": contents.modules})
    total = 0
    for path, count in sorted(contents.logs.items()):
        writer.write({"log": path, "count": count})
        for start in range(0, count, _PAGE):
            page = await store._read_log(where, path, start, min(start + _PAGE, count))
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


def verify(source: Any) -> int:
    """Check a whole archive before anything is written: its first line says it is one of
    ours and of a version this library reads, every line is JSON, and the last line's count
    and digest match. Returns the number of records."""
    what = f"the archive {source}" if isinstance(source, (str, os.PathLike)) else "the archive"
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


def _records(source: Any) -> Iterator[dict[str, Any]]:
    for line in _lines(source):
        record = json.loads(line)
        if "end" not in record:
            yield record


async def import_session(
    store: SessionBase,
    source: Any,
    session_id: str | None,
    user_id: str | None,
    progress: Progress | None = None,
) -> tuple[SessionInfo, list[dict[str, Any]], ArchiveSummary]:
    """Read an archive into ``store`` (as ``session_id`` of ``user_id``, or as archived);
    returns the imported session, the memories to add, and a summary."""
    verify(source)
    records = _records(source)
    next(records)  # the header
    first = next(records)
    archived = SessionInfo.from_json(first.get("session"), "the archive's session record")
    target = store._key(
        archived.session_id if session_id is None else session_id,
        archived.user_id if user_id is None else user_id,
    )
    staging = Key(SNAPSHOT_OWNER, f"import{_SEPARATOR}{secrets.token_hex(8)}")
    staged = [staging]
    memories: list[dict[str, Any]] = []
    snapshots = 0
    try:
        messages, pending = await _read_session(store, records, staging, progress)
        info = await store._copy(
            staging, target, None, dict(archived.metadata), False, archived.ttl
        )
        while pending is not None:
            if "memory" in pending:
                memories.append(pending["memory"])
                pending = next(records, None)
                continue
            about = pending.get("snapshot")
            if not isinstance(about, dict):
                raise SessionCorruptedError("the archive", f"unexpected record {list(pending)}")
            holding = Key(SNAPSHOT_OWNER, f"import{_SEPARATOR}{secrets.token_hex(8)}")
            staged.append(holding)
            next(records)  # its contents record
            _, pending = await _read_session(store, records, holding, progress, nested=True)
            snapshot_id = str(about.get("snapshot_id"))
            moved = {**about, "session_id": target.session_id, "user_id": target.user_id}
            await store._copy(
                holding, snapshot_key(target, snapshot_id), None, {SNAPSHOT: moved}, False, None
            )
            snapshots += 1
            pending = next(records, None)
    finally:
        for key in staged:
            await store._delete(key)
    summary = ArchiveSummary(
        target.session_id, target.user_id, messages, snapshots, len(memories), 0
    )
    return info, memories, summary


async def _read_session(
    store: SessionBase,
    records: Iterator[dict[str, Any]],
    key: Key,
    progress: Any,
    nested: bool = False,
) -> tuple[int, dict[str, Any] | None]:
    """Write one session's sections into ``key``; returns its messages and the next record."""
    await store._create(key, None, {})
    state = next(records).get("state")
    modules = next(records).get("modules")
    if not isinstance(state, dict) or not isinstance(modules, dict):
        raise SessionCorruptedError("the archive", "a session's state or modules are missing")
    _check_data(state, "state")
    _check_data(modules, "modules")
    await store._patch(key, state, [], True, None, False)
    await store._save_modules(key, modules, [])
    total = 0
    record = next(records, None)
    while record is not None and "log" in record:
        path, left = record["log"], record["count"]
        while left > 0:
            page = next(records).get("messages") or []
            _check_data(page, f"messages of log {path!r}")
            await store._append(key, LogWrite(path, page, -1))
            left -= len(page)
            total += len(page)
            if progress is not None:
                progress(len(page))
        record = next(records, None)
    if nested:
        if record is None or "snapshot_end" not in record:
            raise SessionCorruptedError("the archive", "a snapshot is not closed")
        return total, None
    return total, record


def _check_data(value: Any, what: str) -> None:
    """Archived values are JSON, but JSON admits what a store does not (NaN, huge ints)."""
    try:
        check_json_data(value, what)
    except InvalidValueError as exc:
        raise SessionCorruptedError("the archive", str(exc)) from None


def header_record() -> dict[str, Any]:
    return {"archive": {"format": _MAGIC, "version": ARCHIVE_VERSION}}
