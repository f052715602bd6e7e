"""``LoopConnections``: the chat-completions POST on the event loop itself, for ``http://``
endpoints (a local Ollama, vLLM or LM Studio; a test server).

Why: in the session server every turn's LLM request used to run in a worker thread. With many
turns at once, those threads held the GIL the event loop needed between its own short steps
(each SQLite call gives the GIL up and must win it back), and every store call of the loop
waited behind them. On the loop, a request is a few writes and reads of a socket: no thread,
no GIL to fight over. ``https://`` endpoints and endpoints behind a proxy keep the thread
path (requests does TLS, proxies and ``.netrc``); so does synchronous code.

HTTP/1.1 with keep-alive: one pool of idle connections per event loop. A kept-alive
connection the server closed meanwhile is retried once on a new one (as urllib3 does).
Failures are raised as requests' own exceptions, so that the retry policy and the messages
(``llm.retry``) are the same on both paths.
"""

from __future__ import annotations

import asyncio
import sys
from urllib.parse import urlsplit

import requests

__all__ = ["LoopConnections"]

Answer = tuple[int, dict[str, str], bytes]
Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class LoopConnections:
    """Keep-alive connections to one ``http://`` URL, used from one event loop."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "localhost"
        self.port = parts.port or 80
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self._head = ("\r\n".join(lines) + "\r\n").encode("latin-1")
        self._idle: list[Connection] = []

    async def post(self, data: bytes, timeout: float) -> Answer:
        """POST ``data``; (status, headers with lower-case names, body). Raises
        ``requests.exceptions.ConnectionError`` or ``ReadTimeout`` when there is no answer."""
        request = self._head + b"Content-Length: %d\r\n\r\n" % len(data) + data
        try:
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(timeout):
                    return await self._send(request)
            # asyncio.timeout is new in 3.11: without it, this call failed on 3.10
            return await asyncio.wait_for(self._send(request), timeout)  # pragma: no cover
        except (TimeoutError, asyncio.TimeoutError):  # the same class from Python 3.11 on
            raise requests.exceptions.ReadTimeout(f"no answer within {timeout:g} s") from None

    async def _send(self, request: bytes) -> Answer:
        """Send ``request`` on an idle kept-alive connection, else on a new one."""
        while self._idle:
            connection = self._idle.pop()
            try:
                return await self._exchange(connection, request)
            except (ConnectionError, asyncio.IncompleteReadError, ValueError):
                continue  # closed by the server while idle: try another, then a new one
        try:
            connection = await asyncio.open_connection(self.host, self.port)
        except OSError as exc:
            raise requests.exceptions.ConnectionError(
                f"cannot connect to {self.host}:{self.port}: {exc.strerror or exc}"
            ) from None
        try:
            return await self._exchange(connection, request)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
            raise requests.exceptions.ConnectionError(
                f"the connection broke ({type(exc).__name__})"
            ) from None

    async def _exchange(self, connection: Connection, request: bytes) -> Answer:
        reader, writer = connection
        done = False
        try:
            writer.write(request)
            status, headers, body, keep = await _read_response(reader)
            done = True
        finally:
            if not done:
                writer.close()  # cancelled or broken mid-exchange: never reused
        if keep:
            self._idle.append(connection)
        else:
            writer.close()
        return status, headers, body

    def close(self) -> None:
        """Close the idle connections (call it on their loop)."""
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    status = int(rest.split(" ", 1)[0])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                break
            chunks.append((await reader.readexactly(size + 2))[:-2])
        body = b"".join(chunks)
    elif "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif status in (204, 304) or 100 <= status < 200:
        body = b""
    else:
        body = await reader.read()  # until the server closes
        keep = False
    return status, headers, body, keep
