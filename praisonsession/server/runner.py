"""``serve``: check the configuration, build the app and run it with uvicorn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..session_options import resolve_store
from ..settings import Settings
from .agents_spec import load_agents
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
    path: str = "/agent",
    max_body: int | None = None,
    timeout: float | None = None,
) -> ServerApp:
    """The app for these options, after every check that can fail before serving (the bind
    rule, the agent factories, the store URL)."""
    from .app import DEFAULT_MAX_BODY, create_app

    check_bind(host, token)
    factories = load_agents(agents, path)
    settings = Settings()
    store = resolve_store(store_url, settings)
    return create_app(
        store,
        factories,
        token=token,
        settings=settings,
        timeout=timeout,
        max_body=DEFAULT_MAX_BODY if max_body is None else max_body,
    )


def serve(app: Any, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Run ``app`` until interrupted (Ctrl-C or SIGTERM finish the requests in flight)."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level=log_level, server_header=False)
