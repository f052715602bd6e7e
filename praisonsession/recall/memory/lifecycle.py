"""What happened to a memory: the id ``add_memory`` returns, and the events of its history.

``add_memory`` returns a :class:`MemoryId`, a ``str`` (so code that stores or compares ids keeps
working) that also says what the call did: ``"ADD"`` a new memory, ``"NONE"`` the same text was
already remembered, ``"UPDATE"`` a close paraphrase was replaced by the new wording.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata
from typing import Any

__all__ = ["ADD", "DELETE", "NONE", "UPDATE", "MemoryId", "memory_id_for", "normalised", "text_key"]

ADD = "ADD"
UPDATE = "UPDATE"
DELETE = "DELETE"
NONE = "NONE"  # nothing changed: the memory was there already

_SPACES = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s.!?;,]+$")


class MemoryId(str):
    """A memory's id, with what adding it did (``event``) and, for an update, the old text."""

    event: str
    previous: str | None

    def __new__(cls, value: str, event: str = ADD, previous: str | None = None) -> MemoryId:
        made = super().__new__(cls, value)
        made.event = event
        made.previous = previous
        return made

    @property
    def created(self) -> bool:
        """True when this call stored a new memory (not the same one again, not an update)."""
        return self.event == ADD

    @property
    def updated(self) -> bool:
        """True when a close paraphrase updated an existing memory (its old text: ``previous``)."""
        return self.event == UPDATE

    def __reduce__(self) -> Any:
        return (MemoryId, (str(self), self.event, self.previous))


def normalised(text: str) -> str:
    """The text as compared for "the same memory": case, spacing, a final full stop ignored."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _TRAILING.sub("", _SPACES.sub(" ", text).strip())


def text_key(text: str, key: bytes | None = None, scope: str = "") -> str:
    """What "the same memory" is looked up by: a digest of the normalised text. With ``key``
    (from the encryption key) it is an HMAC of the scope and the text, so equal texts of two
    users do not match either."""
    if key is None:
        return _digest(normalised(text), None)[:32]
    return _digest(f"{scope}\x1f{normalised(text)}", key)[:32]


def memory_id_for(scope: str, text: str, key: bytes | None = None) -> str:
    """A new memory's id: the same text in the same scope gets the same id, so two processes
    adding it at once write one memory, not two. With ``key`` (set when the store is
    encrypted) the digest is an HMAC: neither the id nor the duplicate key then lets anyone
    without the key recognise a text, or tell that two users stored the same one."""
    return "m" + _digest(f"{scope}\x1e{normalised(text)}", key)[:31]


def _digest(text: str, key: bytes | None) -> str:
    if key is None:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
