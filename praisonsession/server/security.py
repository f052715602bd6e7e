"""Who may talk to the server, and how much: the token, the loopback rule, the body cap.

- A server bound to anything but a loopback address must have a token (``check_bind``).
- With a token, every agent and store request needs ``Authorization: Bearer <token>`` (or
  PraisonAI's ``X-Auth-Token``), compared in constant time. ``/health`` and the API docs stay
  open: they hold no session data.
- A request body larger than the cap is refused with 413 before the app reads any of it.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..errors import InvalidValueError, RemoteAuthError
from ..remote.wire import encode_error

__all__ = ["BodyLimit", "check_bind", "is_loopback", "token_matches"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve beyond this machine without a token."""
    if token is not None and not token.strip():
        raise InvalidValueError("The token is empty; pass a long random string, or none.")
    if not is_loopback(host) and not token:
        raise InvalidValueError(
            f"Refusing to serve on {host!r} without a token: anyone who can reach that "
            "address could read and change every session. Set a token in the "
            "environment, where `ps` does not show it (as it would show --token): export "
            "PRAISONSESSION_REMOTE_TOKEN=\"$(python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')\", and give clients the same token "
            "(Session(agent_url=..., api_key=...)); or bind 127.0.0.1."
        )


def token_matches(expected: str, headers: Any) -> bool:
    """True if the request carries ``expected`` (compared in constant time)."""
    given = ""
    authorization = headers.get("authorization") or ""
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == "bearer":
        given = credentials.strip()
    if not given:
        given = (headers.get("x-auth-token") or "").strip()
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def unauthorized(has_token: bool) -> RemoteAuthError:
    said = "the wrong token" if has_token else "no token"
    return RemoteAuthError(
        f"Unauthorized: the request carried {said}. Send the server's token as "
        "'Authorization: Bearer <token>' (Session(agent_url=..., api_key=...) does).",
        status=401,
    )


class BodyLimit:
    """ASGI middleware: read the request body up front, refusing more than ``limit`` bytes."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await self._refuse(send, declared)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(send, size)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # the disconnect, when it comes

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, size: int) -> None:
        from ..errors import RemoteRequestError

        status, body = encode_error(
            RemoteRequestError(
                f"The request body ({size:,} bytes or more) is larger than this server "
                f"accepts ({self.limit:,} bytes; praisonsession serve --max-body).",
                status=413,
            )
        )
        data = json.dumps(body).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": data})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
