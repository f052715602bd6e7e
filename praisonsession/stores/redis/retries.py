"""Bounded retries of a call to Redis, and the library's error when they run out.

A server that restarts, fails over or drops a connection is retried for a bounded time; a
refused password or a rejected command is not, since trying again cannot change the answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ...errors import SessionCorruptedError, StoreUnavailableError

__all__ = ["call_with_retries"]

T = TypeVar("T")

_FIRST_WAIT = 0.05  # seconds before the second attempt; tenacity doubles it from there


async def call_with_retries(
    work: Callable[[Any, int], Awaitable[T]],
    connect: Callable[[], Awaitable[Any]],
    *,
    attempts: int,
    max_delay: float,
    url: str,
) -> T:
    """``work(await connect(), attempt)`` with bounded retries; StoreUnavailableError at the end.

    The first attempt runs directly (tenacity costs tens of µs a call, which matters at
    thousands of calls a second); after a connection error, tenacity retries with
    exponential backoff (0.05, 0.1, 0.2, ... s, at most 1 s), and stops after ``attempts``
    attempts or before a wait that would end more than ``max_delay`` seconds after the
    first attempt started. No attempt starts later than ``max_delay``, so the whole call
    takes at most ``max_delay`` plus one attempt (a hung server: one ``socket_timeout``).
    """
    import redis.exceptions as errors

    started = time.monotonic()
    made = 1
    try:
        try:
            return await work(await connect(), 1)
        except Exception as exc:
            late = time.monotonic() - started + _FIRST_WAIT > max_delay
            if not _retryable(exc) or attempts < 2 or late:
                raise
        from tenacity import AsyncRetrying, retry_if_exception, wait_exponential

        def stop(state: Any) -> bool:
            if state.attempt_number + 1 >= attempts:
                return True
            upcoming = getattr(state, "upcoming_sleep", 0.0) or 0.0
            return time.monotonic() - started + upcoming > max_delay

        await asyncio.sleep(_FIRST_WAIT)
        retrying = AsyncRetrying(
            stop=stop,
            wait=wait_exponential(multiplier=0.1, max=1.0),
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                made += 1
                return await work(await connect(), made)
    except (errors.AuthenticationError, errors.AuthorizationError) as exc:
        raise StoreUnavailableError(
            f"Redis at {url} refused the credentials ({exc}). Check the password "
            "(and user name) in the store URL or the RedisSession arguments."
        ) from exc
    except (errors.ConnectionError, errors.TimeoutError, OSError) as exc:
        raise StoreUnavailableError(
            f"Redis at {url} could not be reached: {made} attempt(s) in "
            f"{time.monotonic() - started:.1f} s, last error {type(exc).__name__}: {exc}. "
            "Check that redis-server is running and reachable from this machine (host, "
            "port, firewall, TLS, password). The last write was not acknowledged, so it "
            "may or may not have been applied; nothing was assumed about the session."
        ) from exc
    except errors.ResponseError as exc:
        if "WRONGTYPE" in str(exc):
            raise SessionCorruptedError(
                f"a key of this store in {url}",
                "it holds another Redis type than this library writes",
            ) from None
        raise StoreUnavailableError(f"Redis at {url} refused the command: {exc}") from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _retryable(exc: BaseException) -> bool:
    """A lost or refused connection, a timeout, or a replica that cannot take writes yet."""
    import redis.exceptions as errors

    if isinstance(exc, (errors.AuthenticationError, errors.AuthorizationError)):
        return False
    if isinstance(exc, errors.ResponseError):
        return isinstance(exc, errors.ReadOnlyError)
    return isinstance(exc, (errors.ConnectionError, errors.TimeoutError, OSError))
