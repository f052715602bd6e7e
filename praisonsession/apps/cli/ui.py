"""``praisonsession ui``: browse a store's sessions in a web page (read-only)."""

from __future__ import annotations

import click

from ..._internal.redaction import redact_url
from ...errors import MissingDependencyError, PraisonSessionError, install_line
from .exit_codes import failure
from .group import main
from .options import listen_options, store_option

__all__ = ["ui"]


@main.command(short_help="Browse sessions in a web page (read-only).")
@store_option
@listen_options(port=8080)
@click.option(
    "--user-token",
    "user_tokens",
    metavar="USER=TOKEN",
    multiple=True,
    help="A token that sees only USER's sessions; repeat for several users.",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
)
def ui(
    store_url: str | None,
    host: str,
    port: int,
    token: str | None,
    user_tokens: tuple[str, ...],
    log_level: str,
) -> None:
    """Browse the store's users, sessions, state, history (with tool calls), summaries,
    usage, snapshots, fork trees and memories in a web page. Nothing is changed.

    Memories are read where sessions keep them: PRAISONSESSION_VECTOR_STORE_URL, else the
    chroma folder of the data directory (PRAISONSESSION_DATA_DIR, ./.praisonsession).

    \b
    Example:
      praisonsession ui --store sqlite://sessions.db
      then open http://127.0.0.1:8080/
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise failure(  # exit 3, as for any extra a command needs
            MissingDependencyError(
                f"The browser needs Starlette and uvicorn ({exc}). Install them with: "
                f"{install_line('server')}."
            )
        ) from None
    from ...recall.core import vector_location
    from ...session.options import resolve_store
    from ...settings import Settings
    from ..server.runner import serve
    from ..server.security import BROWSER_REACH, check_bind
    from ..ui import create_ui_app
    from .listening import check_listen_address
    from .store_access import refuse_missing_store

    by_token: dict[str, str] = {}
    for pair in user_tokens:
        user, equals, secret = pair.partition("=")
        if not equals or not user or not secret.strip():
            raise click.BadParameter(
                f"{pair!r} is not USER=TOKEN, e.g. --user-token alice=s3cret-for-alice.",
                param_hint="--user-token",
            )
        by_token[secret.strip()] = user
    try:
        check_bind(host, token or next(iter(by_token), None), reach=BROWSER_REACH)
        settings = Settings()
        store = resolve_store(store_url, settings)
        refuse_missing_store(store)  # before anything opens it: nothing is created
        check_listen_address(host, port)
        app = create_ui_app(
            store, token=token, user_tokens=by_token, close_store=True, settings=settings
        )
    except PraisonSessionError as exc:
        raise failure(exc) from None
    guarded = bool(token or by_token)
    click.echo(
        f"praisonsession ui: store {redact_url(store.url)}; "
        f"memories {redact_url(str(vector_location(settings, backend=store.backend)))}; "
        f"token {'required' if guarded else 'not required (loopback only)'}; "
        f"open http://{host}:{port}/",
        err=True,
    )
    serve(app, host=host, port=port, log_level=log_level)
