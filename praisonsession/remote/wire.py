"""The session server's wire format: routes, headers and typed errors, shared by both ends.

PraisonAI's part is kept as it is: ``GET /health``, and ``POST <agent path>`` with
``{"query", "session_id", "user_id", ...}`` answered by ``{"response": ...}``. Ours adds a
bearer token, an ``Idempotency-Key`` header on chat turns, ``GET <agent path>/health``, and
the store routes ``POST <agent path>/store/<operation>`` that a remote session's state calls
use. An error is JSON, ``{"error": {"type", "message", "status", "fields"}, "detail": message}``,
whose type the client turns back into the same error class it was on the server.

Nothing here imports a web framework or an HTTP client: the server and the client both do.
"""

from __future__ import annotations

from typing import Any

from .. import errors
from ..errors import (
    PraisonSessionError,
    RemoteAuthError,
    RemoteError,
    RemoteRequestError,
    RemoteServerError,
)

__all__ = [
    "HEALTH",
    "IDEMPOTENCY_HEADER",
    "SERVER_NAME",
    "decode_error",
    "encode_error",
    "server_message",
    "store_path",
]

SERVER_NAME = "praisonsession"
HEALTH = "/health"
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: The HTTP status of each error class that crosses the wire (a subclass takes its base's).
ERROR_STATUS: dict[str, int] = {
    "InvalidIdError": 400,
    "InvalidValueError": 400,
    "RemoteAuthError": 401,
    "SessionNotFoundError": 404,
    "RemoteRequestError": 404,
    "ConflictError": 409,
    "KeyRequiredError": 409,  # the session is encrypted and the server holds no key
    "SessionExpiredError": 410,
    "UnsupportedFormatError": 500,
    "SessionCorruptedError": 500,
    "RemoteServerError": 502,
    "StoreUnavailableError": 503,
    "OperationTimeoutError": 504,
}
#: Attributes an error carries besides its message, restored on the client.
_FIELDS = (
    "session_id",
    "user_id",
    "expired_at",
    "what",
    "seconds",
    "found",
    "supported",
    "fingerprint",
)


def store_path(agent_path: str, operation: str) -> str:
    """``<agent path>/store/<operation>``: the route of one store operation (the server's
    ``store_api.OPERATIONS`` names them)."""
    return f"{agent_path.rstrip('/')}/store/{operation}"


def encode_error(exc: PraisonSessionError, status: int | None = None) -> tuple[int, dict[str, Any]]:
    """The status and JSON body for one of our errors raised while serving a request."""
    name = type(exc).__name__
    for cls in type(exc).__mro__:
        if cls.__name__ in ERROR_STATUS:
            name = cls.__name__
            break
    else:  # one of ours that is about the server, not the request
        name, status = "RemoteServerError", status or 500
    if status is None:
        status = getattr(exc, "status", None) if isinstance(exc, RemoteError) else None
        status = status or ERROR_STATUS[name]
    message = str(exc)
    fields = {
        field: getattr(exc, field)
        for field in _FIELDS
        if isinstance(getattr(exc, field, None), (str, int, float))
    }
    body = {
        "error": {"type": name, "message": message, "status": status, "fields": fields},
        "detail": message,
    }
    return status, body


def decode_error(status: int, body: Any, url: str) -> PraisonSessionError:
    """The error a server's answer stands for: the class it names, else one by status."""
    error = body.get("error") if isinstance(body, dict) else None
    fields: dict[str, Any] = {}
    if isinstance(error, dict) and error.get("type") in ERROR_STATUS:
        name: str = error["type"]
        message = str(error.get("message") or f"HTTP {status}")
        given = error.get("fields")
        if isinstance(given, dict):
            fields = given
    else:
        name = _by_status(status)
        message = _detail(body) or f"HTTP {status}"
    cls: type[PraisonSessionError] = getattr(errors, name)  # both name classes of errors
    where = f" [session server {url}, HTTP {status}]"
    if issubclass(cls, RemoteError):
        return cls(message + where, url=url, status=status)
    exc = cls.__new__(cls)
    Exception.__init__(exc, message + where)
    for field in _FIELDS:
        if field in fields:
            setattr(exc, field, fields[field])
    return exc


def server_message(body: Any) -> str:
    """What the server said about a refusal (our error's message, else a foreign server's
    ``detail``), or "" when it said nothing readable."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])[:500]
    return _detail(body)


def _by_status(status: int) -> str:
    if status == 401 or status == 403:
        return RemoteAuthError.__name__
    if status in (400, 422):
        return "InvalidValueError"
    if status == 409:
        return "ConflictError"
    if 400 <= status < 500:
        return RemoteRequestError.__name__
    if status == 503:
        return "StoreUnavailableError"
    return RemoteServerError.__name__


def _detail(body: Any, limit: int = 500) -> str:
    """What a foreign server said: FastAPI's ``detail``, PraisonAI's ``error``, or the text."""
    if isinstance(body, dict):
        for key in ("detail", "error", "message"):
            said = body.get(key)
            if isinstance(said, str):
                return said[:limit]
        return ""
    return body[:limit] if isinstance(body, str) else ""
