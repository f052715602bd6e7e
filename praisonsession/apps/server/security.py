"""Who may talk to the server, and how much: the tokens, the loopback rule, the body cap.

- A server bound to anything but a loopback address must have a token or a secret
  (``check_bind``).
- The admin token (``--token``) may do everything; a user token (signed with the server's
  secret, see ``tokens``) only what concerns its own user: a request naming another user is
  refused with 403 and logged, without the token. Either travels as ``Authorization: Bearer
  <token>`` (or PraisonAI's ``X-Auth-Token``); the admin token is compared in constant time.
  ``/health`` and the API docs stay open: they hold no session data.
- A request body larger than the cap is refused with 413 before the app reads any of it.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ...errors import InvalidValueError, RemoteAuthError
from ...remote.wire import encode_error
from .access_tokens import looks_like_user_token, user_of_token

__all__ = [
    "ADMIN",
    "BROWSER_REACH",
    "SERVER_REACH",
    "Access",
    "BodyLimit",
    "check_bind",
    "is_loopback",
    "token_matches",
]

logger = logging.getLogger("praisonsession.apps.server")
#: What ``Access.grant`` returns for a request that may touch every user's data.
ADMIN = None

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


#: What anyone reaching an open ``serve`` could do, and how its clients pass the token.
SERVER_REACH = (
    "could read and change every session",
    "give clients the same token (Session(agent_url=..., api_key=...))",
)
#: The same for ``ui``: the browser is read-only, it shows every session and changes none.
BROWSER_REACH = (
    "could see every session of every user (the browser shows their state, history and "
    "memories; it cannot change them)",
    "enter the same token when the page asks for it (or give each user a token that sees only "
    "their own sessions with --user-token USER=TOKEN)",
)


def check_bind(
    host: str,
    token: str | None,
    secret: bytes | None = None,
    reach: tuple[str, str] = SERVER_REACH,
) -> None:
    """Refuse to serve beyond this machine without a token or a secret for user tokens;
    ``reach`` says what anyone who reaches the address could do, and how clients pass it."""
    if token is not None and not token.strip():
        raise InvalidValueError("The token is empty; pass a long random string, or none.")
    if not is_loopback(host) and not token and not secret:
        could, clients = reach
        raise InvalidValueError(
            f"Refusing to serve on {host!r} without a token: anyone who can reach that "
            f"address {could}. Set a token in the "
            "environment, where `ps` does not show it (as it would show --token): export "
            "PRAISONSESSION_REMOTE_TOKEN=\"$(python -c 'import secrets; "
            f"print(secrets.token_urlsafe(32))')\", and {clients}; or bind 127.0.0.1."
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


class Access:
    """Who a request is: ``ADMIN`` (every user), or the one user its token was issued to.

    With neither an admin token nor a secret the server is open (loopback only, see
    ``check_bind``) and every request is ``ADMIN``.
    """

    def __init__(self, token: str | None = None, secret: bytes | None = None) -> None:
        self.token = None if token is None else token.encode("utf-8")
        self.secret = secret
        self.open = token is None and secret is None

    def grant(self, authorization: bytes | None, x_auth_token: bytes | None) -> str | None:
        """The request's user (``ADMIN`` for the admin token), from its two token headers;
        :class:`RemoteAuthError` (401) without a valid token."""
        if self.open:
            return ADMIN
        given = b""
        if authorization:
            scheme, _, credentials = authorization.partition(b" ")
            if scheme.lower() == b"bearer":
                given = credentials.strip()
        if not given and x_auth_token:
            given = x_auth_token.strip()
        if self.token is not None and hmac.compare_digest(given, self.token):
            return ADMIN
        if self.secret is not None and given:
            text = given.decode("latin-1")
            if looks_like_user_token(text):
                return user_of_token(self.secret, text)
        raise unauthorized(bool(authorization or x_auth_token))

    def user_for(self, grant: str | None, requested: Any, what: str) -> Any:
        """The user a request may act for: ``requested``, or the token's own user when the
        request names none; 403 (logged, without the token) when it names another."""
        if grant is ADMIN:
            return requested
        if requested is None or requested == "":
            return grant
        if requested != grant:
            logger.warning(
                "403: a token of user %r asked for %s of user %r; refused.",
                grant,
                what,
                requested,
            )
            raise forbidden(grant, what)
        return requested


def forbidden(grant: str, what: str) -> RemoteAuthError:
    return RemoteAuthError(
        f"Forbidden: this token is for user {grant!r}, and {what} belongs to another user (or "
        "to all). Use a token issued for that user, or the server's admin token.",
        status=403,
    )


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
        from ...errors import RemoteRequestError

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
