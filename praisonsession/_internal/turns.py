"""Turns by key: one holder of a key at a time in this process, whoever asks for it.

Optimistic writes (a write that names what it expects the store to hold, and is refused
when it does not) are right across processes, but within one process they are a poor way
for writers of the same thing to meet: the second writer, having read before the first
committed, is refused, reads everything again and writes once more. LangGraph's loops save
a step's pending writes in the background while the next step already runs, so two saves of
one thread overlapping is the common case there, not the rare one. Taking turns, the second
writer starts from what the first one left and is refused by nobody.

A turn is asked for by a thread with no event loop (a synchronous call run inline), which
waits on a condition, or by a task of any event loop, which waits on a future of its own
loop; the holder that gives the key back wakes both kinds. A wait stops at the current
call's deadline (:func:`~praisonsession._internal.runtime.bounded`) with
:class:`~praisonsession.errors.OperationTimeoutError`, and a task's wait can be cancelled.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Hashable
from typing import Any

from .runtime import expired, loop_running_here, remaining

__all__ = ["Turns"]


class Turns:
    """Keys held, and who waits for each. ``take`` then ``give``, in a ``try``/``finally``."""

    def __init__(self, what: str) -> None:
        self._what = what  # for the error of a wait that reached its deadline
        self._held: set[Hashable] = set()
        self._freed = threading.Condition()
        self._waiting: dict[Hashable, list[tuple[Any, Any]]] = {}  # key -> (loop, future)

    async def take(self, key: Hashable) -> None:
        """Hold ``key``, waiting while someone else holds it."""
        with self._freed:
            if key not in self._held:  # most calls: nobody else at it
                self._held.add(key)
                return
            if not loop_running_here():
                self._wait_here(key)
                return
        await self._wait_on_loop(key)

    def give(self, key: Hashable) -> None:
        """Let ``key`` go, and wake whoever waits for it."""
        with self._freed:
            self._held.discard(key)
            woken = self._waiting.pop(key, ())
            self._freed.notify_all()
        for loop, future in woken:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits there now
                loop.call_soon_threadsafe(_wake, future)

    def _wait_here(self, key: Hashable) -> None:
        """On a thread with no loop, holding the condition's lock: wait until ``key`` is
        free, then hold it."""
        while key in self._held:
            left = remaining(_FOREVER)
            woken = left > 0 and self._freed.wait(None if left == _FOREVER else left)
            if not woken and key in self._held:
                raise expired(f"waiting for another {self._what}")
        self._held.add(key)

    async def _wait_on_loop(self, key: Hashable) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        while True:
            with self._freed:
                if key not in self._held:
                    self._held.add(key)
                    return
                future = loop.create_future()
                self._waiting.setdefault(key, []).append((loop, future))
            await future  # a bounded call's deadline cancels it here, holding nothing


_FOREVER = float("inf")


def _wake(future: Any) -> None:
    if not future.done():
        future.set_result(None)
