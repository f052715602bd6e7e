"""``praisonsession serve``: host agents for remote sessions (``Session(agent_url=...)``)."""

from __future__ import annotations

import click

from ..errors import PraisonSessionError
from ..redaction import redact_url
from . import main
from .exit_codes import failure
from .options import store_option

__all__ = ["serve"]


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
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    envvar="PRAISONSESSION_REMOTE_TOKEN",
    show_envvar=True,
    default=None,
    help="Bearer token every chat and store request must carry (required off loopback).",
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
    default=30.0,
    show_default=True,
    help="Seconds each store operation and LLM request may take.",
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
    path: str,
    max_body: int | None,
    timeout: float,
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
        raise click.ClickException(
            f"The server needs FastAPI and uvicorn ({exc}). Install them with: "
            'pip install "praisonsession[server]"'
        ) from None
    from ..server import runner

    try:
        app = runner.prepare(
            store_url,
            agents,
            host=host,
            token=token,
            path=path,
            max_body=max_body,
            timeout=timeout,
        )
    except PraisonSessionError as exc:
        raise failure(exc) from None  # the same exit codes as every command
    hosting = app.hosting
    served = ", ".join(f"{p} ({spec})" for p, (spec, _) in sorted(hosting.factories.items()))
    click.echo(
        f"praisonsession serve: agents {served}; store {redact_url(hosting.store.url)}; "
        f"token {'required' if token else 'not required (loopback only)'}; "
        f"API docs at http://{host}:{port}/docs; sessions at http://{host}:{port}/ui/",
        err=True,
    )
    runner.serve(app, host=host, port=port, log_level=log_level)
