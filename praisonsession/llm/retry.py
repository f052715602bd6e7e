"""Bounded retries for LLM calls, with ``tenacity``.

What is retried: HTTP 408, 409, 429 and 5xx, timeouts and refused or dropped connections.
What bounds it: ``max_retries`` attempts after the first, and ``max_retry_wait`` seconds of
waiting in total. Waits follow the server's ``Retry-After`` (seconds or an HTTP date; OpenAI's
``retry-after-ms`` too) when it sends one, else exponential backoff with jitter. A server that
asks for a longer wait than the budget has left is not waited for: the call fails at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import requests
import tenacity

from .._internal.redaction import redact_text
from .._internal.retry import RetryPolicy
from .config import LLMConfig
from .errors import LLMUnavailableError

__all__ = ["TransientError", "acall_with_retries", "call_with_retries", "retry_after_seconds"]

T = TypeVar("T")

#: Longest backoff between two attempts when the server gives no Retry-After.
MAX_BACKOFF = 8.0
RETRY_STATUSES = frozenset({408, 409, 429})


class TransientError(Exception):
    """An HTTP answer worth retrying. Internal: callers see LLMUnavailableError."""

    def __init__(self, status: int, detail: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}: {detail}" if detail else f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def is_retry_status(status: int) -> bool:
    return status in RETRY_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks us to wait, or None when it does not say (or says nonsense)."""
    lower = {k.lower(): v for k, v in headers.items()}
    value = lower.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, TransientError):
        return True
    if isinstance(exc, requests.exceptions.SSLError):
        return False
    return isinstance(
        exc,
        (
            requests.exceptions.Timeout,
            requests.exceptions.ConnectionError,
            requests.exceptions.ChunkedEncodingError,
        ),
    )


def retry_policy(config: LLMConfig) -> RetryPolicy:
    """``max_retries`` after the first attempt, ``retry_backoff`` doubled up to
    :data:`MAX_BACKOFF`, and ``max_retry_wait`` seconds of waiting in all."""
    return RetryPolicy(
        attempts=config.max_retries + 1,
        first_wait=config.retry_backoff,
        longest_wait=MAX_BACKOFF,
        budget=config.max_retry_wait,
    )


class _Budget:
    """tenacity's wait and stop, sharing one decision per attempt: the server's Retry-After,
    else the policy's backoff, within what is left of the waiting budget.

    tenacity 8.2 asks ``stop`` before ``wait`` and later versions the other way round, so the
    delay is computed once per attempt by whichever asks first.
    """

    def __init__(self, config: LLMConfig) -> None:
        self.policy = retry_policy(config)
        self._decided: tuple[int, float] | None = None
        self.refused_wait: float | None = None

    def delay(self, state: tenacity.RetryCallState) -> float:
        if self._decided is None or self._decided[0] != state.attempt_number:
            self._decided = (state.attempt_number, self._compute(state))
        return self._decided[1]

    def _compute(self, state: tenacity.RetryCallState) -> float:
        outcome = state.outcome
        exc = outcome.exception() if outcome is not None else None
        asked = getattr(exc, "retry_after", None)
        if asked is not None:
            return float(asked)
        backoff = self.policy.backoff(state.attempt_number)
        # idle_for: seconds slept before earlier attempts (not yet this one, in every version)
        return min(backoff, max(0.0, self.policy.budget - state.idle_for))

    def wait(self, state: tenacity.RetryCallState) -> float:
        return self.delay(state)

    def stop(self, state: tenacity.RetryCallState) -> bool:
        """After the policy's attempts (``retrying`` asks that), at the calling session's
        deadline, or before a wait the budget cannot pay (the server asked too much)."""
        seconds = self.delay(state)
        if self.policy.outlives_deadline(seconds):
            return True
        if self.policy.over_budget(state.idle_for, seconds):
            self.refused_wait = seconds
            return True
        return False


def call_with_retries(
    attempt: Callable[[], T], config: LLMConfig, sleep: Callable[[float], Any] = time.sleep
) -> T:
    """Call ``attempt`` until it succeeds, fails for good, or the retry budget is spent."""
    budget = _Budget(config)
    retrying = budget.policy.retrying(
        _is_transient, wait=budget.wait, stop=budget.stop, sleep=sleep
    )
    started = time.monotonic()
    attempts = 0

    def counted() -> T:
        nonlocal attempts
        attempts += 1
        return attempt()

    try:
        return retrying(counted)
    except (TransientError, requests.exceptions.RequestException) as exc:
        # from None: the message says what happened; the chained urllib3 traceback (dozens of
        # lines, the endpoint's URL in it) says nothing more that a user can act on
        raise _unavailable(exc, config, attempts, time.monotonic() - started, budget) from None


async def acall_with_retries(attempt: Callable[[], Awaitable[T]], config: LLMConfig) -> T:
    """``call_with_retries`` for a coroutine: the same policy, waiting without blocking."""
    started = time.monotonic()
    first: Exception | None  # the failure of the first attempt, until tenacity is told of it
    try:  # the usual case, answered at once: no retry machinery to set up
        return await attempt()
    except Exception as exc:
        if not _is_transient(exc):
            raise
        first = exc
    budget = _Budget(config)
    retrying = budget.policy.retrying(
        _is_transient, wait=budget.wait, stop=budget.stop, sleep=asyncio.sleep, asynchronous=True
    )
    attempts = 1

    async def counted() -> T:
        nonlocal attempts, first
        if first is not None:  # the attempt made above: tenacity counts it and waits after it
            failed, first = first, None
            raise failed
        attempts += 1
        return await attempt()

    try:
        return await retrying(counted)
    except (TransientError, requests.exceptions.RequestException) as exc:
        raise _unavailable(exc, config, attempts, time.monotonic() - started, budget) from None


def _unavailable(
    exc: BaseException, config: LLMConfig, attempts: int, elapsed: float, budget: _Budget
) -> LLMUnavailableError:
    url = config.shown_endpoint
    if isinstance(exc, TransientError):
        last = str(exc)
    elif isinstance(exc, requests.exceptions.Timeout):
        last = f"no answer within timeout={config.timeout:g} s"
    elif isinstance(exc, requests.exceptions.ConnectionError):
        last = f"could not connect ({type(exc).__name__})"
    else:
        last = redact_text(f"{type(exc).__name__}: {exc}", config.api_key)
    tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
    message = f"{url} gave no usable answer after {tries} in {elapsed:.1f} s (last: {last})."
    if budget.refused_wait is not None:
        message += (
            f" The server asked to retry after {budget.refused_wait:g} s, more than the retry "
            f"budget allows (max_retry_wait={config.max_retry_wait:g} s)."
        )
    if isinstance(exc, TransientError) and exc.status == 429:
        hint = "You are rate limited: wait and try again, or raise max_retry_wait in llm={...}."
    elif isinstance(exc, requests.exceptions.Timeout):
        hint = "Raise timeout in llm={...} (or PRAISONSESSION_TIMEOUT) for slow models."
    elif isinstance(exc, requests.exceptions.ConnectionError):
        hint = "Check that the server is running and that base_url is right."
    else:
        hint = "Try again later, or raise max_retries / max_retry_wait in llm={...}."
    status = exc.status if isinstance(exc, TransientError) else None
    return LLMUnavailableError(f"{message} {hint}", url=url, status=status, attempts=attempts)
