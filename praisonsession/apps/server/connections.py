"""Slow clients cannot starve the server: header, body and idle timeouts, and a connection cap.

uvicorn bounds only the idle time between two requests of a kept-alive connection. A client
that connects and sends nothing, or a request line and one header and then waits, holds its
connection (and a file descriptor) for ever, and enough of them make every new connection
fail. ``guarded_protocol`` returns uvicorn's HTTP protocol with three more bounds:

- a request's headers must arrive within ``header_timeout`` of its first byte (or of the
  connection, for the first request), its body within ``body_timeout`` of its headers;
  otherwise the client gets ``408`` and the connection closes;
- at most ``max_connections`` connections at once: one more, and the connection that has been
  waiting on its client longest (for headers, a body, or its next request) is closed to make
  room; if every connection is busy with a request, the new one is closed instead.

The cost on a request that arrives in one piece is two timer operations.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from typing import Any

from ..._internal.checks import check_seconds

__all__ = ["DEFAULT_LIMITS", "Limits", "guarded_protocol", "raise_file_limit"]

_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)
_MESSAGE = (
    b'{"error": {"type": "RemoteRequestError", "message": "The request did not arrive in time; '
    b'send it whole.", "status": 408, "fields": {}}, '
    b'"detail": "The request did not arrive in time."}'
)


class Limits:
    """How long a client may take, and how many may be connected at once."""

    def __init__(
        self,
        header_timeout: float = 10.0,
        body_timeout: float = 30.0,
        idle_timeout: float = 5.0,
        max_connections: int = 1000,
    ) -> None:
        for name, value in (
            ("header_timeout", header_timeout),
            ("body_timeout", body_timeout),
            ("idle_timeout", idle_timeout),
        ):
            check_seconds(value, name, positive=True)
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {max_connections!r}")
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections


DEFAULT_LIMITS = Limits()


def guarded_protocol(limits: Limits) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with ``limits`` (a class of its own per server)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    waiting: OrderedDict[Any, None] = OrderedDict()  # connections waiting on their client

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections:
                self._make_room()
                if transport.is_closing():
                    return
            self._wait(limits.header_timeout)

        def _make_room(self) -> None:
            for other in waiting:
                if other is not self:
                    other._give_up()
                    return
            self.transport.close()  # every other connection is busy with a request

        def _wait(self, seconds: float) -> None:
            """The client has ``seconds`` to send what comes next."""
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.loop.call_later(seconds, self._too_slow)
            waiting[self] = None
            waiting.move_to_end(self)

        def _stop_waiting(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            waiting.pop(self, None)

        def _too_slow(self) -> None:
            self._timer = None
            waiting.pop(self, None)
            if not self.transport.is_closing():
                with contextlib.suppress(Exception):
                    self.transport.write(_TIMEOUT % (len(_MESSAGE), _MESSAGE))
                self.transport.close()

        def _give_up(self) -> None:
            self._stop_waiting()
            if not self.transport.is_closing():
                self.transport.close()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._timer is None or self not in waiting:
                self._wait(limits.header_timeout)

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            if not self.transport.is_closing():
                self._wait(limits.body_timeout)

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._stop_waiting()  # the app has the request now

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and not self.pipeline:
                # uvicorn's keep-alive timer bounds the idle time; the slot may be taken
                waiting[self] = None
                waiting.move_to_end(self)

        def data_received(self, data: bytes) -> None:
            if self._timer is None:
                waiting.pop(self, None)  # idle no more: on_message_begin starts the clock
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

    return GuardedHttpToolsProtocol


def raise_file_limit(wanted: int) -> None:
    """Let the process hold ``wanted`` open files, if its hard limit allows (each connection
    is one)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
