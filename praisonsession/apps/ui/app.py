"""``create_ui_app``: the session browser as an ASGI app (Starlette), read-only.

``/`` is the page (HTML, CSS and JavaScript shipped in this package: no build step, no CDN);
``/health`` answers without a token. ``/api/...`` is the JSON the page reads, each route one
:class:`~.browse.SessionBrowser` view:

- ``GET /api/me``: who the token is (``{"user": id}`` for a user token, else ``{"user": null}``)
- ``GET /api/users``, ``GET /api/sessions?user=&q=&after=&limit=``
- ``GET /api/session?user=&id=``, ``GET /api/messages?user=&id=&log=&start=&limit=``
- ``GET /api/tree?user=``
- ``GET /api/memories?user=&id=&after=&limit=``: the user's long-term memories, or with
  ``id`` the session's short-term notes; ``GET /api/memory_history?user=&memory=&id=``

Ids travel as query parameters, never as paths. With a ``token`` every API request must carry
it (``Authorization: Bearer``); a token of ``user_tokens`` (token -> user id) sees only that
user's sessions. The page itself holds no data and needs no token.
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..._internal.identifiers import check_session_id, check_user_id
from ...errors import InvalidValueError, PraisonSessionError, RemoteAuthError
from ...remote.wire import encode_error
from ...settings import Settings
from ...stores.api import SessionBase
from .browse import SessionBrowser
from .memories import MemoryBrowser

if TYPE_CHECKING:
    from ..server.security import Access

__all__ = ["create_ui_app"]

_STATIC = {
    "": ("index.html", "text/html; charset=utf-8"),
    "app.js": ("app.js", "text/javascript; charset=utf-8"),
    "style.css": ("style.css", "text/css; charset=utf-8"),
}
#: The page may load only itself: no inline script, no other origin.
_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)

Handler = Callable[[Request, SessionBrowser], Awaitable[Any]]


def create_ui_app(
    store: SessionBase,
    *,
    token: str | None = None,
    user_tokens: Mapping[str, str] | None = None,
    access: Access | None = None,
    close_store: bool = False,
    settings: Settings | None = None,
) -> Starlette:
    """The browser over ``store``. ``token`` sees every user; each of ``user_tokens``
    (token -> user id) sees one. With neither, anyone who can reach it sees all: bind
    loopback (``praisonsession ui`` refuses otherwise). ``access``, the session server's
    ``server.security.Access``, decides instead when given: its admin token sees every user,
    its signed user tokens one user each. Memories are read where ``settings`` (default: the
    environment's) say sessions keep them."""
    browser = SessionBrowser(store)
    recalled = MemoryBrowser(store, settings or Settings())
    users = {t: check_user_id(u) for t, u in (user_tokens or {}).items()}
    guarded = token is not None or bool(users)

    def caller(request: Request) -> str | None:
        """The user a request may see (None: every user); raises on a missing/wrong token."""
        if access is not None:
            headers = request.headers
            authorization = headers.get("authorization")
            x_auth_token = headers.get("x-auth-token")
            return access.grant(
                None if authorization is None else authorization.encode("latin-1"),
                None if x_auth_token is None else x_auth_token.encode("latin-1"),
            )
        if not guarded:
            return None
        given = _bearer(request)
        if token is not None and hmac.compare_digest(given.encode(), token.encode()):
            return None
        for candidate, user in users.items():
            if hmac.compare_digest(given.encode(), candidate.encode()):
                return user
        said = "the wrong token" if given else "no token"
        raise RemoteAuthError(
            f"Unauthorized: the request carried {said}. Enter the server's token (or your "
            "user token) in the page, or send 'Authorization: Bearer <token>'.",
            status=401,
        )

    def user_param(request: Request, allowed: str | None) -> str:
        user = check_user_id(request.query_params.get("user", ""))
        if allowed is not None and user != allowed:
            raise RemoteAuthError(
                f"This token may see only user {allowed!r}'s sessions, not {user!r}'s.",
                status=403,
            )
        return user

    def api(handler: Callable[[Request, str | None], Awaitable[Any]]) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                return JSONResponse(await handler(request, caller(request)))
            except PraisonSessionError as exc:
                status, body = encode_error(exc)
                return JSONResponse(body, status_code=status)

        return endpoint

    async def me(request: Request, allowed: str | None) -> Any:
        return {"user": allowed, "read_only": True}

    async def list_users(request: Request, allowed: str | None) -> Any:
        return {"users": [allowed] if allowed is not None else await browser.users()}

    async def sessions(request: Request, allowed: str | None) -> Any:
        query = request.query_params
        after = query.get("after") or None
        return await browser.sessions(
            user_param(request, allowed),
            search=query.get("q", ""),
            after=None if after is None else check_session_id(after),
            limit=_number(query.get("limit"), 50, "limit"),
        )

    async def session(request: Request, allowed: str | None) -> Any:
        user = user_param(request, allowed)
        return await browser.session(user, check_session_id(request.query_params.get("id")))

    async def messages(request: Request, allowed: str | None) -> Any:
        query = request.query_params
        user = user_param(request, allowed)
        log = query.get("log")
        if not log:
            raise InvalidValueError("Name the log to read: log=<name> (see the session's logs).")
        return await browser.messages(
            user,
            check_session_id(query.get("id")),
            log,
            start=_number(query.get("start"), 0, "start"),
            limit=_number(query.get("limit"), 50, "limit"),
        )

    async def tree(request: Request, allowed: str | None) -> Any:
        return {"tree": await browser.tree(user_param(request, allowed))}

    async def memories(request: Request, allowed: str | None) -> Any:
        query = request.query_params
        session_id = query.get("id") or None
        page = await recalled.memories(
            user_param(request, allowed),
            None if session_id is None else check_session_id(session_id),
            after=query.get("after") or None,
            limit=_number(query.get("limit"), 20, "limit"),
        )
        if allowed is not None:  # where the server keeps its files is the admin's business
            page["location"] = None
        return page

    async def memory_history(request: Request, allowed: str | None) -> Any:
        query = request.query_params
        session_id = query.get("id") or None
        history = await recalled.history(
            user_param(request, allowed),
            query.get("memory", ""),
            None if session_id is None else check_session_id(session_id),
        )
        return {"history": history}

    async def page(request: Request) -> Response:
        name = request.path_params.get("name", "")
        if name not in _STATIC:
            return JSONResponse({"detail": f"No file {name!r} here."}, status_code=404)
        filename, media_type = _STATIC[name]
        body = resources.files(__package__).joinpath("static").joinpath(filename).read_bytes()
        headers = {
            "Content-Security-Policy": _POLICY,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        }
        return Response(body, media_type=media_type, headers=headers)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if close_store:
                await store.close()

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "server": "praisonsession-ui"})

    routes = [
        Route("/health", health),
        Route("/api/me", api(me)),
        Route("/api/users", api(list_users)),
        Route("/api/sessions", api(sessions)),
        Route("/api/session", api(session)),
        Route("/api/messages", api(messages)),
        Route("/api/tree", api(tree)),
        Route("/api/memories", api(memories)),
        Route("/api/memory_history", api(memory_history)),
        Route("/", page),
        Route("/{name:str}", page),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _bearer(request: Request) -> str:
    scheme, _, credentials = (request.headers.get("authorization") or "").partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return (request.headers.get("x-auth-token") or "").strip()


def _number(text: str | None, default: int, name: str) -> int:
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidValueError(f"{name} must be a whole number, got {text!r}.") from None
