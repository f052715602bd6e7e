"""What an acknowledged write survives, and how each store is told.

``"process"``: the write survives a crash of the process that made it (``kill -9``, an
exception, a closed notebook): it is in the operating system's hands when the call returns.
``"power"``: it survives a power loss or an OS crash too: it is on the disk (``fsync``) when the
call returns, which costs a disk flush per write.

The stores map it to their own mechanism: SQLite's ``synchronous`` (NORMAL / FULL), the JSON
store's ``fsync`` of the file and its directory (none / every write). A Redis server decides its
own durability (``appendonly`` and ``appendfsync``); ``RedisSession`` can only check it.
"""

from __future__ import annotations

from typing import cast

from .._internal.checks import DURABILITIES, Durability
from ..errors import InvalidValueError

__all__ = ["DURABILITIES", "check_durability"]


def check_durability(durability: object) -> Durability:
    if durability not in DURABILITIES:
        raise InvalidValueError(
            f"durability must be 'process' (survives a crash of the process) or 'power' "
            f"(survives a power loss too, at the cost of an fsync per write), got {durability!r}."
        )
    return cast(Durability, durability)
