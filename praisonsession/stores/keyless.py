"""A store opened without an encryption key keeps its hands off encrypted sessions.

An encrypted session's record names, by fingerprint, the key its values are sealed with. A
write of a store without a key into such a session is refused (a value it wrote would not open
with the key, and would make the session unreadable), and so is a read that would hand back
ciphertext as if it were the value: both are ``KeyRequiredError``, naming the expected key by
fingerprint. Our backends refuse the write inside it (``refuses_sealed_writes``: one condition
in the same statement or script, ``refuse_sealed_metadata``); over any other, the store reads
the record first (``check_keyless_write``). An encrypted store seals and checks on its own
(``StoreBackend.checks_keys``), as does a remote store (its server does).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from ..errors import DecryptionError, KeyRequiredError, SessionCorruptedError
from .backend import StoreBackend
from .record import Key, SessionInfo

__all__ = [
    "ORIGIN",
    "SEALED_PREFIXES",
    "SEALED_WITH",
    "UNRECORDED",
    "check_keyless_copy",
    "check_keyless_read",
    "check_keyless_write",
    "refuse_sealed_info",
    "refuse_sealed_metadata",
    "sealed_by",
]

#: Metadata naming the session whose key seals a record's values (a copy keeps its source's).
ORIGIN = "\x1eencrypted_by"
#: Metadata naming, by fingerprint, the key the record's values are sealed with (never the key).
SEALED_WITH = "\x1esealed_with"
#: How a sealed value starts, one prefix per format version.
SEALED_PREFIXES = ("psenc1:", "psenc2:")
_SHORTEST = 12 + 16  # a nonce and a tag: the least a sealed value holds
#: What names the expected key when the version that sealed a record did not record it.
UNRECORDED = "that sealed it (its fingerprint was not recorded by the version that wrote it)"


def sealed_by(info: SessionInfo) -> str | None:
    """The fingerprint of the key an encrypted record is sealed with; None for a record written
    without a key."""
    said = info.metadata.get(SEALED_WITH)
    if isinstance(said, str):
        return said
    if ORIGIN in info.metadata:
        return UNRECORDED
    return None


def refuse_sealed_info(info: SessionInfo) -> None:
    fingerprint = sealed_by(info)
    if fingerprint is not None:
        raise KeyRequiredError(_what(Key(info.user_id, info.session_id)), fingerprint)


def refuse_sealed_metadata(metadata: Mapping[str, Any], key: Key) -> None:
    """What a backend that ``refuses_sealed_writes`` runs on the record a write is about to
    change: ``KeyRequiredError`` if an encrypted store sealed it."""
    if SEALED_WITH in metadata or ORIGIN in metadata:
        said = metadata.get(SEALED_WITH)
        fingerprint = said if isinstance(said, str) else UNRECORDED
        raise KeyRequiredError(_what(key), fingerprint)


async def check_keyless_write(backend: StoreBackend, key: Key) -> None:
    """Refuse a write of a store without a key into an encrypted session, before it writes
    (a read first, unless the backend refuses such a write itself)."""
    if backend.checks_keys or (backend.refuses_sealed_writes and not backend.admits_sealed_writes):
        return
    try:
        info = await backend.read_record(key)
    except DecryptionError:
        raise
    except SessionCorruptedError:
        return  # a damaged head (a bad timestamp): the write itself reports or replaces it
    if info is not None:
        refuse_sealed_info(info)


async def check_keyless_copy(backend: StoreBackend, key: Key) -> None:
    """Refuse a copy from or onto an encrypted session (a fork, a restore) by a store without
    a key: a copy keeps its source's sealing, and no backend refuses a copy itself, so this
    reads the record whatever ``refuses_sealed_writes`` says."""
    if backend.checks_keys:
        return
    info = await backend.read_record(key)
    if info is not None:
        refuse_sealed_info(info)


async def check_keyless_read(backend: StoreBackend, key: Key, values: Any) -> None:
    """Refuse a read of a store without a key that found sealed values (state values, module
    documents, or messages ``{"sealed": ...}``): ciphertext is never returned as a value."""
    if backend.checks_keys or not any(_looks_sealed(value) for value in values):
        return
    info = await backend.read_record(key)
    fingerprint = None if info is None else sealed_by(info)
    raise KeyRequiredError(_what(key), fingerprint or "that sealed it (not recorded)")


def _looks_sealed(value: Any) -> bool:
    if isinstance(value, dict) and len(value) == 1 and "sealed" in value:
        value = value["sealed"]
    if not isinstance(value, str) or not value.startswith(SEALED_PREFIXES):
        return False
    try:
        raw = base64.urlsafe_b64decode(value[len(SEALED_PREFIXES[0]) :])
    except (binascii.Error, ValueError):
        return False
    return len(raw) >= _SHORTEST


def _what(key: Key) -> str:
    return f"Session {key.session_id!r} of user {key.user_id!r}"
