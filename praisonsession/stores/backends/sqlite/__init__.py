"""SQLite, the embedded default: ``SqliteSession`` over ``SqliteBackend`` (``backend.py``)."""

from __future__ import annotations

import os

from ....errors import InvalidValueError
from ...api import SessionBase
from .backend import SqliteBackend

__all__ = ["SqliteBackend", "SqliteSession"]


class SqliteSession(SessionBase):
    """Sessions in one SQLite file, shared safely by many processes (``:memory:`` is not
    supported: use InMemorySession). ``sqlite_path=`` is the name AgentScope's example uses.

    ``durability`` is ``"process"`` (``PRAGMA synchronous=NORMAL``, the default) or
    ``"power"`` (``FULL``); ``synchronous`` sets the pragma itself (OFF, NORMAL, FULL, EXTRA)
    and wins over ``durability`` when both are given. ``busy_timeout`` is how long a write
    waits for another process's write lock, in seconds. ``group_commit`` (at FULL and EXTRA;
    on by default) lets this process's concurrent writes to the file share one commit and
    its fsync; ``False`` commits each write on its own (``shared.py`` says why and how).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        sqlite_path: str | os.PathLike[str] | None = None,
        default_ttl: float | None = None,
        sliding_ttl: bool = True,
        busy_timeout: float = 30.0,
        synchronous: str | None = None,
        durability: str | None = None,
        group_commit: bool = True,
    ) -> None:
        if sqlite_path is not None:
            if path is not None:
                raise InvalidValueError("Pass the file as path or as sqlite_path, not both.")
            path = sqlite_path
        super().__init__(
            SqliteBackend(
                path,
                default_ttl=default_ttl,
                sliding_ttl=sliding_ttl,
                busy_timeout=busy_timeout,
                synchronous=synchronous,
                durability=durability,
                group_commit=group_commit,
            )
        )
