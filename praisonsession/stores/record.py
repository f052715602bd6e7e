"""The stored shape of a session: its metadata, and the format number every record carries."""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import Enum
from math import isfinite
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from .._internal.checks import is_int, is_seconds
from .._internal.identifiers import check_session_id, check_user_id
from ..clock import now as _clock_now
from ..errors import (
    ConflictError,
    InvalidValueError,
    SessionCorruptedError,
    SessionExpiredError,
    SessionNotFoundError,
    UnsupportedFormatError,
)

FORMAT_VERSION = 1
"""Bumped whenever the stored layout changes; older records are migrated when read."""

#: The owner of every snapshot: not a valid user id (see ``identifiers.check_user_id``).
#: Defined here, at the bottom of the store floor, so that the backend protocol's default
#: listing can leave its records out; ``reserved.py`` explains the reserved records.
SNAPSHOT_OWNER = "\x1esnapshots"


#: The time TTL decisions use (``praisonsession.clock``: wall time unless a test set one); the
#: clock's own function, not a wrapper: every write reads it.
now = _clock_now


class Key(NamedTuple):
    """A validated (user_id, session_id) pair: the unit of storage and of isolation.

    A named tuple: cheap to make and to hash, and stores use it as a dict key on every call.
    """

    user_id: str
    session_id: str


_KEYS_REMEMBERED = 1024  # validated (session_id, user_id) pairs remembered
_keys_seen: dict[tuple[str, str], Key] = {}


def record_key(session_id: str, user_id: str = "") -> Key:
    """The validated key of a session (an empty ``user_id`` is the default user). Raises
    ``InvalidIdError`` for an id that cannot be one. A pair seen before is not checked again:
    a session passes the same ids on every call, and ids are immutable text."""
    if type(session_id) is str and type(user_id) is str:
        key = _keys_seen.get((session_id, user_id))
        if key is not None:
            return key
    key = Key(check_user_id(user_id), check_session_id(session_id))
    if type(session_id) is str and type(user_id) is str:
        if len(_keys_seen) >= _KEYS_REMEMBERED:
            _keys_seen.clear()
        _keys_seen[session_id, user_id] = key
    return key


