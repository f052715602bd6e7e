"""A loop's own connections for the store's script calls: EVALSHA written and read straight.

redis-py's command path (``Redis.execute_command``: the pool's checkout and release with
their locks and observability hooks, its retry wrapper, its general packer) was about 40 of
the ~60 µs of client CPU an EVALSHA took here; the same command written on a connection and
read back by redis-py's own parser takes under 20. So the first attempt of a script call on an
event loop runs in a lane: connections taken from the loop client's own pool (its settings,
handshake, TLS and password, and its closing: ``close()`` and the loop's end disconnect them
with the rest), kept by the lane between calls instead of going back to the pool. Retries go
through the client as before (``retries.py``).

A call that fails on the way (a lost connection, the attempt's bound, a caller's cancel)
leaves its connection disconnected, never with an answer unread, so the next call on it
connects again; an error the server answered (``NOSCRIPT``, ``WRONGTYPE``) leaves it in step.
"""

from __future__ import annotations

from typing import Any

from .arguments import pack_command
from .scripts import Script

__all__ = ["ScriptLane", "lane_of"]


class ScriptLane:
    """The idle connections of one loop's client, and the calls that take them in turn."""

    __slots__ = ("_answered", "_idle", "_missing", "_pool")

    def __init__(self, pool: Any) -> None:
        from redis.exceptions import NoScriptError, ResponseError

        self._pool = pool
        self._idle: list[Any] = []
        self._answered = ResponseError
        self._missing = NoScriptError

    async def run(self, script: Script, keys: list[str], args: list[Any]) -> Any:
        """``script`` by EVALSHA, or by EVAL when the server does not have it yet (as
        ``Script.run`` through a client)."""
        try:
            return await self._call(pack_command(["EVALSHA", script.sha, len(keys), *keys, *args]))
        except self._missing:
            return await self._call(pack_command(["EVAL", script.source, len(keys), *keys, *args]))

    async def _call(self, command: bytes) -> Any:
        idle = self._idle
        connection = idle.pop() if idle else self._pool.get_available_connection()
        try:
            await connection.send_packed_command(command, check_health=False)
            reply = await connection.read_response()
        except self._answered:  # the server's answer, read whole: the connection is in step
            idle.append(connection)
            raise
        except BaseException:
            # redis-py disconnects on a failed send or read; should anything else end the call
            # between them, the connection goes too: no answer is left for the next call.
            if connection.is_connected:
                await connection.disconnect(nowait=True)
            idle.append(connection)  # disconnected: its next call connects again
            raise
        idle.append(connection)
        return reply


def lane_of(client: Any) -> ScriptLane | None:
    """A lane over ``client``'s pool; None for a pool that hands out no connection to keep
    (redis-py before 5.1, or a pool of another kind)."""
    pool = getattr(client, "connection_pool", None)
    if not callable(getattr(pool, "get_available_connection", None)):
        return None
    return ScriptLane(pool)
