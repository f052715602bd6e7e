"""``PostgresBackend``: sessions in a PostgreSQL database, shared by every app server.

How it stays correct with many writers: every write of a session first locks that session's
row (an ``UPDATE`` of it, which also moves its version and sliding expiry), so writers of one
session take turns, writers of different sessions never wait for each other, and a deletion
(which takes the same row first) never leaves half a session behind. What can be one
statement is one statement, sent in autocommit (one round trip):

- a write of state, metadata or a module bumps the session with ``UPDATE ... RETURNING``;
- a save that appends to message logs (a turn) bumps the session, then moves the length of
  each log it writes in that log's row of ``ps_logs`` (an upsert, which sees the latest row,
  whoever wrote it; the session's other logs are not touched), merges the module documents
  and inserts the messages at the positions it returns, in one statement of data-modifying
  CTEs; a module document this store wrote last, unchanged, is not touched while the session
  is at the version that write left;
- an increment calls ``ps_increment``, which locks the session and writes the value the client
  computed (Python's arithmetic, exact for every int and float) only if the key still holds
  what the client computed from. The store remembers the last value it saw of each key, so a
  counter this process drives costs one round trip; another writer's change costs one more;
- a read checks the session is live and restarts its sliding TTL in the same statement,
  which then commits without waiting for a flush of the WAL: a read acknowledges no write.

A session that is not live as it is (missing, expired, of a newer format, damaged) takes the
full path: one transaction that reads its whole row, says why, purges or creates it, and then
writes. No SQL is built from ids: they are parameters; the schema's name is quoted once with
``psycopg.sql.Identifier``.

One module past 500 lines, on purpose: the locking rule above and every operation that relies
on it read best together. The tables and statements are in ``schema.py``; where a statement
runs (a blocking connection per thread for the sync facade, an asyncio pool on a loop) in
``connections.py``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ...._internal.checks import check_seconds
from ...._internal.json_data import add_numbers, dumps, loads, loads_each
from ...._internal.runtime import expired, pause, remaining
from ....errors import (
    ConflictError,
    InvalidValueError,
    MissingDependencyError,
    PraisonSessionError,
    SessionCorruptedError,
    StoreUnavailableError,
    UnsupportedFormatError,
    install_line,
)
from ...backend import (
    TTL,
    UNSET,
    Capabilities,
    Fields,
    Key,
    LogWrite,
    Newest,
    StoreBackend,
    StoredModules,
)
from ...durability import check_durability
from ...record import (
    FORMAT_VERSION,
    SNAPSHOT_OWNER,
    SessionContents,
    SessionInfo,
    check_version,
    copied_info,
    copy_conflict,
    create_conflict,
    now,
    resolve_info,
)
from ..below import outermost
from . import schema as sql
from .connections import Connections, Plan, Query, Refused, Unreachable
from .url import display_url

T = TypeVar("T")

__all__ = ["PostgresBackend"]

_VALUES_REMEMBERED = 4096  # last values seen of counters, for one-round-trip increments
_UNKNOWN: Any = object()
_NOTHING_SAVED: tuple[int, float, dict[str, str]] = (-1, 0.0, {})
_END = 2**62


class _Errors:
    """psycopg's exception classes, loaded with psycopg by the first store made."""

    races: tuple[type[Exception], ...] = ()
    timeouts: tuple[type[Exception], ...] = ()
    operational: type[Exception] = Exception
    any: type[Exception] = Exception


def _require_psycopg() -> None:
    if _Errors.races:
        return
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
        from psycopg import errors
    except ImportError:
        raise MissingDependencyError(
            "PostgresSession needs psycopg 3 and psycopg-pool. Install them with: "
            f"{install_line('postgres')}."
        ) from None
    # rolled back whole by the server: a deadlock broken, a serialization conflict, a
    # session two writers created at once
    _Errors.races = (errors.DeadlockDetected, errors.SerializationFailure, errors.UniqueViolation)
    _Errors.timeouts = (errors.LockNotAvailable, errors.QueryCanceled)
    _Errors.operational = psycopg.OperationalError
    _Errors.any = psycopg.Error


