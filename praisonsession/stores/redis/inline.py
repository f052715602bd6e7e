"""Redis on the caller's own thread: blocking connections for calls made with no event loop.

``Session`` drives a store's coroutine on the caller's thread when that thread runs no loop
(``runtime.run(..., inline=True)``). For Redis that saves the hop to the background loop and
redis.asyncio's machinery, most of the cost of a one-command call. This client gives the store
the same awaitable calls as a ``redis.asyncio`` client (``evalsha``, ``eval``, ``get``), served
by one blocking redis-py connection per thread: its coroutines never suspend, so they run
inline to completion.

The call's deadline (``execution.remaining``) bounds each wait for a reply: a reply that does
not come before it ends the call with ``OperationTimeoutError``, as the loop would. A forked
child opens connections of its own.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any

from ...execution import expired, remaining

__all__ = ["InlineClient"]


class InlineClient:
    """Blocking redis-py connections, one per thread, behind the store's awaitable calls.

    ``options`` are the store's ``redis.Redis`` keyword arguments (connection settings).
    """

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        self._socket_timeout = options.get("socket_timeout")
        self._lock = threading.Lock()
        self._local = threading.local()
        self._pool: Any = None
        self._pid = os.getpid()

    async def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self._command("EVALSHA", sha, numkeys, *keys_and_args)

    async def eval(self, script: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self._command("EVAL", script, numkeys, *keys_and_args)

    async def get(self, name: str) -> Any:
        return self._command("GET", name)

    async def config_get(self, pattern: str) -> dict[Any, Any]:
        found = self._command("CONFIG", "GET", pattern)
        if isinstance(found, dict):  # RESP3 answers a map
            return found
        return dict(zip(found[0::2], found[1::2], strict=True))

    def _command(self, *args: Any) -> Any:
        """Send one command and read its reply, within the socket timeout and the deadline."""
        connection = self._connection()
        limit = self._socket_timeout or math.inf
        left = remaining(limit)
        if left <= 0:
            raise expired("waiting for Redis")
        connection.send_command(*args, check_health=False)
        if left < limit:  # the call's deadline comes first: wait no longer than that
            from redis.exceptions import TimeoutError as ReplyTimeout

            try:
                return connection.read_response(timeout=left)
            except ReplyTimeout:
                if remaining(limit) <= 0:
                    raise expired("waiting for a reply from Redis") from None
                raise
        return connection.read_response()

    def _connection(self) -> Any:
        connection = getattr(self._local, "connection", None)
        if connection is not None and connection.pid == os.getpid():
            return connection
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = _new_pool(self._options)  # a forked child's own
                self._pid = os.getpid()
            pool = self._pool
        # Held by this thread for good: no pool lock per call. close() disconnects it; the
        # next command reconnects.
        connection = pool.get_connection()
        self._local.connection = connection
        return connection

    def close(self) -> None:
        """Disconnect every connection this process opened here (they reconnect on next use)."""
        with self._lock:
            pool = self._pool if self._pid == os.getpid() else None
        if pool is not None:
            pool.disconnect(inuse_connections=True)


def _new_pool(options: dict[str, Any]) -> Any:
    """A blocking connection pool with the same settings as the store's asyncio clients."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # Our retries (retries.py) are the only ones: redis-py's own would stack up under them.
    settings = {**options, "retry": Retry(NoBackoff(), 0)}
    return redis.Redis(**settings).connection_pool
