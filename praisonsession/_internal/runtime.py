"""How our coroutines run: on a running event loop, *inline* on the caller's thread, or on
the one private loop of the process.

**Waiting.** Every store and service coroutine suspends only through :func:`pause` and
:func:`offload`. On a running loop they are ``asyncio.sleep`` and ``asyncio.to_thread``; with no
loop on the thread they are ``time.sleep`` and a plain call. That one rule is what lets the
embedded stores skip the hop to the background loop, which was most of the cost of an
``increment_state``. Deadlines travel the same way: :func:`bounded` sets one for a call (a
context variable, so it follows the call inline, into tasks and into ``asyncio.to_thread``) and
cooperative waits, such as a SQLite writer waiting for the lock, stop at it with
:class:`OperationTimeoutError`.

**Running.** The synchronous ``Session`` submits ``AsyncSession`` coroutines through :func:`run`
from any thread, including a thread that already runs a loop (a Jupyter cell), where
``asyncio.run`` would fail. Two modes, chosen per call:

* **inline**: a coroutine that suspends only through :func:`pause` and :func:`offload` (every
  operation of an embedded store) is driven to completion on the caller's thread when that
  thread runs no loop. No thread switch: about 0.2 ms saved per call.
* **loop**: anything else (Redis, memory, agents) runs on the background loop, one per process
  in a daemon thread; the caller waits for it, at most ``timeout`` plus a moment (a backstop:
  the coroutine bounds itself).

Lifecycle: :func:`shutdown` (also run at interpreter exit) wakes every caller still waiting with
:class:`~praisonsession.errors.RuntimeShutdownError`, cancels the loop's tasks and joins its
thread. After ``os.fork()`` the child starts a loop of its own on first use. This module knows
coroutines, not sessions: it imports nothing of the package but its errors.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import OperationTimeoutError, RuntimeShutdownError

if TYPE_CHECKING:  # asyncio and futures load on the first call that needs the loop
    import asyncio
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = [
    "bounded",
    "cancelled_by_deadline",
    "drive",
    "expired",
    "is_running",
    "loop_running_here",
    "offload",
    "pause",
    "remaining",
    "restore",
    "run",
    "shutdown",
]

T = TypeVar("T")

# monotonic time at which the current call must have finished, its length, and what it is
_deadline: ContextVar[tuple[float, float, Any] | None] = ContextVar("deadline", default=None)
# the asyncio.timeout scopes of the bounded calls the current task is in, outermost first, each
# with the task's cancel requests when it began (read by ``cancelled_by_deadline``)
_scopes: ContextVar[tuple[tuple[Any, int], ...]] = ContextVar("scopes", default=())
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


def restore(var: ContextVar[Any], token: Token[Any]) -> None:
    """``var.reset(token)``, or nothing where the token is another context's: a coroutine
    closed outside the context it ran in (a task left pending on a loop that was closed,
    collected later) set ``var`` in that context, which nothing reads any more. Resetting
    there raised ``ValueError`` from the coroutine's ``finally``, printed as an exception
    ignored in the coroutine, or raised to whoever closed it."""
    try:  # noqa: SIM105 - every store call ends here: no context manager made for it
        var.reset(token)
    except ValueError:
        pass


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
        restore(_deadline, token)


async def _within(work: Awaitable[T], seconds: float, what: Any) -> T:
    import asyncio

    if sys.version_info >= (3, 11):
        scope = asyncio.timeout(seconds)
        task: Any = asyncio.current_task()
        token = _scopes.set((*_scopes.get(), (scope, task.cancelling())))
        try:
            async with scope:
                return await work
        except TimeoutError:
            if scope.expired():
                raise OperationTimeoutError(_describe(what), seconds) from None
            raise
        finally:
            restore(_scopes, token)
    try:  # pragma: no cover - Python 3.10
        return await asyncio.wait_for(_as_coroutine(work), seconds)
    except asyncio.TimeoutError:  # pragma: no cover - Python 3.10
        raise OperationTimeoutError(_describe(what), seconds) from None


async def _as_coroutine(work: Awaitable[T]) -> T:  # pragma: no cover - Python 3.10
    return await work


def cancelled_by_deadline() -> bool:
    """Whether the cancellation the current task is getting comes from its calls' deadlines
    alone (a ``bounded`` call's time ran out, and nothing else asked to cancel it). Work whose
    outcome is known by then, a write already committed, returns it instead of the timeout:
    ``bounded`` takes its own cancel back, and a caller never gets a timeout for a write that
    was made (and makes it twice when it tries again)."""
    if sys.version_info < (3, 11):  # pragma: no cover - wait_for's cancel: the clock tells
        bound = _deadline.get()
        return bound is not None and time.monotonic() >= bound[0]
    scopes = _scopes.get()
    if not scopes:
        return False
    import asyncio

    task: Any = asyncio.current_task()
    fired = sum(1 for scope, _ in scopes if scope.expired())
    return fired > 0 and task.cancelling() <= scopes[0][1] + fired


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never really suspends to completion on this thread (inline)."""
    try:
        coro.send(None)
    except StopIteration as finished:
        result: T = finished.value  # what the coroutine returned
        return result
    coro.close()
    raise RuntimeError("an inline coroutine suspended outside execution.pause/offload")


# -- the loop of the process ---------------------------------------------------------------

#: Extra seconds the caller waits beyond ``timeout`` before it gives up on a loop that does not
#: answer (the coroutine normally raises its own typed timeout first).
BACKSTOP_GRACE = 1.0
#: Seconds the loop gives cancelled tasks to finish when it shuts down.
CANCEL_GRACE = 2.0
#: Seconds between the cancels of a task that goes on running at shutdown: time enough for a
#: cancelled task's own cleanup (a connection closed), which a second cancel would cut short.
CANCEL_AGAIN = 0.5


class _Loop:
    """The loop of this process, its thread and executor, and the callers waiting on it."""

    __slots__ = ("executor", "loop", "pid", "thread", "waiting")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        thread: threading.Thread,
        executor: ThreadPoolExecutor,
    ) -> None:
        self.loop = loop
        self.thread = thread
        self.executor = executor
        self.pid = os.getpid()
        self.waiting: set[Future[Any]] = set()


