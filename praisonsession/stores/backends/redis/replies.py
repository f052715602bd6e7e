"""What the scripts answer, read back into Python values and the library's errors.

Redis answers bytes; a value that does not decode is reported as a corrupted session, not
raised as a UnicodeDecodeError.
"""

from __future__ import annotations

from typing import Any

from ...._internal.json_data import loads
from ....errors import (
    SessionCorruptedError,
    SessionExpiredError,
    SessionNotFoundError,
    StoreUnavailableError,
    UnsupportedFormatError,
)
from ...backend import Key
from ...record import FORMAT_VERSION, SessionInfo, check_format

__all__ = ["as_float", "as_text", "error_for", "json_value", "session_info", "utf8"]


def as_text(value: Any) -> str:
    """A status or a number the scripts answered, for comparing and messages."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def as_float(value: Any) -> float | None:
    try:
        return float(as_text(value))
    except (TypeError, ValueError):
        return None


def utf8(value: Any, what: str) -> str:
    """Stored text, which must be UTF-8; ``what`` names it in the error."""
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SessionCorruptedError(what, f"not UTF-8 text: {exc}") from None


def json_value(value: Any, what: str) -> Any:
    """A stored JSON document; ``what`` names it in the error."""
    return loads(utf8(value, what), what)


def session_info(flat: list[Any], user_id: str, session_id: str, url: str) -> SessionInfo:
    """A session's ``SessionInfo`` from its meta hash (HGETALL's flat field, value list)."""
    what = f"session {session_id!r} of user {user_id!r} in {url}"
    fields = {utf8(flat[i], what): flat[i + 1] for i in range(0, len(flat), 2)}
    try:
        fmt = int(fields["format"])
        check_format(fmt, what)
        expires = as_text(fields.get("expires_at") or b"")
        ttl = as_text(fields.get("ttl") or b"")
        info = SessionInfo(
            session_id=session_id,
            user_id=user_id,
            created_at=float(fields["created_at"]),
            updated_at=float(fields["updated_at"]),
            expires_at=float(expires) if expires else None,
            ttl=float(ttl) if ttl else None,
            version=int(fields["version"]),
            format=fmt,
            metadata=_metadata(fields, what),
        )
    except (KeyError, ValueError) as exc:
        raise SessionCorruptedError(f"metadata of {what}", repr(exc)) from None
    return info


def error_for(status: str, reply: list[Any], key: Key, url: str) -> Exception:
    """The exception for a script's error status ("notfound", "expired", ...)."""
    what = f"session {key.session_id!r} of user {key.user_id!r} in {url}"
    if status == "notfound":
        return SessionNotFoundError(
            key.session_id,
            key.user_id,
            "It was deleted or has expired; open a new Session(...) to start it afresh.",
        )
    if status == "expired":
        return SessionExpiredError(key.session_id, key.user_id, as_float(reply[1]))
    if status == "format":
        return UnsupportedFormatError(what, int(as_text(reply[1])), FORMAT_VERSION)
    if status == "corrupt":
        return SessionCorruptedError(what, as_text(reply[1]))
    return StoreUnavailableError(f"Redis at {url} answered {status!r} unexpectedly.")


def _metadata(fields: dict[str, Any], what: str) -> dict[str, Any]:
    """The user metadata among the meta hash's fields (see ``arguments.metadata_args``)."""
    metadata = {}
    for field, value in fields.items():
        if field.startswith("m:"):
            metadata[field[2:]] = loads(utf8(value, what), f"metadata of {what}")
        elif field.startswith("j:"):
            name = loads(field[2:], f"metadata of {what}")
            metadata[name] = loads(utf8(value, what), f"metadata of {what}")
    return metadata
