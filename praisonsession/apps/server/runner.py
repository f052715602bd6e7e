"""``serve``: check the configuration, build the app and run it with uvicorn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...session.options import resolve_store
from ...settings import Settings
from .access_tokens import load_secret
from .agents_spec import load_agents
from .connections import DEFAULT_LIMITS, Limits, guarded_protocol, raise_file_limit
from .security import check_bind

if TYPE_CHECKING:
    from .app import ServerApp

__all__ = ["prepare", "serve"]


def prepare(
    store_url: str | None,
    agents: list[str] | tuple[str, ...],
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    secret_file: str | None = None,
    path: str = "/agent",
    max_body: int | None = None,
    timeout: float | None = None,
) -> ServerApp:
    """The app for these options, after every check that can fail before serving (the bind
    rule, the secret, the agent factories, the store URL)."""
    from .app import DEFAULT_MAX_BODY, create_app

    secret = load_secret(secret_file)
    check_bind(host, token, secret)
    factories = load_agents(agents, path)
    settings = Settings()
    store = resolve_store(store_url, settings)
    return create_app(
        store,
        factories,
        token=token,
        secret=secret,
        settings=settings,
        timeout=timeout,
        max_body=DEFAULT_MAX_BODY if max_body is None else max_body,
    )


def serve(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    limits: Limits = DEFAULT_LIMITS,
) -> None:
    """Run ``app`` until interrupted (Ctrl-C or SIGTERM finish the requests in flight), with
    uvloop and httptools, and the header, body and idle timeouts and connection cap of
    ``limits``."""
    import uvicorn

    raise_file_limit(limits.max_connections + 256)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        server_header=False,
        http=guarded_protocol(limits),
        # uvicorn annotates an int, but waits any number of seconds (loop.call_later)
        timeout_keep_alive=limits.idle_timeout,  # type: ignore[arg-type]  # a float works
        backlog=max(2048, limits.max_connections),
    )
