"""One ``redis.asyncio`` client per event loop.

A redis-py asyncio client works only in the event loop it first ran in, and a store is used
from several: the runtime's private loop behind ``Session``, and whatever loops its users run
(``asyncio.run`` makes a new one each time). So each loop gets its own client, made on first
use there and dropped once the loop is closed or the process has forked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import AsyncIterator
from typing import Any

from .lane import ScriptLane, lane_of

__all__ = ["LoopClients"]


class LoopClients:
    """The clients of one store, by event loop.

    ``options`` are ``redis.asyncio.Redis``'s keyword arguments. A given ``client`` or
    ``pool`` serves the first loop that asks and is never closed here (its owner closes it);
    other loops get a pool of their own with the same connection settings.
    """

    def __init__(self, options: dict[str, Any], client: Any = None, pool: Any = None) -> None:
        self._options = options
        self._given_client = client
        self._given_pool = pool
        self._given_in_use = False
        self._lock = threading.Lock()
        self._by_loop: dict[asyncio.AbstractEventLoop, _Bound] = {}

    def __len__(self) -> int:
        """How many loops hold a client."""
        return len(self._by_loop)

    async def get(self) -> Any:
        """The running loop's client, closed when the loop ends if this store made it."""
        return (await self._ready()).client

    async def lane(self) -> ScriptLane | None:
        """The running loop's lane for script calls (``lane.py``): over the client this store
        made for the loop; None over a client or pool passed in, whose owner sized it."""
        bound = self._by_loop.get(asyncio.get_running_loop())
        if bound is not None and bound.pid == os.getpid():  # every call but a loop's first
            return bound.lane
        return (await self._ready()).lane

    async def _ready(self) -> _Bound:
        bound, new = self._bound_to(asyncio.get_running_loop())
        if new and bound.owned:
            # asyncio.run() finalizes async generators before it closes its loop: this one
            # closes the client then, so a store used without close() leaves no socket open.
            closer = _close_at_loop_end(bound.client)
            await closer.__anext__()
            bound.closer = closer
        return bound

    def get_nowait(self) -> Any:
        """The running loop's client, from synchronous code in that loop (no closer at the
        loop's end: ``close()`` closes it)."""
        return self._bound_to(asyncio.get_running_loop())[0].client

    async def close(self) -> None:
        """Close the clients made here, in every loop; a given client or pool stays open.

        Also callable with no loop running on this thread (run inline by ``Session``): the
        clients of loops running elsewhere are closed there, waited for here.
        """
        with self._lock:
            by_loop, self._by_loop = self._by_loop, {}
            self._given_in_use = False
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        for loop, bound in by_loop.items():
            if not bound.owned or bound.pid != os.getpid():
                continue
            if loop is here:
                await bound.close()
            elif not loop.is_closed() and loop.is_running():
                future = asyncio.run_coroutine_threadsafe(bound.close(), loop)
                try:
                    if here is None:
                        future.result(5.0)
                    else:
                        await asyncio.wait_for(asyncio.wrap_future(future), 5.0)
                except Exception:  # timed out, or the loop stopped meanwhile
                    _drop_connections(bound.client)
            else:
                _drop_connections(bound.client)

    def _bound_to(self, loop: asyncio.AbstractEventLoop) -> tuple[_Bound, bool]:
        """The loop's client, and whether it was made just now."""
        bound = self._by_loop.get(loop)
        if bound is not None and bound.pid == os.getpid():
            return bound, False
        with self._lock:
            bound = self._by_loop.get(loop)
            if bound is not None and bound.pid == os.getpid():
                return bound, False
            self._forget_dead_loops()
            client, owned = self._new_client()
            bound = self._by_loop[loop] = _Bound(client, owned)
        return bound, True

    def _new_client(self) -> tuple[Any, bool]:
        """A client for a loop that has none, and whether this store owns (closes) it."""
        import redis.asyncio as aio

        if self._given_client is not None and not self._given_in_use:
            self._given_in_use = True
            return self._given_client, False
        if self._given_pool is not None and not self._given_in_use:
            self._given_in_use = True
            return aio.Redis(connection_pool=self._given_pool), False
        source = self._given_pool or (
            self._given_client.connection_pool if self._given_client is not None else None
        )
        if source is not None:  # another loop: a pool of our own with the same settings
            pool = aio.ConnectionPool(
                connection_class=source.connection_class,
                max_connections=source.max_connections,
                **source.connection_kwargs,
            )
            return aio.Redis.from_pool(pool), True
        return aio.Redis(**self._options), True

    def _forget_dead_loops(self) -> None:
        """Drop the clients of loops that were closed (e.g. by ``asyncio.run``) or forked."""
        for loop, bound in list(self._by_loop.items()):
            if bound.pid != os.getpid() or loop.is_closed():
                del self._by_loop[loop]
                if not bound.owned:
                    self._given_in_use = False
                elif bound.pid == os.getpid():
                    _drop_connections(bound.client)


class _Bound:
    """The client of one event loop; ``owned`` when the store created it (and closes it)."""

    __slots__ = ("client", "closer", "lane", "owned", "pid")

    def __init__(self, client: Any, owned: bool) -> None:
        self.client = client
        self.owned = owned
        #: Its connections are the client pool's (closed with it, ``_drop_connections`` too).
        self.lane = lane_of(client) if owned else None
        self.pid = os.getpid()
        self.closer: Any = None

    async def close(self) -> None:
        try:
            if self.closer is not None:
                await self.closer.aclose()  # runs _close_at_loop_end's finally: closes the client
            else:
                await self.client.aclose()
        except asyncio.CancelledError:
            # cut short: asyncio.run cancels what is left of its loop's tasks, redis-py's own
            # among them, and the store has forgotten this client: its connections close
            # now (the loop still runs, so without waiting) or never
            for connection in _connections(self.client):
                _close_now(connection)
            raise


async def _close_at_loop_end(client: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # the loop is ending: nothing can be reported
            await client.aclose()


def _connections(client: Any) -> list[Any]:
    """The connections of a client's pool, idle and in use."""
    pool = getattr(client, "connection_pool", None)
    return [
        *getattr(pool, "_available_connections", ()),
        *getattr(pool, "_in_use_connections", ()),
    ]


def _close_now(connection: Any) -> None:
    """Close a connection without waiting: redis-py's ``_close`` (5.0.2 and later), else its
    writer, which is what ``_close`` does (5.0.1)."""
    close = getattr(connection, "_close", None)
    if close is not None:
        close()
    elif getattr(connection, "_writer", None) is not None:
        connection._writer.close()


def _drop_connections(client: Any) -> None:
    """Shut the sockets of a client whose event loop is gone (it cannot be awaited)."""
    for connection in _connections(client):
        writer = getattr(connection, "_writer", None)
        if writer is None:
            continue
        sock = writer.get_extra_info("socket")
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)  # the server sees the client go at once
        except OSError:
            pass
