"""A loop's own connections for the store's script calls: EVALSHA written and its reply read
straight off the socket.

redis-py's command path (``Redis.execute_command``: the pool's checkout and release with
their locks and observability hooks, its retry wrapper, its general packer, then its reply
parser reading line by line through a ``StreamReader``, a coroutine per element) was most of
the client's CPU per call. So the first attempt of a script call on an event loop runs in a
lane: connections taken from the loop client's own pool and connected by redis-py (its
settings, handshake, TLS and password hold, and its closing: ``close()`` and the loop's end
disconnect them with the rest), whose transport then delivers to :class:`_Replies`, which
parses each reply as its bytes arrive and wakes the call once, with the whole answer. The
lane keeps its connections between calls instead of handing them back to the pool. Retries
go through the client as before (``retries.py``).

A call that fails on the way (a lost connection, the attempt's bound, a caller's cancel)
disconnects its connection, so no answer is ever left for the next call, which connects
again; an error the server answered (``NOSCRIPT``, ``WRONGTYPE``) leaves it in step.

The lane leans on redis-py's internals: a pool that hands out a connection to keep
(``get_available_connection``, redis-py 5.0.2 and later), a connection that reads through
asyncio's streams (its ``_writer``, whose transport the lane takes over, and its ``_reader``,
which that transport's protocol feeds) and ``BaseParser.parse_error``. Each connection the lane
opens is checked before its first call: the protocol it replaces must be asyncio's own,
feeding that connection's ``_reader``, and a ``PING`` written on the transport must come back
``PONG`` to the lane's reader (one round trip a connection, not a call). A redis-py without
these internals, or whose ``_writer`` came to mean something else, turns the lane off for good
(:attr:`ScriptLane.usable`): that first call, and every later one, go through redis-py. A PING
answered with an error (``BUSY``) proves nothing either way: that call goes through redis-py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .arguments import pack_command
from .scripts import Script

__all__ = ["LaneUnsupported", "ScriptLane", "lane_of"]


class LaneUnsupported(Exception):
    """The installed redis-py lacks an internal the lane uses: the call goes through redis-py."""


class _Unchecked(LaneUnsupported):
    """The server answered the check's PING with an error (``BUSY`` running a script): this
    call goes through redis-py, and the lane stays on."""


class ScriptLane:
    """The idle connections of one loop's client, and the calls that take them in turn."""

    __slots__ = ("_answered", "_idle", "_missing", "_pool", "usable")

    def __init__(self, pool: Any) -> None:
        from redis.exceptions import NoScriptError, ResponseError

        self._pool = pool
        self._idle: list[_Line] = []
        self._answered = ResponseError
        self._missing = NoScriptError
        #: False once a connection could not be taken over (a redis-py without the internals
        #: the lane uses): the store then sends its calls through redis-py.
        self.usable = True

    async def run(self, script: Script, keys: list[str], args: list[Any]) -> Any:
        """``script`` by EVALSHA, or by EVAL when the server does not have it yet (as
        ``Script.run`` through a client)."""
        try:
            return await self._call(pack_command(["EVALSHA", script.sha, len(keys), *keys, *args]))
        except self._missing:
            return await self._call(pack_command(["EVAL", script.source, len(keys), *keys, *args]))

    async def _call(self, command: bytes) -> Any:
        idle = self._idle
        line = idle.pop() if idle else _Line(self._pool.get_available_connection())
        try:
            replies = line.replies
            if replies is None or replies.lost:
                try:
                    replies = await line.open()
                except _Unchecked:
                    raise
                except LaneUnsupported:
                    self.usable = False
                    raise
            reply = await replies.ask(command)
        except BaseException:
            await line.close()  # whatever ended the call, no answer is left behind
            idle.append(line)  # closed: its next call connects again
            raise
        idle.append(line)
        if isinstance(reply, self._answered):
            raise reply
        return reply


class _Line:
    """One connection of a lane: redis-py's, its replies read by :class:`_Replies`."""

    __slots__ = ("connection", "replies")

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.replies: _Replies | None = None

    async def open(self) -> _Replies:
        """Connect (redis-py's handshake), then take the transport's replies over."""
        connection = self.connection
        if connection.is_connected:
            await connection.disconnect(nowait=True)
        await connection.connect()
        transport = getattr(getattr(connection, "_writer", None), "transport", None)
        if transport is None or not hasattr(transport, "set_protocol"):
            raise LaneUnsupported("this redis-py's connections keep no transport to take over")
        replaced = transport.get_protocol()
        if type(replaced) is not asyncio.StreamReaderProtocol or getattr(
            replaced, "_stream_reader", None
        ) is not getattr(connection, "_reader", None):
            raise LaneUnsupported(
                "this redis-py's connections do not read their replies through asyncio's "
                f"streams (their transport feeds a {type(replaced).__qualname__})"
            )
        try:
            from redis._parsers import BaseParser

            parse_error = BaseParser.parse_error
        except (ImportError, AttributeError) as missing:
            raise LaneUnsupported(
                f"this redis-py has no BaseParser.parse_error: {missing}"
            ) from None
        replies = _Replies(transport, replaced, parse_error)
        transport.set_protocol(replies)
        answer = await replies.ask(_PING)  # what is written here is answered to the lane
        if isinstance(answer, Exception):
            raise _Unchecked(f"the server answered PING with {answer}")
        if answer != b"PONG":
            raise LaneUnsupported(f"a PING on a connection taken over answered {answer!r}")
        self.replies = replies
        return replies

    async def close(self) -> None:
        self.replies = None
        if self.connection.is_connected:
            await self.connection.disconnect(nowait=True)


