"""The Redis store on whichever redis-py is installed, against a real redis-server.

The ``redis`` extra allows redis-py 5.0.1 and later, and two fast paths lean on what a
release offers: the lane (``lane.py``: a loop's connections kept, their transport taken over)
and the inline client (``inline.py``: blocking connections on the caller's thread). These
tests pin what each decides for the installed release, by its version number, and that a
connection whose internals are missing or mean something else turns the lane off with the
store's answers unchanged. The docs' Redis section says which releases were run through the
Redis tests (docs/pages/stores.md).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import redis

from backends import connections_named, naming_connections, redis_prefix, wait_until_disconnected
from praisonsession import OperationTimeoutError, RedisSession, Session
from praisonsession.stores.backends.redis import clients, inline
from praisonsession.stores.backends.redis import lane as lanes
from praisonsession.stores.backends.redis.arguments import pack_command
from praisonsession.stores.guard import beneath
from redis_server import RedisServer

#: The first redis-py whose asyncio pool hands out a connection to keep: the lane's.
LANE_FROM = (5, 0, 2)
#: The first whose blocking connections have ``is_connected`` and ``read_response(timeout=)``.
READS_WITHIN_FROM = (8, 0, 0)


def installed() -> tuple[int, ...]:
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", redis.__version__)
    assert found is not None, f"redis-py's version {redis.__version__!r} is not x.y.z"
    return tuple(int(part) for part in found.groups())


async def _calls(store: RedisSession) -> list[Any]:
    """A write, a read and an increment on a loop; then whether the lane is on and carried
    them (a connection of its own took the replies)."""
    raw = beneath(store.backend)
    lane = await raw._clients.lane()
    await store.patch_state("s", "u", {"a": 1})
    seen: list[Any] = [await store.get_value("s", "u", "a")]
    seen.append(await store.increment("s", "u", "n", 2))
    on = lane is not None and lane.usable
    seen.append(on and any(line.replies is not None for line in lane._idle))
    seen.append(await raw._lane() is not None)
    await store.close()
    return seen


def test_the_installed_redis_py_gets_the_fast_paths_its_version_allows(
    redis_url: str, tmp_path: Path
) -> None:
    """Lane on from 5.0.2 (off on 5.0.1, every call through redis-py); the inline client
    uses redis-py's own ``is_connected`` and reply timeout from 8.0, its fallbacks before."""
    version = installed()
    lane = version >= LANE_FROM
    store = RedisSession.from_url(redis_url, key_prefix=redis_prefix(tmp_path))
    assert asyncio.run(_calls(store)) == [1, 2, lane, lane]

    ways = inline._ways_of(redis.Connection)
    if version >= READS_WITHIN_FROM:
        assert ways == (inline._says_connected, inline._read_within)
    else:
        assert ways == (inline._holds_a_socket, inline._wait_then_read)


class _Connection:
    """A real redis-py connection as another release might make it: ``_writer`` and the rest
    are the real one's unless a subclass says otherwise."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self.connection, name)


class _KeepsNoWriter(_Connection):
    """No ``_writer`` at all."""

    _writer = None


class _ReadsThroughItsOwnProtocol(_Connection):
    """Its transport feeds a protocol of redis-py's own, which passes the bytes on to the
    stream reader: taking it over would drop whatever else that protocol does."""

    async def connect(self) -> None:
        await self.connection.connect()
        transport = self.connection._writer.transport
        transport.set_protocol(_Forwarding(transport.get_protocol()))


class _Forwarding(asyncio.Protocol):
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return bool(self.inner.eof_received())

    def connection_lost(self, exc: Exception | None) -> None:
        self.inner.connection_lost(exc)


class _LeavesAReplyPending(_Connection):
    """Connects, then sends a command of its own whose reply it reads later (as a release
    that pipelined its handshake would): the next reply on the transport is not the lane's."""

    async def connect(self) -> None:
        await self.connection.connect()
        await self.connection.send_packed_command(pack_command(["ECHO", "redis-py's own"]))


class _LeavesAnErrorPending(_Connection):
    """Leaves the reply of a command the server refuses pending: the PING's answer is an
    error, as a server busy with a script answers it, which proves nothing either way."""

    async def connect(self) -> None:
        await self.connection.connect()
        await self.connection.send_packed_command(pack_command(["NO-SUCH-COMMAND"]))


