"""``create_app``: the session server as an ASGI app (FastAPI), for ``praisonsession serve`` or
any ASGI server.

Routes, for each agent path (``/agent`` by default):

- ``POST <path>``: PraisonAI's chat request, ``{"query", "session_id", "user_id", ...}`` ->
  ``{"response", "session_id", "user_id"}``. One conversation per (user_id, session_id),
  kept in the store. An ``Idempotency-Key`` header makes a retried turn apply once.
- ``GET <path>/health`` and ``GET /health``: ``{"status": "ok", "server": "praisonsession",
  "version", "endpoints"}``; no token needed.
- ``POST <path>/store/<operation>``: the store routes of remote sessions (see ``store_api``).
- ``/docs``, ``/openapi.json``: the API, documented by FastAPI.
- ``/ui/``: the session browser (read-only, behind the same token; see ``praisonsession.ui``).

Errors are JSON, ``{"error": {"type", "message", "status", "fields"}, "detail"}`` (see
``praisonsession.remote.wire``): 400 a bad body, 401 no or wrong token, 404 no such route or
session, 409 a conflict, 413 a body over the cap, 503 the store is down, 502 the agent's LLM
failed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .._version import __version__
from ..errors import (
    InvalidValueError,
    PraisonSessionError,
    RemoteAuthError,
    RemoteError,
    RemoteRequestError,
    RemoteServerError,
)
from ..execution import bounded
from ..identifiers import DEFAULT_USER, check_session_id, check_user_id
from ..json_data import check_json_data, decode
from ..remote.wire import HEALTH, IDEMPOTENCY_HEADER, SERVER_NAME, encode_error, store_path
from ..settings import Settings
from ..stores.base import SessionBase
from .hosting import AgentHosting, Factory
from .security import BodyLimit, token_matches, unauthorized
from .store_api import OPERATIONS, run_operation

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_SESSION", "ServerApp", "create_app"]

#: The session a chat request without ``session_id`` belongs to (curl, PraisonAI-style tools).
DEFAULT_SESSION = "default"
DEFAULT_MAX_BODY = 4 * 1024 * 1024
#: Threads for blocking work (LLM calls, file I/O): LLM calls wait on the network, so many.
WORKER_THREADS = 64

logger = logging.getLogger("praisonsession.server")
#: Errors the server raises about a request itself; any other RemoteError came from an
#: endpoint the agent called (its LLM), and is reported as a 502.
_SERVER_ERRORS = (RemoteAuthError, RemoteRequestError, RemoteServerError)


def create_app(
    store: SessionBase,
    agents: dict[str, tuple[str, Factory]],
    *,
    token: str | None = None,
    settings: Settings | None = None,
    timeout: float = 30.0,
    max_body: int = DEFAULT_MAX_BODY,
    capacity: int = 1000,
    close_store: bool = True,
) -> ServerApp:
    """The app serving ``agents`` (agent path -> (its name for messages, factory)) over
    ``store``. ``token``, when set, is required on every chat and store request."""
    if not agents:
        raise InvalidValueError("The server needs at least one agent: --agent module:factory.")
    paths = sorted(agents)
    hosting = AgentHosting(
        store, agents, settings or Settings(), timeout=timeout, capacity=capacity
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        import asyncio

        executor = ThreadPoolExecutor(WORKER_THREADS, thread_name_prefix="praisonsession-work")
        asyncio.get_running_loop().set_default_executor(executor)
        try:
            yield
        finally:
            await hosting.close()
            if close_store:
                await store.close()
            executor.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title="praisonsession server",
        version=__version__,
        description=(
            "Agents with one remembered conversation per (user_id, session_id), for "
            "`Session(agent_url=...)` clients (praisonsession's or PraisonAI's). Send the "
            "token as `Authorization: Bearer <token>` when the server has one."
        ),
        lifespan=lifespan,
    )

    async def authorized(request: Request) -> None:
        if token is not None and not token_matches(token, request.headers):
            has = bool(request.headers.get("authorization") or request.headers.get("x-auth-token"))
            raise unauthorized(has)

    async def health() -> dict[str, Any]:
        return {"status": "ok", "server": SERVER_NAME, "version": __version__, "endpoints": paths}

    app.add_api_route(HEALTH, health, methods=["GET"], summary="Is the server up?")

    @app.get("/", include_in_schema=False)
    async def welcome() -> dict[str, Any]:
        return {"message": "praisonsession server. See /docs for the API.", "endpoints": paths}

    for path in paths:
        _add_agent_routes(app, path, hosting, authorized, timeout, health)
    _add_browser(app, store, token)

    @app.exception_handler(PraisonSessionError)
    async def typed_error(request: Request, exc: PraisonSessionError) -> JSONResponse:
        if isinstance(exc, RemoteError) and not isinstance(exc, _SERVER_ERRORS):
            # the agent's LLM (or another endpoint the agent called) failed
            exc = RemoteServerError(f"The agent could not answer: {exc}", status=502)
        status, body = encode_error(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse(body, status_code=status, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            message = (
                f"Nothing at {request.url.path!r}. This server's agents are at: "
                f"{', '.join(paths)} (POST a chat request there)."
            )
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path!r}."
        else:
            message = str(exc.detail)
        status, body = encode_error(RemoteRequestError(message, status=exc.status_code))
        return JSONResponse(body, status_code=status)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("Unexpected error serving %s %s", request.method, request.url.path)
        error = RemoteServerError(
            f"The server failed ({type(exc).__name__}); its log has the details.", status=500
        )
        status, body = encode_error(error)
        return JSONResponse(body, status_code=status)

    return ServerApp(app, hosting, max_body)


class ServerApp:
    """The ASGI app: the FastAPI app (``api``) behind the body cap; ``hosting`` holds the
    live agents and the store."""

    def __init__(self, api: FastAPI, hosting: AgentHosting, max_body: int) -> None:
        self.api = api
        self.hosting = hosting
        self._asgi = BodyLimit(api, max_body)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._asgi(scope, receive, send)


def _add_agent_routes(
    app: FastAPI,
    path: str,
    hosting: AgentHosting,
    authorized: Any,
    timeout: float,
    health: Any,
) -> None:
    from fastapi import Depends

    spec = hosting.factories[path][0]
    guard = [Depends(authorized)]
    if path.rstrip("/"):
        app.add_api_route(
            path.rstrip("/") + HEALTH, health, methods=["GET"], summary=f"Health ({path})"
        )

    async def chat(request: Request) -> dict[str, Any]:
        body = await _json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            raise InvalidValueError(
                "Missing 'query' field in request: send a JSON object such as "
                '{"query": "Hello", "session_id": "chat_1", "user_id": "alice"}.'
            )
        session_id = check_session_id(body.get("session_id") or DEFAULT_SESSION)
        user_id = check_user_id(body.get("user_id") or DEFAULT_USER)
        turn_key = request.headers.get(IDEMPOTENCY_HEADER)
        if turn_key is not None and not 1 <= len(turn_key) <= 200:
            raise InvalidValueError("The Idempotency-Key header must be 1 to 200 characters.")
        reply = await hosting.chat(path, user_id, session_id, body["query"], turn_key)
        return {"response": reply, "session_id": session_id, "user_id": user_id}

    app.add_api_route(
        path,
        chat,
        methods=["POST"],
        dependencies=guard,
        summary=f"Chat with {spec}",
        description=(
            'PraisonAI\'s request: `{"query": str, "session_id": str, "user_id": str}` '
            '(other keys are ignored). Answers `{"response": str, "session_id", '
            '"user_id"}`. Send an `Idempotency-Key` header to make a retry safe: a turn '
            "already saved under that key is answered again, not run again."
        ),
        openapi_extra=_json_request({"query": "Hello", "session_id": "chat_1", "user_id": "me"}),
    )

    for operation, (_, about) in OPERATIONS.items():
        app.add_api_route(
            store_path(path, operation),
            _store_route(operation, hosting.store, timeout),
            methods=["POST"],
            dependencies=guard,
            summary=f"Store: {operation}",
            description=about + " The body also names `user_id` and `session_id`.",
            tags=["store"],
            openapi_extra=_json_request({"user_id": "me", "session_id": "chat_1"}),
        )


def _add_browser(app: FastAPI, store: SessionBase, token: str | None) -> None:
    """The session browser at ``/ui/``, read-only, behind the server's token."""
    from fastapi.responses import RedirectResponse

    from ..ui import create_ui_app

    @app.get("/ui", include_in_schema=False)
    async def browser_home() -> RedirectResponse:
        return RedirectResponse("/ui/")

    app.mount("/ui", create_ui_app(store, token=token, close_store=False))


def _store_route(operation: str, store: SessionBase, timeout: float) -> Any:
    async def route(request: Request) -> dict[str, Any]:
        body = await _json_body(request)
        result = await bounded(
            run_operation(store, operation, body), timeout, f"store operation {operation!r}"
        )
        return {"result": result}

    route.__name__ = f"store_{operation}"
    return route


async def _json_body(request: Request) -> Any:
    raw = await request.body()

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        data = decode(raw, parse_constant=refuse)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidValueError(
            f"The request body is not valid JSON ({exc}); send a JSON object with "
            "Content-Type: application/json."
        ) from None
    check_json_data(data, "the request body")
    return data


def _json_request(example: dict[str, Any]) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}, "example": example}},
        }
    }
