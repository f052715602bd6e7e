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
import signal
from pathlib import Path
from typing import Any

import pytest
import redis

from backends import connections_named, naming_connections, redis_prefix, wait_until_disconnected
from praisonsession import OperationTimeoutError, RedisSession, Session
from praisonsession.stores.backends.redis import clients, inline
from praisonsession.stores.backends.redis import lane as lanes
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


@pytest.mark.skipif(installed() < LANE_FROM, reason="no lane to turn off on this redis-py")
@pytest.mark.parametrize("shape", [_KeepsNoWriter])
def test_a_connection_whose_internals_differ_turns_the_lane_off_and_the_store_answers_alike(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: type
) -> None:
    """A redis-py whose connections keep no transport to take over turns the lane off at its
    first call, and that call and every later one go through redis-py with the same answers."""
    made = lanes._Line.__init__
    monkeypatch.setattr(lanes._Line, "__init__", lambda line, c: made(line, shape(c)))
    store = RedisSession.from_url(redis_url, key_prefix=redis_prefix(tmp_path))
    assert asyncio.run(_calls(store)) == [1, 2, False, False]


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
        server.proc.send_signal(signal.SIGSTOP)  # accepts connections, never answers
        try:
            with pytest.raises(OperationTimeoutError, match="get_state"):
                session.get_state("a")
        finally:
            server.proc.send_signal(signal.SIGCONT)
        session.set_state("a", 2)  # had get_state's reply stayed, this would read it
        assert [session.get_state("a"), session.increment_state("n")] == [2, 1]
        session.close()
