"""``praisonsession ui``: browse a store's sessions in a web page (read-only)."""

from __future__ import annotations

import click

from ..errors import PraisonSessionError
from ..redaction import redact_url
from . import main
from .exit_codes import failure
from .options import store_option

__all__ = ["ui"]


@main.command(short_help="Browse sessions in a web page (read-only).")
@store_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    envvar="PRAISONSESSION_REMOTE_TOKEN",
    show_envvar=True,
    default=None,
    help="Token the page asks for (required off loopback).",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
)
def ui(store_url: str | None, host: str, port: int, token: str | None, log_level: str) -> None:
    """Browse the store's users, sessions, state, history (with tool calls), summaries,
    usage, snapshots and fork trees in a web page. Nothing is changed.

    \b
    praisonsession ui --store sqlite://sessions.db
    then open http://127.0.0.1:8080/
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise click.ClickException(
            f"The browser needs Starlette and uvicorn ({exc}). Install them with: "
            'pip install "praisonsession[server]"'
        ) from None
    from ..server.runner import serve
    from ..server.security import check_bind
    from ..session_options import resolve_store
    from ..settings import Settings
    from ..ui import create_ui_app

    try:
        check_bind(host, token)
        store = resolve_store(store_url, Settings())
    except PraisonSessionError as exc:
        raise failure(exc) from None
    app = create_ui_app(store, token=token, close_store=True)
    click.echo(
        f"praisonsession ui: store {redact_url(store.url)}; "
        f"token {'required' if token else 'not required (loopback only)'}; "
        f"open http://{host}:{port}/",
        err=True,
    )
    serve(app, host=host, port=port, log_level=log_level)
