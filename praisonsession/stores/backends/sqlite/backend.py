"""``SqliteBackend``: the embedded default. One SQLite file, shared safely by many processes.

Why it does not say "database is locked": WAL journal (readers never wait for writers), every
read-modify-write inside ``BEGIN IMMEDIATE``, and a busy database is waited for cooperatively
(``await runtime.pause``) up to ``busy_timeout`` seconds or the call's own deadline, so the
event loop is never blocked while another process holds the write lock. Each key of the state
is its own row, and each message its own row, so an increment or an appended message costs the
same however big the session is. A forked child never uses its parent's connections.

Durability is SQLite's own ``synchronous``: ``durability="process"`` is ``NORMAL`` (a commit
survives a crash of the process; the WAL is fsynced at checkpoints), ``"power"`` is ``FULL``
(the WAL is fsynced at every commit, so it survives a power loss too), but for the commit of a
read's sliding TTL, which acknowledges no write: ``NORMAL``, flushed by the next commit that is.

Each session has a *head*: the row of ``ps_state`` named ``''`` (no state key can be empty)
holding what every write moves: its ``version``, ``updated_at`` and ``expires_at``. The rest
of the session (format, creation time, TTL, metadata) is its row of ``ps_sessions``, which
writes of state, modules and messages read but do not change. The head sorts first among the
session's state rows, so a write of a small session (an increment: the head and one value)
changes one B-tree page, one WAL frame per commit. An increment is BEGIN IMMEDIATE; one SELECT
of the head, the session's format and TTL, and the value; the sum in Python (``add_numbers``,
exact for every int and float); one statement writing the head and the value; COMMIT. Other
writes bump the head with one UPDATE whose WHERE also checks that the session is live. A
session that is not live as it is (missing, expired, newer, damaged) takes the full path,
which reads and checks its whole record. Reads check liveness without decoding the
session's metadata.

One module past 500 lines, on purpose: the transaction, busy-wait and liveness rules above
and every operation that relies on them (the copies of forks and snapshots included) read
best together. The tables, migrations and SQL text are in ``schema.py``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from threading import get_ident
from typing import Any, NamedTuple, TypeVar, cast

from ...._internal.checks import check_flag, check_seconds
from ...._internal.identifiers import DEFAULT_USER
from ...._internal.json_data import add_numbers, dumps, loads, loads_each, loads_joined
from ...._internal.runtime import expired, loop_running_here, pause, remaining, restore
from ....errors import (
    ConflictError,
    InvalidValueError,
    PraisonSessionError,
    SessionCorruptedError,
    StoreUnavailableError,
    UnsupportedFormatError,
)
from ...backend import (
    TTL,
    UNSET,
    Capabilities,
    Fields,
    ForeignSessions,
    Key,
    LogSpan,
    LogWrite,
    ModuleNames,
    Newest,
    Stamped,
    StoreBackend,
    StoredModules,
)
from ...durability import check_durability
from ...record import (
    FORMAT_VERSION,
    SessionContents,
    SessionInfo,
    check_version,
    copied_info,
    copy_conflict,
    create_conflict,
    now,
    resolve_info,
)
from ...reserved import SNAPSHOT_OWNER
from ..below import outermost
from .schema import (
    ANY_STATE,
    APPEND,
    APPEND_AT,
    BUMP,
    BUMP_LIVE,
    CONTENT_TABLES,
    COPY_ENTRIES,
    COPY_ROWS,
    CUT,
    DATA_VERSION,
    DELETE_KEY,
    ENTRIES,
    GET_VALUE,
    INCREMENT_READ,
    INCREMENT_WRITE,
    INFO,
    INFO_COLUMNS,
    INSERT_HEAD,
    LIVE_DOCUMENTS,
    LIVE_LOG_END,
    LIVE_LOG_RANGE,
    LIVE_LOG_TAIL,
    LIVE_STATE,
    LIVE_STATE_MATCHING,
    LIVE_VALUE,
    LIVENESS,
    LOG_COUNTS,
    LOG_END,
    LOG_RANGE,
    LOG_TAIL,
    LOGS_OF,
    MAX_LOG_ID,
    MIGRATIONS,
    MODULE_DOCUMENTS,
    MODULE_LOGS,
    NEW_LOG,
    SCHEMA,
    SCHEMA_VERSION,
    SESSION_AND_HEAD,
    SESSION_ENTRIES,
    SET_EXPIRY,
    SET_IF_HELD,
    SLIDE_LIVE,
    SPAN,
    STAMP,
    STAMP_DOCUMENT,
    STATE_KEYS,
    STATE_MATCHING,
    TABLES,
    UPSERT_MODULE,
    UPSERT_STATE,
    VERSION,
    matching,
)
from .shared import (
    DONE,
    MAX_BATCH,
    CommitGroup,
    Thread,
    Writer,
    cancelled,
    forget_after_fork,
    known_despite,
    on_a_worker,
    others_ready,
    shared_file,
)

T = TypeVar("T")
#: Commits of an event loop's connection between two checkpoints run off the loop (SQLite's
#: own auto-checkpoint, off for those connections, runs at 1,000 WAL pages).
CHECKPOINT_EVERY = 200
#: Seconds the worker's RESTART checkpoint waits for a gap between writers' commits, and then,
#: holding the write lock (writers wait for it cooperatively), for the readers of the WAL:
#: short, since a long reader would hold every writer up that long. Found no gap, it asks
#: this process's writers to wait (``SharedFile.held``) and tries once more.
CHECKPOINT_PATIENCE = 0.1
#: Turns of its loop a leader gives the loop's other ready callbacks before it begins: a task
#: woken by the last commit needs two (its wake-up, then its step) to reach the queue.
READY_TURNS = 3


# Connections inherited through fork: SQLite forbids using them in the child, and closing one
# there could checkpoint or unlock the parent's database, so they are kept, never touched.
_inherited: list[sqlite3.Connection] = []
#: Numbers whose last written text an increment remembers (see ``SqliteBackend._saw``).
_SEEN_REMEMBERED = 4096
#: Module names read per query by ``read_modules`` (SQLite binds at most 32,766 values).
_NAMES_AT_ONCE = 500
#: What ``_delete_rows`` runs after the session's messages, one statement per table.
_DELETES = tuple(f"DELETE FROM {table} WHERE user_id=? AND session_id=?" for table in TABLES)
#: A query naming documents (``MODULE_DOCUMENTS``, ``LIVE_DOCUMENTS``) for a number of names,
#: kept for the first few numbers.
_NAMED_QUERIES: dict[tuple[str, int], str] = {}
_QUERIES_KEPT = 64
#: ``durability`` -> ``PRAGMA synchronous``, and back.
SYNCHRONOUS = {"process": "NORMAL", "power": "FULL"}
_DURABILITY_OF = {"OFF": "process", "NORMAL": "process", "FULL": "power", "EXTRA": "power"}
#: The settings whose commits fsync the WAL.
_FLUSHED = ("FULL", "EXTRA")
#: A transaction's commit at the store's own ``synchronous`` (see ``_unflushed``).
_AS_SET = contextlib.nullcontext()


class SqliteBackend(StoreBackend):
    """The record operations on one SQLite file (see :class:`SqliteSession` for the options)."""

    capabilities = Capabilities(runs_inline=True)

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        default_ttl: float | None = None,
        sliding_ttl: bool = True,
        busy_timeout: float = 30.0,
        synchronous: str | None = None,
        durability: str | None = None,
        group_commit: bool = True,
    ) -> None:
        super().__init__(default_ttl=default_ttl, sliding_ttl=sliding_ttl)
        if path is None or not isinstance(path, (str, os.PathLike)):
            raise InvalidValueError(
                f"SqliteSession needs a file path (str or os.PathLike), got {path!r}."
            )
        if str(path) in ("", ":memory:"):
            raise InvalidValueError(
                "SqliteSession needs a file path; for a throw-away store use InMemorySession()."
            )
        if synchronous is None:
            synchronous = SYNCHRONOUS[
                check_durability("process" if durability is None else durability)
            ]
        elif durability is not None:
            check_durability(durability)
        if not isinstance(synchronous, str) or synchronous.upper() not in _DURABILITY_OF:
            raise InvalidValueError("synchronous must be one of OFF, NORMAL, FULL, EXTRA.")
        self.path = Path(path).expanduser().resolve()
        self.url = f"sqlite://{self.path}"
        self.busy_timeout = check_seconds(busy_timeout, "busy_timeout")
        self._synchronous = synchronous.upper()
        #: What an acknowledged write survives: "process" (a crash of the process) or
        #: "power" (a power loss too), from the ``synchronous`` in use.
        self.durability = _DURABILITY_OF[self._synchronous]
        # what every store of this process on the file shares (shared.py): each thread's
        # connection, by thread ident, and at FULL or EXTRA the commit group
        self._file = shared_file(self.path, self._synchronous)
        self._file.attach()
        self._threads: dict[int, Thread] = self._file.threads
        #: Whether this store's writes share a commit and its fsync with the other writers of
        #: this process (``synchronous`` FULL or EXTRA); without it each write commits on
        #: its own, the writers of the process taking turns in the same queue.
        self.group_commit = check_flag(group_commit, "group_commit") and (
            self._file.group is not None
        )
        self._group = self._file.group
        self._batch_limit = MAX_BATCH if self.group_commit else 1
        # the text each number was last written as, by (session, key): see _saw
        self._seen: dict[tuple[Key, str], tuple[str, int | float]] = {}
        self._schema_ready = False

    # -- connections and transactions -----------------------------------------------------

    def _here(self) -> Thread | None:
        """This thread's connection and cursor, if it has opened one."""
        return self._threads.get(get_ident())

    def _connection(self) -> sqlite3.Connection:
        return self._opened().conn

    def _opened(self) -> Thread:
        """This thread's connection, opened on its first use (a thread ident is a dict key:
        cheaper on every call than a ``threading.local``; a finished thread's connection
        goes to the next thread that gets its ident, never to two threads at once)."""
        if self._threads is not self._file.threads:  # closed, now used again
            self._threads = self._file.threads
            self._file.attach()
        here = self._threads.get(get_ident())
        if here is not None:
            return here
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            # deleted rows are overwritten with zeros, not left in free space: an erased
            # user's messages must not be readable from the file's bytes
            conn.execute("PRAGMA secure_delete=ON")
        except sqlite3.DatabaseError as exc:
            conn.close()
            if _is_busy(exc):
                raise
            raise SessionCorruptedError(f"SQLite file {self.path}", str(exc)) from None
        on_loop = loop_running_here()
        if on_loop:
            # On an event loop, a checkpoint (an fsync of the file, under load many ms)
            # would stop every coroutine of the loop: the loop's connection leaves it to
            # a worker thread, every CHECKPOINT_EVERY commits (_after_commit).
            conn.execute("PRAGMA wal_autocheckpoint=0")
        here = Thread(conn, conn.cursor(), on_loop)
        self._file.add(here)
        return here

    def _cursor(self) -> sqlite3.Cursor:
        """This thread's cursor, reused by the hot paths (a cursor per statement costs more)."""
        return self._opened().cursor

    def _transaction(
        self, work: Callable[[sqlite3.Connection], T], write: bool, *, flush: bool = True
    ) -> Coroutine[Any, Any, T]:
        """Run ``work`` in one transaction: a write of a grouped store in the commit group's
        next transaction, anything else (a write not ``flush``ed: a commit with no fsync to
        share) in one of its own (stamped inside ``stamped``)."""
        slot = _STAMPING.get()
        if slot is not None and slot.backend is self:
            work = slot.around(work, write)
        if write and flush and self._group is not None:
            return self._grouped(work, self._group)
        return self._attempts(work, write, flush=flush)

    async def _grouped(self, work: Callable[[sqlite3.Connection], T], group: CommitGroup) -> T:
        """A write in the commit group (``shared.py``): queue; lead when nobody does, or when
        handed the lead; a leader commits every queued writer's work at once, each in a
        savepoint, and hands each its outcome only after that commit has returned. A writer
        that finds nobody leading, nothing else ready on its loop and the file free commits
        its work alone, without the queue (most writes of a lone writer): a busy file sends
        it to the queue as its leader, so the writers arriving meanwhile still share its
        commit."""
        if not self._schema_ready:  # opened on this thread: a leader runs this store's work
            await self._attempts(_nothing, False)
        mine = None
        if not others_ready() and not self._file.checkpointing and group.lead_alone():
            try:  # alone: its own transaction at once, no Writer queued, no handoff
                result = await self._attempts(work, True, patient=False)
            except BaseException:
                group.pass_on()
                raise
            if result is not _BUSY:
                group.commits += 1
                group.writes += 1
                group.pass_on()
                return result
            mine = Writer(work)  # the file is busy: wait for it as a leader, and the writers
            group.lead_queued(mine)  # queuing meanwhile commit with this one
        if mine is None:
            mine = Writer(work)
            if not group.join(mine) and not await group.wait(mine):
                return cast(T, mine.outcome())  # committed (or refused) by another leader
        try:
            busy = False  # whether this loop has other work: then the commit runs off it
            try:  # tasks of this loop that may write too: let them queue first
                for _ in range(READY_TURNS):
                    if not others_ready():
                        break
                    busy = True
                    await pause(0)
            except BaseException:
                group.leave(mine)
                raise
            while mine.state is not DONE:
                batch: list[Writer] = []
                if not busy:  # the writers it expects come from other threads: wait for them
                    try:
                        group.gather()
                    except BaseException:  # interrupted (KeyboardInterrupt): nothing begun
                        group.leave(mine)
                        raise
                transaction = self._attempts(partial(self._run_batch, group, batch), True)
                try:
                    await (on_a_worker(transaction, mine) if busy else transaction)
                except _TransactionLost as lost:  # the failing writer is settled; the rest again
                    group.requeue(lost.again)
                    group.settle(lost.failed, mine)
                except Exception as exc:
                    if not batch:  # BEGIN never succeeded: this writer's own error
                        group.leave(mine)
                        if mine.interrupted:
                            raise mine.interrupted from exc
                        raise
                    for writer in batch:
                        writer.error = exc  # nothing of the transaction was committed
                    group.settle(batch, mine)
                except BaseException as exc:
                    others = [w for w in batch if w is not mine]
                    if cancelled(exc):  # at a wait before BEGIN: nothing applied, they wait on
                        group.requeue(others)
                    else:  # interrupted anywhere, even after COMMIT: never run twice
                        for writer in others:
                            writer.error = StoreUnavailableError(_INTERRUPTED)
                        group.settle(others, mine)
                    group.leave(mine)
                    raise
                else:
                    group.commits += 1
                    group.writes += len(batch)
                    group.settle(batch, mine)
                if mine.interrupted and not (
                    mine.state is DONE and known_despite(mine.interrupted)
                ):
                    group.leave(mine)  # cancelled while its transaction ran on the worker
                    raise mine.interrupted
            return cast(T, mine.outcome())
        finally:
            group.pass_on()

    def _run_batch(self, group: CommitGroup, batch: list[Writer], conn: sqlite3.Connection) -> None:
        """Inside the leader's transaction: every writer's work, each in a savepoint so that
        one writer's error rolls back its work only (a lone writer needs none)."""
        if batch:  # a retry of the same transaction (the file was busy): run them again
            for writer in batch:
                writer.value = writer.error = None
        else:
            batch.extend(group.take(self._batch_limit))
        if len(batch) == 1:
            batch[0].value = batch[0].work(conn)
            return
        cursor = self._threads[get_ident()].cursor
        for index, writer in enumerate(batch):
            cursor.execute("SAVEPOINT grouped")
            try:
                writer.value = writer.work(conn)
            except Exception as exc:
                writer.error = self._typed(exc)
                if not conn.in_transaction:  # SQLite ended it: the others' work is gone too
                    raise _TransactionLost([writer], batch[:index] + batch[index + 1 :]) from None
                cursor.execute("ROLLBACK TO grouped")
            cursor.execute("RELEASE grouped")

    def _typed(self, exc: Exception) -> Exception:
        """A writer's error as its caller gets it (as ``_attempts`` raises them)."""
        if isinstance(exc, sqlite3.OperationalError):
            return StoreUnavailableError(f"SQLite error on {self.path}: {exc}")
        if isinstance(exc, sqlite3.DatabaseError):
            return SessionCorruptedError(f"SQLite file {self.path}", str(exc))
        return exc

    async def _attempts(
        self,
        work: Callable[[sqlite3.Connection], T],
        write: bool,
        patient: bool = True,
        *,
        flush: bool = True,
    ) -> T:
        """Run ``work`` in one transaction, retrying cooperatively while the file is busy;
        not ``patient``, a busy file returns ``_BUSY`` at once (nothing applied). Without
        ``flush`` a write commits at ``synchronous=NORMAL`` whatever the store's own setting
        (see ``_read_then_slide``)."""
        started = patience = 0.0  # set when the file is first found busy
        delay = 0.0002
        if write and self._file.checkpointing:
            await self._behind_checkpoint()
        while True:
            try:
                here = self._threads.get(get_ident())
                if here is None or not self._schema_ready:
                    here = self._opened()
                    if not self._schema_ready:
                        self._create_schema(here.conn)
                conn, cursor = here.conn, here.cursor
                with _AS_SET if flush else self._unflushed(cursor):
                    cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                    try:
                        result = work(conn)
                        cursor.execute("COMMIT")
                    except BaseException:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                        raise
                if write and here.on_loop:
                    self._after_commit()
                return result
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise StoreUnavailableError(f"SQLite error on {self.path}: {exc}") from exc
                if not patient:
                    return cast(T, _BUSY)
                if not started:
                    started = time.monotonic()
                    patience = remaining(self.busy_timeout)  # the call's deadline may end sooner
                waited = time.monotonic() - started
                if waited > patience and patience < self.busy_timeout:
                    waiting = f"waiting {waited:.1f} s for the write lock of {self.path}"
                    raise expired(waiting) from None
                if waited > patience:
                    raise StoreUnavailableError(
                        f"{self.path} stayed locked by another writer for {self.busy_timeout:g} s. "
                        "Another process may be stuck in a transaction; raise busy_timeout or "
                        "stop that process."
                    ) from exc
                jitter = 0.5 + (time.perf_counter_ns() % 1009) / 1009  # spread the retries
                await pause(min(delay * jitter, patience - waited + 0.001))
                delay = min(delay * 2, 0.02)
            except sqlite3.DatabaseError as exc:
                raise SessionCorruptedError(f"SQLite file {self.path}", str(exc)) from None
            except PraisonSessionError:
                raise  # already typed (OperationTimeoutError is an OSError, via TimeoutError)
            except OSError as exc:  # the directory cannot be made or used
                raise StoreUnavailableError(
                    f"Cannot open the SQLite file {self.path}: {exc.strerror or exc}. Choose a "
                    "path in a directory you can write to: store='sqlite:///path/to/file.db' "
                    "(three slashes: an absolute path) or 'sqlite://file.db' (two: relative to "
                    "the working directory)."
                ) from None

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        found = self._schema_version(conn)
        if found < SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            try:  # under the write lock: another process may have done it in the meantime
                found = self._schema_version(conn)
                if found < SCHEMA_VERSION:
                    statements = (
                        SCHEMA
                        if found == 0
                        else [
                            statement
                            for version in range(found, SCHEMA_VERSION)
                            for statement in MIGRATIONS[version]
                        ]
                    )
                    for statement in statements:
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        self._schema_ready = True
        if conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='as_session'"
        ).fetchone():
            self._offer_agentscope(conn)

    def _schema_version(self, conn: sqlite3.Connection) -> int:
        found: int = conn.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            raise UnsupportedFormatError(f"SQLite file {self.path}", found, SCHEMA_VERSION)
        return found

    def _offer_agentscope(self, conn: sqlite3.Connection) -> None:
        """Offer the sessions of AgentScope's SqliteSession example (table ``as_session``) not
        adopted yet, once per opening, to the key guard, which adopts them (``ForeignSessions``).

        They have no user, so they are the default user's; each is adopted once (a session
        deleted later is not brought back), and AgentScope's table is left untouched.
        """
        found = conn.execute(_NOT_ADOPTED).fetchall()
        if found:
            keys = [Key(DEFAULT_USER, str(session_id)) for session_id, _ in found]
            raise ForeignSessions(keys, partial(self._write, self._take_agentscope), str(self.path))

    def _take_agentscope(self, conn: sqlite3.Connection) -> dict[Key, dict[str, Any]]:
        """Mark the sessions of ``as_session`` not adopted yet as adopted; the modules of each
        that is not a session here already."""
        taken: dict[Key, dict[str, Any]] = {}
        for session_id, data in conn.execute(_NOT_ADOPTED).fetchall():
            key = Key(DEFAULT_USER, str(session_id))
            what = f"AgentScope session {session_id!r} in {self.path}"
            modules = loads(data, what)
            if not isinstance(modules, dict):
                raise SessionCorruptedError(what, "not a JSON object")
            if self._fetch_info(conn, key) is None:
                taken[key] = modules
            conn.execute(
                "INSERT INTO ps_imported (source, session_id) VALUES ('agentscope', ?)",
                (key.session_id,),
            )
        return taken

    def _after_commit(self) -> None:
        """Count a commit of a loop's connection; every CHECKPOINT_EVERY, checkpoint the WAL
        into the file in a worker thread (one at a time), as SQLite's auto-checkpoint would
        have done inline."""
        shared = self._file
        shared.commits += 1
        if shared.commits < CHECKPOINT_EVERY or shared.checkpointing:
            return
        import asyncio

        shared.commits = 0
        shared.checkpointing = True
        try:
            future = asyncio.get_running_loop().run_in_executor(None, self._checkpoint)
        except RuntimeError:  # the loop is ending (its executor shut down): the next loop's
            shared.checkpointing = False  # commits call for it; the write stays committed
            return
        future.add_done_callback(self._checkpointed)

    def _checkpoint(self) -> None:
        """A connection of its own, opened and closed here: ``close`` may close the store's
        connections meanwhile, and a file deleted meanwhile is not created again (mode=rw).

        PASSIVE copies the WAL into the file beside the writers; RESTART then waits for a gap
        between their commits, copies what they added meanwhile and waits for the WAL's
        readers, so that the next commit starts the WAL again from its beginning (after
        FULL, a writer whose snapshot began as the copy ended could still append behind it,
        and after PASSIVE alone a steady stream of commits always left frames behind: 4,714
        frames after 1,500 OpenAI turns, each commit's fsync journaling the file's new
        size). On a loaded machine commits may leave no gap the busy wait finds: the
        writers of this process then wait for a second try (``_behind_checkpoint``)."""
        shared = self._file
        try:
            with contextlib.suppress(sqlite3.Error):  # busy or gone: the next one will do it
                conn = sqlite3.connect(
                    self.path.as_uri() + "?mode=rw", uri=True, timeout=CHECKPOINT_PATIENCE
                )
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    if conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()[0]:
                        shared.held = True
                        conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
                finally:
                    conn.close()
        finally:  # here, not on the loop: its writers may be waiting for this
            shared.held = shared.checkpointing = False

    def _checkpointed(self, future: Any) -> None:
        if not future.cancelled():
            future.exception()  # retrieved; _checkpoint suppresses SQLite's own errors

    async def _behind_checkpoint(self) -> None:
        """Before a write: wait while the running checkpoint holds writers back, because
        its RESTART found no gap between commits, or because the loop's commits since it
        began reached a quarter of ``CHECKPOINT_EVERY`` (a copy and fsync slowed by a loaded
        machine would otherwise let the WAL grow by a whole round first). At most the
        call's own bound: then the write goes on and meets the lock as any other."""
        shared = self._file
        until = time.monotonic() + remaining(self.busy_timeout)
        while (
            shared.checkpointing
            and (shared.held or shared.commits >= CHECKPOINT_EVERY // 4)
            and time.monotonic() < until
        ):
            await pause(0.001)

    async def close(self) -> None:
        """Let go of the file's connections, closed when no other store of this process uses
        them (a later call opens them again)."""
        if self._threads is self._file.threads:
            self._threads = {}  # the next call attaches again (_opened)
            self._schema_ready = False
            self._file.detach()

    # -- rows -----------------------------------------------------------------------------

    def _fetch_info(self, conn: sqlite3.Connection, key: Key) -> SessionInfo | None:
        row = conn.execute(INFO, (key.user_id, key.session_id)).fetchone()
        return None if row is None else self._info_from_row(key.user_id, row)

    def _live_ttl(
        self, conn: sqlite3.Connection, key: Key, at: float, must_exist: bool = False
    ) -> tuple[bool, float | None]:
        """Whether the session is live, and its TTL: what a read needs, metadata not decoded.

        A session that is not live as it is (missing, expired, newer) goes the full way, which
        says why, or raises with ``must_exist``.
        """
        row = self._cursor().execute(LIVENESS, (key.user_id, key.session_id)).fetchone()
        return self._live_as_found(conn, key, at, must_exist, row)

    def _live_as_found(
        self,
        conn: sqlite3.Connection,
        key: Key,
        at: float,
        must_exist: bool,
        row: tuple[Any, ...] | None,
    ) -> tuple[bool, float | None]:
        """:meth:`_live_ttl` from LIVENESS's columns (format, expiry, TTL) read already."""
        if row is not None and _live_as_read(row[0], row[1], row[2], at):
            return True, row[2]
        live = self._live_info(conn, key, at, must_exist)
        return live is not None, None if live is None else live.ttl

    def _infos_from_rows(self, rows: list[tuple[Any, ...]]) -> list[SessionInfo]:
        """A listed page (each row ends with its user id): the page's metadata decoded in one
        parse, and a row's description made only when the row is damaged (made and parsed
        row by row, they were a third of the time of listing 10,000 records)."""
        texts = [row[6] for row in rows]
        decoded = (
            loads_joined(",".join(texts), len(texts), "")
            if all(type(text) is str for text in texts)
            else None
        )
        if decoded is None:  # a damaged one among them: the row's own path names it
            return [self._info_from_row(row[-1], row[:-1]) for row in rows]
        infos = []
        for row, metadata in zip(rows, decoded, strict=True):
            fmt, version, created, updated, expires, ttl, _, session_id, user_id = row
            try:
                info = SessionInfo.from_fields(
                    session_id, user_id, fmt, version, created, updated, expires, ttl, metadata, ""
                )
            except (SessionCorruptedError, UnsupportedFormatError):
                info = self._info_from_row(user_id, row[:-1])  # raises, naming the row
            infos.append(info)
        return infos

    def _info_from_row(self, user_id: str, row: tuple[Any, ...]) -> SessionInfo:
        fmt, version, created, updated, expires, ttl, metadata, session_id = row
        what = f"session {session_id!r} of user {user_id!r} in {self.path}"
        if not isinstance(metadata, str):
            raise SessionCorruptedError(what, "its metadata is not JSON text")
        if version is None and updated is None:
            raise SessionCorruptedError(what, "its head row (the state row named '') is missing")
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

    def _live_info(
        self,
        conn: sqlite3.Connection,
        key: Key,
        at: float,
        must_exist: bool = False,
        purge: bool = False,
    ) -> SessionInfo | None:
        """The session if live; with ``purge`` (in a write) an expired one is deleted."""
        info = self._fetch_info(conn, key)
        live = resolve_info(info, key.user_id, key.session_id, at, must_exist)
        if purge and info is not None and live is None:
            self._delete_rows(conn, key)
        return live

    def _delete_rows(self, conn: sqlite3.Connection, key: Key) -> None:
        cursor, ids = self._cursor(), (key.user_id, key.session_id)
        cursor.execute(SESSION_ENTRIES, ids)
        for statement in _DELETES:
            cursor.execute(statement, ids)

    def _insert_session(
        self,
        conn: sqlite3.Connection,
        key: Key,
        ttl: float | None,
        metadata: dict[str, Any],
        at: float,
    ) -> SessionInfo:
        info = SessionInfo.new(key.user_id, key.session_id, ttl, metadata, at)
        conn.execute(
            "INSERT INTO ps_sessions (user_id, session_id, format, created_at, ttl, metadata)"
            " VALUES (?,?,?,?,?,?)",
            (key.user_id, key.session_id, FORMAT_VERSION, at, ttl, dumps(metadata)),
        )
        conn.execute(INSERT_HEAD, (key.user_id, key.session_id, 0, at, info.expires_at))
        return info

    def _writable(
        self, conn: sqlite3.Connection, key: Key, at: float, must_exist: bool
    ) -> SessionInfo:
        info = self._live_info(conn, key, at, must_exist, purge=True)
        if info is None:
            info = self._insert_session(conn, key, self.default_ttl, {}, at)
        return info

    def _live_head(self, row: tuple[Any, ...], at: float) -> tuple[int, float | None] | None:
        """An increment's new version and expiry, from its row of ``INCREMENT_READ`` read
        under the write lock; None unless the session is live and of a format this version
        reads, every field of the expected type (the checks ``BUMP_LIVE`` makes in SQL)."""
        version, expires, fmt, ttl = row[0], row[1], row[2], row[3]
        if (
            type(version) is int
            and version >= 0
            and type(fmt) is int
            and 0 <= fmt <= FORMAT_VERSION
            and (expires is None or (type(expires) is float and expires > at))
            and (ttl is None or type(ttl) is float)
        ):
            if ttl is not None and self.sliding_ttl:
                expires = at + ttl
            return version + 1, expires
        return None

    def _full_head(
        self, conn: sqlite3.Connection, key: Key, at: float, must_exist: bool
    ) -> tuple[int, float | None]:
        """What ``_live_head`` gives, the full way: an expired session is purged, a missing one
        created (or, with ``must_exist``, refused), a newer format refused, damage reported."""
        return self._next_head(self._writable(conn, key, at, must_exist), at)

    def _next_head(self, info: SessionInfo, at: float) -> tuple[int, float | None]:
        """The version and expiry a change moves the session to (the expiry slides)."""
        info = info.touched(at, self.sliding_ttl)
        return info.version + 1, info.expires_at

    def _begin_write(self, conn: sqlite3.Connection, key: Key, at: float, must_exist: bool) -> None:
        """Bump the version of the session a write changes (a new one starts at 1): version,
        updated_at, sliding expiry. One UPDATE when the session is live; else the full path."""
        bumped = self._cursor().execute(
            BUMP_LIVE,
            (at, self.sliding_ttl, key.user_id, key.session_id),
        )
        if bumped.rowcount != 1:
            self._bump(conn, key, self._writable(conn, key, at, must_exist), at)

    def _bump(self, conn: sqlite3.Connection, key: Key, info: SessionInfo, at: float) -> int:
        """Record a change: new version, updated_at, and a sliding expiry."""
        version, expires = self._next_head(info, at)
        conn.execute(BUMP, (key.user_id, key.session_id, version, at, expires))
        return version

    def _slide(self, conn: sqlite3.Connection, key: Key, info: SessionInfo, at: float) -> None:
        if info.ttl is not None:  # its TTL may have been lifted since it was read
            conn.execute(SET_EXPIRY, (at + info.ttl, key.user_id, key.session_id))

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> Coroutine[Any, Any, T]:
        return self._transaction(work, write=True)  # the coroutine itself: one frame less

    def _read_at_once(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]] | None:
        """The rows of a read made by one statement (``LIVE_*`` in ``schema.py``: each row
        leads with LIVENESS's columns; ``params`` lead with the user and session ids), outside
        any transaction, when the session is plainly live: a format this version reads, no
        expiry passed. A sliding TTL is moved by one more statement (``_slid_at_once``). None
        sends the caller down the full path, a transaction that says why a session is not
        live (or adopts AgentScope's), retries a busy file, takes a stamp."""
        rows = self._rows_at_once(query, params)
        if not rows:
            return None
        fmt, expires, ttl = rows[0][:3]
        at = now()
        if not _live_as_read(fmt, expires, ttl, at):
            return None
        if ttl is not None and self.sliding_ttl and not self._slid_at_once(params[:2], at):
            return None
        return rows

    def _slid_at_once(self, ids: tuple[Any, ...], at: float) -> bool:
        """A read's slide of its session's TTL (``SLIDE_LIVE``), one statement committing on
        its own, unflushed as every read's slide is (see ``_read_then_slide``); False when
        the full path must do it: a stamp of this store under way (its bookkeeping sees
        every write), the file busy or being checkpointed, the session no longer live as it
        was read."""
        slot = _STAMPING.get()
        if slot is not None and slot.backend is self:
            return False
        here = self._threads.get(get_ident())
        if here is None or here.conn.in_transaction or self._file.checkpointing:
            return False
        try:
            with self._unflushed(here.cursor):
                slid = here.cursor.execute(SLIDE_LIVE, (at, *ids)).rowcount == 1
        except sqlite3.Error:
            return False
        if slid and here.on_loop:
            self._after_commit()
        return slid

    @contextlib.contextmanager
    def _unflushed(self, cursor: sqlite3.Cursor) -> Iterator[None]:
        """Commits made in the block, on this thread's connection, at ``synchronous=NORMAL``
        (a read's slide: no write acknowledged), the store's own setting back at its end. The
        block never awaits, so nothing else runs on the connection meanwhile."""
        if self._synchronous not in _FLUSHED:
            yield
            return
        cursor.execute("PRAGMA synchronous=NORMAL")
        try:
            yield
        finally:
            cursor.execute(f"PRAGMA synchronous={self._synchronous}")

    def _rows_at_once(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]] | None:
        """``query``'s rows, read outside a transaction on this thread's connection; None when
        it must run in one (no connection or schema yet, a transaction open, a stamp being
        taken) or failed (busy, damaged: the full path retries, or says what is wrong)."""
        slot = _STAMPING.get()
        if slot is not None and slot.backend is self:
            return None
        here = self._threads.get(get_ident())
        if here is None or not self._schema_ready or here.conn.in_transaction:
            return None
        try:
            rows: list[tuple[Any, ...]] = here.cursor.execute(query, params).fetchall()
        except sqlite3.Error:
            return None
        return rows

    async def _read_then_slide(
        self, key: Key, work: Callable[[sqlite3.Connection], T], must_exist: bool = False
    ) -> T | None:
        """Reads run without the write lock; only a session with a sliding TTL pays a write.

        ``work`` runs only on a live session; on any other the result is None.
        """

        slot = _STAMPING.get()
        if slot is not None and (slot.backend is not self or slot.taken or slot.key != key):
            slot = None

        def read(conn: sqlite3.Connection) -> tuple[float | None, T | None]:
            at = now()
            if slot is not None:  # the stamp's one statement reads LIVENESS's row too
                row = self._stamp_row(conn, key, slot.names)
                slot.taken = True
                slot.stamp, slot.documents = self._stamp_of(conn, row, slot.names, at)
                found = None if row is None else row[1:4]
                live, ttl = self._live_as_found(conn, key, at, must_exist, found)
            else:
                live, ttl = self._live_ttl(conn, key, at, must_exist)
            return ttl, (work(conn) if live else None)

        ttl, result = await self._transaction(read, write=False)
        if ttl is not None and self.sliding_ttl:
            if self._slid_at_once((key.user_id, key.session_id), now()):
                return result  # one statement; else (a stamp under way, a busy file) as below

            def slide(conn: sqlite3.Connection) -> None:
                at = now()
                live = self._live_info(conn, key, at)
                if live is not None:
                    self._slide(conn, key, live, at)

            # A read acknowledges no write: its slide commits without an fsync of its own
            # (durable once any later commit's fsync takes the WAL with it), so a read of a
            # session with a TTL costs no disk flush at durability "power" either.
            await self._transaction(slide, write=True, flush=False)
        return result

    # -- sessions -------------------------------------------------------------------------

    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        def work(conn: sqlite3.Connection) -> SessionInfo:
            at = now()
            info = self._live_info(conn, key, at, purge=True)
            if info is None:
                return self._insert_session(conn, key, self._new_ttl(ttl), metadata, at)
            new_ttl = info.ttl if ttl is UNSET else ttl
            expires = None if new_ttl is None else at + new_ttl
            if new_ttl is not None and not self.sliding_ttl and ttl is UNSET:
                expires = info.expires_at
            merged = {**info.metadata, **metadata}
            conn.execute(
                "UPDATE ps_sessions SET ttl=?, metadata=? WHERE user_id=? AND session_id=?",
                (new_ttl, dumps(merged), key.user_id, key.session_id),
            )
            conn.execute(SET_EXPIRY, (expires, key.user_id, key.session_id))
            return cast(SessionInfo, self._fetch_info(conn, key))  # just written

        return await self._write(work)

    async def read_record(self, key: Key) -> SessionInfo | None:
        rows = self._rows_at_once(INFO, (key.user_id, key.session_id))  # one statement
        if rows is not None:
            info = self._info_from_row(key.user_id, rows[0]) if rows else None
            return resolve_info(info, key.user_id, key.session_id, now(), False)

        def work(conn: sqlite3.Connection) -> SessionInfo | None:
            return self._live_info(conn, key, now())

        return await self._transaction(work, write=False)

    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        def work(conn: sqlite3.Connection) -> SessionInfo:
            at = now()
            info = self._writable(conn, key, at, True)
            conn.execute(
                "UPDATE ps_sessions SET metadata=? WHERE user_id=? AND session_id=?",
                (dumps({**info.metadata, **metadata}), key.user_id, key.session_id),
            )
            self._bump(conn, key, info, at)
            return cast(SessionInfo, self._fetch_info(conn, key))  # just written

        return await self._write(work)

    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        return await self._listed(
            f"SELECT {INFO_COLUMNS}, s.user_id {SESSION_AND_HEAD} WHERE s.user_id=? "
            "AND s.session_id>? AND (h.expires_at IS NULL OR h.expires_at>?) "
            "ORDER BY s.session_id LIMIT ?",
            (user_id, after or "", now(), limit),
        )

    async def list_records_by_prefix(
        self, prefix: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[SessionInfo]:
        # the range of the prefix in the index by session id: from the prefix (or the last
        # page's pair) up to the prefix's successor, so the search ends where the prefix does
        start_id, start_user = after if after is not None and after[0] >= prefix else (prefix, "")
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else chr(0x10FFFF) * 2

        return await self._listed(
            f"SELECT {INFO_COLUMNS}, s.user_id {SESSION_AND_HEAD} "
            "WHERE (s.session_id, s.user_id) > (?1, ?2) AND s.session_id < ?3 "
            "AND s.user_id != ?4 AND (h.expires_at IS NULL OR h.expires_at > ?5) "
            "ORDER BY s.session_id, s.user_id LIMIT ?6",
            (start_id, start_user, upper, SNAPSHOT_OWNER, now(), limit),
        )

    async def _listed(self, query: str, params: tuple[Any, ...]) -> list[SessionInfo]:
        """The records a listing ``query`` selects: one statement reads one snapshot, so it
        runs outside a transaction when it can (else in one, which retries a busy file)."""
        rows = self._rows_at_once(query, params)
        if rows is not None:
            return self._infos_from_rows(rows)

        def work(conn: sqlite3.Connection) -> list[SessionInfo]:
            return self._infos_from_rows(conn.execute(query, params).fetchall())

        return await self._transaction(work, write=False)

    async def list_record_owners(self) -> set[str]:
        def work(conn: sqlite3.Connection) -> set[str]:
            rows = conn.execute(
                "SELECT DISTINCT user_id FROM ps_state "
                "WHERE name='' AND (expires_at IS NULL OR expires_at>?)",
                (now(),),
            ).fetchall()
            return {user_id for (user_id,) in rows}

        return await self._transaction(work, write=False)

    async def delete_record(self, key: Key) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            live = self._live_ttl(conn, key, now())[0]  # a live session's metadata not decoded
            self._delete_rows(conn, key)
            return live

        return await self._write(work)

    async def delete_record_without_state(self, key: Key) -> bool:
        def work(conn: sqlite3.Connection) -> bool:
            if not self._live_ttl(conn, key, now())[0]:
                return False
            if conn.execute(ANY_STATE, (key.user_id, key.session_id)).fetchone() is not None:
                return False  # written to meanwhile: kept, with what it holds
            self._delete_rows(conn, key)
            return True

        return await self._write(work)  # one transaction: no write slips in before the delete

    async def drop_record_state(self, key: Key, *, names: list[str]) -> bool:
        ids = (key.user_id, key.session_id)

        def work(conn: sqlite3.Connection) -> bool:
            at = now()  # the version bumped as a patch bumps it; a record not live is left
            if self._cursor().execute(BUMP_LIVE, (at, self.sliding_ttl, *ids)).rowcount != 1:
                info = self._live_info(conn, key, at, False, purge=True)
                if info is None:
                    return False
                self._bump(conn, key, info, at)
            conn.executemany(DELETE_KEY, [(*ids, name) for name in names])
            if conn.execute(ANY_STATE, ids).fetchone() is not None:
                return False
            self._delete_rows(conn, key)
            return True

        return await self._write(work)  # one transaction, one commit

    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        def work(conn: sqlite3.Connection) -> SessionInfo | None:
            at = now()
            info = self._live_info(conn, key, at, purge=True)
            if info is None:
                return None
            new_ttl = info.ttl if ttl is UNSET else ttl
            ids = (key.user_id, key.session_id)
            conn.execute(
                "UPDATE ps_sessions SET ttl=? WHERE user_id=? AND session_id=?",
                (new_ttl, *ids),
            )
            conn.execute(SET_EXPIRY, (None if new_ttl is None else at + new_ttl, *ids))
            return self._fetch_info(conn, key)

        return await self._write(work)

    async def scrub_erased_user(self, user_id: str) -> None:
        """After an erasure: rebuild the file, then empty the write-ahead log.

        ``secure_delete`` zeroes a deleted row and a freed page, but not the old copies of
        cells that SQLite moved while it split and merged pages as the file grew: they stay in
        the unused middle of pages that still hold other rows (found with 2,000 sessions of a
        user). ``VACUUM`` writes every live row to fresh pages, so none of those gaps survive;
        the write-ahead log, which held the erased rows as they were, is then checkpointed into
        the file and truncated. It costs a rewrite of the whole file, once per erasure."""
        started, patience = time.monotonic(), remaining(self.busy_timeout)
        for step in ("VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"):
            while True:
                try:
                    found = self._connection().execute(step).fetchone()
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc):
                        raise StoreUnavailableError(f"SQLite error on {self.path}: {exc}") from exc
                    found = (1,)
                if not found or not found[0]:  # VACUUM returns no row; a checkpoint (0, ...)
                    break
                if time.monotonic() - started > patience:
                    raise StoreUnavailableError(
                        f"{self.path}: the erased rows are deleted, but another connection kept "
                        "the file busy for longer than busy_timeout, so its free space or its "
                        "write-ahead log may still hold them. Close other programs using the "
                        "file and erase the user again."
                    )
                await pause(0.01)

    async def purge_records(self) -> int:
        def work(conn: sqlite3.Connection) -> int:
            expired = conn.execute(
                "SELECT user_id, session_id FROM ps_state WHERE expires_at<=? AND name=''",
                (now(),),
            ).fetchall()
            for user_id, session_id in expired:
                self._delete_rows(conn, Key(user_id, session_id))
            return len(expired)

        return await self._write(work)

    # -- key-value state ------------------------------------------------------------------

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        if names is None:
            rows = self._read_at_once(LIVE_STATE, (key.user_id, key.session_id))
            if rows is not None:
                return self._state_of([(row[3], row[4]) for row in rows if row[3] is not None], key)
        elif len(names) == 1:
            rows = self._read_at_once(LIVE_VALUE, (key.user_id, key.session_id, names[0]))
            if rows is not None:
                value = rows[0][3]
                return {} if value is None else {names[0]: self._decode(value, key, names[0])}
        read = partial(self._state_in_transaction, key, names)
        return await self._read_then_slide(key, read, must_exist) or {}

    def _state_in_transaction(
        self, key: Key, names: list[str] | None, conn: sqlite3.Connection
    ) -> dict[str, Any]:
        """The state's keys ``names`` (None: every key), read in a transaction."""
        if names is None:
            rows = conn.execute(STATE_KEYS, (key.user_id, key.session_id)).fetchall()
        elif len(names) == 1:
            ids = (key.user_id, key.session_id, names[0])
            rows = self._cursor().execute(GET_VALUE, ids).fetchall()
        else:
            rows = conn.execute(
                "SELECT name, value FROM ps_state WHERE user_id=? AND session_id=? "
                f"AND name IN ({','.join('?' * len(names))})",
                (key.user_id, key.session_id, *names),
            ).fetchall()
        return self._state_of(rows, key)

    async def read_record_state_matching(
        self, key: Key, *, fields: Fields, must_exist: bool, newest: Newest | None = None
    ) -> dict[str, Any]:
        """SQLite narrows in its own code (``json_extract``), so only the values that may
        match are decoded here; a damaged value is read the plain way, which names it."""
        narrowed = matching(fields, newest)
        if narrowed is None:
            return await self.read_record_state(key, names=None, must_exist=must_exist)
        condition, tests = narrowed
        ids = (key.user_id, key.session_id)
        rows = self._read_at_once(LIVE_STATE_MATCHING.format(condition=condition), (*ids, *tests))
        if rows is not None:
            return self._state_of([(row[3], row[4]) for row in rows if row[3] is not None], key)
        query = STATE_MATCHING.format(condition=condition)

        def work(conn: sqlite3.Connection) -> dict[str, Any] | None:
            try:
                found = conn.execute(query, (*ids, *tests)).fetchall()
            except sqlite3.OperationalError:  # a value that is not JSON
                return None
            return self._state_of(found, key)

        state = await self._read_then_slide(key, work, must_exist)
        if state is None:  # not live (then {} as below), or a damaged value to name
            return await self.read_record_state(key, names=None, must_exist=must_exist)
        return state

    def _state_of(self, rows: list[tuple[str, str]], key: Key) -> dict[str, Any]:
        """State rows decoded, many in one parse (a parse each was most of the time of
        reading a state of a hundred keys); a damaged one is named by its own."""
        try:
            values = loads_each([text for _, text in rows], "", objects=False)
        except SessionCorruptedError:  # decoded again, row by row, to say which one it is
            return {name: self._decode(value, key, name) for name, value in rows}
        return {name: value for (name, _), value in zip(rows, values, strict=True)}

    def _decode(self, value: str, key: Key, name: str) -> Any:
        try:
            return loads(value, "")
        except SessionCorruptedError:  # decode it again to say what it is (paths print slowly)
            return loads(value, f"state key {name!r} of session {key.session_id!r} ({self.path})")

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
        def work(conn: sqlite3.Connection) -> int:
            self._begin_write(conn, key, now(), must_exist)
            row = self._cursor().execute(VERSION, (key.user_id, key.session_id)).fetchone()
            version: int = row[0]
            # a new session is at version 0 before this write; a conflict rolls it all back
            check_version(key.session_id, version - 1, expected_version)
            if replace:
                conn.execute(
                    "DELETE FROM ps_state WHERE user_id=? AND session_id=? AND name>''",
                    (key.user_id, key.session_id),
                )
            if deletes:
                conn.executemany(
                    DELETE_KEY, [(key.user_id, key.session_id, name) for name in deletes]
                )
            rows = [(key.user_id, key.session_id, n, dumps(v)) for n, v in updates.items()]
            if len(rows) == 1:
                self._cursor().execute(UPSERT_STATE, rows[0])
            elif rows:
                conn.executemany(UPSERT_STATE, rows)
            return version

        return await self._write(work)

    def increment_record_value(  # the transaction's coroutine itself: one frame fewer
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> Coroutine[Any, Any, int | float]:
        def work(conn: sqlite3.Connection) -> int | float:
            # Under the write lock. A refused sum raises before the transaction commits.
            at = now()
            cursor = self._threads[get_ident()].cursor
            seen = self._seen.get((key, name))
            if (
                seen is not None
                and cursor.execute(
                    BUMP_LIVE,
                    (at, self.sliding_ttl, key.user_id, key.session_id),
                ).rowcount
            ):
                # A live session, bumped (version, updated_at, sliding expiry) in one UPDATE:
                # the value is written only if it is still the one this process last saw.
                value = add_numbers(seen[1], amount, name)
                text = dumps(value)
                if cursor.execute(
                    SET_IF_HELD, (key.user_id, key.session_id, name, text, seen[0])
                ).rowcount:
                    self._seen[key, name] = (text, value)  # _saw, inlined: the hot path
                    return value
                return self._add_to_stored(cursor, key, name, amount, default)
            return self._increment_read_first(conn, cursor, key, name, amount, default, must_exist)

        return self._transaction(work, True)

    def _add_to_stored(
        self, cursor: sqlite3.Cursor, key: Key, name: str, amount: int | float, default: int | float
    ) -> int | float:
        """The value as stored plus ``amount``, written (the session already bumped)."""
        row = cursor.execute(GET_VALUE, (key.user_id, key.session_id, name)).fetchone()
        current = default if row is None else self._decode(row[1], key, name)
        value = add_numbers(current, amount, name)
        text = dumps(value)
        cursor.execute(UPSERT_STATE, (key.user_id, key.session_id, name, text))
        self._saw(key, name, text, value)
        return value

    def _increment_read_first(
        self,
        conn: sqlite3.Connection,
        cursor: sqlite3.Cursor,
        key: Key,
        name: str,
        amount: int | float,
        default: int | float,
        must_exist: bool,
    ) -> int | float:
        """An increment of a value this process has not seen, or of a session that is not
        live as it is: read the head and the value, add with Python's rule (exact for every
        int and float), write both."""
        at = now()
        ids = (key.user_id, key.session_id, name)
        row = cursor.execute(INCREMENT_READ, ids).fetchone()
        head = None if row is None else self._live_head(row, at)
        if head is None:
            head = self._full_head(conn, key, at, must_exist)
            row = cursor.execute(GET_VALUE, ids).fetchone()
            stored = None if row is None else row[1]
        else:
            stored = row[4]
        current = default if stored is None else self._decode(stored, key, name)
        value = add_numbers(current, amount, name)
        version, expires = head
        text = dumps(value)
        cursor.execute(
            INCREMENT_WRITE, (key.user_id, key.session_id, version, at, expires, name, text)
        )
        self._saw(key, name, text, value)
        return value

    def _saw(self, key: Key, name: str, text: str, value: int | float) -> None:
        """Remember the text a number was last written as (``_seen``): the next increment of
        it writes only if it is still that text, and skips reading it."""
        seen = self._seen
        if len(seen) >= _SEEN_REMEMBERED:
            seen.clear()
        seen[key, name] = (text, value)

    # -- modules and logs -----------------------------------------------------------------

    def _log_end(self, key: Key, path: str) -> tuple[int | None, int]:
        """A log's first row in ``ps_entries`` (None if it was never written) and its length."""
        row = self._cursor().execute(LOG_END, (key.user_id, key.session_id, path)).fetchone()
        return (None, 0) if row is None else _end_of(*row)

    def _log_length(self, conn: sqlite3.Connection, key: Key, path: str) -> int:
        return self._log_end(key, path)[1]

    def _write_log(self, conn: sqlite3.Connection, key: Key, write: LogWrite) -> int:
        """Apply ``write`` to its log (created on its first message); its new length. One
        message at a length expected (a LangGraph put, an OpenAI turn checked against its
        length) is one statement that checks the length as it appends; else the log's end is
        read first."""
        start = write.start
        if start is not None and 0 < start < SPAN - 1 and len(write.messages) == 1:
            cursor = self._cursor()
            ids = (key.user_id, key.session_id, write.path)
            cursor.execute(APPEND_AT, (*ids, start, dumps(write.messages[0])))
            if cursor.rowcount == 1:
                return start + 1  # else another length, or no log: said below
        base, length = self._log_end(key, write.path)
        if write.start is None:
            if base is not None:
                conn.execute(CUT, (base, base + SPAN))
            length = 0
        elif write.start != -1 and write.start != length:
            raise ConflictError(f"Log {write.path!r} holds {length} messages, not {write.start}.")
        if not write.messages:
            return length
        if length + len(write.messages) > SPAN:
            raise InvalidValueError(
                f"Log {write.path!r} of session {key.session_id!r} would hold more than {SPAN:,} "
                "messages in SQLite: start a new log (or a new session) for the rest."
            )
        if base is None:
            base = self._new_log(key, write.path)
        first = base + length
        rows = [(first + i, dumps(message)) for i, message in enumerate(write.messages)]
        if len(rows) == 1:
            self._cursor().execute(APPEND, rows[0])
        else:
            conn.executemany(APPEND, rows)
        return length + len(rows)

    def _new_log(self, key: Key, path: str) -> int:
        """A row of ``ps_logs`` for a log's first message; the first row of its messages."""
        number = self._cursor().execute(NEW_LOG, (key.user_id, key.session_id, path)).lastrowid
        if number is None or number > MAX_LOG_ID:
            raise StoreUnavailableError(
                f"{self.path} has numbered {MAX_LOG_ID:,} message logs; copy its sessions to a "
                "new file (praisonsession's export and import)."
            )
        return number * SPAN

    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        def work(conn: sqlite3.Connection) -> dict[str, int]:
            self._begin_write(conn, key, now(), False)
            return self._save_modules(conn, key, documents, writes)

        return await self._write(work)

    async def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        def work(conn: sqlite3.Connection) -> dict[str, int]:
            at = now()
            if self._live_info(conn, key, at, purge=True) is not None:
                raise ConflictError(create_conflict(key))
            self._bump(
                conn, key, self._insert_session(conn, key, self.default_ttl, metadata, at), at
            )
            return self._save_modules(conn, key, documents, writes)

        return await self._write(work)  # one transaction: one commit

    def _save_modules(
        self,
        conn: sqlite3.Connection,
        key: Key,
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        """Module documents and log writes, in a write transaction that holds the session."""
        rows = [(key.user_id, key.session_id, n, dumps(d)) for n, d in documents.items()]
        if len(rows) == 1:  # a LangGraph put_writes: the thread's cursor, no executemany
            self._cursor().execute(UPSERT_MODULE, rows[0])
        elif rows:
            conn.executemany(UPSERT_MODULE, rows)
        return {write.path: self._write_log(conn, key, write) for write in writes}

    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        if 0 < len(names) <= _QUERIES_KEPT:
            query = _for_names(LIVE_DOCUMENTS, len(names))
            rows = self._read_at_once(query, (key.user_id, key.session_id, *names))
            if rows is not None and not any(row[5] for row in rows):  # no log below any
                documents = {
                    name: _document(text, name, key)
                    for _, _, _, name, text, _ in rows
                    if name is not None
                }
                return StoredModules(documents, {})
        return await self._read_then_slide(key, lambda conn: self._modules(conn, key, names))

    def _modules(self, conn: sqlite3.Connection, key: Key, names: list[str]) -> StoredModules:
        documents = {}
        logs: dict[str, list[dict[str, Any]]] = {}
        found: dict[str, tuple[str, int]] = {}
        cursor = self._cursor()
        for at in range(0, len(names), _NAMES_AT_ONCE):  # the documents held, in one query
            chunk = names[at : at + _NAMES_AT_ONCE]
            query = _for_names(MODULE_DOCUMENTS, len(chunk))
            for name, text, below in cursor.execute(query, (key.user_id, key.session_id, *chunk)):
                found[name] = (text, below)
        for name in names:
            held = found.get(name)
            if held is not None and name not in documents:
                documents[name] = _document(held[0], name, key)
        for name in outermost(documents):  # a name below another: its logs are in that range
            if not found[name][1]:
                continue  # no log lies below it (most documents)
            rows = conn.execute(
                MODULE_LOGS, (key.user_id, key.session_id, name, name + "/", name + ".")
            ).fetchall()
            for path, message in rows:
                logs.setdefault(path, []).append(loads(message, _log_named(key, path)))
        return StoredModules(documents, logs)

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        def work(conn: sqlite3.Connection) -> int:
            self._begin_write(conn, key, now(), False)
            return self._write_log(conn, key, write)

        return await self._write(work)

    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        if start >= 0 or stop is None:  # no count first: one statement when plainly live
            tail, params = _window((key.user_id, key.session_id, path), start, stop)
            rows = self._read_at_once(LIVE_LOG_TAIL if tail else LIVE_LOG_RANGE, params)
            if rows is not None:
                if tail:
                    rows.reverse()
                messages = [row[3] for row in rows if row[3] is not None]
                return loads_each(messages, _log_named(key, path))
        found = await self._read_then_slide(
            key, lambda conn: self._messages(conn, key, path, start, stop)
        )
        return found or []

    def _messages(
        self, conn: sqlite3.Connection, key: Key, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        if start < 0 and stop is not None:  # a range from the end: the log's length first
            start = max(0, self._log_length(conn, key, path) + start)
        tail, params = _window((key.user_id, key.session_id, path), start, stop)
        rows = conn.execute(LOG_TAIL if tail else LOG_RANGE, params).fetchall()
        if tail:
            rows.reverse()
        return loads_each([m for (m,) in rows], _log_named(key, path))

    async def read_log_and_modules(
        self, key: Key, *, path: str, start: int, stop: int | None, names: ModuleNames
    ) -> tuple[list[dict[str, Any]], StoredModules | None]:
        """Both reads in one transaction: one snapshot, one liveness check."""

        def work(conn: sqlite3.Connection) -> tuple[list[dict[str, Any]], StoredModules | None]:
            messages = self._messages(conn, key, path, start, stop)
            wanted = names(messages)
            return messages, (self._modules(conn, key, wanted) if wanted else None)

        return await self._read_then_slide(key, work) or ([], None)

    async def read_modules_and_log(
        self, key: Key, *, names: list[str], path: str, span: LogSpan
    ) -> tuple[StoredModules | None, list[dict[str, Any]]]:
        """Both reads in one transaction: one snapshot, one liveness check."""

        def work(conn: sqlite3.Connection) -> tuple[StoredModules | None, list[dict[str, Any]]]:
            stored = self._modules(conn, key, names)
            where = span(stored.documents)
            if where is None:
                return stored, []
            return stored, self._messages(conn, key, path, where[0], where[1])

        return await self._read_then_slide(key, work) or (None, [])

    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            self._begin_write(conn, key, now(), True)
            base, held = self._log_end(key, path)
            if expected is not None and held != expected:
                raise ConflictError(f"Log {path!r} holds {held} messages, not {expected}.")
            if base is None or length >= held:
                return []
            cut = (base + max(length, 0), base + SPAN)  # never into the log numbered before
            what = _log_named(key, path)
            removed = [loads(message, what) for (message,) in conn.execute(ENTRIES, cut)]
            conn.execute(CUT, cut)
            return removed

        return await self._write(work)

    async def count_log(self, key: Key, *, path: str) -> int:
        rows = self._read_at_once(LIVE_LOG_END, (key.user_id, key.session_id, path))
        if rows is not None:  # one statement: the session plainly live
            return _end_of(*rows[0][3:])[1]

        def work(conn: sqlite3.Connection) -> int:
            if not self._live_ttl(conn, key, now())[0]:
                return 0
            return self._log_length(conn, key, path)

        return await self._transaction(work, write=False)

    # -- what a cache of reads may trust --------------------------------------------------

    async def stamped(
        self, key: Key, operation: Callable[[], Awaitable[T]], names: Sequence[str] = ()
    ) -> Stamped:
        """The stamp is taken inside the operation's first transaction (or its first write
        transaction, when reads came first), after its statements (``_Slot``): this
        connection's ``data_version`` (SQLite moves it when any other connection, of any
        process, commits) and ``total_changes`` (every row this connection changed, for every
        store of the process sharing it), with the session found live with no expiry and no
        TTL. Taken inside, it names exactly the state the operation read or left, even when a
        commit group ran other writers' work in the same transaction (theirs after it move
        ``total_changes`` on)."""
        slot = _Slot(self, key, tuple(names))
        token = _STAMPING.set(slot)
        try:
            value = await operation()
        finally:
            restore(_STAMPING, token)
        return Stamped(value, slot.stamp, slot.documents if slot.stamp is not None else None)

    def unchanged_since(self, stamp: Any) -> bool:
        """One ``PRAGMA data_version`` on this thread's connection, when the stamp was taken
        on it and it has changed no row since."""
        if type(stamp) is not _Stamp:
            return False
        here = self._threads.get(get_ident())
        conn = stamp.conn
        if here is None or here.conn is not conn or conn.total_changes != stamp.changes:
            return False
        if conn.in_transaction:
            return False
        try:
            row = here.cursor.execute(DATA_VERSION).fetchone()
        except sqlite3.Error:
            return False
        return row is not None and row[0] == stamp.version

    def _stamp(
        self, conn: sqlite3.Connection, key: Key, names: tuple[str, ...]
    ) -> tuple[_Stamp | None, dict[str, Any]]:
        """Inside a transaction: the stamp of what it sees, and the documents ``names``."""
        return self._stamp_of(conn, self._stamp_row(conn, key, names), names, now())

    def _stamp_row(
        self, conn: sqlite3.Connection, key: Key, names: tuple[str, ...]
    ) -> tuple[Any, ...] | None:
        query = _STAMP_QUERIES.get(len(names))
        if query is None:
            documents = "".join(STAMP_DOCUMENT.format(number=n + 3) for n in range(len(names)))
            query = _STAMP_QUERIES[len(names)] = STAMP.replace("{documents}", documents)
        row: tuple[Any, ...] | None = conn.execute(
            query, (key.user_id, key.session_id, *names)
        ).fetchone()
        return row

    def _stamp_of(
        self,
        conn: sqlite3.Connection,
        row: tuple[Any, ...] | None,
        names: tuple[str, ...],
        at: float,
    ) -> tuple[_Stamp | None, dict[str, Any]]:
        """The stamp a row of ``STAMP`` makes: none unless the session is live with no expiry
        and no TTL (time may expire or slide it)."""
        if row is None or row[2] is not None or row[3] is not None:
            return None, {}
        if not _live_as_read(row[1], row[2], row[3], at):
            return None, {}
        found: dict[str, Any] = {}
        for name, text in zip(names, row[4:], strict=True):
            if text is not None:
                try:
                    found[name] = loads(text, "")
                except SessionCorruptedError:
                    return None, {}
        return _Stamp(conn, row[0], conn.total_changes), found

    # -- whole records (forks, snapshots, archives) ---------------------------------------

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
        """The record onto another key in one atomic step (see ``StoreBackend.copy_record``)."""

        def work(conn: sqlite3.Connection) -> SessionInfo:
            at = now()
            # must_exist: a source that is not live has raised
            found = cast(SessionInfo, self._live_info(conn, source, at, must_exist=True))
            current = self._live_info(conn, target, at, purge=True)
            if current is not None and not replace:
                raise ConflictError(copy_conflict(target))
            info = copied_info(found, target, current, metadata, ttl, at)
            ids = (target.user_id, target.session_id)
            if current is not None:
                conn.execute(SESSION_ENTRIES, ids)
                for table in CONTENT_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE user_id=? AND session_id=?", ids)
            conn.execute(
                "INSERT OR REPLACE INTO ps_sessions (user_id, session_id, format, created_at,"
                " ttl, metadata) VALUES (?,?,?,?,?,?)",
                (*ids, FORMAT_VERSION, info.created_at, info.ttl, dumps(dict(info.metadata))),
            )
            conn.execute(INSERT_HEAD, (*ids, info.version, info.updated_at, info.expires_at))
            sources = (source.user_id, source.session_id)
            for statement in COPY_ROWS:
                conn.execute(statement, (*ids, *sources))
            for number, log in conn.execute(LOGS_OF, sources).fetchall():
                keep = SPAN if cut is None or cut[0] != log else min(cut[1], SPAN)
                copy = self._new_log(target, log) // SPAN
                conn.execute(COPY_ENTRIES, (number, copy, keep))
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
                for name, value in conn.execute(STATE_KEYS, ids)
            }
            modules = {
                name: loads(document, f"module {name!r} of {what}")
                for name, document in conn.execute(
                    "SELECT name, document FROM ps_modules WHERE user_id=? AND session_id=?", ids
                )
            }
            counts = dict(conn.execute(LOG_COUNTS, ids).fetchall())
            return SessionContents(info, state, modules, counts)

        return await self._transaction(work, write=False)


def _for_names(template: str, count: int) -> str:
    """``template`` with ``count`` placeholders in place of ``{names}``."""
    query = _NAMED_QUERIES.get((template, count))
    if query is None:
        query = template.replace("{names}", ",".join("?" * count))
        if count <= _QUERIES_KEPT:
            _NAMED_QUERIES[(template, count)] = query
    return query


def _window(
    ids: tuple[str, str, str], start: int, stop: int | None
) -> tuple[bool, tuple[Any, ...]]:
    """How a log's messages ``start:stop`` are read (``start`` counted from the end only with
    no ``stop``): whether as a tail (newest first), and the parameters of ``LOG_TAIL`` or
    ``LOG_RANGE`` (and of their ``LIVE_`` twins)."""
    if start < 0:
        return True, (*ids, -start)
    return False, (*ids, min(start, SPAN), SPAN if stop is None else min(stop, SPAN))


def _end_of(log_id: int | None, last: int | None) -> tuple[int | None, int]:
    """A log's first row in ``ps_entries`` (None if it was never written) and its length,
    from its id in ``ps_logs`` and its last row's id (as ``LOG_END`` reads them)."""
    if log_id is None:
        return None, 0
    base = log_id * SPAN
    return base, 0 if last is None else last - base + 1


def _log_named(key: Key, path: str) -> str:
    """A log, as an error about a message of it names it."""
    return f"message log {path!r} of session {key.session_id!r}"


def _document(text: str, name: str, key: Key) -> Any:
    """A module's stored document, decoded (a damaged one named)."""
    return loads(text, f"module {name!r} of session {key.session_id!r}")


def _live_as_read(fmt: Any, expires: Any, ttl: Any, at: float) -> bool:
    """A session's row says it is live at ``at``, of a format this version reads, every field
    of the expected type (else the full path says why not)."""
    return (
        type(fmt) is int
        and 0 <= fmt <= FORMAT_VERSION
        and (expires is None or (type(expires) is float and expires > at))
        and (ttl is None or type(ttl) is float)
    )


class _Stamp(NamedTuple):
    """What ``SqliteBackend.unchanged_since`` compares: the connection it was taken on, its
    ``data_version`` and its ``total_changes`` then."""

    conn: sqlite3.Connection
    version: int
    changes: int


class _Slot:
    """One ``stamped`` call: the stamp of its first transaction's work, or of its first write
    (``around``)."""

    __slots__ = ("backend", "documents", "key", "names", "stamp", "taken", "written")

    def __init__(self, backend: SqliteBackend, key: Key, names: tuple[str, ...]) -> None:
        self.backend = backend
        self.key = key
        self.names = names
        self.taken = False
        self.written = False  # stamped by a write transaction
        self.stamp: _Stamp | None = None
        self.documents: dict[str, Any] = {}

    def around(
        self, work: Callable[[sqlite3.Connection], T], write: bool
    ) -> Callable[[sqlite3.Connection], T]:
        def stamping(conn: sqlite3.Connection) -> T:
            result = work(conn)
            # The first: what later reads read is certified only with it. A write after
            # reads (the key guard's look for an encryption mark, made before a write every
            # half second) changes rows, so a stamp of those reads would never be certified:
            # it takes the stamp of what it left instead.
            if not self.taken or (write and not self.written):
                self.taken = True
                self.written = write
                self.stamp, self.documents = self.backend._stamp(conn, self.key, self.names)
            return result

        return stamping


#: The ``stamped`` call the running code is inside, if any (its transactions take the stamp).
_STAMPING: ContextVar[_Slot | None] = ContextVar("praisonsession_sqlite_stamping", default=None)
#: ``STAMP`` with a column per document, by how many.
_STAMP_QUERIES: dict[int, str] = {}


def _after_fork_in_child() -> None:
    forget_after_fork(_inherited)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


#: What ``_attempts`` returns, not ``patient``, when the file is busy.
_BUSY = object()


def _nothing(conn: sqlite3.Connection) -> None:
    """A transaction's work that does nothing: opens this thread's connection and the
    schema."""


_INTERRUPTED = (
    "The thread committing this write together with others was interrupted (KeyboardInterrupt "
    "or SystemExit), so whether the write was applied is unknown: read it back before writing "
    "it again."
)


class _TransactionLost(Exception):
    """SQLite ended a grouped transaction on one writer's statement (a full disk, an I/O
    error): ``failed`` get their errors, ``again`` lost their work with it and go again."""

    def __init__(self, failed: list[Writer], again: list[Writer]) -> None:
        super().__init__("the transaction was rolled back")
        self.failed = failed
        self.again = again


#: AgentScope's sessions in its table that were never adopted here.
_NOT_ADOPTED = (
    "SELECT session_id, session_data FROM as_session WHERE session_id NOT IN "
    "(SELECT session_id FROM ps_imported WHERE source='agentscope')"
)


#: SQLite's primary result codes SQLITE_BUSY and SQLITE_LOCKED (named by sqlite3 from 3.11).
_BUSY_CODES = (5, 6)


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES
    return "locked" in str(exc) or "busy" in str(exc)
