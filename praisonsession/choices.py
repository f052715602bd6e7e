"""The options that are one of a few words: each a ``Literal`` type (for annotations and
editors) and the tuple of its words (for the check and its message), written once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

from .errors import InvalidValueError

__all__ = [
    "DURABILITIES",
    "KNOWLEDGE_SCOPES",
    "MEMORY_QUERIES",
    "MEMORY_TYPES",
    "SYNC_CALLS",
    "Durability",
    "KnowledgeScope",
    "MemoryQuery",
    "MemoryType",
    "SyncCalls",
    "check_choice",
    "check_flag",
]

#: Where a memory is kept: this session's recent messages, or long-term memory.
MemoryType = Literal["short", "long"]
#: What a search or a clear of memory reaches: one kind, or both.
MemoryQuery = Literal["short", "long", "all"]
#: Whose knowledge a session sees: its user's, its own, or everyone's.
KnowledgeScope = Literal["user", "session", "global"]
#: What an acknowledged write survives (see ``stores.durability``).
Durability = Literal["process", "power"]
#: Where the sync ``Session`` runs a store call: on the caller's thread where the store allows
#: it, or always on the background event loop (so that a timeout can abandon it).
SyncCalls = Literal["inline", "loop"]

MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)
MEMORY_QUERIES: tuple[str, ...] = get_args(MemoryQuery)
KNOWLEDGE_SCOPES: tuple[str, ...] = get_args(KnowledgeScope)
DURABILITIES: tuple[str, ...] = get_args(Durability)
SYNC_CALLS: tuple[str, ...] = get_args(SyncCalls)


def check_choice(
    value: Any,
    choices: tuple[str, ...],
    label: str,
    error: Callable[[str], Exception] = InvalidValueError,
) -> Any:
    """``value`` if it is one of ``choices``, else ``error`` naming them."""
    if isinstance(value, str) and value in choices:
        return value
    words = ", ".join(repr(choice) for choice in choices)
    raise error(f"{label} must be one of {words}; got {value!r}.")


def check_flag(value: Any, label: str) -> bool:
    """``value`` if it is a bool: a flag is True or False, never a truthy 1 or "yes"."""
    if not isinstance(value, bool):
        raise InvalidValueError(f"{label} must be True or False, got {value!r}.")
    return value
