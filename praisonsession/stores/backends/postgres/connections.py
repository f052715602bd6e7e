"""Where a PostgreSQL store's statements run: a blocking connection of the caller's thread, or
an asyncio pool, with one code path for what the statements are.

An operation is a *plan*: a generator that yields :class:`Query` objects and is sent back each
one's rows. :class:`Connections` drives a plan on whichever connection fits the caller:

- no event loop on this thread (``Session`` runs the store's coroutine inline): one blocking
  ``psycopg.Connection`` per thread, kept open. Its coroutine never suspends, so the sync
  facade pays no hop to the background loop: a call costs its round trips;
- on an event loop (``AsyncSession``, the server): a ``psycopg_pool.AsyncConnectionPool`` of
  that loop.

Connections are in autocommit: a plan of one statement is one round trip, and a plan that
needs more runs in ``BEGIN ... COMMIT``. A forked child never uses its parent's connections
(closing one there would end the parent's session on the server): it keeps them untouched and
opens its own.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Generator
from typing import Any, NamedTuple, TypeVar, cast

from ...._internal.runtime import loop_running_here, remaining

T = TypeVar("T")

__all__ = ["Connections", "Plan", "Query", "Refused", "Unreachable"]


class Unreachable(Exception):
    """No connection could be made: nothing of the call was sent, so it may be retried."""


class Refused(Exception):
    """The server answered and refused the connection (authentication, a setting, a
    database that does not exist): trying again would not help."""


class Query(NamedTuple):
    """One statement and its parameters."""

    sql: str
    params: Any = ()


Plan = Generator[Query, list[tuple[Any, ...]], T]

_inherited: list[Any] = []  # connections inherited through fork: kept, never used or closed
_all: weakref.WeakSet[Connections] = weakref.WeakSet()
#: Every pool opened and not yet closed, with its loop: held here so that a store dropped
#: while its loop is idle does not leave the pool's tasks to be destroyed pending.
_open_pools: list[tuple[Any, Any]] = []


class Connections:
    """The connections of one store: ``conninfo`` plus psycopg keyword arguments."""

    def __init__(
        self,
        conninfo: str,
        *,
        pool_size: int,
        connect_timeout: float,
        configure: Callable[[Any], None] | None = None,
    ) -> None:
        self.conninfo = conninfo
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[Any] = []
        self._pools: dict[Any, Any] = {}  # event loop -> its AsyncConnectionPool
        self._pid = os.getpid()
        _all.add(self)

    # -- running a plan -------------------------------------------------------------------

    async def run(self, plan: Plan[T], transaction: bool) -> T:
        """Drive ``plan`` to its end, in one transaction if asked; return what it returns."""
        if loop_running_here():
            return await self._run_async(plan, transaction)
        conn = self._thread_connection()
        try:
            if transaction:
                with conn.transaction():
                    return _feed(self._local.cursor, plan)
            return _feed(self._local.cursor, plan)
        except BaseException:
            if conn.broken or conn.closed:
                self._drop_thread_connection(conn)
            raise

    async def _run_async(self, plan: Plan[T], transaction: bool) -> T:
        from psycopg_pool import PoolTimeout

        try:
            pool = await self._pool()
            conn = await pool.getconn(timeout=max(0.001, remaining(self.connect_timeout)))
        except PoolTimeout as exc:
            raise Unreachable(str(exc)) from None
        try:
            if transaction:
                async with conn.transaction():
                    return await _feed_async(conn, plan)
            return await _feed_async(conn, plan)
        finally:
            await pool.putconn(conn)

    # -- the blocking connection of this thread -------------------------------------------

    def _thread_connection(self) -> Any:
        if self._pid != os.getpid():
            self._forget_after_fork()
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed:
            return conn
        import psycopg

        try:
            conn = psycopg.connect(
                self.conninfo,
                autocommit=True,
                connect_timeout=max(1, round(remaining(self.connect_timeout))),
            )
        except psycopg.OperationalError as exc:
            if "FATAL:" in str(exc):
                raise Refused(str(exc)) from None
            raise Unreachable(str(exc)) from None
        self._local.conn = conn
        self._local.cursor = conn.cursor()  # reused: a cursor per statement costs more
        with self._lock:
            self._opened.append(conn)
        return conn

    def _drop_thread_connection(self, conn: Any) -> None:
        self._local.conn = None
        with self._lock:
            if conn in self._opened:
                self._opened.remove(conn)
        with contextlib.suppress(Exception):  # already broken: nothing more to release
            conn.close()

    # -- the pools of event loops -----------------------------------------------------------

    async def _pool(self) -> Any:
        import asyncio

        if self._pid != os.getpid():
            self._forget_after_fork()
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = made = _pool_class()(
                self.conninfo,
                min_size=1,
                max_size=self.pool_size,
                kwargs={"autocommit": True, "connect_timeout": max(1, round(self.connect_timeout))},
                timeout=self.connect_timeout,
                open=False,
                name="praisonsession",
            )
            with self._lock:
                for other in [lp for lp in self._pools if lp.is_closed()]:
                    del self._pools[other]  # its loop is gone, and its tasks with it
                self._pools[loop] = pool
                _open_pools[:] = [(lp, p) for lp, p in _open_pools if not lp.is_closed()]
                _open_pools.append((loop, pool))
            # Opened with its first connection made, not in the background: a connection
            # still being made when the loop ends would hang asyncio.run, since the pool's
            # tasks take that cancellation for a failed attempt and try again (psycopg_pool
            # expects pools to be closed, and a loop's end closes nothing). The open marks it
            # open at once, so a second caller of this loop waits in getconn meanwhile.
            try:
                await pool.open(wait=True, timeout=max(0.001, remaining(self.connect_timeout)))
            except BaseException:
                with self._lock:
                    if self._pools.get(loop) is made:
                        del self._pools[loop]
                await made.close()
                raise
        return pool

    async def close(self) -> None:
        """Close this thread's connection, every other thread's, and the pools."""
        import asyncio

        with self._lock:
            opened, self._opened = self._opened, []
            pools, self._pools = self._pools, {}
        self._local = threading.local()
        for conn in opened:
            with contextlib.suppress(Exception):  # a broken one has nothing left to release
                conn.close()
        here = asyncio.get_running_loop() if loop_running_here() else None
        with self._lock:
            _open_pools[:] = [(lp, p) for lp, p in _open_pools if p not in pools.values()]
        for loop, pool in pools.items():
            if loop is here:
                await pool.close()
            elif loop.is_running():
                with contextlib.suppress(Exception):  # a stopping loop takes them with it
                    asyncio.run_coroutine_threadsafe(pool.close(), loop).result(timeout=5)

    def _forget_after_fork(self) -> None:
        _inherited.extend(self._opened)
        _inherited.extend(self._pools.values())
        self._opened = []
        self._pools = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._pid = os.getpid()


def _feed(cursor: Any, plan: Plan[T]) -> T:
    try:
        query = next(plan)
        while True:
            cursor.execute(query.sql, query.params)
            result = cursor.pgresult
            rows = cursor.fetchall() if result is not None and result.nfields else []
            query = plan.send(rows)
    except StopIteration as done:
        returned: T = done.value  # what the plan returned
        return returned
    finally:
        plan.close()


async def _feed_async(conn: Any, plan: Plan[T]) -> T:
    cursor = conn.cursor()
    try:
        query = next(plan)
        while True:
            await cursor.execute(query.sql, query.params)
            result = cursor.pgresult
            rows = await cursor.fetchall() if result is not None and result.nfields else []
            query = plan.send(rows)
    except StopIteration as done:
        returned: T = done.value  # what the plan returned
        return returned
    finally:
        plan.close()
        await cursor.close()


@functools.cache  # one class, and one filter of psycopg_pool's log
def _pool_class() -> Any:
    """psycopg_pool's ``AsyncConnectionPool``, whose workers end when their loop ends.

    ``asyncio.run`` ends by cancelling every task of its loop and waiting for them. A
    psycopg_pool worker takes a cancel that lands while it makes a connection (the pool
    growing for a second caller in the background) for a failed attempt: it schedules
    another and waits for its next job, so ``asyncio.run`` never returned. Here a worker
    reads its jobs through :class:`_UntilCancelled`, so one that was cancelled stops instead.
    """
    from psycopg_pool import AsyncConnectionPool

    class EndingPool(AsyncConnectionPool):
        @classmethod
        async def worker(cls, q: Any) -> None:
            await super().worker(cast(Any, _UntilCancelled(q)))

    logging.getLogger("psycopg.pool").addFilter(_not_the_loops_end)
    return EndingPool


def _cancelled() -> bool:
    """Whether the running task was cancelled (and may have taken the cancel for a failure)."""
    import asyncio

    with contextlib.suppress(RuntimeError):  # no running loop: not a task
        cancelling = getattr(asyncio.current_task(), "cancelling", None)  # Python 3.11+
        return cancelling is not None and cancelling() > 0
    return False


def _not_the_loops_end(record: logging.LogRecord) -> bool:
    """psycopg_pool's warning of a connection attempt, left out where the attempt was
    cancelled by its loop's end (nothing failed: the worker stops)."""
    message = record.msg
    attempt = isinstance(message, str) and message.startswith("error connecting")
    return not (attempt and _cancelled())


