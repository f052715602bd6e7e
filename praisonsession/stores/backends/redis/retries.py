"""Bounded retries of a call to Redis, and the library's error when they run out.

A server that restarts, fails over or drops a connection is retried for a bounded time; a
refused password or a rejected command is not, since trying again cannot change the answer.
The waits go through ``execution.pause``, so the same retries serve a call on an event loop
and a call run inline on the caller's thread; neither waits past the call's deadline.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ...._internal.retry import RetryPolicy
from ...._internal.runtime import expired, pause
from ....errors import OperationTimeoutError, SessionCorruptedError, StoreUnavailableError

__all__ = ["call_with_retries"]

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
) -> T:
    """``work(await connect(), attempt)`` with bounded retries; StoreUnavailableError at the end.

    After a connection error it waits 0.05, 0.1, 0.2, ... s (at most 1 s) between attempts,
    and stops after ``attempts`` attempts or before a wait that would end more than
    ``max_delay`` seconds after the first attempt started, or after the call's deadline.
    ``failed`` is how a first attempt made by the caller (begun at ``started``) failed: the
    retries then go on from the second.
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
                return await work(await connect(), made)
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
