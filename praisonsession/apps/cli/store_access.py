"""A command's store: opened from ``--store`` (or the settings, as ``Session()`` does), its
coroutines run on the runtime's loop, closed when the command ends, and every error on the
way reported as one line and an exit code (:mod:`.exit_codes`)."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..._internal import runtime
from ..._internal.identifiers import DEFAULT_USER
from ..._internal.redaction import redact_url
from ...errors import PraisonSessionError, SessionNotFoundError
from ...session.core import AsyncSession
from ...session.options import resolve_settings, resolve_store
from ...stores.branches import Branches
from ...stores.record import record_key
from .exit_codes import CommandFailed, ExitCode, failure

if TYPE_CHECKING:
    from ...settings import Settings
    from ...stores.api import SessionBase
    from ...stores.record import SessionContents

__all__ = ["OpenedStore", "opened_store", "refuse_missing_store"]

T = TypeVar("T")

#: Other users named when a session id is not the given user's (the rest are counted).
OTHERS_SHOWN = 10


class OpenedStore:
    """The store a command works on, with the settings it was chosen by."""

    def __init__(self, store: SessionBase, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        #: Forks, snapshots and the tree of the store's sessions.
        self.branches = Branches(store.backend)

    @property
    def shown_url(self) -> str:
        """The store's URL with any password masked: what a prompt or a message may show."""
        return redact_url(self.store.url)

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the runtime's loop and return its result. Stores bound their
        own waits (retries, busy timeouts), so the command needs no deadline of its own."""
        return runtime.run(work)

    async def contents(self, session_id: str, user_id: str) -> SessionContents:
        """What the session holds (metadata, state, modules, log lengths), read in one step;
        a session that is not there (or has expired) is an error naming it."""
        key = record_key(session_id, user_id)
        contents = await self.store.backend.read_record_contents(key)
        if contents is None:
            raise await self.missing(session_id, user_id)
        return contents

    async def owners(self, session_id: str, but: str) -> list[str]:
        """The other users with a live session ``session_id`` (at most OTHERS_SHOWN + 1):
        sessions are scoped by user, and an id given without ``--user`` is ``default_user``'s.
        Read through the store's listing by session id prefix, not a walk of every session."""
        found: list[str] = []
        after: tuple[str, str] | None = None
        while len(found) <= OTHERS_SHOWN:
            page = await self.store.backend.list_records_by_prefix(
                session_id, limit=50, after=after
            )
            exact = [info for info in page if info.session_id == session_id]
            found += [info.user_id for info in exact if info.user_id != but]
            if len(exact) < len(page) or len(page) < 50:  # past the id: longer ids follow it
                break
            after = (page[-1].session_id, page[-1].user_id)
        return found

    async def missing(self, session_id: str, user_id: str) -> SessionNotFoundError:
        """The error for a session that is not there, naming the users who do have one by
        that id (the common slip: the user was left out)."""
        return SessionNotFoundError(
            session_id,
            user_id,
            self.not_here(session_id, user_id, await self.owners(session_id, user_id)),
        )

    def not_here(self, session_id: str, user_id: str, others: list[str]) -> str:
        """Where the session is not, and where to look instead."""
        where = f"It is not in {self.shown_url} (or it has expired)"
        if not others:
            return (
                f"{where}; see the user's sessions with: "
                f"praisonsession list --user {shlex.quote(user_id)}"
            )
        named = ", ".join(repr(user) for user in others[:OTHERS_SHOWN])
        if len(others) > OTHERS_SHOWN:
            named += " and more"
        whose = "user" if len(others) == 1 else "users"
        return (
            f"{where}, but a session {session_id!r} exists for {whose} {named} (sessions are "
            f"scoped by user; without --user the user is {DEFAULT_USER!r}): pass --user, e.g. "
            f"--user {shlex.quote(others[0])}"
        )

    def session(self, session_id: str, user_id: str) -> AsyncSession:
        """A session of this store, for what belongs to a session rather than the store (a
        fork or an export carries the long-term memories the session added)."""
        return AsyncSession(session_id, user_id, store=self.store, settings=self.settings)


def refuse_missing_store(store: SessionBase) -> None:
    """A SQLite file or JSON directory that is not there is a usage error, checked before
    anything opens it: a misspelt path must not list nothing and leave an empty database
    (and its -wal and -shm files) behind. Only ``import`` creates the store it writes to."""
    backend: Any = store.backend
    while getattr(backend, "inner", None) is not None:  # a wrapper (an encryption key set)
        backend = backend.inner
    where = getattr(backend, "path", None) or getattr(backend, "save_dir", None)
    if isinstance(where, Path) and not where.exists():
        raise CommandFailed(
            f"There is no store at {where}: nothing has been kept there yet. Check --store "
            "(sqlite://file.db is relative to this directory, sqlite:///file.db absolute) "
            "or the directory you run in.",
            ExitCode.USAGE,
        )


@contextmanager
def opened_store(store_url: str | None, *, create: bool = False) -> Iterator[OpenedStore]:
    """The store ``--store`` names (default: the ``store_url`` setting, else the embedded
    SQLite file), closed at the end. A library error raised inside, or while opening, leaves
    as :class:`~.exit_codes.CommandFailed`.

    A file store that is not there is an error unless ``create`` (an import): a misspelt
    path must not list nothing and leave an empty database behind."""
    try:
        settings = resolve_settings(None)
        opened = OpenedStore(resolve_store(store_url, settings), settings)
    except (PraisonSessionError, ImportError) as exc:  # ImportError: a client library is broken
        raise failure(exc) from None
    if not create:
        refuse_missing_store(opened.store)
    interrupted = False
    try:
        yield opened
    except KeyboardInterrupt:
        interrupted = True  # a call may still be running on the loop: leave the store be
        raise
    except (PraisonSessionError, OSError) as exc:
        raise failure(exc) from None
    finally:
        if not interrupted:
            with contextlib.suppress(Exception):  # closing must not hide what happened
                opened.run(opened.store.close())
