"""``praisonsession serve``: host agents for remote sessions (``Session(agent_url=...)``); and
``praisonsession token``: a user token for such a server."""

from __future__ import annotations

import click

from ..._internal.redaction import redact_url
from ...errors import InvalidValueError, MissingDependencyError, PraisonSessionError, install_line
from .exit_codes import failure
from .group import main
from .listening import check_listen_address
from .options import listen_options, store_option

__all__ = ["serve", "token"]


@main.command()
@store_option
@click.option(
    "--agent",
    "agents",
    metavar="[PATH=]MODULE:ATTR",
    multiple=True,
    required=True,
    help="A factory, factory(session) -> session.Agent(...); repeat with PATH= for several agents.",
)
@listen_options(port=8000)
@click.option(
    "--secret-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="File holding the secret that signs user tokens (praisonsession token); else the "
    "environment variable PRAISONSESSION_SERVER_SECRET, if set.",
)
@click.option(
    "--path", default="/agent", show_default=True, help="Path of an --agent without PATH=."
)
@click.option(
    "--max-body",
    type=click.IntRange(1024),
    default=None,
    metavar="BYTES",
    help="Largest request body accepted (default 4 MiB); larger ones get HTTP 413.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.001),
    default=None,
    help="Seconds each store operation and LLM request may take (default: the timeout "
    "setting, PRAISONSESSION_TIMEOUT, 30 s unless set).",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0.001),
    default=10.0,
    show_default=True,
    help="Seconds a client may take to send a request's headers.",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(min=0.001),
    default=30.0,
    show_default=True,
    help="Seconds a client may take to send a request's body.",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0.001),
    default=5.0,
    show_default=True,
    help="Seconds an idle kept-alive connection stays open.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1),
    default=1000,
    show_default=True,
    help="Connections at once; beyond it, the one waiting longest on its client is closed.",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
def serve(
    store_url: str | None,
    agents: tuple[str, ...],
    host: str,
    port: int,
    token: str | None,
    secret_file: str | None,
    path: str,
    max_body: int | None,
    timeout: float | None,
    header_timeout: float,
    body_timeout: float,
    idle_timeout: float,
    max_connections: int,
    log_level: str,
) -> None:
    """Serve agents to remote sessions: one conversation per (user_id, session_id), kept in
    the store, so a restarted server continues every conversation.

    \b
    praisonsession serve --store sqlite://sessions.db --agent myagents:assistant
    Session(agent_url="http://127.0.0.1:8000/agent", session_id="chat_1").chat("Hi")
    """
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise failure(  # exit 3, as for any extra a command needs
            MissingDependencyError(
                f"The server needs FastAPI and uvicorn ({exc}). Install them with: "
                f"{install_line('server')}."
            )
        ) from None
    from ..server import runner
    from ..server.connections import Limits

    try:
        app = runner.prepare(
            store_url,
            agents,
            host=host,
            token=token,
            secret_file=secret_file,
            path=path,
            max_body=max_body,
            timeout=timeout,
        )
    except PraisonSessionError as exc:
        raise failure(exc) from None  # the same exit codes as every command
    check_listen_address(host, port)
    hosting = app.hosting
    served = ", ".join(f"{p} ({spec})" for p, (spec, _) in sorted(hosting.factories.items()))
    access = app.access
    tokens = " and ".join(
        kind
        for kind, present in (("admin", access.token is not None), ("user", access.secret))
        if present
    )
    click.echo(
        f"praisonsession serve: agents {served}; store {redact_url(hosting.store.url)}; "
        f"{tokens + ' tokens accepted' if tokens else 'no token required (loopback only)'}; "
        f"API docs at http://{host}:{port}/docs; sessions at http://{host}:{port}/ui/",
        err=True,
    )
    limits = Limits(header_timeout, body_timeout, idle_timeout, max_connections)
    runner.serve(app, host=host, port=port, log_level=log_level, limits=limits)


@main.command()
@click.option("--user", "user_id", required=True, help="The user the token may act for.")
@click.option(
    "--ttl",
    type=click.FloatRange(min=1),
    default=3600.0,
    show_default=True,
    help="Seconds the token stays valid.",
)
@click.option(
    "--secret-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="The server's secret file (serve --secret-file); else PRAISONSESSION_SERVER_SECRET.",
)
def token(user_id: str, ttl: float, secret_file: str | None) -> None:
    """Print a token that reaches only USER's sessions on a server with the same secret.

    \b
    praisonsession token --user alice --ttl 3600 --secret-file server.secret
    Session(agent_url="http://host:8000/agent", user_id="alice", api_key=TOKEN)
    """
    from ..server.access_tokens import SECRET_ENV, issue_token, load_secret

    try:
        secret = load_secret(secret_file)
        if secret is None:
            raise InvalidValueError(
                f"No secret: pass --secret-file PATH (the file serve --secret-file reads) or "
                f"set {SECRET_ENV}. The secret never goes on the command line."
            )
        click.echo(issue_token(secret, user_id, ttl))
    except PraisonSessionError as exc:
        raise failure(exc) from None
