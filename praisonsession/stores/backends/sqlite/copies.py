"""Copies of whole sessions in SQLite (fork, snapshot, restore), as a mixin of SqliteSession.

A copy is ``INSERT ... SELECT`` of the source's rows under the target's key, inside one write
transaction: it happens whole or not at all, crash included, and never reads a row into Python.
The target's head (the state row named ``''``: version, updated_at, expires_at) is its own,
written from its new metadata, never copied from the source.
Kept apart from ``sqlite.py``, whose hot paths it does not touch.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ...._internal.json_data import dumps, loads
from ....errors import ConflictError
from ...record import (
    FORMAT_VERSION,
    Key,
    SessionContents,
    SessionInfo,
    copied_info,
    copy_conflict,
    now,
)
from .schema import INSERT_HEAD

_COPY_ROWS = (  # the state without the head (the target gets its own)
    "INSERT INTO ps_state (user_id, session_id, name, value) "
    "SELECT ?, ?, name, value FROM ps_state WHERE user_id=? AND session_id=? AND name>''",
    "INSERT INTO ps_modules (user_id, session_id, name, document) "
    "SELECT ?, ?, name, document FROM ps_modules WHERE user_id=? AND session_id=?",
)
_COPY_MESSAGES = (
    "INSERT INTO ps_messages (user_id, session_id, log, seq, message) "
    "SELECT ?, ?, log, seq, message FROM ps_messages WHERE user_id=? AND session_id=? "
    "AND NOT (log=? AND seq>=?)"
)
_CONTENT = ("ps_state", "ps_modules", "ps_messages")
T = TypeVar("T")


class SqliteCopies:
    """``copy_record`` and ``read_record_contents`` for
    :class:`~praisonsession.stores.backends.sqlite.store.SqliteSession`."""

    if TYPE_CHECKING:  # what SqliteSession provides

        def _live_info(
            self,
            conn: sqlite3.Connection,
            key: Key,
            at: float,
            must_exist: bool = False,
            purge: bool = False,
        ) -> SessionInfo | None: ...

        async def _write(self, work: Callable[[sqlite3.Connection], T]) -> T: ...

        async def _transaction(self, work: Callable[[sqlite3.Connection], T], write: bool) -> T: ...

    async def copy_record(
        self,
        source: Key,
        target: Key,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        replace: bool,
        ttl: Any,
    ) -> SessionInfo:
        """The record onto another key in one atomic step (see ``StoreBackend.copy_record``)."""

        def work(conn: sqlite3.Connection) -> SessionInfo:
            at = now()
            found = self._live_info(conn, source, at, must_exist=True)
            current = self._live_info(conn, target, at, purge=True)
            if current is not None and not replace:
                raise ConflictError(copy_conflict(target))
            info = copied_info(found, target, current, metadata, ttl, at)
            ids = (target.user_id, target.session_id)
            if current is not None:
                for table in _CONTENT:
                    conn.execute(f"DELETE FROM {table} WHERE user_id=? AND session_id=?", ids)
            conn.execute(
                "INSERT OR REPLACE INTO ps_sessions (user_id, session_id, format, created_at,"
                " ttl, metadata) VALUES (?,?,?,?,?,?)",
                (*ids, FORMAT_VERSION, info.created_at, info.ttl, dumps(dict(info.metadata))),
            )
            conn.execute(INSERT_HEAD, (*ids, info.version, info.updated_at, info.expires_at))
            sources = (source.user_id, source.session_id)
            for statement in _COPY_ROWS:
                conn.execute(statement, (*ids, *sources))
            log, keep = cut if cut is not None else ("", 2**62)
            conn.execute(_COPY_MESSAGES, (*ids, *sources, log, keep))
            return info

        return await self._write(work)

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        """What the live record holds, read in one step (see ``StoreBackend``)."""

        def work(conn: sqlite3.Connection) -> SessionContents | None:
            info = self._live_info(conn, key, now())
            if info is None:
                return None
            ids = (key.user_id, key.session_id)
            what = f"session {key.session_id!r} of user {key.user_id!r}"
            state = {
                name: loads(value, f"state key {name!r} of {what}")
                for name, value in conn.execute(
                    "SELECT name, value FROM ps_state WHERE user_id=? AND session_id=? AND name>''",
                    ids,
                )
            }
            modules = {
                name: loads(document, f"module {name!r} of {what}")
                for name, document in conn.execute(
                    "SELECT name, document FROM ps_modules WHERE user_id=? AND session_id=?", ids
                )
            }
            counts = dict(
                conn.execute(
                    "SELECT log, COUNT(*) FROM ps_messages WHERE user_id=? AND session_id=? "
                    "GROUP BY log",
                    ids,
                ).fetchall()
            )
            return SessionContents(info, state, modules, counts)

        return await self._transaction(work, write=False)
