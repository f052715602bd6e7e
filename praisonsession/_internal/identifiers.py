"""Session ids, user ids and state keys: validation, generation and safe file names.

An id is any printable text of 1 to 256 characters. It never becomes a path as it is: the
JSON store maps it through :func:`filename_for`, which is injective, case-safe and cannot climb
out of its directory.

Checking an id walks its characters, and a session checks the same few ids on every call: the
texts that passed are remembered (a bounded set per limit), so each is walked once.
"""

from __future__ import annotations

import os
import re

from ..errors import InvalidIdError

DEFAULT_USER = "default_user"
MAX_ID_LENGTH = 256
MAX_KEY_LENGTH = 1024

_SAFE_FILENAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_MAX_FILENAME_LENGTH = 120
_REMEMBERED = 4096  # texts remembered as valid, per length limit, before starting afresh
_valid: dict[int, set[str]] = {MAX_ID_LENGTH: set(), MAX_KEY_LENGTH: set()}
#: What no id may hold: control characters and lone surrogates.
_REFUSED = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def new_session_id() -> str:
    """A fresh id with 128 bits of entropy (PraisonAI's 8 hex characters collide at ~77k ids)."""
    return os.urandom(16).hex()  # what secrets.token_hex does, without importing secrets


def _check_text(value: object, what: str, max_length: int) -> str:
    valid = _valid[max_length]
    if type(value) is str and value in valid:  # exactly str: a subclass could change equality
        return value
    text = _walk(value, what, max_length)
    if type(value) is str:
        if len(valid) >= _REMEMBERED:
            valid.clear()
        valid.add(value)
    return text


def _walk(value: object, what: str, max_length: int) -> str:
    """``value`` if it is a valid id of at most ``max_length`` characters, else InvalidIdError."""
    if not isinstance(value, str):
        raise InvalidIdError(f"{what} must be a str, got {type(value).__name__}: {value!r}.")
    if not value:
        raise InvalidIdError(f"{what} must not be empty. Pass a name such as 'chat_123'.")
    if len(value) > max_length:
        raise InvalidIdError(
            f"{what} is {len(value)} characters long; the limit is {max_length}. "
            "Use a shorter name, or a hash of the long one."
        )
    found = _REFUSED.search(value)  # the characters walked in C: a new name costs ~1 µs
    if found is not None:
        ch = found.group()
        if ord(ch) < 0xD800:
            raise InvalidIdError(
                f"{what} {value!r} contains the control character {ch!r}; "
                "ids must be printable text."
            )
        raise InvalidIdError(
            f"{what} {value!r} contains a lone surrogate ({ch!r}); ids must be valid Unicode."
        )
    return value


def check_session_id(session_id: object) -> str:
    return _check_text(session_id, "session_id", MAX_ID_LENGTH)


def check_user_id(user_id: object) -> str:
    """An empty user id means the default user, the same on every backend."""
    if user_id is None or user_id == "":
        return DEFAULT_USER
    return _check_text(user_id, "user_id", MAX_ID_LENGTH)


def check_key(key: object, what: str = "state key") -> str:
    return _check_text(key, what, MAX_KEY_LENGTH)


def readable_name(identifier: str) -> str:
    """An injective name for an id inside a store key where ``.`` separates parts.

    Only ``.`` and ``%`` become ``%2E`` and ``%25``; capitals, spaces and other letters stay,
    so an agent called ``Assistant`` keeps the log ``agent:Assistant.history``. Decoding
    ``%XX`` gives the id back, the same as for :func:`filename_for`, so a name both produce
    is the same id's.
    """
    if "." not in identifier and "%" not in identifier:
        return identifier
    return identifier.replace("%", "%25").replace(".", "%2E")


def filename_for(identifier: str) -> str:
    """An injective, traversal-proof, case-insensitive-safe file name for an id.

    Lowercase ASCII letters, digits, ``-`` and ``_`` stay; every other byte of the UTF-8 text
    becomes ``%XX`` (so ``.``, ``/``, ``%`` and capitals are escaped). Names that would be too
    long for a file system become ``~`` plus a SHA-256 digest; ``~`` never appears otherwise.
    """
    parts = []
    for byte in identifier.encode("utf-8"):
        ch = chr(byte)
        parts.append(ch if ch in _SAFE_FILENAME_CHARS else f"%{byte:02X}")
    name = "".join(parts)
    if len(name) > _MAX_FILENAME_LENGTH:
        import hashlib  # rarely needed: ``import praisonsession`` stays fast

        name = "~" + hashlib.sha256(identifier.encode("utf-8")).hexdigest()
    return name
