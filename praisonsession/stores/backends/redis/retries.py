"""Bounded retries of a call to Redis, and the library's error when they run out.

A server that restarts, fails over or drops a connection is retried for a bounded time; a
refused password or a rejected command is not, since trying again cannot change the answer.
The waits go through ``execution.pause``, so the same retries serve a call on an event loop
and a call run inline on the caller's thread; neither waits past the call's deadline.
"""

from __future__ import annotations

import sys
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ...._internal.retry import RetryPolicy
from ...._internal.runtime import expired, loop_running_here, pause
from ....errors import OperationTimeoutError, SessionCorruptedError, StoreUnavailableError

__all__ = ["attempt_timeout", "call_with_retries", "within"]

T = TypeVar("T")

_FIRST_WAIT = 0.05  # seconds before the second attempt; doubled after each further one
_LONGEST_WAIT = 1.0


def retry_policy(attempts: int, max_delay: float) -> RetryPolicy:
    """Waits of 0.05, 0.1, 0.2 ... s (at most 1 s, no jitter); ``max_delay`` bounds the time
    from the first attempt's start to the end of the last wait."""
    return RetryPolicy(attempts, _FIRST_WAIT, _LONGEST_WAIT, budget=max_delay, jitter=False)


async def call_with_retries(
    work: Callable[[Any, int], Awaitable[T]],
    connect: Callable[[], Awaitable[Any]],
    *,
    attempts: int,
    max_delay: float,
    url: str,
    failed: Exception | None = None,
    started: float = 0.0,
    timeout: float | None = None,
) -> T:
    """``work(await connect(), attempt)`` with bounded retries; StoreUnavailableError at the end.

    After a connection error it waits 0.05, 0.1, 0.2, ... s (at most 1 s) between attempts,
    and stops after ``attempts`` attempts or before a wait that would end more than
    ``max_delay`` seconds after the first attempt started, or after the call's deadline.
    ``failed`` is how a first attempt made by the caller (begun at ``started``) failed: the
    retries then go on from the second. ``timeout`` bounds each attempt (see
    :func:`attempt_timeout`).
    """
    import redis.exceptions as errors

    started = started or time.monotonic()
    policy = retry_policy(attempts, max_delay)
    made = 1
    try:
        while True:
            try:
                if failed is not None:
                    first, failed = failed, None
                    raise first
                return await within(work(await connect(), made), timeout)
            except Exception as exc:
                if not _retryable(exc):
                    raise
                wait = policy.backoff(made)
                if policy.attempts_used(made) or policy.over_budget(
                    time.monotonic() - started, wait
                ):
                    raise
                if policy.outlives_deadline(wait):
                    raise expired(f"retrying Redis after {type(exc).__name__}: {exc}") from exc
            await pause(wait)
            made += 1
    except OperationTimeoutError:  # the call's deadline (a TimeoutError, so an OSError too)
        raise
    except (errors.AuthenticationError, errors.AuthorizationError) as exc:
        raise StoreUnavailableError(
            f"Redis at {url} refused the credentials ({exc}). Check the password "
            "(and user name) in the store URL or the RedisSession arguments."
        ) from exc
    except (errors.ConnectionError, errors.TimeoutError, OSError) as exc:
        raise StoreUnavailableError(
            f"Redis at {url} could not be reached: {made} attempt(s) in "
            f"{time.monotonic() - started:.1f} s, last error {type(exc).__name__}: "
            f"{str(exc).rstrip('.')}. "
            "Check that redis-server is running and reachable from this machine (host, "
            "port, firewall, TLS, password). " + _what_became_of_it(exc)
        ) from exc
    except errors.ResponseError as exc:
        if "WRONGTYPE" in str(exc):
            raise SessionCorruptedError(
                f"a key of this store in {url}",
                "it holds another Redis type than this library writes",
            ) from None
        hint = ""
        if "unknown command" in str(exc).lower() and "eval" in str(exc).lower():
            hint = (
                " This client or server runs no Lua scripts, which this store needs: with "
                "fakeredis, install its Lua support (pip install 'fakeredis[lua]'); or use a "
                "real Redis server."
            )
        raise StoreUnavailableError(f"Redis at {url} refused the command: {exc}{hint}") from exc


def attempt_timeout(socket_timeout: float | None) -> float | None:
    """The bound this module puts on each attempt instead of redis-py's ``socket_timeout``,
    or None where redis-py keeps it (Python 3.10 has no ``Task.uncancel``, which tells the
    bound's cancel from the caller's).

    redis-py bounds each command's send with ``asyncio.wait_for``, a task of its own per
    command (about a fifth of a call's time on the client, a read of 20 items included);
    the loop's one timer over every attempt in flight (send and answer, :func:`within`) gives
    the same bound for a hung server, or a tighter one, at a fraction of the cost. Cancelled there,
    redis-py drops the connection, so no answer is left behind to be read by the next call.
    """
    if sys.version_info < (3, 11) or not socket_timeout:
        return None
    return float(socket_timeout)


