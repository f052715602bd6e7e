"""What the command line's exit status means, and the one place where an error becomes one.

Scripts rely on these numbers, so they are few and stable: 0 done, 1 the operation failed,
2 the command was wrong (an option, a store URL, an id), 3 the store could not be used or an
extra the command needs is not installed (whichever command, whichever extra), 130
interrupted. A library error is always reported as one line on stderr, never a traceback.
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import Any

import click

from ..._internal.redaction import redact_text
from ...errors import (
    InvalidIdError,
    InvalidSettingError,
    InvalidValueError,
    OperationTimeoutError,
    PraisonSessionError,
    RemoteConnectionError,
    StoreUnavailableError,
)

__all__ = ["EXIT_CODES_HELP", "CommandFailed", "ExitCode", "InterruptibleGroup", "failure"]


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    STORE_UNAVAILABLE = 3
    INTERRUPTED = 130


#: The exit codes as ``--help`` shows them (``\b``: Click keeps the lines as they are).
EXIT_CODES_HELP = """\b
Exit codes:
  0    done
  1    the operation failed: no such session, a conflict, corrupt data,
       or a confirmation declined ("Aborted")
  2    usage: a bad option, argument, store URL (or a store file that is
       not there), setting or id
  3    unavailable: the store is down, unreachable or not answering in
       time, the port serve or ui would listen on is in use, or an extra
       the command needs is not installed (a store's client, the
       server's, memory's): the message says what to install
  130  interrupted (Ctrl-C)"""

# Checked in order; any other error is FAILED.
_CODES: tuple[tuple[tuple[type[BaseException], ...], ExitCode], ...] = (
    (
        (StoreUnavailableError, OperationTimeoutError, RemoteConnectionError, ImportError),
        ExitCode.STORE_UNAVAILABLE,
    ),
    ((InvalidIdError, InvalidValueError, InvalidSettingError), ExitCode.USAGE),
)


class CommandFailed(click.ClickException):
    """An error as the command line reports it: ``Error: <one line>`` on stderr, and a code."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(one_line(message))
        # click types exit_code a ClassVar, yet reads it from the exception it caught
        self.exit_code = int(exit_code)  # type: ignore[misc]  # each failure has its own code


def failure(error: Exception) -> CommandFailed:
    """The report of a library error, an OS error (a file that cannot be written, say), or a
    store whose client library is missing."""
    code = next((code for kinds, code in _CODES if isinstance(error, kinds)), ExitCode.FAILED)
    message = str(error)
    if isinstance(error, OSError) and not isinstance(error, PraisonSessionError):
        message = f"{error.strerror or error}" + (f": {error.filename}" if error.filename else "")
    return CommandFailed(message, code)


def one_line(text: str) -> str:
    """``text`` on one line, with any password or token in a URL masked."""
    return re.sub(r"\s*\n\s*", " ", redact_text(text)).strip()


class InterruptibleGroup(click.Group):
    """A command group that exits 130 on Ctrl-C, as shells expect (Click's own is 1, which a
    script could not tell from a failed operation)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\nInterrupted.", err=True)
            raise click.exceptions.Exit(ExitCode.INTERRUPTED) from None
