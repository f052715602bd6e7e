"""One private event loop per process, in a daemon thread: the sync-to-async bridge.

The synchronous ``Session`` submits ``AsyncSession`` coroutines here from any thread, including
a thread that already runs a loop (a Jupyter cell), where ``asyncio.run`` would fail. This module
knows coroutines, not sessions: it imports nothing of the package but errors and execution.

Two execution modes, chosen per call by :func:`run`:

* **inline**: a coroutine that suspends only through :mod:`praisonsession.execution` (every
  operation of an embedded store) is driven to completion on the caller's thread when that
  thread runs no loop. No thread switch: about 0.2 ms saved per call.
* **loop**: anything else (Redis, memory, agents) runs on the background loop; the caller
  waits for it, at most ``timeout`` plus a moment (a backstop: the coroutine bounds itself).

Lifecycle: :func:`shutdown` (also run at interpreter exit) wakes every caller still waiting with
:class:`~praisonsession.errors.RuntimeShutdownError`, cancels the loop's tasks and joins its
thread. After ``os.fork()`` the child starts a loop of its own on first use.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import OperationTimeoutError, RuntimeShutdownError
from .execution import drive, loop_running_here

if TYPE_CHECKING:  # asyncio and futures load on the first call that needs the loop
    import asyncio
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["is_running", "run", "shutdown"]

T = TypeVar("T")

#: Extra seconds the caller waits beyond ``timeout`` before it gives up on a loop that does not
#: answer (the coroutine normally raises its own typed timeout first).
BACKSTOP_GRACE = 1.0
#: Seconds the loop gives cancelled tasks to finish when it shuts down.
CANCEL_GRACE = 2.0


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
        tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            ending = asyncio.gather(*tasks, return_exceptions=True)
            loop.run_until_complete(asyncio.wait([ending], timeout=CANCEL_GRACE))
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
        late = f"{what} (the background loop did not answer)"
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
        elif done.exception() is not None:
            waiter.set_exception(done.exception())  # type: ignore[arg-type]
        else:
            waiter.set_result(done.result())
    except Exception:  # InvalidStateError: shutdown settled it in between
        pass


def is_running() -> bool:
    current = _current
    return current is not None and current.pid == os.getpid() and current.thread.is_alive()


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
