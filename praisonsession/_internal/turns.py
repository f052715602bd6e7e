"""Turns by key: one holder of a key at a time in this process, whoever asks for it.

Optimistic writes (a write that names what it expects the store to hold, and is refused
when it does not) are right across processes, but within one process they are a poor way
for writers of the same thing to meet: the second writer, having read before the first
committed, is refused, reads everything again and writes once more. LangGraph's loops save
a step's pending writes in the background while the next step already runs, so two saves of
one thread overlapping is the common case there, not the rare one. Taking turns, the second
writer starts from what the first one left and is refused by nobody.

A turn is asked for by a thread with no event loop (a synchronous call run inline), which
waits on a lock of its own, or by a task of any event loop, which waits on a future of its
loop. The holder that gives the key back hands it to the first who waits, and wakes that one
alone: the tasks of a map step finishing at once would otherwise all wake to find one
winner. A wait stops at the current call's deadline
(:func:`~praisonsession._internal.runtime.bounded`) with
:class:`~praisonsession.errors.OperationTimeoutError`, and a task's wait can be cancelled;
a key handed to a task cancelled meanwhile goes on to the next.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from typing import Any

from .runtime import expired, loop_running_here, remaining

__all__ = ["Turns", "wake"]


class Turns:
    """Keys held, and who waits for each, first come first served. ``take`` then ``give``,
    in a ``try``/``finally``."""

    def __init__(self, what: str) -> None:
        self._what = what  # for the error of a wait that reached its deadline
        self._lock = threading.Lock()
        self._held: dict[Hashable, deque[_Waiter]] = {}  # key held -> who waits, first first

    async def take(self, key: Hashable) -> None:
        """Hold ``key``, waiting while someone else holds it."""
        with self._lock:
            waiters = self._held.get(key)
            if waiters is None:  # most calls: nobody else at it
                self._held[key] = deque()
                return
            waiter = _Waiter(loop_running_here())
            waiters.append(waiter)
        if waiter.future is None:
            self._wait_here(key, waiter)
        else:
            await self._wait_on_loop(key, waiter)

    def give(self, key: Hashable) -> None:
        """Let ``key`` go: handed to the first who waits for it (woken only then: a key
        freed for all would wake every waiter to find one winner), or free."""
        with self._lock:
            waiters = self._held[key]
            while waiters:
                waiter = waiters.popleft()
                waiter.handed = True
                if waiter.wake():
                    return
            del self._held[key]

    def _wait_here(self, key: Hashable, waiter: _Waiter) -> None:
        """On a thread with no loop: wait to be handed ``key``, up to the call's deadline."""
        left = remaining(_FOREVER)
        if left > 0 and waiter.lock.acquire(timeout=-1 if left == _FOREVER else left):
            return
        with self._lock:
            if waiter.handed:  # handed as the wait ended: held after all
                return
            self._held[key].remove(waiter)
        raise expired(f"waiting for another {self._what}")

    async def _wait_on_loop(self, key: Hashable, waiter: _Waiter) -> None:
        try:
            await waiter.future  # a bounded call's deadline cancels it here
        except BaseException:
            with self._lock:
                if not waiter.handed:
                    self._held[key].remove(waiter)
                    raise
            self.give(key)  # handed as it was cancelled: to the next
            raise


class _Waiter:
    """One wait for a key: a held lock released to wake a thread with no loop, or a future
    of the waiting task's loop."""

    __slots__ = ("future", "handed", "lock", "loop")

    def __init__(self, on_loop: bool) -> None:
        self.handed = False
        self.lock: Any = None
        self.loop: Any = None
        self.future: Any = None
        if on_loop:
            import asyncio

            self.loop = asyncio.get_running_loop()
            self.future = self.loop.create_future()
        else:
            self.lock = threading.Lock()
            self.lock.acquire()

    def wake(self) -> bool:
        """False when it cannot be woken (its loop has closed)."""
        return wake(self.lock, self.loop, self.future)


_FOREVER = float("inf")


def wake(lock: Any, loop: Any, future: Any) -> bool:
    """Wake one wait from any thread: release the held ``lock`` a thread with no loop waits
    on, or else resolve ``future`` on its ``loop``; False when that loop has closed (nobody
    waits there any more). Turns and the SQLite commit group wake their waiters so."""
    if future is None:
        lock.release()
        return True
    try:
        loop.call_soon_threadsafe(_resolve, future)
    except RuntimeError:
        return False
    return True


def _resolve(future: Any) -> None:
    if not future.done():
        future.set_result(None)
