"""``ScriptedChatServer``: a real OpenAI-compatible HTTP server on 127.0.0.1 that answers from
a script. For tutorials and tests that must run offline, with no model and no key.

It speaks ``POST /v1/chat/completions`` (``"stream": true`` gets the same answer as
server-sent chunks, as OpenAI sends them) and ``GET /v1/models``. Queued replies are used first,
in order (text, tool calls, errors with any status and ``Retry-After``, slow or malformed
answers); when the queue is empty a ``responder`` function answers from the request. Every
request is recorded (path, headers, JSON body) so that you can see what a client sent::

    with ScriptedChatServer() as server:
        server.say("Hello!")
        agent = session.Agent("Helper", llm={"base_url": server.url, "model": "demo"})
        agent.chat("Hi")                       # -> "Hello!"
        server.requests[-1].body["messages"]   # exactly what the agent sent
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["RecordedRequest", "Reply", "ScriptedChatServer", "echo_responder", "http_date"]

Responder = Callable[[dict[str, Any]], "str | Reply"]


@dataclass
class Reply:
    """One scripted answer. Build it with the class methods; ``delay`` makes it slow."""

    status: int = 200
    payload: dict[str, Any] | None = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0) -> Reply:
        return cls(payload={"message": {"role": "assistant", "content": content}}, delay=delay)

    @classmethod
    def tool_calls(cls, *calls: tuple[str, dict[str, Any]] | dict[str, Any]) -> Reply:
        """Ask for function calls: ``("add", {"a": 1})`` pairs, or full OpenAI dicts."""
        made = []
        for call in calls:
            if isinstance(call, tuple):
                name, arguments = call
                call = {
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            made.append(call)
        message = {"role": "assistant", "content": None, "tool_calls": made}
        return cls(payload={"message": message, "finish_reason": "tool_calls"})

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted error",
        *,
        retry_after: float | str | None = None,
        delay: float = 0.0,
    ) -> Reply:
        """An error in OpenAI's shape; ``retry_after`` in seconds or as an HTTP date."""
        headers = {} if retry_after is None else {"Retry-After": _header_value(retry_after)}
        body = {"error": {"message": message, "type": "scripted", "code": status}}
        return cls(status=status, raw=json.dumps(body).encode(), headers=headers, delay=delay)

    @classmethod
    def malformed(cls, body: bytes = b'{"choices": [', status: int = 200) -> Reply:
        """A body that is not a chat completion (by default, truncated JSON)."""
        return cls(status=status, raw=body)


