"""The archive file itself: its header and version, its records, and the check of a whole
file (line count and SHA-256 in the end line) that comes before anything is imported."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from ..errors import (
    DamagedArchiveError,
    InvalidIdError,
    InvalidValueError,
    SessionCorruptedError,
    UnsupportedFormatError,
)
from ..identifiers import check_key
from ..json_data import check_json_data

#: Bumped when the layout changes; an archive of a newer version is refused.
ARCHIVE_VERSION = 1
MAGIC = "praisonsession-archive"
PAGE = 500  # messages per line

Progress = Callable[[int], None]  # told how many more messages were written or read


class ArchiveSummary(NamedTuple):
    """What an export wrote or an import read."""

    session_id: str
    user_id: str
    messages: int
    snapshots: int
    memories: int
    lines: int


def header_record() -> dict[str, Any]:
    return {"archive": {"format": MAGIC, "version": ARCHIVE_VERSION}}


def lines_of(source: Any) -> Iterator[bytes]:
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
            record = json.loads(line)
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
    if not isinstance(version, int):
        raise DamagedArchiveError(what, "its version is missing")
    if version > ARCHIVE_VERSION:
        raise UnsupportedFormatError(what, version, ARCHIVE_VERSION)


class Records:
    """The records of a verified archive, in order. The checksum only says the file is as it
    was written, not that an export wrote it (a hand-made file can be sealed too), so every
    record is checked to be what an export puts there: anything else is corruption."""

    def __init__(self, source: Any) -> None:
        self.what = named(source)
        self._lines = lines_of(source)
        self._ahead: Any = None
        self._peeked = False

    def corrupt(self, detail: str) -> SessionCorruptedError:
        return DamagedArchiveError(self.what, detail)

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
