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

redis-py 8 gave blocking connections ``is_connected`` and ``read_response(timeout=)``; before
it (5.0 to 7.4, which the ``redis`` extra allows) a connection is connected while it holds a
socket, and a reply is waited for with ``can_read(timeout)``. Which one applies is read once,
from the connection class, when the pool is made.
"""

from __future__ import annotations

import inspect
import math
import os
import threading
from collections.abc import Callable
from typing import Any

from ...._internal.runtime import expired, remaining
from .arguments import pack_command

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
        self._connections: list[Any] = []
        #: How this redis-py's connections say they are connected and wait for one reply
        #: (``_ways_of``), read with the pool.
        self._connected: Callable[[Any], bool] = _says_connected
        self._read_within: Callable[[Any, float], Any] = _read_within

    def run_script(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        """A script of ``scripts.py``, called directly: EVALSHA, or EVAL when the server does
        not have it yet (its ``run`` does the same through the awaitable calls)."""
        from redis.exceptions import NoScriptError

        try:
            return self._command("EVALSHA", script.sha, len(keys), *keys, *args)
        except NoScriptError:
            return self._command("EVAL", script.source, len(keys), *keys, *args)

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
        if not self._connected(connection):
            _connect_within(connection, left)
        connection.send_packed_command([pack_command(args)], check_health=False)
        if left >= limit:
            return connection.read_response()
        from redis.exceptions import TimeoutError as ReplyTimeout

        try:  # the call's deadline comes first: wait no longer than that
            return self._read_within(connection, left)
        except ReplyTimeout:
            if remaining(limit) <= 0:
                raise expired("waiting for a reply from Redis") from None
            raise

    def _connection(self) -> Any:
        """This thread's connection (made, not yet connected, on first use here)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None and connection.pid == os.getpid():
            return connection
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = _new_pool(self._options)  # a forked child's own
                self._pid = os.getpid()
                self._connections = []
                self._connected, self._read_within = _ways_of(self._pool.connection_class)
            pool = self._pool
            connection = pool.connection_class(**pool.connection_kwargs)
            self._connections.append(connection)
        self._local.connection = connection  # this thread's for good: no lock per call
        return connection

    def close(self) -> None:
        """Disconnect every connection this process opened here (they reconnect on next use)."""
        with self._lock:
            connections = self._connections if self._pid == os.getpid() else []
        for connection in connections:
            connection.disconnect()


def _ways_of(connection_class: type) -> tuple[Callable[[Any], bool], Callable[[Any, float], Any]]:
    """How to tell a connection is connected, and to read a reply within a time, with this
    redis-py: its own ``is_connected`` and ``read_response(timeout=)`` where it has them."""
    read = getattr(connection_class, "read_response", None)
    reads_within = read is not None and "timeout" in inspect.signature(read).parameters
    if isinstance(getattr(connection_class, "is_connected", None), property):
        connected: Callable[[Any], bool] = _says_connected
    else:
        connected = _holds_a_socket
    return connected, _read_within if reads_within else _wait_then_read


def _says_connected(connection: Any) -> bool:
    return bool(connection.is_connected)


def _holds_a_socket(connection: Any) -> bool:
    """redis-py before 8: a blocking connection holds its socket while connected."""
    return connection._sock is not None


def _read_within(connection: Any, seconds: float) -> Any:
    return connection.read_response(timeout=seconds)


def _wait_then_read(connection: Any, seconds: float) -> Any:
    """redis-py before 8: wait for the reply's first bytes at most ``seconds``, then read it.
    A reply that has not come is this call's, never the next one's: the connection is
    dropped, as redis-py 8 drops it when its ``read_response`` times out."""
    from redis.exceptions import TimeoutError as ReplyTimeout

    try:
        if not connection.can_read(timeout=seconds):
            raise ReplyTimeout("Timeout reading from Redis")
    except BaseException:
        connection.disconnect()
        raise
    return connection.read_response()


def _connect_within(connection: Any, seconds: float) -> None:
    """Connect (and say hello: redis-py reads the server's answers) within ``seconds``.

    When the deadline is sooner than the socket timeouts, a first connection is made with
    timeouts cut to it; redis-py keeps a connection's read timeout from when it connected, so
    once the server has answered that one is dropped and the connection made again as usual.
    """
    timeout, connect_timeout = connection.socket_timeout, connection.socket_connect_timeout
    if seconds >= (timeout or math.inf) and seconds >= (connect_timeout or math.inf):
        connection.connect()
        return
    connection.socket_timeout = min(timeout or math.inf, seconds)
    connection.socket_connect_timeout = min(connect_timeout or math.inf, seconds)
    try:
        connection.connect()
    except Exception as exc:
        from redis.exceptions import TimeoutError as ConnectTimeout

        if isinstance(exc, ConnectTimeout) and remaining(math.inf) <= 0:
            raise expired("connecting to Redis") from None
        raise
    finally:
        connection.socket_timeout, connection.socket_connect_timeout = timeout, connect_timeout
    connection.disconnect()
    connection.connect()


def _new_pool(options: dict[str, Any]) -> Any:
    """A blocking connection pool with the same settings as the store's asyncio clients."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # Our retries (retries.py) are the only ones: redis-py's own would stack up under them.
    settings = {**options, "retry": Retry(NoBackoff(), 0)}
    return redis.Redis(**settings).connection_pool
