"""Python values as script arguments: every argument travels as text.

Numbers go as the JSON text Python writes, which the Lua side reads exactly; ``replies`` reads
the answers back (and the metadata fields written here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...._internal.json_data import dumps, utf8_encodable
from ...backend import TTL, UNSET

__all__ = [
    "flag",
    "json_number",
    "metadata_args",
    "pack_command",
    "seconds",
    "ttl_args",
]


def flag(value: bool) -> str:
    return "1" if value else "0"


def json_number(value: int | float) -> str:
    """JSON text of a number, as ``dumps`` writes it (ints and finite floats only)."""
    return int.__repr__(value) if isinstance(value, int) else float.__repr__(value)


def seconds(value: float | None) -> str:
    """A duration in seconds; "" for none."""
    return "" if value is None else repr(float(value))


def ttl_args(ttl: TTL) -> list[str]:
    """Keep the session's TTL (``UNSET``), or set it to ``ttl`` ("" for none)."""
    if ttl is UNSET:
        return ["keep", ""]
    return ["set", seconds(ttl)]


def metadata_args(metadata: dict[str, Any]) -> list[str]:
    """Fields of the meta hash: "m:<name>", or "j:<name as JSON>" for a name that is not
    valid text, each with the value's JSON."""
    args = []
    for name, value in metadata.items():
        field = "m:" + name if utf8_encodable(name) else "j:" + dumps(name)
        args += [field, dumps(value)]
    return args


def pack_command(args: Sequence[Any]) -> bytes:
    """One command in the Redis protocol, as the store's own connections send it (``inline``,
    ``lane``). The store sends only text, bytes and numbers, so this is a few joins where
    redis-py's general packer spends ~1 µs per argument."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, str):
            data = arg.encode("utf-8")
        elif isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, (int, float)) and not isinstance(arg, bool):
            data = repr(arg).encode()  # as redis-py writes numbers
        else:
            raise TypeError(f"a Redis argument must be str, bytes or a number, not {type(arg)!r}")
        parts.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(parts)
