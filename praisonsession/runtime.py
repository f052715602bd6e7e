"""One private event loop per process, in a daemon thread: the sync-to-async bridge.

The synchronous ``Session`` submits coroutines here from any thread, including a thread that
already runs a loop (a Jupyter cell), where ``asyncio.run`` would fail. After ``fork`` the child
starts its own loop; at interpreter exit the loop is stopped and its thread joined.

A store whose coroutines wait only in :func:`pause` or :func:`offload` (every embedded one) can be
run *inline* instead: driven to completion on the caller's thread when that thread runs no
loop. That saves two thread switches per call (about 0.2 ms here), which is most of the cost
of an ``increment_state``.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # asyncio costs ~80 ms to import; it loads on the first call instead
    import asyncio

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid: int | None = None


def _start() -> asyncio.AbstractEventLoop:
    import asyncio

    global _loop, _thread, _pid
    with _lock:
        if _loop is not None and _pid == os.getpid() and _thread and _thread.is_alive():
            return _loop
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=serve, name="praisonsession-loop", daemon=True)
        thread.start()
        ready.wait()
        _loop, _thread, _pid = loop, thread, os.getpid()
        return loop


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None, inline: bool = False) -> T:
    """Run ``coro`` on the private loop and wait for its result, from any thread.

    ``inline=True`` promises that ``coro`` suspends only in :func:`pause` or :func:`offload`; it
    then runs on the
    calling thread whenever that thread has no running event loop.
    """
    import asyncio

    if inline and not _loop_running_here():
        try:
            coro.send(None)
        except StopIteration as finished:
            return finished.value
        coro.close()
        raise RuntimeError("an inline coroutine suspended outside runtime.pause/offload")
    from concurrent.futures import TimeoutError as FutureTimeout

    loop = _start()
    if threading.current_thread() is _thread:
        coro.close()
        raise RuntimeError(
            "A synchronous praisonsession call was made from inside its own event loop. "
            "In async code, await the store's coroutine (or agent.achat) instead."
        )
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result(timeout)
    except FutureTimeout:
        future.cancel()
        raise


async def pause(seconds: float) -> None:
    """Wait without blocking a running loop; in an inline run (no loop), just sleep."""
    import asyncio

    if _loop_running_here():
        await asyncio.sleep(seconds)
    else:
        time.sleep(seconds)


async def offload(function: Callable[..., T], *args: Any) -> T:
    """Run blocking work (file I/O, fsync) off a running loop; inline, just call it."""
    import asyncio

    if _loop_running_here():
        return await asyncio.to_thread(function, *args)
    return function(*args)


def _loop_running_here() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def is_running() -> bool:
    return _loop is not None and _pid == os.getpid() and bool(_thread and _thread.is_alive())


def shutdown(timeout: float = 5.0) -> None:
    """Stop the loop and join its thread (also done at exit). The next ``run`` restarts it."""
    global _loop, _thread
    with _lock:
        loop, thread = _loop, _thread
        if loop is None or thread is None or _pid != os.getpid():
            _loop = _thread = None
            return
        _loop = _thread = None
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout)
    if not thread.is_alive():
        loop.close()


atexit.register(shutdown)