_lock = threading.Lock()
_current: _Loop | None = None


def _start() -> _Loop:
    global _current
    current = _current
    if current is not None and current.pid == os.getpid():
        return current
    with _lock:
        if _current is not None and _current.pid == os.getpid():
            return _current
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        loop = asyncio.new_event_loop()
        # our own pool, so that shutdown never waits for a worker stuck in blocking I/O
        executor = ThreadPoolExecutor(thread_name_prefix="asyncio")
        loop.set_default_executor(executor)
        ready = threading.Event()
        thread = threading.Thread(
            target=_serve, args=(loop, executor, ready), name="praisonsession-loop", daemon=True
        )
        thread.start()
        ready.wait()
        _current = _Loop(loop, thread, executor)
        return _current


def _serve(loop: asyncio.AbstractEventLoop, executor: Any, ready: threading.Event) -> None:
    import asyncio

    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    try:
        loop.run_forever()
    finally:
        _end_tasks(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        executor.shutdown(wait=False, cancel_futures=True)
        loop.close()


def run(
    coro: Coroutine[Any, Any, T],
    *,
    timeout: float | None = None,
    inline: bool = False,
    what: str = "The call",
) -> T:
    """Run ``coro`` to completion from any thread and return its result.

    ``inline=True`` promises that ``coro`` suspends only in ``execution.pause``/``offload``; it
    then runs on the calling thread whenever that thread has no running event loop. Otherwise
    it runs on the background loop, and the caller waits at most ``timeout`` (plus
    :data:`BACKSTOP_GRACE`) before :class:`OperationTimeoutError` names ``what``.
    """
    if inline and not loop_running_here():
        return drive(coro)
    import asyncio
    from concurrent.futures import Future
    from concurrent.futures import TimeoutError as FutureTimeout

    current = _start()
    if threading.current_thread() is current.thread:
        coro.close()
        raise RuntimeError(
            "A synchronous praisonsession call was made from inside its own event loop. "
            "In async code, use AsyncSession and await its methods (or agent.achat) instead."
        )
    waiter: Future[T] = Future()
    current.waiting.add(waiter)
    try:
        task = asyncio.run_coroutine_threadsafe(coro, current.loop)
    except RuntimeError:  # the loop closed between _start() and here
        current.waiting.discard(waiter)
        coro.close()
        raise RuntimeShutdownError(what) from None
    task.add_done_callback(lambda done: _settle(waiter, done, what))
    try:
        return waiter.result(None if timeout is None else timeout + BACKSTOP_GRACE)
    except FutureTimeout:
        if waiter.done():  # the coroutine's own TimeoutError (FutureTimeout is TimeoutError)
            raise
        task.cancel()
        late = (
            f"{what} (the background loop did not answer, so whether it took effect is "
            "unknown: read it back before making a write again)"
        )
        raise OperationTimeoutError(late, timeout) from None
    finally:
        current.waiting.discard(waiter)


def _settle(waiter: Future[T], done: Future[T], what: str) -> None:
    """Pass the task's outcome to the caller, unless shutdown already woke the caller."""
    if waiter.done():
        return
    try:
        if done.cancelled():
            waiter.set_exception(RuntimeShutdownError(what))
        elif (failure := done.exception()) is not None:
            waiter.set_exception(failure)
        else:
            waiter.set_result(done.result())
    except Exception:  # InvalidStateError: shutdown settled it in between
        pass


def is_running() -> bool:
    current = _current
    return current is not None and current.pid == os.getpid() and current.thread.is_alive()


def _end_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the loop's tasks and run it until they end, for at most :data:`CANCEL_GRACE`.

    A task still running is cancelled again every :data:`CANCEL_AGAIN` seconds: a cancel can
    be lost. Python 3.11's ``asyncio.wait_for`` returns the result of the future it waits on
    when that future finished as the cancel came, and the task goes on to its next wait
    (redis-py sends each command through ``wait_for``, then waits for the answer: from a hung
    server, for ever). Left pending, such a task outlives its closed loop, and Python reports
    it destroyed when it is collected."""
    import asyncio

    ends = time.monotonic() + CANCEL_GRACE
    seen: set[asyncio.Task[Any]] = set()
    while True:
        running = [task for task in asyncio.all_tasks(loop) if not task.done()]
        left = ends - time.monotonic()
        if not running or left <= 0:
            break
        seen.update(running)
        for task in running:
            task.cancel()
        loop.run_until_complete(asyncio.wait(running, timeout=min(CANCEL_AGAIN, left)))
    for task in seen:  # what they raised is read: no "exception never retrieved" at exit
        if task.done() and not task.cancelled():
            task.exception()


def shutdown(timeout: float = 5.0) -> None:
    """Wake every waiting caller with RuntimeShutdownError, cancel the loop's tasks, stop the
    loop and join its thread. Also runs at interpreter exit. The next ``run`` starts afresh."""
    global _current
    with _lock:
        current, _current = _current, None
    if current is None or current.pid != os.getpid():
        return
    for waiter in list(current.waiting):
        if not waiter.done():
            with contextlib.suppress(Exception):  # settled by the loop in between
                waiter.set_exception(RuntimeShutdownError())
    try:
        current.loop.call_soon_threadsafe(current.loop.stop)
    except RuntimeError:  # already closed
        return
    current.thread.join(timeout)


def _forget_after_fork() -> None:
    """In a forked child: the parent's loop thread does not exist here; start afresh."""
    global _current, _lock
    _current = None
    _lock = threading.Lock()


atexit.register(shutdown)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