@dataclass
class RecordedRequest:
    """What the server received, and how long it took to answer."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    client_port: int
    received_at: float
    handling_seconds: float = 0.0


def echo_responder(request: dict[str, Any]) -> str:
    """The default answer when nothing is queued: repeat the last user message."""
    for message in reversed(request.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return f"You said: {message.get('content')}"
    return "Hello!"


class ScriptedChatServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, answering from a script.

    ``api_key``, when set, is required as ``Authorization: Bearer <key>`` (else HTTP 401), as
    OpenAI does; leave it None to accept any request, as Ollama and LM Studio do.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        api_key: str | None = None,
        models: Iterable[str] = ("scripted-model",),
    ) -> None:
        self.responder = responder or echo_responder
        self.api_key = api_key
        self.models = list(models)
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._count = 0

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> ScriptedChatServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-chat-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close open connections and join every thread. Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        httpd.shutdown()
        thread.join()
        httpd.close_connections()
        httpd.server_close()
        self._httpd = self._thread = None

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("The server is not running; call start() first.")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL to give a client, e.g. ``http://127.0.0.1:54321/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- the script -----------------------------------------------------------------------

    def queue(self, *replies: Reply) -> ScriptedChatServer:
        with self._lock:
            self._queue.extend(replies)
        return self

    def say(self, *texts: str) -> ScriptedChatServer:
        """Queue text answers, one per request."""
        return self.queue(*(Reply.text(t) for t in texts))

    def call(self, *calls: tuple[str, dict[str, Any]]) -> ScriptedChatServer:
        """Queue one answer asking for these tool calls (several = parallel calls)."""
        return self.queue(Reply.tool_calls(*calls))

    def fail(
        self,
        status: int,
        message: str = "scripted error",
        *,
        retry_after: float | str | None = None,
        times: int = 1,
    ) -> ScriptedChatServer:
        """Queue ``times`` error answers."""
        return self.queue(
            *(Reply.error(status, message, retry_after=retry_after) for _ in range(times))
        )

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def last_messages(self) -> list[dict[str, Any]]:
        """The ``messages`` of the last chat request."""
        messages: list[dict[str, Any]] = self.chat_requests[-1].body["messages"]
        return messages

    def reset(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()

    # -- serving --------------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self, body: Any) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        answer = self.responder(body if isinstance(body, dict) else {})
        return answer if isinstance(answer, Reply) else Reply.text(str(answer))

    def _completion(self, reply: Reply, body: dict[str, Any]) -> bytes:
        payload = reply.payload or {}
        with self._lock:
            self._count += 1
            number = self._count
        message = json.loads(json.dumps(payload.get("message", {})))
        for index, call in enumerate(message.get("tool_calls") or []):
            call.setdefault("id", f"call_{number}_{index}")
        prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [])
        completion = len(str(message.get("content") or ""))
        document = {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.models[0],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": payload.get("finish_reason", "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt // 4,
                "completion_tokens": completion // 4,
                "total_tokens": (prompt + completion) // 4,
            },
        }
        return json.dumps(document).encode("utf-8")

    def __repr__(self) -> str:
        where = self.url if self._httpd is not None else "stopped"
        return f"ScriptedChatServer({where}, {len(self.requests)} requests, {self.pending} queued)"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints do
    server: _Server
    timeout = 30  # an idle keep-alive connection is dropped after this
    # Headers and body leave in one segment, without Nagle's delay: otherwise each answer
    # waits ~40 ms for the client's delayed ACK, as real servers avoid too.
    wbufsize = -1
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet, like a test server
        pass

    def do_GET(self) -> None:
        started = time.perf_counter()
        chat = self.server.chat
        self._record(None, started)
        if not self.path.rstrip("/").endswith("/models"):
            return self._send(404, _error_body(404, f"No route for GET {self.path}"))
        data = [{"id": m, "object": "model", "owned_by": "scripted"} for m in chat.models]
        self._send(200, json.dumps({"object": "list", "data": data}).encode())

    def do_POST(self) -> None:
        started = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        recorded = self._record(body, started)
        chat = self.server.chat
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send(404, _error_body(404, f"No route for POST {self.path}"), recorded)
        if chat.api_key is not None and self.headers.get("Authorization") != (
            f"Bearer {chat.api_key}"
        ):
            message = "Incorrect API key provided."
            return self._send(401, _error_body(401, message), recorded)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            message = "Expected a JSON body with a messages list."
            return self._send(400, _error_body(400, message), recorded)
        reply = chat._next_reply(body)
        if reply.delay and chat._stopping.wait(reply.delay):
            return  # shutting down: leave without answering
        content = reply.raw if reply.raw is not None else chat._completion(reply, body)
        if body.get("stream") is True and reply.status == 200 and reply.raw is None:
            content, headers = _as_events(content), {"Content-Type": "text/event-stream"}
            return self._send(200, content, recorded, {**reply.headers, **headers})
        self._send(reply.status, content, recorded, reply.headers)

    def _record(self, body: Any, started: float) -> RecordedRequest:
        recorded = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            client_port=int(self.client_address[1]),
            received_at=time.monotonic(),
        )
        self._started = started
        self.server.chat._record(recorded)
        return recorded

    def _send(
        self,
        status: int,
        content: bytes,
        recorded: RecordedRequest | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        try:
            self.send_response(status)
            headers = dict(headers or {})
            self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(content)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(content)
            self.wfile.flush()
        except OSError:  # the client gave up (a timeout): nothing to answer
            self.close_connection = True
        if recorded is not None:
            recorded.handling_seconds = time.perf_counter() - self._started


class _Server(ThreadingHTTPServer):
    """Binds 127.0.0.1 only, and tracks connections so that stop() can end them all."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, chat: ScriptedChatServer) -> None:
        self.chat = chat
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name=f"scripted-chat-connection-{client_address[1]}",
            daemon=True,
        )
        with self._connections_lock:
            self._connections[request] = thread
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except OSError:
            pass
        finally:
            self.shutdown_request(request)
            with self._connections_lock:
                self._connections.pop(request, None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up is not an error worth a traceback

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections.items())
        for sock, _ in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for _, thread in connections:
            thread.join(timeout=5)


def _as_events(completion: bytes) -> bytes:
    """A completion as OpenAI streams it: a chunk with the role and content, one per tool call
    (its id, name and arguments at once), one with the finish reason, then ``[DONE]``."""
    document = json.loads(completion)
    choice = document["choices"][0]
    message = choice["message"]
    base = {key: document[key] for key in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return b"data: " + json.dumps({**base, "choices": choices}).encode() + b"\n\n"

    parts = [chunk({"role": "assistant", "content": message.get("content") or ""})]
    for index, call in enumerate(message.get("tool_calls") or []):
        parts.append(chunk({"tool_calls": [{"index": index, **call}]}))
    parts.append(chunk({}, choice.get("finish_reason") or "stop"))
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def _error_body(status: int, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "scripted", "code": status}}).encode()


def _header_value(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return f"{value:g}"


def http_date(seconds_from_now: float) -> str:
    """An HTTP date (as in a ``Retry-After`` header) this many seconds from now."""
    return formatdate(time.time() + seconds_from_now, usegmt=True)
