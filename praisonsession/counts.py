"""Whole numbers a caller passes (limits, counts, windows, retries): one check, one wording.

``True`` is an ``int`` to Python and never a count here, so every check refuses ``bool``.
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidValueError

__all__ = ["check_count", "is_int"]


def is_int(value: Any) -> bool:
    """An ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_count(
    value: Any,
    label: str,
    *,
    low: int | None = 0,
    high: int | None = None,
) -> int:
    """``value`` if it is an int from ``low`` to ``high`` (either may be None: unbounded),
    else ``InvalidValueError`` saying what was wanted and what came."""
    if is_int(value) and (low is None or value >= low) and (high is None or value <= high):
        return value
    if low is not None and high is not None:
        wanted = f"an int from {low} to {high}"
    elif low is not None:
        wanted = f"an int >= {low}"
    elif high is not None:
        wanted = f"an int <= {high}"
    else:
        wanted = "an int"
    raise InvalidValueError(f"{label} must be {wanted}, got {value!r}.")
