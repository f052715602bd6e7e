"""``create_app``: the session server as an ASGI app, for ``praisonsession serve`` or any ASGI
server.

Routes, for each agent path (``/agent`` by default):

- ``POST <path>``: PraisonAI's chat request, ``{"query", "session_id", "user_id", ...}`` ->
  ``{"response", "session_id", "user_id"}``. One conversation per (user_id, session_id),
  kept in the store. An ``Idempotency-Key`` header makes a retried turn apply once.
- ``GET <path>/health`` and ``GET /health``: ``{"status": "ok", "server": "praisonsession",
  "version", "endpoints"}``; no token needed.
- ``POST <path>/store/<operation>``: the store routes of remote sessions (see ``store_api``).
- ``/docs``, ``/openapi.json``: the API, documented by FastAPI.
- ``/ui/``: the session browser (read-only, behind the same token; see ``praisonsession.apps.ui``).

The routes that carry traffic are plain ASGI endpoints found by one dictionary lookup on
(method, path): each reads its headers once, checks the token inline, reads the body within
the cap, decodes it with one shared decoder and answers JSON. Measured, FastAPI's routing,
dependencies and middleware cost more per request than the SQLite work itself
(benchmarks/bench_server.py). Every other request (the API docs, a wrong method, an unknown
path, the lifespan) goes to the FastAPI app (``api``), which documents the same routes with the
same handlers; a sub-app (a ``/ui`` page) mounts there.

Errors are JSON, ``{"error": {"type", "message", "status", "fields"}, "detail"}`` (see
``praisonsession.remote.wire``): 400 a bad body, 401 no, a wrong or an expired token, 403 a user
token asking for another user's data, 404 no such route or session, 409 a conflict, 413 a body
over the cap, 503 the store is down, 502 the agent's LLM failed.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ... import tracing
from ..._internal.identifiers import check_session_id, check_user_id
from ..._internal.json_data import check_json_data, dumps
from ..._internal.runtime import bounded
from ..._version import __version__
from ...errors import (
    InvalidValueError,
    PraisonSessionError,
    RemoteError,
    RemoteRequestError,
    RemoteServerError,
)
from ...remote.wire import HEALTH, SERVER_NAME, encode_error, store_path
from ...settings import Settings
from ...stores.api import SessionBase
from .hosting import AgentHosting, Factory
from .security import ADMIN, Access, BodyLimit, Receive, Scope, Send
from .store_api import OPERATIONS, run_operation

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_SESSION", "ServerApp", "create_app"]

#: The session a chat request without ``session_id`` belongs to (curl, PraisonAI-style tools).
DEFAULT_SESSION = "default"
DEFAULT_MAX_BODY = 4 * 1024 * 1024
#: Threads for blocking work (LLM calls, file I/O): LLM calls wait on the network, so many.
WORKER_THREADS = 64

logger = logging.getLogger("praisonsession.apps.server")
#: Errors the server raises about a request itself; any other RemoteError came from an
#: endpoint the agent called (its LLM), and is reported as a 502.
_SERVER_ERRORS = ("RemoteAuthError", "RemoteRequestError", "RemoteServerError")


def _refuse_constant(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


#: One decoder for every request body (NaN and Infinity refused: they are not JSON).
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)

#: What a route does with a request: (who, the decoded body, the idempotency key) -> the
#: JSON answer.
Handler = Callable[[Any, Any, "bytes | None"], Awaitable[Any]]


def create_app(
    store: SessionBase,
    agents: dict[str, tuple[str, Factory]],
    *,
    token: str | None = None,
    secret: bytes | None = None,
    settings: Settings | None = None,
    timeout: float | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    capacity: int = 1000,
    close_store: bool = True,
) -> ServerApp:
    """The app serving ``agents`` (agent path -> (its name for messages, factory)) over
    ``store``. ``token``, when set, is the admin token; ``secret``, when set, signs user tokens
    (``praisonsession token``). With either, every chat and store request needs a token.
    ``timeout`` bounds each store operation and agent turn (None: the settings' ``timeout``)."""
    if not agents:
        raise InvalidValueError("The server needs at least one agent: --agent module:factory.")
    paths = sorted(agents)
    settings = settings or Settings()
    timeout = settings.timeout if timeout is None else timeout
    hosting = AgentHosting(store, agents, settings, timeout=timeout, capacity=capacity)
    access = Access(token, secret)
    health_body = {
        "status": "ok",
        "server": SERVER_NAME,
        "version": __version__,
        "endpoints": paths,
    }
    routes: dict[tuple[str, str], Endpoint] = {}

    async def health(grant: Any, body: Any, turn_key: bytes | None) -> Any:
        return health_body

    routes["GET", HEALTH] = Endpoint(health, access, max_body, guarded=False)
    for path in paths:
        if path.rstrip("/"):
            routes["GET", path.rstrip("/") + HEALTH] = routes["GET", HEALTH]
        routes["POST", path] = Endpoint(_chat(path, hosting, access), access, max_body)
        for operation in OPERATIONS:
            route = _store_operation(operation, store, access, timeout)
            routes["POST", store_path(path, operation)] = Endpoint(route, access, max_body)

    api = _documented_api(routes, paths, hosting, store, close_store, health_body)
    _add_browser(api, store, access, settings)
    return ServerApp(api, hosting, routes, max_body, access)


class ServerApp:
    """The ASGI app: the routes that carry traffic, found by (method, path), and the FastAPI
    app (``api``) for the rest; ``hosting`` holds the live agents and the store, ``access``
    the tokens."""

    def __init__(
        self,
        api: Any,
        hosting: AgentHosting,
        routes: dict[tuple[str, str], Endpoint],
        max_body: int,
        access: Access,
    ) -> None:
        self.api = api
        self.hosting = hosting
        self.access = access
        self.routes = routes
        self._fallback = BodyLimit(api, max_body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if tracing.on:
            return await tracing.server_request(scope, receive, send, self._dispatch)
        await self._dispatch(scope, receive, send)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            endpoint = self.routes.get((scope["method"], scope["path"]))
            if endpoint is not None:
                await endpoint(scope, receive, send)
                return
        await self._fallback(scope, receive, send)


class Endpoint:
    """One route: headers read once, the token checked inline, the body read within the cap
    and decoded, the handler run, its answer (or the typed error) sent as JSON."""

    def __init__(self, handler: Handler, access: Access, max_body: int, guarded: bool = True):
        self.handler = handler
        self.access = access
        self.max_body = max_body
        self.guarded = guarded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        status, payload, extra = await self.answer(scope, receive)
        if status < 0:
            return  # the client went away
        await _send_json(send, status, payload, extra)

    async def answer(self, scope: Scope, receive: Receive) -> tuple[int, Any, Any]:
        authorization = x_auth = turn_key = length = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"content-length":
                length = value
            elif name == b"x-auth-token":
                x_auth = value
            elif name == b"idempotency-key":
                turn_key = value
        try:
            if length is not None and length.isdigit() and int(length) > self.max_body:
                return _error(self._too_large(int(length)))
            grant = self.access.grant(authorization, x_auth) if self.guarded else ADMIN
            if scope["method"] == "GET":
                body = None
            else:
                raw = await self._read(receive)
                if raw is None:
                    return -1, None, None
                body = _decode(raw)
            return 200, await self.handler(grant, body, turn_key), None
        except PraisonSessionError as exc:
            return _error(exc)
        except Exception:
            logger.exception("Unexpected error serving %s %s", scope["method"], scope["path"])
            return _error(
                RemoteServerError(
                    f"The server failed ({_exception_name()}); its log has the details.",
                    status=500,
                )
            )

    async def _read(self, receive: Receive) -> bytes | None:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body: bytes = message.get("body", b"")
        if not message.get("more_body", False):
            if len(body) > self.max_body:
                raise self._too_large(len(body))
            return body
        chunks = [body]
        size = len(body)
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise self._too_large(size)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self, size: int) -> RemoteRequestError:
        return RemoteRequestError(
            f"The request body ({size:,} bytes or more) is larger than this server accepts "
            f"({self.max_body:,} bytes; praisonsession serve --max-body).",
            status=413,
        )


def _exception_name() -> str:
    import sys

    return type(sys.exc_info()[1]).__name__


def _decode(raw: bytes) -> Any:
    try:
        try:
            data = _DECODER.decode(raw.decode("utf-8"))
        except RecursionError:  # as json_data.decode says it: brackets nested too deep
            raise ValueError(
                "it nests brackets deeper than can be read (a JSON value is at most 200 "
                "levels deep)"
            ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidValueError(
            f"The request body is not valid JSON ({exc}); send a JSON object with "
            "Content-Type: application/json."
        ) from None
    check_json_data(data, "the request body")
    return data


def _error(exc: PraisonSessionError) -> tuple[int, Any, Any]:
    if isinstance(exc, RemoteError) and type(exc).__name__ not in _SERVER_ERRORS:
        # the agent's LLM (or another endpoint the agent called) failed
        exc = RemoteServerError(f"The agent could not answer: {exc}", status=502)
    status, body = encode_error(exc)
    extra = [(b"www-authenticate", b"Bearer")] if status == 401 else None
    return status, body, extra


async def _send_json(send: Send, status: int, payload: Any, extra: Any = None) -> None:
    data = dumps(payload).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
    if extra:
        headers += extra
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


# -- the handlers ---------------------------------------------------------------------------


def _chat(path: str, hosting: AgentHosting, access: Access) -> Handler:
    async def chat(grant: Any, body: Any, turn_key: bytes | None) -> Any:
        if type(body) is not dict or type(body.get("query")) is not str:
            raise InvalidValueError(
                "Missing 'query' field in request: send a JSON object such as "
                '{"query": "Hello", "session_id": "chat_1", "user_id": "alice"}.'
            )
        session_id = check_session_id(body.get("session_id") or DEFAULT_SESSION)
        user_id = check_user_id(access.user_for(grant, body.get("user_id"), "the chat"))
        key = None
        if turn_key is not None:
            key = turn_key.decode("latin-1")
            if not 1 <= len(key) <= 200:
                raise InvalidValueError("The Idempotency-Key header must be 1 to 200 characters.")
        reply = await hosting.chat(path, user_id, session_id, body["query"], key)
        return {"response": reply, "session_id": session_id, "user_id": user_id}

    return chat


def _store_operation(operation: str, store: SessionBase, access: Access, timeout: float) -> Handler:
    what = f"store operation {operation!r}"
    # purge removes expired sessions of every user; list_by_prefix lists every user's
    everyone = operation in ("purge", "list_by_prefix")

    async def route(grant: Any, body: Any, turn_key: bytes | None) -> Any:
        if grant is not ADMIN and type(body) is dict:
            if everyone:
                access.user_for(grant, "(every user)", f"the store operation {operation!r}")
            body["user_id"] = access.user_for(grant, body.get("user_id"), "the session")
        result = await bounded(run_operation(store, operation, body), timeout, what)
        return {"result": result}

    route.__name__ = f"store_{operation}"
    return route


# -- the documented app ---------------------------------------------------------------------


def _documented_api(
    routes: dict[tuple[str, str], Endpoint],
    paths: list[str],
    hosting: AgentHosting,
    store: SessionBase,
    close_store: bool,
    health_body: dict[str, Any],
) -> Any:
    """The FastAPI app: the lifespan, the API docs, the answers for unknown paths and wrong
    methods, and the same routes (the same handlers) for whoever reaches them through it."""

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

    api = FastAPI(
        title="praisonsession server",
        version=__version__,
        description=(
            "Agents with one remembered conversation per (user_id, session_id), for "
            "`Session(agent_url=...)` clients (praisonsession's or PraisonAI's). Send the "
            "admin token or a user token as `Authorization: Bearer <token>` when the server "
            "has them; a user token reaches only its own user's sessions."
        ),
        lifespan=lifespan,
    )

    def documented(endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
        async def route(request: Request) -> Response:
            status, payload, extra = await endpoint.answer(request.scope, request.receive)
            headers = {k.decode(): v.decode() for k, v in extra or ()}
            return Response(dumps(payload), status, headers=headers, media_type="application/json")

        return route

    @api.get("/", include_in_schema=False)
    async def welcome() -> dict[str, Any]:
        return {"message": "praisonsession server. See /docs for the API.", "endpoints": paths}

    for (method, path), endpoint in routes.items():
        summary, description, example = _about(path, hosting, paths)
        api.add_api_route(
            path,
            documented(endpoint),
            methods=[method],
            summary=summary,
            description=description,
            tags=["store"] if "/store/" in path else None,
            openapi_extra=None if method == "GET" else _json_request(example),
        )

    @api.exception_handler(StarletteHTTPException)
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

    return api


def _add_browser(api: FastAPI, store: SessionBase, access: Access, settings: Settings) -> None:
    """The session browser at ``/ui/``, read-only, behind the server's tokens: the admin token
    sees every user, a user token only its own. It finds memories where the agents keep them
    (``settings``)."""
    from fastapi.responses import RedirectResponse

    from ..ui import create_ui_app

    @api.get("/ui", include_in_schema=False)
    async def browser_home() -> RedirectResponse:
        return RedirectResponse("/ui/")

    api.mount("/ui", create_ui_app(store, access=access, close_store=False, settings=settings))


def _about(path: str, hosting: AgentHosting, paths: list[str]) -> tuple[str, str, Any]:
    if path.endswith(HEALTH):
        return "Is the server up?", "No token needed.", None
    if "/store/" in path:
        operation = path.rsplit("/", 1)[1]
        about = OPERATIONS[operation][1]
        return (
            f"Store: {operation}",
            about + " The body also names `user_id` and `session_id`.",
            {"user_id": "me", "session_id": "chat_1"},
        )
    spec = hosting.factories[path][0]
    return (
        f"Chat with {spec}",
        'PraisonAI\'s request: `{"query": str, "session_id": str, "user_id": str}` '
        '(other keys are ignored). Answers `{"response": str, "session_id", "user_id"}`. '
        "Send an `Idempotency-Key` header to make a retry safe: a turn already saved under "
        "that key is answered again, not run again.",
        {"query": "Hello", "session_id": "chat_1", "user_id": "me"},
    )


def _json_request(example: Any) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}, "example": example}},
        }
    }
