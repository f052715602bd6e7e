"""One retry policy for the LLM client, the session-server client and Redis: its waits, its
limits, the calling operation's deadline, and the tenacity loop it builds."""

from __future__ import annotations

import pytest

from praisonsession._internal import runtime as execution
from praisonsession._internal.retry import RetryPolicy
from praisonsession.llm.config import LLMConfig
from praisonsession.llm.retry import retry_policy as llm_policy
from praisonsession.remote.client import RETRIES as REMOTE
from praisonsession.stores.backends.redis.retries import retry_policy as redis_policy


def test_waits_double_up_to_the_longest_and_jitter_stays_within_half() -> None:
    steady = RetryPolicy(attempts=6, first_wait=0.05, longest_wait=0.3, jitter=False)
    assert [steady.backoff(n) for n in range(1, 6)] == [0.05, 0.1, 0.2, 0.3, 0.3]
    jittered = steady._replace(jitter=True)
    for n in range(1, 6):
        assert steady.backoff(n) / 2 <= jittered.backoff(n) <= steady.backoff(n)


def test_attempts_budget_and_deadline_each_stop_it() -> None:
    policy = RetryPolicy(attempts=3, first_wait=1, longest_wait=8, budget=5)
    assert not policy.attempts_used(2) and policy.attempts_used(3)
    assert not policy.over_budget(3, 2) and policy.over_budget(3.5, 2)
    assert not policy.outlives_deadline(1000)  # no operation deadline: no limit

    async def within_a_second() -> tuple[bool, bool]:
        return policy.outlives_deadline(0.1), policy.outlives_deadline(5)

    assert execution.drive(execution.bounded(within_a_second(), 1, "a test")) == (False, True)


def test_every_client_takes_its_bounds_from_a_policy() -> None:
    config = LLMConfig(model="m", max_retries=2, max_retry_wait=9, retry_backoff=0.5)
    assert llm_policy(config) == RetryPolicy(3, 0.5, 8.0, budget=9)
    assert redis_policy(5, 2.0) == RetryPolicy(5, 0.05, 1.0, budget=2.0, jitter=False)
    assert (REMOTE.attempts, REMOTE.first_wait, REMOTE.longest_wait) == (6, 0.1, 2.0)


def test_the_tenacity_loop_retries_what_it_is_told_and_stops_at_the_attempts() -> None:
    slept: list[float] = []
    calls: list[int] = []
    policy = RetryPolicy(attempts=4, first_wait=0.01, longest_wait=1, jitter=False)

    def flaky() -> str:
        calls.append(len(calls) + 1)
        if len(calls) < 3:
            raise ConnectionError("dropped")
        return "answer"

    retrying = policy.retrying(lambda exc: isinstance(exc, ConnectionError), sleep=slept.append)
    assert retrying(flaky) == "answer" and calls == [1, 2, 3] and slept == [0.01, 0.02]

    def broken() -> str:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        policy.retrying(lambda exc: True, sleep=slept.append)(broken)
    assert len(slept) == 2 + 3  # three waits between four attempts, then the error itself
    with pytest.raises(ValueError):  # not retried: raised at once
        policy.retrying(lambda exc: isinstance(exc, ConnectionError))(int, "x")
