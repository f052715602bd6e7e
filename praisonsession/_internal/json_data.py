"""What counts as JSON data, and one encoding of it that every backend shares.

Values are checked before anything is written, so a bad value never reaches a store. Text is
always written as valid UTF-8; a string holding a lone surrogate is written with ``\\uXXXX``
escapes instead, so it comes back exactly as it went in, from every backend.

Numbers follow one rule on every backend: floats must be finite (no NaN or infinity), and
integers may have at most :data:`MAX_INT_DIGITS` digits (Python itself refuses to print longer
ones). :func:`add_numbers` is the one addition every backend's ``increment`` uses, so an
increment that would leave those bounds fails the same way everywhere, changing nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from ..errors import InvalidValueError, SessionCorruptedError

# None | bool | int | float | str | list[JSONValue] | dict[str, JSONValue]
JSONValue = Any

_MAX_DEPTH = 200
#: The most digits an integer may have (Python's own limit for printing one is 4,300).
MAX_INT_DIGITS = 4000
_INT_LIMIT = 10**MAX_INT_DIGITS
_INT_CHECK_BITS = 13_000  # below this many bits an int has fewer than 4,000 digits


def check_json_data(value: Any, what: str = "value") -> None:
    """Raise InvalidValueError unless ``value`` is plain JSON data: no tuples, sets, NaN, cycles."""
    _check(value, what, what, 0, set())


def _check(value: Any, what: str, path: str, depth: int, seen: set[int]) -> None:
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if value.bit_length() > _INT_CHECK_BITS and abs(value) >= _INT_LIMIT:
            raise InvalidValueError(
                f"{path} is an integer of more than {MAX_INT_DIGITS:,} digits, which cannot be "
                "stored. Store it as a string instead."
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidValueError(
                f"{path} is {value!r}, which JSON cannot hold. Store None or a string instead."
            )
        return
    if depth >= _MAX_DEPTH:
        raise InvalidValueError(f"{what} is nested deeper than {_MAX_DEPTH} levels.")
    if isinstance(value, (list, dict)):
        if id(value) in seen:
            raise InvalidValueError(f"{path} contains itself; JSON data cannot be circular.")
        seen.add(id(value))
        if isinstance(value, list):
            for index, item in enumerate(value):
                _check(item, what, f"{path}[{index}]", depth + 1, seen)
        else:
            for key, item in value.items():
                if not isinstance(key, str):
                    raise InvalidValueError(
                        f"{path} has the key {key!r} of type {type(key).__name__}; "
                        "JSON object keys must be str. Convert the keys with str()."
                    )
                _check(item, what, f"{path}[{key!r}]", depth + 1, seen)
        seen.discard(id(value))
        return
    hint = " Convert it to a list." if isinstance(value, (tuple, set, frozenset)) else ""
    raise InvalidValueError(
        f"{path} is a {type(value).__name__} ({value!r:.80}), which is not JSON data: "
        f"use None, bool, int, float, str, list or dict.{hint}"
    )


def add_numbers(current: Any, amount: int | float, key: str) -> int | float:
    """``current + amount`` for ``increment_state``, under the one rule for numbers.

    ``current`` is what the key holds (or the default); a non-number, a float result that is
    not finite and an integer result past :data:`MAX_INT_DIGITS` digits are refused.
    """
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        raise InvalidValueError(
            f"State key {key!r} holds {current!r:.80}, not a number, so it cannot be "
            "incremented. Set it to a number first."
        )
    value = current + amount
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidValueError(
                f"Incrementing state key {key!r} by {amount!r} would give {value!r}, which JSON "
                "cannot hold; the key was left as it was."
            )
    elif value.bit_length() > _INT_CHECK_BITS and abs(value) >= _INT_LIMIT:
        raise InvalidValueError(
            f"Incrementing state key {key!r} would give an integer of more than "
            f"{MAX_INT_DIGITS:,} digits, which cannot be stored; the key was left as it was."
        )
    return value


def detach(value: Any, what: str) -> Any:
    """A validated deep copy of JSON data, sharing nothing with the caller's objects.

    One walk checks and copies the plain values nearly every caller passes; anything it does
    not take at a glance (a subclass, a huge int, a cycle or deep nesting, a bad value) is
    walked again by :func:`check_json_data`, which names where and why or lets it through."""
    try:
        return _plain_copy(value, 0)
    except _NotAtAGlance:
        check_json_data(value, what)
        return copy_json(value)


class _NotAtAGlance(Exception):
    """A value :func:`_plain_copy` leaves to the full check."""


def _plain_copy(value: Any, depth: int) -> Any:
    """A deep copy of exactly-typed JSON data within the depth limit, else _NotAtAGlance."""
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return value
    if kind is int:
        if value.bit_length() > _INT_CHECK_BITS:
            raise _NotAtAGlance
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _NotAtAGlance
        return value
    if depth >= _MAX_DEPTH:  # a cycle ends here too
        raise _NotAtAGlance
    if kind is dict:
        copy = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotAtAGlance
            # a string, the common value, without a call
            copy[key] = item if type(item) is str else _plain_copy(item, depth + 1)
        return copy
    if kind is list:
        return [item if type(item) is str else _plain_copy(item, depth + 1) for item in value]
    raise _NotAtAGlance


def copy_json(value: JSONValue) -> JSONValue:
    """A deep copy of JSON data (faster than copy.deepcopy, which handles any object)."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_COMPACT_ASCII = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def dumps(value: JSONValue) -> str:
    """Compact JSON that always encodes to valid UTF-8 and reads back identically."""
    if type(value) is int:  # what json writes for an int (the encoders' fast path, inlined)
        return int.__repr__(value)
    text = _COMPACT.encode(value)
    if not text.isascii() and not utf8_encodable(text):
        text = _COMPACT_ASCII.encode(value)
    return text