class PostgresBackend(StoreBackend):
    """The record operations on PostgreSQL (see :class:`PostgresSession` for the options)."""

    #: each log's length is kept in a row of its own (``ps_logs``), moved with every append
    capabilities = Capabilities(runs_inline=True, keeps_log_lengths=True)

    def __init__(
        self,
        conninfo: str = "postgresql://localhost/postgres",
        *,
        schema: str = "public",
        pool_size: int = 10,
        connect_timeout: float = 10.0,
        default_ttl: float | None = None,
        sliding_ttl: bool = True,
        durability: str = "process",
    ) -> None:
        super().__init__(default_ttl=default_ttl, sliding_ttl=sliding_ttl)
        _require_psycopg()
        if not isinstance(conninfo, str) or not conninfo:
            raise InvalidValueError(
                f"PostgreSQL needs a connection URL such as "
                f"'postgresql://user@localhost/db', got {conninfo!r}."
            )
        if not isinstance(schema, str) or not schema or len(schema) > 63 or "\0" in schema:
            raise InvalidValueError(
                f"schema must be a PostgreSQL schema name (1 to 63 characters), got {schema!r}."
            )
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise InvalidValueError(f"pool_size must be an int >= 1, got {pool_size!r}.")
        check_seconds(connect_timeout, "connect_timeout", positive=True, example="10")
        self.schema = schema
        self.durability = check_durability(durability)
        self.url = display_url(conninfo, schema)
        self._connections = Connections(
            conninfo, pool_size=pool_size, connect_timeout=float(connect_timeout)
        )
        self._sql = _compile(schema)
        self._schema_ready = False
        self._narrows = False  # the server narrows a state (16 and later): set with the schema
        self._values: dict[tuple[Key, str], str | None] = {}
        self._heads: dict[Key, tuple[int, float]] = {}
        # per session: the version and creation time our last one-log save left, and the
        # module documents it wrote (see SAVE_ONE_LOG)
        self._saved: dict[Key, tuple[int, float, dict[str, str]]] = {}

    def connection_url(self) -> str:
        """A ``postgresql://`` URL of this store's database and schema, password included:
        where memory goes when it follows the store (``recall.core.vector_location``)."""
        from .url import connection_url

        return connection_url(self._connections.conninfo, self.schema)

    # -- running plans --------------------------------------------------------------------

    async def _run(self, make: Callable[[], Plan[T]], transaction: bool = False) -> T:
        """Run a plan, retrying it when PostgreSQL broke a deadlock or a serialization
        conflict (the transaction was rolled back: nothing of it happened), and while the
        server cannot be reached, up to ``connect_timeout`` or the call's deadline."""
        started = time.monotonic()
        delay = 0.005
        races = 0
        while True:
            try:
                if not self._schema_ready:
                    await self._connections.run(self._create_schema(), transaction=True)
                    self._schema_ready = True
                return await self._connections.run(make(), transaction)
            except PraisonSessionError:
                raise
            except _Errors.races as exc:
                races += 1  # rolled back whole: run it again
                if races > 50 or remaining(1.0) <= 0:
                    raise StoreUnavailableError(
                        f"PostgreSQL at {self.url} kept refusing the call as a race with "
                        f"other writers ({_first_line(exc)}); try again."
                    ) from None
                delay = 0.001
            except _Errors.timeouts as exc:
                raise StoreUnavailableError(
                    f"PostgreSQL at {self.url} gave up waiting ({_first_line(exc)}); the "
                    "statement was rolled back, nothing of the call was applied. Another "
                    "connection may hold the session's row: retry later."
                ) from None
            except _Errors.operational as exc:
                raise StoreUnavailableError(
                    f"PostgreSQL at {self.url} failed during the call ({_first_line(exc)}); "
                    "it may or may not have been applied. Check the server, then read the "
                    "session again before retrying."
                ) from None
            except Refused as exc:
                raise StoreUnavailableError(
                    f"PostgreSQL at {self.url} refused the connection: {_last_line(exc)}. "
                    "Check the user, password, database and options in the URL."
                ) from None
            except Unreachable as exc:
                waited = time.monotonic() - started
                if waited >= remaining(self._connections.connect_timeout):
                    if remaining(self._connections.connect_timeout) < (
                        self._connections.connect_timeout
                    ):
                        raise expired(f"connecting to PostgreSQL at {self.url}") from None
                    raise StoreUnavailableError(
                        f"Cannot reach PostgreSQL at {self.url} after {waited:.1f} s: "
                        f"{_first_line(exc)}. Start the server or fix the URL."
                    ) from None
            except _Errors.any as exc:
                raise self._typed(exc) from None
            await pause(delay)
            delay = min(delay * 2, 0.25)

    async def _statement(self, name: str, params: Any) -> list[tuple[Any, ...]]:
        """Run one statement of ``schema.py`` in autocommit; its rows."""
        return await self._run(lambda: _one(Query(self._sql[name], params)))

    def _typed(self, exc: Exception) -> PraisonSessionError:
        from psycopg import errors

        if isinstance(exc, (errors.InsufficientPrivilege, errors.InvalidSchemaName)):
            return StoreUnavailableError(
                f"PostgreSQL at {self.url} refused the store's tables: {_first_line(exc)}. "
                "Grant the user CREATE on the database or schema, or pick another schema."
            )
        return StoreUnavailableError(f"PostgreSQL error on {self.url}: {_first_line(exc)}")

    def _create_schema(self) -> Plan[None]:
        """Create or migrate the tables, under an advisory lock held until commit."""
        yield Query(sql.SCHEMA_ISOLATION)
        yield Query(sql.SCHEMA_LOCK, (self.schema,))
        (found, legacy, narrows), *_ = yield Query(sql.SCHEMA_FOUND, (self.schema, self.schema))
        self._narrows = bool(narrows)
        version = 0
        if found:
            (version,), *_ = yield Query(self._sql["SCHEMA_VERSION_READ"])
            version = version or 0
        elif legacy:
            raise SessionCorruptedError(
                f"schema {self.schema!r} at {self.url}",
                "it holds ps_sessions but no ps_schema version table",
            )
        if version > sql.SCHEMA_VERSION:
            raise UnsupportedFormatError(
                f"PostgreSQL schema {self.schema!r} at {self.url}", version, sql.SCHEMA_VERSION
            )
        if version == sql.SCHEMA_VERSION:
            return
        statements = (
            self._sql["SCHEMA"]
            if version == 0
            else [s for v in range(version, sql.SCHEMA_VERSION) for s in self._sql["MIGRATIONS"][v]]
        )
        for statement in statements:
            yield Query(statement)
        for statement in self._sql["SCHEMA_VERSION_WRITE"]:
            yield Query(statement, (sql.SCHEMA_VERSION,) if "%s" in statement else ())
        if self.durability == "power":
            rows = yield Query(sql.SERVER_DURABILITY)
            fsync, commit = rows[0]
            if fsync != "on" or commit == "off":
                _logger().warning(
                    "durability='power' asked of %s, but the server runs with fsync=%s and "
                    "synchronous_commit=%s: a commit may not survive a power loss.",
                    self.url,
                    fsync,
                    commit,
                )

    async def close(self) -> None:
        await self._connections.close()

    # -- rows -----------------------------------------------------------------------------

    def _info_from_row(self, row: tuple[Any, ...]) -> SessionInfo:
        fmt, version, created, updated, expires, ttl, metadata, session_id, user_id = row
        what = f"session {session_id!r} of user {user_id!r} in {self.url}"
        return SessionInfo.from_fields(
            session_id,
            user_id,
            fmt,
            version,
            created,
            updated,
            expires,
            ttl,
            loads(metadata, f"metadata of {what}"),
            what,
        )

    def _fetch_info(self, key: Key, lock: bool = False) -> Plan[SessionInfo | None]:
        rows = yield Query(self._sql["INFO_LOCKED" if lock else "INFO"], key)
        return self._info_from_row(rows[0]) if rows else None

    def _live_info(
        self, key: Key, at: float, must_exist: bool = False, purge: bool = False
    ) -> Plan[SessionInfo | None]:
        """The session if live (its row locked, in a write); with ``purge`` an expired one is
        deleted."""
        info = yield from self._fetch_info(key, lock=purge)
        live = resolve_info(info, key.user_id, key.session_id, at, must_exist)
        if purge and info is not None and live is None:
            yield from self._delete_rows(key)
        return live

    def _delete_rows(self, key: Key) -> Plan[tuple[Any, ...] | None]:
        """Delete the session: its row (waiting for its writers), then what it holds."""
        rows = yield Query(self._sql["DELETE_SESSION"], key)
        yield Query(
            self._sql["DELETE_CONTENT"], {"users": [key.user_id], "sessions": [key.session_id]}
        )
        self._forget_values(key)
        return rows[0] if rows else None

    def _insert_session(
        self, key: Key, ttl: float | None, metadata: dict[str, Any], at: float
    ) -> Plan[SessionInfo]:
        info = SessionInfo.new(key.user_id, key.session_id, ttl, metadata, at)
        yield Query(self._sql["INSERT_SESSION"], _session_row(info))
        return info

    def _writable(self, key: Key, at: float, must_exist: bool) -> Plan[SessionInfo]:
        info = yield from self._live_info(key, at, must_exist, purge=True)
        if info is None:
            info = yield from self._insert_session(key, self.default_ttl, {}, at)
        return info

    def _begin_write(self, key: Key, at: float, must_exist: bool) -> Plan[int]:
        """Lock and bump the session a write changes (a new one starts at 1): one UPDATE when
        it is live; else the full path. Returns the new version."""
        rows = yield Query(self._sql["BUMP_LIVE"], self._bump_params(key, at))
        if rows:
            version: int = rows[0][0]
            return version
        info = yield from self._writable(key, at, must_exist)
        return (yield from self._bump(key, info, at))

    def _bump(self, key: Key, info: SessionInfo, at: float) -> Plan[int]:
        info = info.touched(at, self.sliding_ttl)._replace(version=info.version + 1, updated_at=at)
        yield Query(self._sql["UPDATE_SESSION"], _update_row(info))
        return info.version

    def _bump_params(self, key: Key, at: float) -> dict[str, Any]:
        return {
            "now": at,
            "sliding": self.sliding_ttl,
            "u": key.user_id,
            "s": key.session_id,
        }

    def _checked_head(
        self, key: Key, row: tuple[Any, ...], at: float, must_exist: bool
    ) -> Plan[bool]:
        """Whether the session a read statement found (format, expires_at first) is live;
        one that is not as it is goes the full way, which says why or raises."""
        fmt, expires = row[0], row[1]
        if 0 <= fmt <= FORMAT_VERSION and (expires is None or expires > at):
            return True
        live = yield from self._live_info(key, at, must_exist)
        return live is not None

    def _write(self, make: Callable[[], Plan[T]]) -> Coroutine[Any, Any, T]:
        return self._run(make, transaction=True)

    # -- sessions -------------------------------------------------------------------------

    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        def plan() -> Plan[SessionInfo]:
            at = now()
            info = yield from self._live_info(key, at, purge=True)
            if info is None:
                return (yield from self._insert_session(key, self._new_ttl(ttl), metadata, at))
            new_ttl = info.ttl if ttl is UNSET else ttl
            expires = None if new_ttl is None else at + new_ttl
            if new_ttl is not None and not self.sliding_ttl and ttl is UNSET:
                expires = info.expires_at
            info = info._replace(
                ttl=new_ttl, expires_at=expires, metadata={**info.metadata, **metadata}
            )
            yield Query(self._sql["UPDATE_SESSION"], _update_row(info))
            return info

        return await self._write(plan)

    async def read_record(self, key: Key) -> SessionInfo | None:
        def plan() -> Plan[SessionInfo | None]:
            return (yield from self._live_info(key, now()))

        return await self._run(plan)

    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        def plan() -> Plan[SessionInfo]:
            at = now()
            info = yield from self._writable(key, at, True)
            info = info.touched(at, self.sliding_ttl)._replace(
                version=info.version + 1, updated_at=at, metadata={**info.metadata, **metadata}
            )
            yield Query(self._sql["UPDATE_SESSION"], _update_row(info))
            return info

        return await self._write(plan)

    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        def plan() -> Plan[list[SessionInfo]]:
            rows = yield Query(self._sql["LIST"], (user_id, after or "", now(), limit))
            return [self._info_from_row(row) for row in rows]

        return await self._run(plan)

    async def list_records_by_prefix(
        self, prefix: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[SessionInfo]:
        start = after if after is not None and after[0] >= prefix else (prefix, "")
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else chr(0x10FFFF) * 2

        def plan() -> Plan[list[SessionInfo]]:
            rows = yield Query(
                self._sql["LIST_BY_PREFIX"], (*start, upper, SNAPSHOT_OWNER, now(), limit)
            )
            return [self._info_from_row(row) for row in rows]

        return await self._run(plan)

    async def list_record_owners(self) -> set[str]:
        def plan() -> Plan[set[str]]:
            rows = yield Query(self._sql["USERS"], (now(),))
            return {user_id for (user_id,) in rows}

        return await self._run(plan)

    async def delete_record(self, key: Key) -> bool:
        def plan() -> Plan[bool]:
            row = yield from self._delete_rows(key)
            if row is None:
                return False
            _format, expires = row
            return expires is None or expires > now()

        return await self._write(plan)

    async def delete_record_without_state(self, key: Key) -> bool:
        def plan() -> Plan[bool]:
            # the session's row locked first: a writer of its state waits for this transaction,
            # and one that committed before it is seen by the check that follows
            if (yield from self._live_info(key, now(), purge=True)) is None:
                return False
            if (yield Query(self._sql["ANY_STATE"], key)):
                return False  # written to meanwhile: kept, with what it holds
            yield from self._delete_rows(key)
            return True

        return await self._write(plan)

    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        def plan() -> Plan[SessionInfo | None]:
            at = now()
            info = yield from self._live_info(key, at, purge=True)
            if info is None:
                return None
            new_ttl = info.ttl if ttl is UNSET else ttl
            info = info._replace(ttl=new_ttl, expires_at=None if new_ttl is None else at + new_ttl)
            yield Query(self._sql["UPDATE_SESSION"], _update_row(info))
            return info

        return await self._write(plan)

    async def purge_records(self) -> int:
        def plan() -> Plan[int]:
            rows = yield Query(self._sql["PURGE_SESSIONS"], (now(),))
            if rows:
                users, sessions = [list(column) for column in zip(*rows, strict=True)]
                yield Query(self._sql["DELETE_CONTENT"], {"users": users, "sessions": sessions})
                self._values.clear()
            return len(rows)

        return await self._write(plan)

    async def scrub_erased_user(self, user_id: str) -> list[str]:
        """After an erasure: rewrite the schema's tables so no dead row version keeps the
        erased rows, and retire the WAL that logged them (see ``scrub.py``); what could not be
        scrubbed, for the erasure report and the log."""
        from ...._internal.runtime import offload
        from .scrub import scrub_after_erasure

        left = await offload(
            scrub_after_erasure,
            self._connections.conninfo,
            self._connections.connect_timeout,
            self.schema,
            sql.TABLES,
        )
        for finding in left:
            _logger().warning("erasure on %s: %s", self.url, finding)
        return left

    # -- key-value state ------------------------------------------------------------------

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        if names is not None and len(names) == 1:
            return await self._read_state(key, self._sql["GET_VALUE"], {}, must_exist, names[0])
        statement = self._sql["GET_ALL_STATE" if names is None else "GET_STATE"]
        return await self._read_state(key, statement, {"names": names}, must_exist)

    async def read_record_state_matching(
        self, key: Key, *, fields: Fields, must_exist: bool, newest: Newest | None = None
    ) -> dict[str, Any]:
        """PostgreSQL 16 and later test the fields in the server (``GET_STATE_MATCHING``), so
        only what may match is sent and decoded; an older server, or a read by ``newest``
        alone, gets the whole state (a cut to the newest parses every value in the server:
        slower than sending them at 100 items, a fifth to a quarter faster at 1,000 to 5,000)."""
        narrowed = sql.matching(fields) if self._narrows else None
        if narrowed is None:
            return await self.read_record_state(key, names=None, must_exist=must_exist)
        tests, params = narrowed
        statement = self._sql["GET_STATE_MATCHING"].replace("{tests}", tests)
        return await self._read_state(key, statement, params, must_exist)

    async def _read_state(
        self,
        key: Key,
        statement: str,
        more: dict[str, Any],
        must_exist: bool,
        one: str | None = None,
    ) -> dict[str, Any]:
        """A read of the state by one statement of ``READ_HEAD``'s: its third column is the
        (name, value) pairs read, or the value of the key ``one`` alone (``GET_VALUE``)."""
        params = {**self._bump_params(key, now()), **more}
        if one is not None:
            params["name"] = one

        def plan() -> Plan[dict[str, Any]]:
            rows = yield Query(statement, params)
            found = rows[0][2] if rows else None
            pairs = found if one is None or found is None else [[one, found]]
            if not rows:
                yield from self._live_info(key, params["now"], must_exist)
                return {}
            live = yield from self._checked_head(key, rows[0], params["now"], must_exist)
            if not live:
                return {}
            return {name: self._decode(value, key, name) for name, value in pairs or ()}

        return await self._run(plan)

    def _decode(self, value: str, key: Key, name: str) -> Any:
        return loads(value, f"state key {name!r} of session {key.session_id!r} ({self.url})")

    async def patch_record_state(
        self,
        key: Key,
        *,
        updates: dict[str, Any],
        deletes: list[str],
        replace: bool,
        expected_version: int | None,
        must_exist: bool,
    ) -> int:
        names = list(updates)
        values = [dumps(value) for value in updates.values()]

        def plan() -> Plan[int]:
            version = yield from self._begin_write(key, now(), must_exist)
            # a new session is at version 0 before this write; a conflict rolls it all back
            check_version(key.session_id, version - 1, expected_version)
            if replace:
                yield Query(self._sql["DELETE_ALL_STATE"], key)
            elif deletes:
                yield Query(self._sql["DELETE_STATE"], (*key, deletes))
            if names:
                yield Query(self._sql["UPSERT_STATE"], (*key, names, values))
            return version

        self._forget_values(key)
        return await self._write(plan)

    async def increment_record_value(
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        held = self._values.get((key, name), _UNKNOWN)
        head = self._heads.get(key)  # (version, created_at) at which ``held`` is the value
        fresh = False  # whether ``held`` came from the server in this call
        for _ in range(1000):
            new = None
            if held is not _UNKNOWN:
                try:
                    current = default if held is None else self._decode(held, key, name)
                    value = add_numbers(current, amount, name)
                    new = dumps(value)
                except (InvalidValueError, SessionCorruptedError):
                    if fresh:
                        raise
                    held, head = _UNKNOWN, None  # remembered from earlier: ask the server
            if new is not None and head is not None:
                params = {
                    **self._bump_params(key, now()),
                    "version": head[0],
                    "created": head[1],
                    "name": name,
                    "new": new,
                }
                rows = await self._statement("INCREMENT_AT_VERSION", params)
                if rows:
                    self._remember(key, name, new, (rows[0][0], head[1]))
                    return value
            args = (
                *key, name, new is not None, held if new is not None else None, new,
                now(), self.sliding_ttl, FORMAT_VERSION,
            )  # fmt: skip
            rows = await self._statement("INCREMENT", args)
            is_live, applied, found, version, created = rows[0]
            if applied:
                self._remember(key, name, new, (version, created))
                return value
            if not is_live:
                return await self._increment_full(key, name, amount, default, must_exist)
            held, head, fresh = found, (version, created), True
        raise StoreUnavailableError(
            f"increment of {name!r} lost the race to other writers 1000 times in a row."
        )

    async def _increment_full(
        self, key: Key, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        """The session is not live as it is: purge or create it (or refuse), then add."""

        def plan() -> Plan[tuple[int | float, str]]:
            at = now()
            info = yield from self._writable(key, at, must_exist)
            rows = yield Query(self._sql["HELD_VALUE"], (*key, name))
            stored = rows[0][0] if rows else None
            current = default if stored is None else self._decode(stored, key, name)
            value = add_numbers(current, amount, name)
            yield from self._bump(key, info, at)
            yield Query(self._sql["UPSERT_STATE"], (*key, [name], [dumps(value)]))
            return value, dumps(value)

        value, text = await self._write(plan)
        self._remember(key, name, text, None)
        return value

    def _remember(
        self, key: Key, name: str, text: str | None, head: tuple[int, float] | None
    ) -> None:
        """The value of a key we wrote last, and the session's version and creation time
        then: the next increment of it is one statement while nobody else writes it."""
        if len(self._values) >= _VALUES_REMEMBERED:
            self._values.clear()
            self._heads.clear()
        if self._heads.get(key) != head:  # other keys' values were at another version
            self._forget_values(key)
        self._values[key, name] = text
        if head is None:
            self._heads.pop(key, None)
        else:
            self._heads[key] = head

    def _forget_values(self, key: Key) -> None:
        self._heads.pop(key, None)
        if self._values:
            for entry in [entry for entry in self._values if entry[0] == key]:
                del self._values[entry]

    # -- modules and logs -----------------------------------------------------------------

    def _write_log(self, key: Key, write: LogWrite) -> Plan[int]:
        """Replace or append to one log; the session's row is locked already."""
        if write.start is None:
            yield Query(self._sql["CLEAR_LOG"], (*key, write.path))
            length = 0
        else:
            rows = yield Query(self._sql["LOG_LENGTH"], (write.path, *key))
            length = (rows[0][0] or 0) if rows else 0
            if write.start != -1 and write.start != length:
                raise ConflictError(
                    f"Log {write.path!r} holds {length} messages, not {write.start}."
                )
        if write.messages:
            messages = [dumps(message) for message in write.messages]
            yield Query(self._sql["INSERT_MESSAGES"], (*key, write.path, length, messages))
        length += len(write.messages)
        yield Query(self._sql["SET_LOG_LENGTH"], (write.path, length, *key))
        return length

    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        paths = {write.path for write in writes}
        if len(paths) == len(writes) and all(write.start == -1 for write in writes):
            lengths = await self._save_appending(key, documents, writes)
            if lengths is not None:
                return lengths

        def plan() -> Plan[dict[str, int]]:
            yield from self._begin_write(key, now(), False)
            return (yield from self._save_modules(key, documents, writes))

        return await self._write(plan)

    async def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        paths = [write.path for write in writes]
        if len(set(paths)) == len(paths) and all(w.start in (None, -1, 0) for w in writes):
            lengths = {write.path: len(write.messages) for write in writes}
            info = SessionInfo.new(*key, self.default_ttl, metadata, now())._replace(version=1)
            placed = [(w.path, i, m) for w in writes for i, m in enumerate(w.messages)]
            made = await self._statement(
                "CREATE_WITH_MODULES",
                (
                    *_session_row(info),
                    *key,
                    list(lengths),
                    list(lengths.values()),
                    *key,
                    list(documents),
                    [dumps(d) for d in documents.values()],
                    *key,
                    [path for path, _, _ in placed],
                    [seq for _, seq, _ in placed],
                    [dumps(message) for _, _, message in placed],
                ),
            )
            if made[0][0]:  # one statement, one round trip
                return lengths

        def plan() -> Plan[dict[str, int]]:  # a row is there: live (a conflict) or not
            at = now()
            live = yield from self._live_info(key, at, purge=True)
            if live is not None:
                raise ConflictError(create_conflict(key))
            info = yield from self._insert_session(key, self.default_ttl, metadata, at)
            yield from self._bump(key, info, at)
            return (yield from self._save_modules(key, documents, writes))

        return await self._write(plan)  # one transaction

    def _save_modules(
        self, key: Key, documents: dict[str, Any], writes: list[LogWrite]
    ) -> Plan[dict[str, int]]:
        """Module documents and log writes, in a transaction that holds the session's row."""
        if documents:
            docs = [dumps(d) for d in documents.values()]
            yield Query(self._sql["UPSERT_MODULES"], (*key, list(documents), docs))
        lengths = {}
        for write in writes:
            lengths[write.path] = yield from self._write_log(key, write)
        return lengths

    async def _save_appending(
        self, key: Key, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int] | None:
        """The one-statement save (``SAVE_ONE_LOG`` for one log, or ``APPEND_ONE_*`` when no
        module document needs writing; else ``SAVE_APPENDING``); None if the session was not
        live as it is, and nothing was written."""
        names = list(documents)
        docs = [dumps(d) for d in documents.values()]
        params: dict[str, Any] = {
            **self._bump_params(key, now()),
            "names": names,
            "docs": docs,
        }
        if len(writes) == 1:  # a turn of one agent: the shorter statement
            (write,) = writes
            known, created, written = self._saved.get(key, _NOTHING_SAVED)
            mine = [written.get(name) == doc for name, doc in zip(names, docs, strict=True)]
            messages = [dumps(message) for message in write.messages]
            params |= {"known": known, "created": created, "log": write.path}
            rows = None
            if all(mine):  # no document to write (or none given): the short statement
                if len(messages) == 1:
                    params["msg"] = messages[0]
                    name = "APPEND_ONE_MESSAGE_AT" if names else "APPEND_ONE_MESSAGE"
                else:
                    params |= {"count": len(messages), "msgs": messages}
                    name = "APPEND_ONE_LOG_AT" if names else "APPEND_ONE_LOG"
                rows = await self._statement(name, params)
                # no row: not live as it is, or (_AT) written by another since: the full form
            if not rows:
                params |= {"mine": mine, "count": len(messages), "msgs": messages}
                rows = await self._statement("SAVE_ONE_LOG", params)
            if not rows:
                return None
            length, version, created = rows[0]
            if len(self._saved) >= _VALUES_REMEMBERED:
                self._saved.clear()
            self._saved[key] = (version, created, dict(zip(names, docs, strict=True)))
            return {write.path: length}
        params |= {
            "logs": [w.path for w in writes],
            "counts": [len(w.messages) for w in writes],
            "msgs": [dumps(message) for w in writes for message in w.messages],
        }
        rows = await self._statement("SAVE_APPENDING", params)
        bumped, paths, lengths = rows[0]
        if not bumped:
            return None
        return dict(zip(paths or (), lengths or (), strict=True))

    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        def plan() -> Plan[StoredModules | None]:
            at = now()
            yield Query(self._sql["SNAPSHOT"])
            rows = yield Query(self._sql["LIVE_HEAD"], self._bump_params(key, at))
            if not rows or not (yield from self._checked_head(key, rows[0], at, False)):
                if not rows:
                    yield from self._live_info(key, at)
                return None
            documents = {}
            found = yield Query(self._sql["LOAD_MODULES"], (*key, names))
            for name, document in found:
                documents[name] = loads(document, f"module {name!r} of session {key.session_id!r}")
            logs: dict[str, list[dict[str, Any]]] = {}
            held = outermost(documents)  # a name below another: its logs are in that range
            if len(held) == 1:
                (name,) = held
                rows = yield Query(
                    self._sql["LOAD_LOGS_BELOW"], (*key, name, name + "/", name, name + ".")
                )
            elif held:
                rows = yield Query(
                    self._sql["LOAD_MODULE_LOGS"],
                    (held, [n + "." for n in held], [n + "/" for n in held], *key),
                )
            else:
                rows = []
            for path, message in rows:
                logs.setdefault(path, []).append(
                    loads(message, f"message log {path!r} of session {key.session_id!r}")
                )
            return StoredModules(documents, logs)

        return await self._run(plan, transaction=True)

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        if write.start == -1:
            lengths = await self._save_appending(key, {}, [write])
            if lengths is not None:
                return lengths[write.path]

        def plan() -> Plan[int]:
            yield from self._begin_write(key, now(), False)
            return (yield from self._write_log(key, write))

        return await self._write(plan)

    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        at = now()
        params = {
            **self._bump_params(key, at),
            "log": path,
            "start": start,
            "stop": _END if stop is None else stop,
        }

        def plan() -> Plan[list[dict[str, Any]]]:
            rows = yield Query(self._sql["READ_LOG"], params)
            if not rows:
                return []
            if not (yield from self._checked_head(key, rows[0], at, False)):
                return []
            what = f"message log {path!r} of session {key.session_id!r}"
            return loads_each(list(rows[0][2] or ()), what)

        return await self._run(plan)

    async def count_log(self, key: Key, *, path: str) -> int:
        def plan() -> Plan[int]:
            params = {"now": now(), "u": key.user_id, "s": key.session_id, "log": path}
            rows = yield Query(self._sql["COUNT_LOG"], params)
            return (rows[0][0] or 0) if rows else 0

        return await self._run(plan)

    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        """One transaction: the session's row locked and bumped, the log's length checked,
        its end deleted (handed back by ``RETURNING``) and the shorter length recorded."""

        def plan() -> Plan[list[dict[str, Any]]]:
            yield from self._begin_write(key, now(), True)
            rows = yield Query(self._sql["LOG_LENGTH"], (path, *key))
            held = (rows[0][0] or 0) if rows else 0
            if expected is not None and held != expected:
                raise ConflictError(f"Log {path!r} holds {held} messages, not {expected}.")
            if length >= held:
                return []
            removed = yield Query(self._sql["TRUNCATE_LOG"], (*key, path, length))
            yield Query(self._sql["SET_LOG_LENGTH"], (path, length, *key))
            what = f"message log {path!r} of session {key.session_id!r}"
            return [loads(message, what) for _, message in sorted(removed)]

        return await self._write(plan)

    # -- copies (forks, snapshots, restores) --------------------------------------------

    async def copy_record(
        self,
        source: Key,
        target: Key,
        *,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        replace: bool,
        ttl: TTL,
    ) -> SessionInfo:
        def plan() -> Plan[SessionInfo]:
            at = now()
            # lock both rows in one order (by key), so two copies never deadlock
            first, second = sorted((source, target))
            yield Query(self._sql["INFO_LOCKED"], first)
            yield Query(self._sql["INFO_LOCKED"], second)
            found = yield from self._live_info(source, at, must_exist=True)
            current = yield from self._live_info(target, at, purge=True)
            if current is not None and not replace:
                raise ConflictError(copy_conflict(target))
            assert found is not None  # must_exist raised otherwise
            info = copied_info(found, target, current, metadata, ttl, at)
            if current is not None:
                yield Query(
                    self._sql["DELETE_CONTENT"],
                    {"users": [target.user_id], "sessions": [target.session_id]},
                )
            yield Query(self._sql["UPSERT_SESSION"], _session_row(info))
            for statement in self._sql["COPY_ROWS"]:
                yield Query(statement, (*target, *source))
            log, keep = cut if cut is not None else ("", _END)
            yield Query(self._sql["COPY_LOGS"], (*target, log, keep, *source))
            yield Query(self._sql["COPY_MESSAGES"], (*target, *source, log, keep))
            return info

        self._forget_values(target)
        return await self._write(plan)

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        def plan() -> Plan[SessionContents | None]:
            yield Query(self._sql["SNAPSHOT"])
            info = yield from self._live_info(key, now())
            if info is None:
                return None
            what = f"session {key.session_id!r} of user {key.user_id!r}"
            rows = yield Query(self._sql["CONTENTS_STATE"], key)
            state = {name: loads(value, f"state key {name!r} of {what}") for name, value in rows}
            rows = yield Query(self._sql["CONTENTS_MODULES"], key)
            modules = {name: loads(doc, f"module {name!r} of {what}") for name, doc in rows}
            rows = yield Query(self._sql["CONTENTS_LOGS"], key)
            return SessionContents(info, state, modules, {log: n for log, n in rows if n})

        return await self._run(plan, transaction=True)


def _one(query: Query) -> Plan[list[tuple[Any, ...]]]:
    return (yield query)


def _session_row(info: SessionInfo) -> tuple[Any, ...]:
    return (
        info.user_id,
        info.session_id,
        FORMAT_VERSION,
        info.created_at,
        info.updated_at,
        info.expires_at,
        info.ttl,
        info.version,
        dumps(dict(info.metadata)),
    )


def _update_row(info: SessionInfo) -> tuple[Any, ...]:
    return (
        info.version,
        info.updated_at,
        info.expires_at,
        info.ttl,
        dumps(dict(info.metadata)),
        info.user_id,
        info.session_id,
    )


@functools.lru_cache(maxsize=64)
def _compile(schema: str) -> dict[str, Any]:
    """Every statement of ``schema.py`` with the schema's quoted name in place of ``{s}``."""
    from psycopg import sql as psql

    name = psql.Identifier(schema)

    def one(text: str) -> str:
        return psql.SQL(text).format(s=name).as_string(None)

    compiled: dict[str, Any] = {}
    for attr in dir(sql):
        value = getattr(sql, attr)
        if not attr.isupper() or attr in ("SCHEMA_VERSION", "TABLES", "CONTENT"):
            continue
        if attr in ("SCHEMA_ISOLATION", "SCHEMA_LOCK", "SCHEMA_FOUND"):
            compiled[attr] = value
        elif isinstance(value, str):
            compiled[attr] = one(value)
        elif isinstance(value, tuple):
            compiled[attr] = tuple(one(v) for v in value)
        elif isinstance(value, dict):
            compiled[attr] = {k: tuple(one(s) for s in v) for k, v in value.items()}
    return compiled


def _last_line(exc: Exception) -> str:
    """What the server said (libpq's message ends with it)."""
    text = str(exc).strip()
    return text.rsplit("FATAL:", 1)[-1].strip() if "FATAL:" in text else _first_line(exc)


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _logger() -> Any:
    import logging

    return logging.getLogger("praisonsession")
