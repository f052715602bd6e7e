"""Writing an archive: a consistent copy of the session, read page by page into the file."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .._internal.json_data import dumps
from ..errors import InvalidValueError, SessionCorruptedError, SessionNotFoundError
from ..stores.backend import StoreBackend
from ..stores.branches import Branches
from ..stores.guard import guard
from ..stores.record import Key, SessionInfo
from ..stores.reserved import snapshot_key
from .layout import MAX_LINE, PAGE, ArchiveSummary, Progress, header_record
from .staging import STAGING_TTL, Staging

__all__ = ["export_session"]


class _Writer:
    def __init__(self, file: IO[bytes], sealer: Any = None) -> None:
        self.file = file
        self.digest = hashlib.sha256()
        self.lines = 0
        self.sealer = sealer  # a TextSealer: every record after the header goes sealed

    def _line(self, record: dict[str, Any]) -> bytes:
        text = dumps(record)
        if self.sealer is not None and self.lines > 0:  # bound to its line: none can move
            text = dumps({"sealed": self.sealer.seal("archive", str(self.lines), text)})
        return text.encode("utf-8") + b"\n"

    def write(self, record: dict[str, Any]) -> None:
        line = self._line(record)
        if len(line) > MAX_LINE and "messages" in record and len(record["messages"]) > 1:
            half = len(record["messages"]) // 2  # pages only need to add up to the log's count
            self.write({"messages": record["messages"][:half]})
            self.write({"messages": record["messages"][half:]})
            return
        if len(line) > MAX_LINE:
            raise InvalidValueError(
                f"The session holds a record of {len(line):,} bytes; an archive line is at most "
                f"{MAX_LINE:,} bytes, so that an import never needs much memory. Shorten it "
                "before exporting."
            )
        self.digest.update(line)
        self.file.write(line)
        self.lines += 1

    def close(self) -> None:
        self.file.write(
            dumps({"end": {"lines": self.lines, "sha256": self.digest.hexdigest()}}).encode()
            + b"\n"
        )


async def export_session(
    backend: StoreBackend,
    key: Key,
    destination: str | os.PathLike[str] | IO[bytes],
    memories: list[dict[str, Any]],
    progress: Progress | None = None,
) -> ArchiveSummary:
    """Write the session ``key`` of ``backend`` to ``destination`` (a path, or a binary file)."""
    backend = guard(backend)  # without a key, an encrypted session is refused, not copied
    info = await backend.read_record(
        key
    )  # what the archive says of the session: TTL, metadata, age
    if info is None:
        raise SessionNotFoundError(key.session_id, key.user_id)
    staging = Staging(backend, key.user_id)
    copy = staging.new("export")
    await backend.copy_record(
        key, copy, cut=None, metadata={}, replace=False, ttl=STAGING_TTL
    )  # a consistent view to read
    try:
        with _opened(destination) as file:
            sealer = getattr(backend, "archive_sealer", lambda: None)()
            writer = _Writer(file, sealer)
            fingerprint = None if sealer is None else sealer.fingerprint
            writer.write(header_record(sealed=sealer is not None, key=fingerprint))
            messages = await _write_session(backend, copy, writer, info, progress, staging)
            await staging.remove()  # written: the snapshots are read where they are
            snapshots = await Branches(backend).snapshots(key.session_id, key.user_id)
            for snapshot in snapshots:
                where = snapshot_key(key, snapshot.snapshot_id)
                writer.write({"snapshot": snapshot._asdict()})
                await _write_session(backend, where, writer, None, progress, staging)
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
    backend: StoreBackend,
    where: Key,
    writer: _Writer,
    session: SessionInfo | None,
    progress: Any,
    staging: Staging,
) -> int:
    """One session's sections; ``session`` is its own metadata when ``where`` is a copy of it
    (else it is a snapshot, and goes under its own)."""
    contents = await backend.read_record_contents(where)
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
            page = await backend.read_log(
                where, path=path, start=start, stop=min(start + PAGE, count)
            )
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
        _check_destination(path)
        with _unnamed_file(path) as file:
            yield file
    elif hasattr(destination, "write"):
        yield destination
    else:
        raise InvalidValueError(
            f"export takes a path or a binary file, got {type(destination).__name__}."
        )


def _check_destination(path: Path) -> None:
    """An export replaces a regular file or creates one; it never replaces a directory, a
    FIFO or a device (as root, ``/dev/full`` would have become a regular file)."""
    try:
        found = path.stat()
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise InvalidValueError(
                f"Cannot export to {path}: the directory {path.parent} does not exist. "
                "Create it first, or export somewhere else."
            ) from None
        return
    if not stat.S_ISREG(found.st_mode):
        kind = "a directory" if stat.S_ISDIR(found.st_mode) else "not a regular file"
        raise InvalidValueError(
            f"Cannot export to {path}: it is {kind}, which an export never replaces. "
            "Name a file (it may exist; it is then replaced), or pass an open binary file."
        )


@contextmanager
def _unnamed_file(path: Path) -> Iterator[IO[bytes]]:
    """A file that gets ``path`` only once it is complete, readable by its owner alone.

    On Linux it has no name at all until then (``O_TMPFILE``): a killed export leaves nothing
    behind, not even a hidden partial copy of the session. Elsewhere a hidden partial file is
    used, removed when the export fails.
    """
    flags = getattr(os, "O_TMPFILE", 0)
    fd = -1
    if flags:
        try:
            fd = os.open(path.parent, flags | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError:  # a file system without O_TMPFILE
            fd = -1
    if fd < 0:
        partial = path.with_name(f".{path.name}.partial")
        try:
            with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
                yield file
            os.replace(partial, path)  # only a complete archive gets the name asked for
        except BaseException:
            partial.unlink(missing_ok=True)  # a failed export leaves nothing behind
            raise
        return
    with open(fd, "wb") as file:
        yield file
        file.flush()
        os.fsync(file.fileno())
        _give_name(file.fileno(), path)


def _give_name(fd: int, path: Path) -> None:
    """Link the unnamed file at ``fd`` to ``path``, replacing a regular file there."""
    source = f"/proc/self/fd/{fd}"
    _remove_dead_spares(path)
    spare = path.with_name(f".{path.name}.{os.getpid()}.complete")
    spare.unlink(missing_ok=True)
    try:
        os.link(source, spare, follow_symlinks=True)
    except OSError:  # no /proc to link through (a sandbox): copy the complete file instead
        _copy_out(fd, spare)
    os.replace(spare, path)  # a kill between the two leaves a complete archive, never a part


def _remove_dead_spares(path: Path) -> None:
    """Remove the hidden complete copies (``.NAME.PID.complete``) that exports to ``path``
    killed between linking and renaming left: each is a whole copy of a session that nobody
    asked for. A spare of a process still running is its export in progress, and is kept."""
    prefix, suffix = f".{path.name}.", ".complete"
    try:
        names = [entry.name for entry in os.scandir(path.parent)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix) : -len(suffix)]
        ours = name.startswith(prefix) and name.endswith(suffix)
        if ours and pid.isascii() and pid.isdigit() and not _running(int(pid)):
            path.with_name(name).unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid < 2**31  # another user's process (alive), or no pid at all
    return True


def _copy_out(fd: int, spare: Path) -> None:
    out = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        offset, size = 0, os.fstat(fd).st_size
        while offset < size:
            offset += os.copy_file_range(fd, out, size - offset, offset, None)
        os.fsync(out)
    except BaseException:
        os.close(out)
        spare.unlink(missing_ok=True)
        raise
    os.close(out)