class Unset(Enum):
    """The type of :data:`UNSET`: an enum of one member, so a type checker narrows
    ``ttl is UNSET`` (``TTL`` minus ``Unset`` is ``float | None``); shown by name."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


#: "Not given", the one marker for it: a TTL argument that keeps the stored TTL (or takes the
#: default for a new record), where None already means "no expiry".
UNSET: Final = Unset.UNSET

#: A TTL argument of the protocol: seconds, None (no expiry) or ``UNSET`` (keep / default).
TTL = float | None | Unset


def check_ttl(ttl: Any) -> float | None:
    """A TTL in seconds as a float, or None (no expiry)."""
    if ttl is None:
        return None
    if not is_seconds(ttl):
        raise InvalidValueError(
            f"Invalid session_ttl={ttl!r}. Use None (no expiry) or a finite, non-negative "
            "number of seconds."
        )
    return float(ttl)


class SessionInfo(NamedTuple):
    """A session's metadata as the store holds it. Times are Unix seconds (UTC).

    A named tuple (immutable; change one with ``info._replace(...)``) rather than a dataclass:
    ``dataclasses`` and the ``inspect`` it loads cost a fresh process ~5 ms.
    """

    session_id: str
    user_id: str
    created_at: float
    updated_at: float
    expires_at: float | None = None
    ttl: float | None = None
    version: int = 0
    format: int = FORMAT_VERSION
    metadata: Mapping[str, Any] = MappingProxyType({})  # read-only: shared by default

    @classmethod
    def new(
        cls, user_id: str, session_id: str, ttl: float | None, metadata: dict[str, Any], at: float
    ) -> SessionInfo:
        """A session created at ``at``: version 0, expiring ``ttl`` seconds later (if any)."""
        return cls(
            session_id=session_id,
            user_id=user_id,
            created_at=at,
            updated_at=at,
            expires_at=None if ttl is None else at + ttl,
            ttl=ttl,
            metadata=metadata,
        )

    def is_expired(self, at: float | None = None) -> bool:
        """True if the session's expiry has passed at ``at`` (now by default)."""
        return self.expires_at is not None and self.expires_at <= (now() if at is None else at)

    def time_to_expiry(self, at: float | None = None) -> float | None:
        """Seconds until the session expires (None if it never does; 0 once expired)."""
        if self.expires_at is None:
            return None
        return max(0.0, self.expires_at - (now() if at is None else at))

    def touched(self, at: float, sliding: bool) -> SessionInfo:
        """The metadata after activity at ``at``: a sliding TTL restarts from now."""
        if self.ttl is None or not sliding:
            return self
        return self._replace(expires_at=at + self.ttl)

    def to_json(self) -> dict[str, Any]:
        """The info as JSON data (what ``--json`` prints and ``from_json`` reads)."""
        return {
            "format": self.format,
            "session_id": self.session_id,
            "user_id": self.user_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "expires_at": self.expires_at,
            "ttl": self.ttl,
            "version": self.version,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, data: Any, what: str = "a session record") -> SessionInfo:
        """Decode stored metadata; anything missing or of the wrong kind is corruption."""
        if not isinstance(data, dict):
            raise SessionCorruptedError(what, "not a JSON object")
        return cls.from_fields(
            data.get("session_id"),
            data.get("user_id"),
            data.get("format", FORMAT_VERSION),
            data.get("version", 0),
            data.get("created_at"),
            data.get("updated_at"),
            data.get("expires_at"),
            data.get("ttl"),
            dict(data.get("metadata") or {}),
            what,
        )

    @classmethod
    def from_fields(
        cls,
        session_id: Any,
        user_id: Any,
        fmt: Any,
        version: Any,
        created_at: Any,
        updated_at: Any,
        expires_at: Any,
        ttl: Any,
        metadata: Any,
        what: str,
    ) -> SessionInfo:
        """Metadata as a backend stored it, checked field by field (a hand-edited row with
        ``expires_at='x'`` is corruption, not a ``TypeError`` later). ``metadata`` is kept as
        it is, not copied: the caller decoded it for this info."""
        if (  # every field as a backend writes it: one pass, as a listing of 10,000 needs
            type(session_id) is str
            and type(user_id) is str
            and type(fmt) is int
            and 0 <= fmt <= FORMAT_VERSION
            and type(version) is int
            and version >= 0
            and type(created_at) is float
            and type(updated_at) is float
            and isfinite(created_at)
            and isfinite(updated_at)
            and (expires_at is None or (type(expires_at) is float and isfinite(expires_at)))
            and (ttl is None or (type(ttl) is float and isfinite(ttl) and ttl >= 0))
            and type(metadata) is dict
        ):
            return cls(
                session_id, user_id, created_at, updated_at, expires_at, ttl, version, fmt, metadata
            )  # fmt: skip
        for name, value in (("session_id", session_id), ("user_id", user_id)):
            if not isinstance(value, str):
                raise SessionCorruptedError(what, f"{name} is {value!r:.40}, not a str")
        for name, value in (("format", fmt), ("version", version)):
            if not is_int(value) or value < 0:
                raise SessionCorruptedError(what, f"{name} is {value!r:.40}, not a count")
        check_format(fmt, what)
        created = _stored_time("created_at", created_at, what)
        updated = _stored_time("updated_at", updated_at, what)
        expires = None if expires_at is None else _stored_time("expires_at", expires_at, what)
        ttl_seconds = None if ttl is None else _stored_time("ttl", ttl, what)
        if ttl_seconds is not None and ttl_seconds < 0:  # it would be expired before it was read
            raise SessionCorruptedError(what, f"ttl is {ttl!r:.40}, a negative time")
        if not isinstance(metadata, dict):
            raise SessionCorruptedError(what, "its metadata is not a JSON object")
        return cls(
            session_id=session_id,
            user_id=user_id,
            version=version,
            format=fmt,
            metadata=metadata,
            created_at=created,
            updated_at=updated,
            expires_at=expires,
            ttl=ttl_seconds,
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>"
            for k, v in (
                ("session_id", self.session_id),
                ("user_id", self.user_id),
                ("created", _stamp(self.created_at)),
                ("updated", _stamp(self.updated_at)),
                ("expires", _stamp(self.expires_at) if self.expires_at else "never"),
                ("version", self.version),
            )
        )
        return f"<table>{rows}</table>"


