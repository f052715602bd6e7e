"""Input checks shared by every embedder.

Checked up front so a wrong argument fails with a message naming the problem, not deep inside
a tokenizer or a C++ runtime.
"""

from __future__ import annotations

from ..errors import InvalidValueError


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
    """Return ``value`` if it is an int in ``1..maximum``, else raise TypeError/ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValueError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1 or (maximum is not None and value > maximum):
        bounds = f"between 1 and {maximum}" if maximum is not None else "at least 1"
        raise InvalidValueError(f"{name} must be {bounds}, got {value}")
    return value