@pytest.mark.skipif(installed() < LANE_FROM, reason="no lane to turn off on this redis-py")
@pytest.mark.parametrize(
    "shape", [_KeepsNoWriter, _ReadsThroughItsOwnProtocol, _LeavesAReplyPending]
)
def test_a_connection_whose_internals_differ_turns_the_lane_off_and_the_store_answers_alike(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: type
) -> None:
    """The lane checks each connection it opens (the transport's protocol is asyncio's own,
    feeding the connection's reader; a PING comes back PONG to the lane): a redis-py whose
    connections fail that turns the lane off at its first call, and that call and every later
    one go through redis-py with the same answers."""
    made = lanes._Line.__init__
    monkeypatch.setattr(lanes._Line, "__init__", lambda line, c: made(line, shape(c)))
    store = RedisSession.from_url(redis_url, key_prefix=redis_prefix(tmp_path))
    assert asyncio.run(_calls(store)) == [1, 2, False, False]


@pytest.mark.skipif(installed() < LANE_FROM, reason="no lane on this redis-py")
def test_a_ping_answered_with_an_error_sends_the_call_through_redis_py_and_keeps_the_lane(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error is the server's answer, not a sign of the transport's: each call goes through
    redis-py with the right answers, and the lane stays on for the next connection."""
    made = lanes._Line.__init__
    monkeypatch.setattr(
        lanes._Line, "__init__", lambda line, c: made(line, _LeavesAnErrorPending(c))
    )
    store = RedisSession.from_url(redis_url, key_prefix=redis_prefix(tmp_path))
    assert asyncio.run(_calls(store)) == [1, 2, False, True]


class _HasNoClose(_Connection):
    """redis-py 5.0.1's: no ``_close`` (closing without waiting)."""

    _close = None


@pytest.mark.parametrize("shape", [_Connection, _HasNoClose])
def test_a_connection_closed_without_waiting_is_closed_on_the_server(
    redis_url: str, tmp_path: Path, shape: type
) -> None:
    """What a client's close cut short by its loop's end does to each connection (``clients.
    _close_now``): redis-py's ``_close`` where it has one, else its writer closed."""
    name = "unwaited-" + tmp_path.name[-20:]

    async def main() -> int | None:
        client = redis.asyncio.Redis.from_url(naming_connections(redis_url, name))
        connection = client.connection_pool.make_connection()
        await connection.connect()
        opened = connections_named(redis_url, name)
        clients._close_now(shape(connection))
        await asyncio.sleep(0)  # the transport closes its socket on the loop's next turn
        return opened

    assert asyncio.run(main()) == 1
    wait_until_disconnected(redis_url, name)


class _Redis7Connection(redis.Connection):
    """A blocking connection as redis-py before 8 made it: no ``is_connected``, no timeout
    for one reply."""

    is_connected = None  # type: ignore[assignment]

    def read_response(  # type: ignore[override]
        self,
        disable_decoding: bool = False,
        *,
        disconnect_on_error: bool = True,
        push_request: bool = False,
    ) -> Any:
        return super().read_response(
            disable_decoding, disconnect_on_error=disconnect_on_error, push_request=push_request
        )


def test_before_redis_py_8_the_inline_client_keeps_the_deadline_and_loses_no_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without redis-py 8's reply timeout, the inline client waits for a reply's first bytes
    at most the call's deadline (``can_read``) and drops a connection whose reply did not
    come, so the late reply is never taken for the next call's."""
    real = inline._ways_of
    monkeypatch.setattr(inline, "_ways_of", lambda connection_class: real(_Redis7Connection))
    with RedisServer() as server:
        session = Session("s", "u", timeout=0.5, store=server.url)
        session.set_state("a", 1)
        client = beneath(session.store.backend)._inline
        assert client._read_within is inline._wait_then_read
        assert client._connected is inline._holds_a_socket
        with server.hung(), pytest.raises(OperationTimeoutError, match="get_state") as caught:
            session.get_state("a")
        assert "timeout=0.5 s" in str(caught.value)
        session.set_state("a", 2)  # had get_state's reply stayed, this would read it
        assert [session.get_state("a"), session.increment_state("n")] == [2, 1]
        session.close()
