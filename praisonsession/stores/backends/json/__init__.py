"""JSON files, one document per session: ``JSONSession`` over ``JSONBackend``
(``backend.py``), with AgentScope's constructors, files and bound API."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ....errors import InvalidIdError, InvalidValueError
from ...api import SessionBase
from ...modules import check_layout
from ...record import SessionInfo, record_key
from .agentscope_files import AgentScopeFiles, bound_file
from .backend import JSONBackend

__all__ = ["JSONBackend", "JSONSession"]


class JSONSession(SessionBase):
    """Sessions as JSON files under ``save_dir``, with AgentScope's constructors.

    ``JSONSession(save_dir)`` is AgentScope 1.0's form: pass the session id to each call.
    ``JSONSession(session_id, save_dir)`` (or ``session_id=`` by keyword) is its older, bound
    form: ``save_session_state(agent=...)`` and ``load_session_state(agent=...)`` then take no
    session id and read and write AgentScope's own file at :attr:`save_path`
    (``{save_dir}/{session_id}.json``, ``{"agent": {...}}``), which AgentScope itself reads.

    ``layout="agentscope"`` (``json:///dir?layout=agentscope``) keeps the modules of
    ``save_session_state`` / ``load_session_state`` (and ``Session.save_modules``) in AgentScope
    1.0's own files, ``{save_dir}/{user_id}_{session_id}.json`` (``{session_id}.json`` for the
    default user), so that AgentScope's ``JSONSession(save_dir)`` loads them with the same
    arguments, and the other way round. Its names are ambiguous (``a_b_c.json`` is session
    ``b_c`` of user ``a`` and session ``c`` of user ``a_b``): a file saved here for one pair is
    refused to any other with AmbiguousLegacyDataError. The rest of the API (state, logs,
    metadata) keeps its native files beside them.

    ``durability="power"`` fsyncs every file written (and its directory); ``lock_timeout`` is
    how long an operation waits for another process's lock on the session, in seconds.
    """

    def __init__(
        self,
        *args: str | os.PathLike[str],
        save_dir: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        default_ttl: float | None = None,
        sliding_ttl: bool = True,
        lock_timeout: float = 30.0,
        durability: str = "process",
        layout: str = "native",
    ) -> None:
        session_id, save_dir = _constructor_arguments(args, session_id, save_dir)
        agentscope = check_layout(layout) == "agentscope"
        backend = JSONBackend(
            save_dir,
            default_ttl=default_ttl,
            sliding_ttl=sliding_ttl,
            lock_timeout=lock_timeout,
            durability=durability,
            adopt_agentscope=not agentscope,
        )
        self._engine = backend  # what only this store offers: its directory, imports
        super().__init__(
            backend,
            session_id=session_id,
            modules=AgentScopeFiles(backend) if agentscope else None,
            bound_modules=AgentScopeFiles(backend, bound=True),
        )

    @property
    def save_dir(self) -> Path:
        """The directory the sessions are kept in (AgentScope's attribute)."""
        return self._engine.save_dir

    @property
    def save_path(self) -> str:
        """AgentScope's bound API: the file of the session this store is bound to."""
        if self.session_id is None:
            raise InvalidIdError(
                "save_path is the file of a bound store, and this store is not bound to a "
                "session: JSONSession(session_id, save_dir) binds one."
            )
        return str(bound_file(self.save_dir, self.session_id))

    async def import_agentscope(
        self, file: str | os.PathLike[str], session_id: str, user_id: str = ""
    ) -> SessionInfo:
        """Import an AgentScope session file into this store as session ``session_id`` of
        ``user_id``: the way to bring in a file whose name alone does not say whose it is.

        ``file`` is a path, or a file name under ``save_dir``. The file is left where it is.
        """
        key = record_key(session_id, user_id)
        await self.backend.admit_foreign(key)
        return await self._engine.import_agentscope(key, file)


def _constructor_arguments(
    args: tuple[Any, ...], session_id: str | None, save_dir: Any
) -> tuple[str | None, Any]:
    """AgentScope 1.0's ``JSONSession(save_dir)`` and its older ``JSONSession(session_id,
    save_dir)``: one positional argument is the directory, two are the id and the directory."""
    if len(args) > 2:
        raise InvalidValueError(
            "JSONSession takes at most two positional arguments: (save_dir) or "
            "(session_id, save_dir)."
        )
    if len(args) == 2:
        if session_id is not None or save_dir is not None:
            raise InvalidValueError("session_id and save_dir were given twice.")
        session_id, save_dir = args
    elif len(args) == 1:
        if save_dir is not None:  # JSONSession("id", save_dir="dir"): the older form
            if session_id is not None:
                raise InvalidValueError("session_id was given twice.")
            session_id = args[0]
        else:
            save_dir = args[0]
    if session_id is not None and not isinstance(session_id, str):
        raise InvalidValueError(f"session_id must be a str, got {type(session_id).__name__}.")
    if save_dir is None:
        save_dir = "./"
    if not isinstance(save_dir, (str, os.PathLike)):
        raise InvalidValueError(
            f"save_dir must be a path (str or os.PathLike), got {type(save_dir).__name__}."
        )
    return session_id, save_dir
