"""How a coroutine of ours waits: on a running event loop, or *inline* on the caller's thread.

Every store and service coroutine suspends only through :func:`pause` and :func:`offload`. On a
running loop they are ``asyncio.sleep`` and ``asyncio.to_thread``; with no loop on the thread
(the sync facade driving the coroutine inline, see :func:`praisonsession.runtime.run`) they are
``time.sleep`` and a plain call. That one rule is what lets the embedded stores skip the hop to
the background loop, which was most of the cost of an ``increment_state``.

Deadlines travel the same way: :func:`bounded` sets one for a call (a context variable, so it
follows the call inline, into tasks and into ``asyncio.to_thread``) and cooperative waits, such
as a SQLite writer waiting for the lock, stop at it with :class:`OperationTimeoutError`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

from .errors import OperationTimeoutError

T = TypeVar("T")

__all__ = ["bounded", "loop_running_here", "offload", "pause", "remaining"]

# monotonic time at which the current call must have finished, its length, and what it is
_deadline: ContextVar[tuple[float, float, Any] | None] = ContextVar("deadline", default=None)
_running_loop: Callable[[], Any] | None = None


def loop_running_here() -> bool:
    """True when the current thread is running an event loop (a Jupyter cell, a handler)."""
    global _running_loop
    if _running_loop is None:
        if "asyncio" not in sys.modules:  # nothing can run a loop before asyncio is imported
            return False
        from asyncio import events

        _running_loop = events._get_running_loop
    return _running_loop() is not None


async def pause(seconds: float) -> None:
    """Wait without blocking a running loop; in an inline run (no loop), just sleep."""
    if loop_running_here():
        import asyncio

        await asyncio.sleep(seconds)
    else:
        time.sleep(seconds)


async def offload(function: Callable[..., T], *args: Any) -> T:
    """Run blocking work (file I/O, fsync, Chroma, ONNX, HTTP) off a running loop; inline,
    just call it."""
    if loop_running_here():
        import asyncio

        return await asyncio.to_thread(function, *args)
    return function(*args)


def remaining(limit: float) -> float:
    """Seconds left of ``limit`` and of the current call's deadline, whichever ends first."""
    bound = _deadline.get()
    if bound is None:
        return limit
    return min(limit, bound[0] - time.monotonic())


def expired(what: str) -> OperationTimeoutError:
    """The error for a wait that ran into the current call's deadline."""
    bound = _deadline.get()
    if bound is None:
        return OperationTimeoutError(what, None)
    return OperationTimeoutError(f"{_describe(bound[2])} ({what})", bound[1])


def _describe(what: Any) -> str:
    """``what`` is text, or (operation, session_id) formatted only when an error needs it."""
    if isinstance(what, tuple):
        return f"{what[0]} on session {what[1]!r}"
    return str(what)


async def bounded(work: Awaitable[T], seconds: float | None, what: Any) -> T:
    """Await ``work`` within ``seconds`` or raise :class:`OperationTimeoutError` naming ``what``
    (a text, or an (operation, session_id) pair).

    On a loop the wait is cancelled when time is up; inline, nothing can be pre-empted, so the
    deadline is enforced by the cooperative waits inside (see :func:`remaining`).
    """
    if seconds is None:
        return await work
    outer = _deadline.get()
    end = time.monotonic() + seconds
    token = _deadline.set((end, seconds, what) if outer is None or end < outer[0] else outer)
    try:
        if not loop_running_here():
            return await work
        return await _within(work, seconds, what)
    finally:
        _deadline.reset(token)


async def _within(work: Awaitable[T], seconds: float, what: Any) -> T:
    import asyncio

    if sys.version_info >= (3, 11):
        scope = asyncio.timeout(seconds)
        try:
            async with scope:
                return await work
        except TimeoutError:
            if scope.expired():
                raise OperationTimeoutError(_describe(what), seconds) from None
            raise
    try:  # pragma: no cover - Python 3.10
        return await asyncio.wait_for(_as_coroutine(work), seconds)
    except asyncio.TimeoutError:  # pragma: no cover - Python 3.10
        raise OperationTimeoutError(_describe(what), seconds) from None


async def _as_coroutine(work: Awaitable[T]) -> T:  # pragma: no cover - Python 3.10
    return await work


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never really suspends to completion on this thread (inline)."""
    try:
        coro.send(None)
    except StopIteration as finished:
        return finished.value
    coro.close()
    raise RuntimeError("an inline coroutine suspended outside execution.pause/offload")