class _Replies(asyncio.Protocol):
    """The replies of one connection, parsed as they arrive (RESP2 and RESP3), one command in
    flight at a time. Parsing resumes where the last bytes ended (a stack of the arrays being
    filled), so a reply of many chunks is read once, however long. The protocol redis-py set
    up is told when the connection is lost, so that its own closing completes."""

    def __init__(
        self,
        transport: Any,
        replaced: asyncio.BaseProtocol,
        parse_error: Callable[[str], Exception],
    ) -> None:
        from redis.exceptions import ConnectionError as Lost

        self._transport = transport
        self._replaced = replaced
        self._loop = asyncio.get_running_loop()
        self._waiter: asyncio.Future[Any] | None = None
        self._buffer = bytearray()
        self._at = 0
        #: The arrays being filled: [items, how many are still to come, kind].
        self._open: list[list[Any]] = []
        #: An error reply as redis-py's parser makes it (NoScriptError, ReadOnlyError...).
        self._error = parse_error
        self._lost_error = Lost
        self.lost = False

    def ask(self, command: bytes) -> asyncio.Future[Any]:
        """Send ``command``; the future ends with its reply (an error reply as an exception
        instance, as redis-py's parser gives it)."""
        if self.lost or self._transport.is_closing():
            raise self._lost_error("The connection to Redis is closed.")
        waiter = self._waiter = self._loop.create_future()
        self._transport.write(command)
        return waiter

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        try:
            self._parse()
        except Exception as exc:  # not the protocol: nothing after it can be trusted
            self._fail(self._lost_error(f"Redis sent a reply that could not be read: {exc!r}"))
            self._transport.close()

    def eof_received(self) -> bool:
        self._fail(self._lost_error("Connection closed by server."))
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(self._lost_error(f"Connection to Redis lost: {exc}" if exc else "Closed."))
        self._replaced.connection_lost(exc)

    def _fail(self, error: Exception) -> None:
        self.lost = True
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _parse(self) -> None:
        buffer, at, stack = self._buffer, self._at, self._open
        while True:
            end = buffer.find(b"\r\n", at)
            if end < 0:
                break
            kind = buffer[at]
            if kind in _BLOBS:
                size = int(buffer[at + 1 : end])
                if size < 0:
                    value: Any = None
                    at = end + 2
                else:
                    stop = end + 2 + size
                    if len(buffer) < stop + 2:
                        break  # the rest of the string is still on its way
                    value = bytes(buffer[end + 2 : stop])
                    at = stop + 2
                    if kind == _VERBATIM:
                        value = value[4:]  # "txt:" or "mkd:"
                    elif kind == _BLOB_ERROR:
                        value = self._error(value.decode("utf-8", "replace"))
            elif kind in _AGGREGATES:
                count = int(buffer[at + 1 : end]) * (2 if kind == _MAP else 1)
                at = end + 2
                if count > 0:
                    stack.append([[], count, kind])
                    continue
                value = None if count < 0 else _made([], kind)
            else:
                text = bytes(buffer[at + 1 : end])
                at = end + 2
                value = self._scalar(kind, text)
            while stack:  # the value fills the innermost open array; a full one fills its own
                top = stack[-1]
                top[0].append(value)
                top[1] -= 1
                if top[1]:
                    break
                stack.pop()
                value = _made(top[0], top[2])
            else:
                del buffer[:at]
                at = 0
                if value is not _PUSHED:  # an out-of-band push is no command's answer
                    waiter, self._waiter = self._waiter, None
                    if waiter is not None and not waiter.done():
                        waiter.set_result(value)
        self._at = at

    def _scalar(self, kind: int, text: bytes) -> Any:
        if kind == _STATUS:
            return text
        if kind == _ERROR:
            return self._error(text.decode("utf-8", "replace"))
        if kind in _INTEGERS:
            return int(text)
        if kind == _NULL:
            return None
        if kind == _DOUBLE:
            return float(text)
        if kind == _BOOLEAN:
            return text == b"t"
        raise ValueError(f"unknown reply type {chr(kind)!r}")


_PING = b"*1\r\n$4\r\nPING\r\n"
_STATUS, _ERROR, _NULL, _DOUBLE, _BOOLEAN = b"+-_,#"
_INTEGERS = frozenset(b":(")
_VERBATIM, _BLOB_ERROR = b"=!"
_BLOBS = frozenset(b"$=!")
_MAP, _PUSH = b"%>"
_AGGREGATES = frozenset(b"*%~>")
#: What a finished push reply becomes: left out of the command's replies.
_PUSHED = object()


def _made(items: list[Any], kind: int) -> Any:
    """An aggregate from its items: a map a dict, a push left out, any other a list."""
    if kind == _MAP:
        return dict(zip(items[0::2], items[1::2], strict=True))
    if kind == _PUSH:
        return _PUSHED
    return items


def lane_of(client: Any) -> ScriptLane | None:
    """A lane over ``client``'s pool; None for a pool that hands out no connection to keep
    (redis-py 5.0.1 and before, or a pool of another kind)."""
    pool = getattr(client, "connection_pool", None)
    if not callable(getattr(pool, "get_available_connection", None)):
        return None
    return ScriptLane(pool)