def _stored_time(name: str, value: Any, what: str) -> float:
    """A stored time or TTL as a float; anything but a finite number is corruption."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SessionCorruptedError(what, f"{name} is {value!r:.40}, not a number")
    return float(value)


def _stamp(seconds: float) -> str:
    from datetime import datetime, timezone  # for display only: not at import

    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="seconds")


def check_format(found: int, what: str) -> None:
    if found > FORMAT_VERSION:
        raise UnsupportedFormatError(what, found, FORMAT_VERSION)


def resolve_info(
    info: SessionInfo | None, user_id: str, session_id: str, at: float, must_exist: bool
) -> SessionInfo | None:
    """The session if it is live, else None; with ``must_exist`` a dead session raises."""
    if info is not None and info.is_expired(at):
        if must_exist:
            raise SessionExpiredError(session_id, user_id, info.expires_at)
        return None
    if info is None and must_exist:
        raise SessionNotFoundError(
            session_id,
            user_id,
            "It was deleted or has expired; open a new Session(...) to start it afresh.",
        )
    return info


def check_version(session_id: str, current: int, expected: int | None) -> None:
    """Compare-and-set's test: ``current`` is 0 for a session that does not exist (yet)."""
    if expected is not None and expected != current:
        raise ConflictError(
            f"Session {session_id!r} is at version {current}, not {expected}: someone else "
            "changed it. Read it again and retry."
        )


def copied_info(
    source: SessionInfo,
    target: Key,
    current: SessionInfo | None,
    metadata: dict[str, Any],
    ttl: float | Unset | None,
    at: float,
) -> SessionInfo:
    """The metadata of ``target`` after a session is copied onto it (``copy_record``).

    Onto a live session (``current``, a restore) it keeps its identity, age and TTL, and moves
    on one version; a new one (a fork, a snapshot) starts at version 1, now, with ``ttl`` (the
    source's own when ``ttl`` is the backends' UNSET marker, which is not a number).
    Metadata: the target's (or the source's, for a new one), updated with ``metadata``.
    """
    if current is not None:
        expires = None if current.ttl is None else at + current.ttl
        return current._replace(
            version=current.version + 1,
            updated_at=at,
            expires_at=expires,
            metadata={**current.metadata, **metadata},
        )
    new_ttl = source.ttl if ttl is UNSET else ttl
    return SessionInfo(
        session_id=target.session_id,
        user_id=target.user_id,
        created_at=at,
        updated_at=at,
        expires_at=None if new_ttl is None else at + new_ttl,
        ttl=new_ttl,
        version=1,
        metadata={**source.metadata, **metadata},
    )


def create_conflict(key: Key) -> str:
    """The message when a record to be created (``create_record_with_modules``) is live."""
    return (
        f"Session {key.session_id!r} of user {key.user_id!r} already exists; create it "
        "under another id, or delete it first."
    )


def copy_conflict(target: Key) -> str:
    """The message when a copy would land on a session that exists."""
    return (
        f"Session {target.session_id!r} of user {target.user_id!r} already exists; copy to "
        "another id (or to a fresh one, by giving none), or delete it first."
    )


class SessionContents(NamedTuple):
    """What a session holds, read in one step: its metadata, its state, its module documents
    and how many messages each of its logs has (the messages are read page by page)."""

    info: SessionInfo
    state: dict[str, Any]
    modules: dict[str, Any]
    logs: dict[str, int]
