"""``Attempts``: the connections one call to the session server tried, shared by the thread that
makes them and the coroutine awaiting that thread.

On an event loop the client runs in a worker thread while the operation's deadline runs on the
loop. The client stops retrying a little before the deadline, but under load its last attempt
can end after it, and the deadline would then answer first with a bare
``OperationTimeoutError`` although the server simply is not there. So when the deadline cancels
the wait and no request has reached the server yet (every attempt refused, or no answer to the
connect), :func:`offload_request` stops the retries and waits for the thread's own answer, the
``RemoteConnectionError`` saying what was refused and what to do: which of the two the caller
gets no longer depends on the clock. The attempt under way then is waited for too (its outcome
is not known yet; a hung server's gives "no answer within timeout"). Once an attempt has ended
having reached the server (answered, or cut off after sending), the deadline's timeout stands,
as for any other operation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from .._internal.runtime import cancelled_by_deadline, loop_running_here

__all__ = ["Attempts", "offload_request"]

T = TypeVar("T")


class Attempts:
    """What the attempts of one call have met so far; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made = 0
        self._reached = False  # a request may have reached the server (answered, or cut off)
        self._stopped = threading.Event()

    def begin(self) -> bool:
        """Start an attempt; False once the caller stopped waiting (make no more)."""
        with self._lock:
            if self._stopped.is_set():
                return False
            self._made += 1
            return True

    def end(self, *, never_sent: bool) -> None:
        """The attempt begun last is over; ``never_sent``: its connection was never made."""
        with self._lock:
            self._reached = self._reached or not never_sent

    def stop(self) -> bool:
        """No more attempts, and end a wait between two at once. True when attempts were made
        and none may have reached the server: the thread's answer, due at once (or when the
        attempt under way ends), is then the one to give."""
        with self._lock:
            self._stopped.set()
            return self._made > 0 and not self._reached

    def pause(self, seconds: float) -> None:
        """The wait before the next attempt, cut short when the caller stops waiting."""
        self._stopped.wait(seconds)


async def offload_request(function: Callable[..., T], *args: Any, patience: float) -> T:
    """``function(*args, attempts=...)``, a blocking call of the client, off a running loop (see
    the module); inline (no loop on this thread), just called: nothing can cut it short.
    ``patience`` (the operation's timeout) bounds the wait for an attempt under way when the
    deadline comes: one that connected after all, to a server trickling its answer, gets the
    deadline's timeout then."""
    attempts = Attempts()
    call = partial(function, *args, attempts=attempts)
    if not loop_running_here():
        return call()
    import asyncio

    worker = asyncio.ensure_future(asyncio.to_thread(call))
    worker.add_done_callback(_settled)  # an outcome nobody reads is not logged as lost
    try:
        return await asyncio.shield(worker)
    except asyncio.CancelledError:
        if not attempts.stop() or not cancelled_by_deadline():
            raise
    # only refused so far, and no new attempt will start: the thread answers at once, or when
    # the attempt under way ends (its own timeouts end by the deadline)
    await asyncio.wait({worker}, timeout=patience)
    if not worker.done():
        raise asyncio.CancelledError  # the deadline's: bounded() makes it its timeout
    return worker.result()


def _settled(worker: Any) -> None:
    if not worker.cancelled():
        worker.exception()
