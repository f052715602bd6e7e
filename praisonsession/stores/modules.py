"""Where ``save_session_state`` and ``load_session_state`` keep a session's modules.

A store chooses this once, when it is made: the *native* layout (here) keeps module documents
and message logs in the backend's records, so a log grows by appending; AgentScope's own files
(``backends/json/agentscope.py``) and keys (``backends/redis/agentscope.py``) are the other
layouts, for stores that share a directory or a Redis database with AgentScope itself.

The native layout remembers, for each message log it saved or loaded, how many of its messages
the store held then and the log's revision at that moment (:class:`LogAcks`). A save then
appends only the messages past that point when the log was only appended to since, and
rewrites the log when it was edited (or was never synced there). Two log objects synced with
one place (two agents of one session in two Session objects) each have their own record, so
both append.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .._internal.json_data import check_json_data
from ..errors import InvalidValueError, SessionNotFoundError
from .backend import LogWrite, StoreBackend
from .record import Key

if TYPE_CHECKING:  # loaded by the first save or load of modules: a cold start skips them
    from ..state.message_log import MessageLog

__all__ = ["LAYOUTS", "LogAcks", "ModuleLayout", "NativeModules", "check_layout", "report_missing"]

_PRUNE_EVERY = 1024

#: ``layout=`` of the JSON and Redis stores: this library's own (isolated, append-only logs)
#: or AgentScope's (its file names and keys, so that AgentScope reads what was saved).
LAYOUTS = ("native", "agentscope")


def check_layout(layout: Any) -> str:
    """A store's ``layout=``: one of :data:`LAYOUTS`."""
    if layout not in LAYOUTS:
        raise InvalidValueError(
            f"layout must be 'native' (this library's files and keys) or 'agentscope' "
            f"(AgentScope's own, so that AgentScope loads what is saved), got {layout!r}."
        )
    return str(layout)


class ModuleLayout(Protocol):
    """Where a store keeps the modules of ``save_session_state``: one implementation per
    layout, chosen when the store is made."""

    async def save(self, key: Key, modules: dict[str, Any]) -> None:
        """Save the named modules (checked by the caller); others saved earlier are kept."""

    async def load(self, key: Key, modules: dict[str, Any], allow_not_exist: bool) -> None:
        """Load the named modules, all checked before any changes; a module the session does
        not hold is left as it is. A missing session raises ``SessionNotFoundError`` unless
        ``allow_not_exist``."""

    async def refresh(self, key: Key, modules: dict[str, Any]) -> int:
        """Take in what other writers appended to the modules' logs; how many messages."""

    def forget(self, key: Key) -> None:
        """The session is gone: nothing of it is acknowledged any more."""


