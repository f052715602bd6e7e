"""Input checks shared by every embedder.

Checked up front so a wrong argument fails with a message naming the problem, not deep inside
a tokenizer or a C++ runtime.
"""

from __future__ import annotations

from ..._internal.checks import check_count
from ...errors import InvalidValueError


def check_texts(texts: object) -> list[str]:
    """Return ``texts`` if it is a list of str, else raise TypeError."""
    if isinstance(texts, str):
        raise InvalidValueError(
            "texts must be a list of str, not a str; use embed_query() for one text"
        )
    if not isinstance(texts, list):
        raise InvalidValueError(f"texts must be a list of str, got {type(texts).__name__}")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidValueError(f"texts[{index}] must be a str, got {type(text).__name__}")
    return texts


def check_text(text: object) -> str:
    """Return ``text`` if it is a str, else raise TypeError."""
    if not isinstance(text, str):
        raise InvalidValueError(f"text must be a str, got {type(text).__name__}")
    return text


def check_positive_int(name: str, value: object, maximum: int | None = None) -> int:
    """Return ``value`` if it is an int in ``1..maximum``, else raise InvalidValueError."""
    return check_count(value, name, low=1, high=maximum)
