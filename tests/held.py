"""What a test holds that a call waits for (a lock, a hung server, a stuck embedder), and
when it lets go.

No test measures time. A test of "the call ends at its timeout" holds what the call waits for
and lets go only after :data:`SAFETY` seconds, far beyond every timeout the tests pass, and
letting go gives another outcome (the write made, an answer, another error) that the test
asserts against: a call that waited for it instead of its own timeout fails the test rather
than passing slowly.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator

__all__ = ["SAFETY", "HungServer", "hung_server", "let_go_after_safety"]

#: Seconds after which a test lets go of what it holds.
SAFETY = 30.0


@contextlib.contextmanager
def let_go_after_safety(release: Callable[[], object]) -> Iterator[None]:
    """Call ``release`` after :data:`SAFETY` seconds, or when the block ends if sooner."""
    timer = threading.Timer(SAFETY, release)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


class HungServer:
    """A TCP server on 127.0.0.1 that lets clients connect and never says a word.

    The kernel completes each client's handshake; :meth:`accept` takes a connection off the
    queue when a test must know a client has connected. :func:`hung_server` closes it all
    after :data:`SAFETY` seconds: a client that waited for it instead of its own timeout then
    hears a closed connection, another error.
    """

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=16)
        self._listener.settimeout(SAFETY)
        self._accepted: list[socket.socket] = []
        self._lock = threading.Lock()
        self.port: int = self._listener.getsockname()[1]

    def accept(self) -> None:
        """Wait (at most :data:`SAFETY` seconds) for a client to connect; hold its connection."""
        connection, _ = self._listener.accept()
        with self._lock:
            self._accepted.append(connection)

    def close(self) -> None:
        with self._lock:
            held, self._accepted = [self._listener, *self._accepted], []
        for sock in held:
            sock.close()


@contextlib.contextmanager
def hung_server() -> Iterator[HungServer]:
    """A :class:`HungServer` for the block, closed after :data:`SAFETY` seconds if sooner."""
    server = HungServer()
    try:
        with let_go_after_safety(server.close):
            yield server
    finally:
        server.close()