class _UntilCancelled:
    """A pool worker's queue of jobs, which raises ``CancelledError`` to a worker that was
    cancelled (and took the cancel for a failed job) rather than give it the next job."""

    def __init__(self, jobs: Any) -> None:
        self._jobs = jobs

    async def get(self) -> Any:
        import asyncio

        if _cancelled():
            raise asyncio.CancelledError
        return await self._jobs.get()


def _close_pools_of_idle_loops() -> None:
    """At exit, close the pools of event loops nobody runs any more but nobody closed (a
    script's ``loop.run_until_complete(...)``): their scheduler and workers would otherwise be
    destroyed pending, and Python prints "Task was destroyed but it is pending!" for each."""
    pools, _open_pools[:] = list(_open_pools), []
    for loop, pool in pools:
        if loop.is_closed() or loop.is_running():
            continue  # gone with its tasks, or another thread's (it ends them itself)
        with contextlib.suppress(Exception):  # leaving anyway: close what closes
            loop.run_until_complete(pool.close(timeout=1.0))


atexit.register(_close_pools_of_idle_loops)


def _after_fork_in_child() -> None:
    _inherited.extend(pool for _, pool in _open_pools)  # the parent's: never closed here
    _open_pools.clear()
    for connections in list(_all):
        connections._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
