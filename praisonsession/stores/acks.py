"""What one store has acknowledged of each message log it saved or loaded.

The store, not the log, keeps this: for each log object and place (session, log path) it
synced that log with, how many of its messages the store held then and the log's revision at
that moment. A save then appends only the messages past that point when the log was only
appended to since, and rewrites the log when it was edited (or was never synced there). Two
log objects synced with one place (two agents of one session in two Session objects) each have
their own record, so both append.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, NamedTuple

from .record import Key

if TYPE_CHECKING:
    from ..state.message_log import MessageLog

_PRUNE_EVERY = 1024


class _Ack(NamedTuple):
    log: weakref.ref[MessageLog]
    length: int
    revision: int


class LogAcks:
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
