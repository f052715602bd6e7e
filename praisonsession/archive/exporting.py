"""Writing an archive: a consistent copy of the session, read page by page into the file."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidValueError, SessionCorruptedError, SessionNotFoundError
from ..json_data import dumps
from ..stores.base import SessionBase
from ..stores.hierarchy import snapshot_key
from ..stores.record import Key, SessionInfo
from .layout import PAGE, ArchiveSummary, Progress, header_record
from .staging import STAGING_TTL, Staging

__all__ = ["export_session"]


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
    info = await store.read_record(key)  # what the archive says of the session: TTL, metadata, age
    if info is None:
        raise SessionNotFoundError(key.session_id, key.user_id)
    staging = Staging(store, key.user_id)
    copy = staging.new("export")
    await store.copy_record(key, copy, None, {}, False, STAGING_TTL)  # a consistent view to read
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
    staging: Staging,
) -> int:
    """One session's sections; ``session`` is its own metadata when ``where`` is a copy of it
    (else it is a snapshot, and goes under its own)."""
    contents = await store.read_record_contents(where)
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
        for start in range(0, count, PAGE):
            await staging.keep_alive()
            page = await store.read_log(where, path, start, min(start + PAGE, count))
            if len(page) != min(PAGE, count - start):  # never write a short archive
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
        try:
            with open(partial, "wb") as file:
                yield file
            os.replace(partial, path)  # only a complete archive gets the name asked for
        except BaseException:
            partial.unlink(missing_ok=True)  # a failed export leaves nothing behind
            raise
    elif hasattr(destination, "write"):
        yield destination
    else:
        raise InvalidValueError(
            f"export takes a path or a binary file, got {type(destination).__name__}."
        )