def utf8_encodable(text: str) -> bool:
    """Whether ``text`` encodes to UTF-8 as it is: no lone surrogate, which no file, database
    or Redis string can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def loads(text: str | bytes, what: str) -> JSONValue:
    """Decode stored JSON, naming what was being read when it is corrupt."""
    if (
        type(text) is str
        and len(text) < 19
        and text.isdigit()
        and text.isascii()
        and (text[0] != "0" or len(text) == 1)
    ):  # a counter's value: read as json reads it, sooner
        return int(text)
    try:
        return decode(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SessionCorruptedError(what, f"{type(exc).__name__}: {exc}") from None


def loads_joined(
    joined: str | bytes, count: int, what: str = "", *, objects: bool = True
) -> list[JSONValue] | None:
    """``count`` stored JSON objects written one after another with ``,`` between them (the
    messages of a log), decoded in one parse: a third of the time of a parse each, which is
    most of the cost of reading a conversation's tail. None when the parse does not give
    ``count`` objects (a damaged one among them): the caller then decodes them one by one with
    :func:`loads`, which names the damaged one. Damage that a joint parse could take for other
    objects, of the same number, would have to be written on purpose, and whoever can write
    to the store can write valid JSON just as well. ``objects=False`` takes any JSON values
    (a session's state), their number still checked."""
    if count == 0:
        return []
    try:
        found = decode(b"[" + joined + b"]" if isinstance(joined, bytes) else "[" + joined + "]")
    except ValueError:  # a RecursionError too: decode says it as a ValueError
        return None
    if len(found) != count or (objects and not all(type(value) is dict for value in found)):
        return None
    return found  # type: ignore[no-any-return]


def loads_each(texts: list[Any], what: str, *, objects: bool = True) -> list[JSONValue]:
    """Stored JSON objects (a log's messages; any JSON values, a session's state, with
    ``objects=False``), in one parse when they are whole (:func:`loads_joined`), else one by
    one, naming a damaged one."""
    if len(texts) > 1 and all(type(text) is str for text in texts):
        found = loads_joined(",".join(texts), len(texts), what, objects=objects)
        if found is not None:
            return found
    return [loads(text, what) for text in texts]


#: The scanner ``json.loads`` ends in (C), called straight: a stored value is one JSON text
#: with no whitespace around it, which ``json.loads`` checks for with two regular expressions
#: and four calls, about half of its time for an item of a hundred bytes (2.9 against 1.5 µs).
#: (``scan_once`` is set by ``JSONDecoder.__init__``; its stub does not name it.)
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def decode(text: str | bytes, **options: Any) -> JSONValue:
    """``json.loads``, with brackets nested too deep for Python (``[[[[...``, 100,000 deep)
    refused as a ``ValueError`` like any other bad JSON instead of a ``RecursionError``.
    A text that is one JSON value edge to edge is read by the scanner alone; anything else
    (whitespace, a BOM, bytes, bad JSON) goes to ``json.loads``, which reads it or says why
    not."""
    try:
        if type(text) is str and not options:
            try:
                value, end = _scan(text, 0)
            except StopIteration:  # not JSON where it starts: json.loads says why
                pass
            else:
                if end == len(text):
                    return value
        return json.loads(text, **options)
    except RecursionError:
        raise ValueError(
            "it nests brackets deeper than can be read (a JSON value of ours is at most "
            f"{_MAX_DEPTH} levels deep)"
        ) from None
