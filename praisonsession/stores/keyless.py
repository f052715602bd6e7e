"""What marks a record, and a whole store, as sealed by an encrypted store, and how a reader
without the key tells sealed values from plain ones.

An encrypted session's record names, by fingerprint, the key its values are sealed with
(``SEALED_WITH``). The store itself is marked too, once, when an encrypted store first writes
to it (``STORE_MARK``): from then on a store opened without a key writes nothing in it, its own
new sessions included (a plain record beside sealed ones would make a key holder's read or
listing fail). The rule itself is enforced in one place, ``stores/guard.py``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any

from ..errors import KeyRequiredError
from .backend import StoreBackend
from .record import SNAPSHOT_OWNER, Key, SessionInfo

__all__ = [
    "ORIGIN",
    "SEALED_PREFIXES",
    "SEALED_WITH",
    "STORE_MARK",
    "UNRECORDED",
    "looks_sealed",
    "mark_store",
    "refuse_sealed_info",
    "refuse_sealed_infos",
    "sealed_by",
    "store_sealed_with",
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
    """``KeyRequiredError`` if an encrypted store sealed the record ``info`` describes."""
    fingerprint = sealed_by(info)
    if fingerprint is not None:
        raise KeyRequiredError(_what(Key(info.user_id, info.session_id)), fingerprint)


def refuse_sealed_infos(found: Iterable[SessionInfo]) -> None:
    """:func:`refuse_sealed_info` for each record of a listing (a look at two keys for a
    record written without a key, which is almost all of them)."""
    for info in found:
        metadata = info.metadata
        if SEALED_WITH in metadata or ORIGIN in metadata:
            refuse_sealed_info(info)


def looks_sealed(value: Any) -> bool:
    """A state value, module document or message ``{"sealed": ...}`` that holds ciphertext."""
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


#: The record that marks the whole store as encrypted: a reserved record no user owns (erasure
#: and snapshots never match its name), whose metadata names the key by fingerprint.
STORE_MARK = Key(SNAPSHOT_OWNER, "store\x1eencrypted")
_MARKED_WITH = "\x1estore_sealed_with"


async def store_sealed_with(backend: StoreBackend) -> str | None:
    """The fingerprint the store's mark names (a raw backend): None for a plain store."""
    info = await backend.read_record(STORE_MARK)
    said = None if info is None else info.metadata.get(_MARKED_WITH)
    return said if isinstance(said, str) else None


async def mark_store(backend: StoreBackend, fingerprint: str, *, replace: bool = False) -> None:
    """Mark the store (a raw backend) as encrypted with the key ``fingerprint``; a store
    already marked keeps its mark unless ``replace`` (a rotation)."""
    if replace or await store_sealed_with(backend) is None:
        await backend.create_record(STORE_MARK, ttl=None, metadata={_MARKED_WITH: fingerprint})
