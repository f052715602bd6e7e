"""The checks every public entry point shares: one check, one wording, for each kind of value.

- **Choices**: options that are one of a few words, each a ``Literal`` type (for annotations and
  editors) and the tuple of its words (for the check and its message), written once.
- **Counts**: whole numbers a caller passes (limits, windows, retries). ``True`` is an ``int``
  to Python and never a count here, so every check refuses ``bool``.
- **Items**: a list a caller passes (keys, writes, events): any iterable but a str, bytes or
  dict, whose letters or keys would otherwise be taken for the items.
- **Seconds**: a duration (a TTL, a timeout, a lock wait): a finite number, never NaN or a bool.
- **Flags**: True or False, never a truthy 1 or "yes".
- **Moments**: a point in time a caller gives (when a memory was said): a ``datetime``, an ISO
  8601 string or seconds since the epoch, kept as seconds since the epoch.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeGuard, get_args

from ..errors import InvalidValueError

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
    "check_count",
    "check_flag",
    "check_items",
    "check_moment",
    "check_seconds",
    "is_int",
    "is_seconds",
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


def is_int(value: Any) -> TypeGuard[int]:
    """An ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


#: The largest count a store can hold (a signed 64-bit integer in SQLite and PostgreSQL, and
#: what Redis's list indexes take): counts are checked against it before any store sees them.
MAX_COUNT = 2**63 - 1


def check_count(
    value: Any,
    label: str,
    *,
    low: int | None = 0,
    high: int | None = MAX_COUNT,
) -> int:
    """``value`` if it is an int from ``low`` to ``high`` (either may be None: unbounded; by
    default at most ``MAX_COUNT``), else ``InvalidValueError`` saying what was wanted and what
    came."""
    if is_int(value) and (low is None or value >= low) and (high is None or value <= high):
        return value
    if low is not None and high is not None and high != MAX_COUNT:
        wanted = f"an int from {low} to {high}"
    elif low is not None:
        wanted = f"an int >= {low}"
        if high is not None and is_int(value) and value > high:
            wanted += f" and at most {high:,} (2**63 - 1, the most a store holds)"
    elif high is not None:
        wanted = f"an int <= {high}"
    else:
        wanted = "an int"
    raise InvalidValueError(f"{label} must be {wanted}, got {value!r}.")


def check_items(values: Any, label: str, kind: str = "") -> list[Any]:
    """``values`` as a new list, else ``InvalidValueError``: ``"{label} must be a list{kind}"``
    (``kind`` says of what, e.g. ``" of state keys"``)."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise InvalidValueError(f"{label} must be a list{kind}, got {values!r:.80}.")
    return list(values)


def is_seconds(value: Any, *, positive: bool = False) -> bool:
    """A finite int or float (not a bool, not NaN), >= 0, or > 0 when ``positive``."""
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and (value > 0 if positive else value >= 0)
    )


def check_seconds(
    value: Any,
    label: str,
    *,
    positive: bool = False,
    example: str = "30",
    error: Callable[[str], Exception] = InvalidValueError,
) -> float:
    """``value`` as a float if it is a finite number of seconds, >= 0 (> 0 when ``positive``),
    else ``error`` saying what was wanted and what came. A negative, infinite or NaN wait
    would turn every call that waits into a failure, or into one that never ends."""
    if is_seconds(value, positive=positive):
        return float(value)
    wanted = "more than 0" if positive else ">= 0"
    raise error(
        f"{label}={value!r} is not valid; use a finite number of seconds {wanted}, e.g. {example}."
    )


def check_moment(value: Any, label: str) -> float:
    """``value`` as seconds since the epoch: a ``datetime``, an ISO 8601 string
    ("2024-01-03T22:14:00+01:00"; without an offset it is local time, as for a naive
    ``datetime`` and for ``where=`` filters) or a finite number of seconds since the epoch;
    else ``InvalidValueError`` saying so."""
    moment: dt.datetime | None = None
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            moment = None
    elif not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    if moment is None:
        raise InvalidValueError(
            f"{label}={value!r} is not a time; pass a datetime, an ISO 8601 string such as "
            "'2024-01-03T22:14:00+00:00', or seconds since the epoch."
        )
    try:
        return moment.timestamp()
    except (OverflowError, OSError, ValueError):
        raise InvalidValueError(f"{label}={value!r} is out of range for a time.") from None
