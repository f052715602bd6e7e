"""The archive file itself: its header and version, its records, and the check of a whole
file (line count and SHA-256 in the end line) that comes before anything is imported."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypeVar

from .._internal.identifiers import check_key
from .._internal.json_data import check_json_data, decode
from ..errors import (
    DamagedArchiveError,
    DecryptionError,
    InvalidIdError,
    InvalidValueError,
    SessionCorruptedError,
    UnsupportedFormatError,
)

#: Bumped when the layout changes; an archive of a newer version is refused.
ARCHIVE_VERSION = 1
MAGIC = "praisonsession-archive"
PAGE = 500  # messages per line
#: The longest line an archive may hold: an import reads one line at a time, and decoding one
#: takes several times its size in memory. An export splits a page of large messages to fit.
MAX_LINE = 16 * 1024 * 1024

Progress = Callable[[int], None]  # told how many more messages were written or read
T = TypeVar("T")


class ArchiveSummary(NamedTuple):
    """What an export wrote or an import read."""

    session_id: str
    user_id: str
    messages: int
    snapshots: int
    memories: int
    lines: int


def header_record(sealed: bool = False, key: str | None = None) -> dict[str, Any]:
    """The first line; ``sealed``: every other record is encrypted (``{"sealed": ...}``),
    under the key whose fingerprint is ``key`` (an import with another key is told so)."""
    header: dict[str, Any] = {"format": MAGIC, "version": ARCHIVE_VERSION}
    if sealed:
        header["sealed"] = True
        if key is not None:
            header["key"] = key
    return {"archive": header}


def lines_of(source: Any) -> Iterator[bytes]:
    """The archive's lines, none longer than :data:`MAX_LINE` (a longer one is corruption,
    found before it is read whole)."""
    if isinstance(source, (str, os.PathLike)):
        try:  # O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused
            fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            raise InvalidValueError(f"There is no archive {source}.") from None
        except IsADirectoryError:
            raise InvalidValueError(f"{source} is a directory, not an archive.") from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise InvalidValueError(
                f"{source} is {kind}; an import reads a regular file (twice: to check it, "
                "then to place it). Save the archive to a file first."
            )
        os.set_blocking(fd, True)
        with open(fd, "rb") as file:
            yield from _bounded_lines(file, source)
    elif hasattr(source, "read"):
        source.seek(0)
        for line in source:  # a file given open: as it iterates (a pipe's reader, a test's)
            if len(line) > MAX_LINE:
                raise _too_long(source)
            yield line
    else:
        raise InvalidValueError(
            f"import_archive takes a path or a binary file, got {type(source).__name__}."
        )


def _bounded_lines(file: Any, source: Any) -> Iterator[bytes]:
    while True:
        line = file.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE:
            raise _too_long(source)
        yield line


def _too_long(source: Any) -> SessionCorruptedError:
    return DamagedArchiveError(
        named(source), f"a line is longer than {MAX_LINE:,} bytes, which no export writes"
    )


def named(source: Any) -> str:
    return f"the archive {source}" if isinstance(source, (str, os.PathLike)) else "the archive"


def verify(source: Any) -> int:
    """Check a whole archive before anything is written: its first line says it is one of
    ours and of a version this library reads, every line is JSON, and the last line's count
    and digest match. Returns the number of records."""
    what = named(source)
    digest = hashlib.sha256()
    count = 0
    end: Any = None
    for number, line in enumerate(lines_of(source)):
        if end is not None:
            raise DamagedArchiveError(what, f"there is data after its end (line {number + 1})")
        try:
            record = decode(line)
        except ValueError:
            raise DamagedArchiveError(what, f"line {number + 1} is not JSON") from None
        if number == 0:
            _check_header(record, what)
        if isinstance(record, dict) and "end" in record:
            end = record["end"]
            continue
        digest.update(line)
        count += 1
    if end is None:
        raise DamagedArchiveError(what, "it is cut short (no end line)")
    if not isinstance(end, dict) or end.get("lines") != count:
        raise DamagedArchiveError(what, "its line count does not match")
    if end.get("sha256") != digest.hexdigest():
        raise DamagedArchiveError(what, "its checksum does not match: it was altered")
    return count


def _check_header(record: Any, what: str) -> None:
    header = record.get("archive") if isinstance(record, dict) else None
    if not isinstance(header, dict) or header.get("format") != MAGIC:
        raise DamagedArchiveError(what, "it is not a praisonsession archive")
    version = header.get("version")
    if version is None:
        raise DamagedArchiveError(what, "its version is missing")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise DamagedArchiveError(what, f"its version {version!r:.20} is not a version")
    if version > ARCHIVE_VERSION:
        raise UnsupportedFormatError(what, version, ARCHIVE_VERSION)


class Records:
    """The records of a verified archive, in order. The checksum only says the file is as it
    was written, not that an export wrote it (a hand-made file can be sealed too), so every
    record is checked to be what an export puts there: anything else is corruption."""

    def __init__(self, source: Any, sealer: Any = None) -> None:
        """``sealer`` (a ``TextSealer``) opens the records of an archive exported sealed."""
        self.what = named(source)
        self._lines = lines_of(source)
        self._ahead: dict[str, Any] | None = None
        self._peeked = False
        self._sealer = sealer
        self._sealed = False
        self._key: Any = None
        self._number = -1

    def corrupt(self, detail: str) -> SessionCorruptedError:
        return DamagedArchiveError(self.what, detail)

    def peek(self) -> dict[str, Any] | None:
        """The next record, left in place; None at the end."""
        if not self._peeked:
            line = next(self._lines, None)
            self._number += 1
            record = None if line is None else decode(line)
            if record is not None and not isinstance(record, dict):
                raise self.corrupt(f"a record is {type(record).__name__}, not an object")
            if self._number == 0 and record is not None:
                self._sealed = (record.get("archive") or {}).get("sealed") is True
                if self._sealed and self._sealer is None:
                    raise InvalidValueError(
                        f"{self.what} is encrypted: import it into a store opened with the "
                        "encryption_key it was exported with."
                    )
                self._key = (record.get("archive") or {}).get("key")
                if self._sealed and self._key not in (None, self._sealer.fingerprint):
                    raise self._another_key()
            elif self._sealed and record is not None and "end" not in record:
                record = self._open(record)
            self._ahead = None if record is None or "end" in record else record
            self._peeked = True
        return self._ahead

    def _open(self, record: dict[str, Any]) -> dict[str, Any]:
        sealed = record.get("sealed")
        if set(record) != {"sealed"} or not isinstance(sealed, str):
            raise self.corrupt(f"line {self._number + 1} is not encrypted like the rest")
        try:
            opened = decode(self._sealer.open("archive", str(self._number), sealed))
        except DecryptionError:
            if self._number == 1 and self._key is None:  # an archive without a fingerprint:
                raise self._another_key() from None  # its first record tells the key apart
            raise

        if not isinstance(opened, dict):
            raise self.corrupt(f"a record is {type(opened).__name__}, not an object")
        return opened

    def _another_key(self) -> InvalidValueError:
        made = f"with the key {self._key}" if isinstance(self._key, str) else "with another key"
        return InvalidValueError(
            f"{self.what} was exported {made}, and this store's encryption_key is "
            f"{self._sealer.fingerprint}: import it into a store opened with the key it was "
            "exported with (or export it again from there without a key)."
        )

    def next(self) -> dict[str, Any] | None:
        record = self.peek()
        self._peeked = False
        return record

    def take(self, name: str, kind: type[T]) -> T:
        """The next record, which must be ``{name: <kind>, ...}``; its value."""
        record = self.next()
        if record is None:
            raise self.corrupt(f"it ends where a {name!r} record belongs")
        return self.field(record, name, kind)

    def field(self, record: dict[str, Any], name: str, kind: type[T]) -> T:
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
