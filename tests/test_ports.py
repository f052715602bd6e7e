"""The ports of the servers the tests start (``tests/ports.py``): a server never takes another
process's server on the port it was given for its own, and an address where nothing
listens stays so while a test uses it."""

from __future__ import annotations

import socket
from typing import Any

import pytest

import ports
import redis_server as helper
from ports import closed_port, listening_port
from redis_server import RedisServer, _command
from remote_server import SessionServer

needs_proc = pytest.mark.skipif(
    not ports.can_find_listening_ports(), reason="reads listening ports from Linux's /proc"
)


def test_a_closed_port_refuses_connections_and_cannot_be_taken() -> None:
    with closed_port() as port:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(("127.0.0.1", port))  # nobody can listen there meanwhile


@needs_proc
def test_a_redis_server_whose_port_was_taken_starts_on_another(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of "a free port, then start on it": another redis-server got the port first.
    The new server fails to bind and exits, but the one on the port answers PING; the
    starter must not take that answer for its own server's, and tries another port."""
    taken = redis_server.port
    assert taken is not None
    offered = iter([taken])
    monkeypatch.setattr(helper, "free_port", lambda: next(offered, ports.free_port()))
    with RedisServer() as mine:
        assert mine.port != taken
        assert mine.proc is not None and listening_port(mine.proc.pid) == mine.port
        _command(mine.port, "SET only-in-mine 1")
        assert _command(taken, "EXISTS only-in-mine").startswith(b":0")


@needs_proc
def test_a_session_server_binds_port_0_and_reports_the_port_it_got(tmp_path: Any) -> None:
    server = SessionServer(f"sqlite:///{tmp_path / 's.db'}")
    assert server.port is None and "--port" in (args := server.command())
    assert args[args.index("--port") + 1] == "0"
    with server:
        assert server.process is not None
        assert server.port == listening_port(server.process.pid)
        server.kill()
        server.start()  # a restart keeps the port its clients hold
        assert server.port == listening_port(server.process.pid)
        # and its folder, where the log holds both starts' output
        assert [path.name for path in server.workdir.iterdir()] == ["server.log"]
    # the with-block leaves nothing in the temporary directory
    assert server.process.poll() is not None and not server.workdir.exists()