class NativeModules:
    """Modules as documents and append-only message logs in the backend's records."""

    def __init__(self, backend: StoreBackend) -> None:
        self.backend = backend
        self.acks = LogAcks()

    async def save(self, key: Key, modules: dict[str, Any]) -> None:
        """A message log this store already holds is appended to, not rewritten, when it was
        only appended to since; messages other writers appended meanwhile are kept, before
        ours, and taken into the log so that it reads as the store does. An edited log is
        written in full."""
        from ..state.codec import snapshot_module

        logs: dict[str, MessageLog] = {}
        documents = {name: snapshot_module(module, name, logs) for name, module in modules.items()}
        writes = []
        synced: dict[str, int] = {}
        for path, log in logs.items():
            start = self.acks.synced_length(key, path, log)
            if start is None:
                messages = log.messages_since(0)
                check_json_data(messages, f"message log {path!r}")  # edited in place, maybe
                writes.append(LogWrite(path, messages, None))
            else:
                synced[path] = start
                writes.append(LogWrite(path, log.messages_since(start), -1))
        lengths = await self.backend.write_modules(key, documents=documents, writes=writes)
        for write in writes:
            log, length = logs[write.path], lengths[write.path]
            start = synced.get(write.path)
            if start is not None:
                ours_at = length - len(write.messages)
                await self._take_in_others(key, write.path, log, start, ours_at)
            self.acks.record(key, write.path, log, length)

    async def _take_in_others(
        self, key: Key, path: str, log: MessageLog, start: int, ours_at: int
    ) -> None:
        """Our appended messages landed at ``ours_at``; bring in what others stored before."""
        if ours_at > start:  # other writers appended between our last sync and our append
            log.absorb(
                start, await self.backend.read_log(key, path=path, start=start, stop=ours_at)
            )
        elif ours_at < start:  # someone rewrote the log meanwhile: take it as stored
            log.reset(await self.backend.read_log(key, path=path, start=0, stop=None))

    async def load(self, key: Key, modules: dict[str, Any], allow_not_exist: bool) -> None:
        from ..state.codec import attach_logs, is_ours, load_states, logs_of, ours

        stored = await self.backend.read_modules(key, names=list(modules))
        if stored is None:
            self._nothing_stored_for(key, modules)
            report_missing(key, allow_not_exist)
            return
        documents = {
            name: attach_logs(module, name, stored.documents[name], stored.logs)
            if is_ours(module)
            else stored.documents[name]
            for name, module in modules.items()
            if name in stored.documents
        }
        load_states(modules, documents, f"session {key.session_id!r}", trusted=True)
        for name, module in ours(modules).items():
            if name in stored.documents:
                for path, log in logs_of(module, name).items():
                    self.acks.record(key, path, log, len(log))
        self._nothing_stored_for(
            key, {n: m for n, m in modules.items() if n not in stored.documents}
        )

    def _nothing_stored_for(self, key: Key, modules: dict[str, Any]) -> None:
        """Modules the store does not hold: their logs are synced at length 0, so that their
        first save appends after whatever another writer stores there meanwhile."""
        from ..state.codec import logs_of, ours

        for name, module in ours(modules).items():
            for path, log in logs_of(module, name).items():
                self.acks.record(key, path, log, 0)

    async def refresh(self, key: Key, modules: dict[str, Any]) -> int:
        """One count per log when nothing is new. A log edited here since is left alone: its
        next save writes it as it is. Foreign modules (AgentScope's) have no logs."""
        from ..state.codec import logs_of, ours

        backend, taken = self.backend, 0
        for name, module in ours(modules).items():
            for path, log in logs_of(module, name).items():
                start = self.acks.synced_length(key, path, log)
                if start is None:
                    continue
                held = await backend.count_log(key, path=path)
                if held == start:
                    continue
                if held > start:
                    newer = await backend.read_log(key, path=path, start=start, stop=held)
                    log.absorb(start, newer)
                    taken += len(newer)
                    held = start + len(newer)
                else:  # rewritten by someone else: ours had nothing unsaved, so take theirs
                    stored = await backend.read_log(key, path=path, start=0, stop=None)
                    log.reset(stored)
                    taken += len(stored)
                    held = len(stored)
                self.acks.record(key, path, log, held)
        return taken

    def forget(self, key: Key) -> None:
        self.acks.forget(key)


def report_missing(key: Key, allow_not_exist: bool) -> None:
    """What a load of a session that is not stored does: AgentScope logs it and goes on, or,
    with ``allow_not_exist=False``, raises SessionNotFoundError (a ``ValueError``)."""
    if not allow_not_exist:
        raise SessionNotFoundError(key.session_id, key.user_id)
    import logging  # on first use: ``import praisonsession`` stays fast

    logging.getLogger("praisonsession").info(
        "Session %r of user %r does not exist. Skip loading.", key.session_id, key.user_id
    )


class _Ack(NamedTuple):
    log: weakref.ref[MessageLog]
    length: int
    revision: int


class LogAcks:
    """What one store has acknowledged of each message log it saved or loaded."""

    def __init__(self) -> None:
        # (key, path, id(log)) -> record; the weak reference tells a reused id from its log
        self._acks: dict[tuple[Key, str, int], _Ack] = {}
        self._lock = threading.Lock()
        self._recorded = 0

    def synced_length(self, key: Key, path: str, log: MessageLog) -> int | None:
        """How many leading messages of ``log`` the store holds, if the log has only grown
        since it was last synced there; None when it must be written in full."""
        ack = self._acks.get((key, path, id(log)))
        if ack is None or ack.log() is not log or ack.revision != log.revision:
            return None
        return ack.length if ack.length <= len(log) else None

    def record(self, key: Key, path: str, log: MessageLog, length: int) -> None:
        """The store now holds the first ``length`` messages of ``log`` at (key, path)."""
        with self._lock:
            self._acks[(key, path, id(log))] = _Ack(weakref.ref(log), length, log.revision)
            self._recorded += 1
            if self._recorded % _PRUNE_EVERY == 0:
                dead = [place for place, ack in self._acks.items() if ack.log() is None]
                for place in dead:
                    del self._acks[place]

    def forget(self, key: Key) -> None:
        """The session is gone from the store: nothing of it is acknowledged any more."""
        with self._lock:
            for place in [place for place in self._acks if place[0] == key]:
                del self._acks[place]
