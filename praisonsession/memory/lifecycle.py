"""What happened to a memory: the id ``add_memory`` returns, and the events of its history.

``add_memory`` returns a :class:`MemoryId`, a ``str`` (so code that stores or compares ids keeps
working) that also says what the call did: ``"ADD"`` a new memory, ``"NONE"`` the same text was
already remembered, ``"UPDATE"`` a close paraphrase was replaced by the new wording.
"""

from __future__ import annotations

import hashlib
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


def text_key(text: str) -> str:
    return hashlib.sha256(normalised(text).encode("utf-8")).hexdigest()[:32]


def memory_id_for(scope: str, text: str) -> str:
    """A new memory's id: the same text in the same scope gets the same id, so two processes
    adding it at once write one memory, not two."""
    digest = hashlib.sha256(f"{scope}\x1e{normalised(text)}".encode()).hexdigest()
    return "m" + digest[:31]
