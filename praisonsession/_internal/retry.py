"""``RetryPolicy``: how often and how long a failed call is tried again, for every client.

The LLM client, the session-server client and Redis each decide *what* is worth another
attempt (an HTTP 429, a refused connection, a replica that cannot take writes yet). How they
wait and when they stop is this one policy: exponential backoff from ``first_wait``, doubled
per attempt up to ``longest_wait`` (with jitter unless told not to), at most ``attempts``
attempts, at most ``budget`` seconds, and never past the deadline of the calling operation
(``execution.remaining``). ``retrying`` builds the ``tenacity`` loop the HTTP clients run;
Redis, whose waits must go through ``execution.pause``, asks the same questions in its own loop.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, overload

from .runtime import remaining

if TYPE_CHECKING:
    import tenacity

__all__ = ["RetryPolicy"]


class RetryPolicy(NamedTuple):
    """Bounds of one client's retries; see the module docstring."""

    attempts: int
    first_wait: float
    longest_wait: float
    budget: float = math.inf
    jitter: bool = True

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt number ``attempt`` (1 for the first)."""
        doubled: float = 2 ** (attempt - 1)  # typed Any: an int, or a float below attempt 1
        wait = min(self.longest_wait, self.first_wait * doubled)
        return wait * (0.5 + random.random() / 2) if self.jitter else wait

    def attempts_used(self, attempt: int) -> bool:
        """Attempt number ``attempt`` was the last one allowed."""
        return attempt >= self.attempts

    def over_budget(self, spent: float, wait: float) -> bool:
        """Waiting ``wait`` more would take ``spent`` seconds past the budget."""
        return spent + wait > self.budget + 1e-9

    def outlives_deadline(self, wait: float) -> bool:
        """The calling operation's deadline comes before a wait of ``wait`` seconds ends."""
        return wait >= remaining(math.inf)

    @overload
    def retrying(
        self,
        retry_on: Callable[[BaseException], bool],
        *,
        wait: Callable[[tenacity.RetryCallState], float] | None = None,
        stop: Callable[[tenacity.RetryCallState], bool] | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        asynchronous: Literal[False] = False,
    ) -> tenacity.Retrying: ...

    @overload
    def retrying(
        self,
        retry_on: Callable[[BaseException], bool],
        *,
        wait: Callable[[tenacity.RetryCallState], float] | None = None,
        stop: Callable[[tenacity.RetryCallState], bool] | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        asynchronous: Literal[True],
    ) -> tenacity.AsyncRetrying: ...

    def retrying(
        self,
        retry_on: Callable[[BaseException], bool],
        *,
        wait: Callable[[tenacity.RetryCallState], float] | None = None,
        stop: Callable[[tenacity.RetryCallState], bool] | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        asynchronous: bool = False,
    ) -> tenacity.Retrying | tenacity.AsyncRetrying:
        """A ``tenacity.Retrying`` that retries what ``retry_on`` accepts and re-raises the last
        error. It waits ``wait`` (by default this policy's backoff, ending before the deadline)
        and stops after ``attempts`` or when ``stop`` says so. ``asynchronous`` gives the
        ``tenacity.AsyncRetrying`` twin, for coroutines (pass an async ``sleep``)."""
        import tenacity

        def backoff(state: tenacity.RetryCallState) -> float:
            return min(self.backoff(state.attempt_number), max(0.0, remaining(math.inf) - 0.05))

        def stopped(state: tenacity.RetryCallState) -> bool:
            return self.attempts_used(state.attempt_number) or (stop is not None and stop(state))

        kind = tenacity.AsyncRetrying if asynchronous else tenacity.Retrying
        return kind(
            retry=tenacity.retry_if_exception(retry_on),
            wait=wait or backoff,
            stop=stopped,
            sleep=sleep,
            reraise=True,
        )