async def within(call: Awaitable[T], seconds: float | None) -> T:
    """``call`` awaited within ``seconds`` (None, or inline on a thread without a loop, whose
    blocking client keeps its own socket timeout: as it is); redis-py's TimeoutError when
    they run out, as its own socket_timeout raised.

    The bound is the loop's ``_Watch``, not an ``asyncio.timeout`` per call: a timer armed
    and cancelled on every call was a seventh of a tail read's CPU on the client (10 of 72
    us); the watch's one timer serves every call in flight and outlives the calls that end
    before it fires."""
    if seconds is None or not loop_running_here():
        return await call
    import asyncio

    loop = asyncio.get_running_loop()
    watch = _watches.get(loop)
    if watch is None:
        watch = _watches[loop] = _Watch()
    task: Any = asyncio.current_task()  # a coroutine on a running loop runs in a task
    entry = _Attempt(task, loop.time() + seconds)
    watch.add(entry, loop)
    try:
        result = await call
    except asyncio.CancelledError:
        # the watch's cancel and no other (as asyncio.timeout decides): redis-py's error
        if entry.expired and task.uncancel() <= entry.cancelling:
            import redis.exceptions as errors

            raise errors.TimeoutError(
                f"Redis did not answer within socket_timeout={seconds:g} s"
            ) from None
        raise
    finally:
        watch.live.discard(entry)
    if entry.expired:  # the watch fired as the call ended: its cancel request is taken back
        task.uncancel()
    return result


class _Attempt:
    """One call in flight: its task, when it runs out, and whether the watch cancelled it."""

    __slots__ = ("cancelling", "deadline", "expired", "task")

    def __init__(self, task: Any, deadline: float) -> None:
        self.task = task
        self.deadline = deadline
        self.cancelling = task.cancelling()
        self.expired = False


class _Watch:
    """The attempts in flight on one event loop and the one timer that ends those that run
    out. The timer is armed for the earliest deadline when none is, and re-armed when it
    fires for the next one still in flight: since every attempt of a store has the same
    bound, later calls never need an earlier timer. It holds no reference to its loop (the
    loop's timers hold it), so a closed loop and its watch go together."""

    __slots__ = ("due", "live")

    def __init__(self) -> None:
        self.live: set[_Attempt] = set()
        #: When the armed timer fires; None when none is armed.
        self.due: float | None = None

    def add(self, entry: _Attempt, loop: Any) -> None:
        self.live.add(entry)
        if self.due is None or entry.deadline < self.due:  # an earlier bound: a timer of its own
            self.due = entry.deadline
            loop.call_at(entry.deadline, self._fire, entry.deadline, loop)

    def _fire(self, due: float, loop: Any) -> None:
        now = loop.time()
        for entry in [e for e in self.live if e.deadline <= now]:
            self.live.discard(entry)
            if not entry.task.done():
                entry.expired = True
                entry.task.cancel()
        if due != self.due:  # a timer replaced by an earlier one: that one re-arms
            return
        self.due = None
        if self.live:
            self.due = min(e.deadline for e in self.live)
            loop.call_at(self.due, self._fire, self.due, loop)


#: One watch per event loop, gone with its loop.
_watches: weakref.WeakKeyDictionary[Any, _Watch] = weakref.WeakKeyDictionary()


def _what_became_of_it(exc: BaseException) -> str:
    """What the caller may assume. redis-py says "connecting to" when no connection opened:
    then no command reached the server, be it a read or a write."""
    if "connecting to" in str(exc):
        return "No connection opened, so nothing reached the server."
    return (
        "The connection broke during the call: had it changed the session, it may or may "
        "not have been applied; nothing was assumed about the session."
    )


def _retryable(exc: BaseException) -> bool:
    """A lost or refused connection, a timeout, or a replica that cannot take writes yet."""
    import redis.exceptions as errors

    if isinstance(exc, (errors.AuthenticationError, errors.AuthorizationError)):
        return False
    if isinstance(exc, OperationTimeoutError):  # the call ran out of time: retrying cannot help
        return False
    if isinstance(exc, errors.ResponseError):
        return isinstance(exc, errors.ReadOnlyError)
    return isinstance(exc, (errors.ConnectionError, errors.TimeoutError, OSError))
