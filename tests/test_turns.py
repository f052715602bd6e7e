"""Turns by key: one holder of a key at a time in the process, whether the callers are threads
with no event loop (synchronous calls run inline) or tasks of event loops; a wait ends at the
call's deadline, or when its task is cancelled, holding nothing."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from praisonsession._internal.runtime import bounded, drive
from praisonsession._internal.turns import Turns
from praisonsession.errors import OperationTimeoutError

SETTLE = 0.05  # long enough for a waiter to reach its wait before it is checked


def held_by_a_thread(turns: Turns, key: str) -> tuple[threading.Event, threading.Thread]:
    """A thread with no loop that takes ``key`` and holds it until the event is set."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        drive(turns.take(key))
        taken.set()
        release.wait()
        turns.give(key)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(5)
    return release, holder


def test_a_thread_waits_for_the_key_another_thread_holds() -> None:
    turns, order = Turns("write"), []
    release, holder = held_by_a_thread(turns, "k")

    def second() -> None:
        drive(turns.take("k"))
        order.append("second took it")
        turns.give("k")

    waiter = threading.Thread(target=second)
    waiter.start()
    time.sleep(SETTLE)
    order.append("first gives it")
    release.set()
    for thread in (holder, waiter):
        thread.join(5)
    assert order == ["first gives it", "second took it"]


def test_waiting_threads_are_handed_the_key_in_the_order_they_asked() -> None:
    """First come, first served: a key given back goes to the longest waiter alone."""
    turns, order = Turns("write"), []
    release, holder = held_by_a_thread(turns, "k")

    def waiter(name: str) -> None:
        drive(turns.take("k"))
        order.append(name)
        turns.give("k")

    waiters = []
    for name in ("first", "second", "third"):
        waiters.append(threading.Thread(target=waiter, args=(name,)))
        waiters[-1].start()
        deadline = time.monotonic() + 5
        while len(turns._held["k"]) < len(waiters):  # each waits before the next asks
            assert time.monotonic() < deadline
            time.sleep(0.001)
    release.set()
    for thread in (holder, *waiters):
        thread.join(5)
    assert order == ["first", "second", "third"]


def test_other_keys_are_not_waited_for() -> None:
    turns = Turns("write")
    release, holder = held_by_a_thread(turns, "k")
    drive(turns.take("other"))  # returns at once: nobody holds it
    turns.give("other")
    release.set()
    holder.join(5)


def test_tasks_of_a_loop_take_turns_in_the_order_they_asked() -> None:
    turns, order = Turns("write"), []

    async def task(name: str) -> None:
        await turns.take("k")
        try:
            order.append(f"{name} in")
            await asyncio.sleep(0.01)  # the holder's own awaits: the loop runs the others
            order.append(f"{name} out")
        finally:
            turns.give("k")

    async def main() -> None:
        await asyncio.gather(task("a"), task("b"), task("c"))

    asyncio.run(main())
    assert order == ["a in", "a out", "b in", "b out", "c in", "c out"]


def test_a_task_is_woken_on_its_loop_when_a_thread_gives_the_key() -> None:
    turns = Turns("write")
    release, holder = held_by_a_thread(turns, "k")

    async def main() -> float:
        threading.Timer(SETTLE, release.set).start()
        started = time.monotonic()
        await turns.take("k")
        turns.give("k")
        return time.monotonic() - started

    waited = asyncio.run(main())
    holder.join(5)
    assert waited >= SETTLE * 0.9  # it waited for the thread, and was woken by it


def test_a_thread_is_woken_when_a_task_gives_the_key() -> None:
    turns, order = Turns("write"), []
    taken = threading.Event()

    async def hold() -> None:
        await turns.take("k")
        taken.set()
        await asyncio.sleep(SETTLE)
        order.append("task gives it")
        turns.give("k")

    loop_thread = threading.Thread(target=asyncio.run, args=(hold(),))
    loop_thread.start()
    assert taken.wait(5)
    drive(turns.take("k"))
    order.append("thread took it")
    turns.give("k")
    loop_thread.join(5)
    assert order == ["task gives it", "thread took it"]


def test_a_threads_wait_ends_at_its_calls_deadline_with_the_key_still_held() -> None:
    turns = Turns("put_writes of this thread")
    release, holder = held_by_a_thread(turns, "k")
    with pytest.raises(OperationTimeoutError, match="waiting for another put_writes"):
        drive(bounded(turns.take("k"), 0.05, "put_writes"))
    release.set()
    holder.join(5)
    drive(turns.take("k"))  # given back by its holder, and nobody else took it
    turns.give("k")


def test_a_cancelled_task_leaves_the_key_to_the_next() -> None:
    turns = Turns("write")

    async def main() -> None:
        await turns.take("k")
        waiting = asyncio.ensure_future(turns.take("k"))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        turns.give("k")
        await asyncio.wait_for(turns.take("k"), 1)  # free: the cancelled one holds nothing
        turns.give("k")

    asyncio.run(main())


def test_a_tasks_wait_ends_at_its_calls_deadline() -> None:
    turns = Turns("write")

    async def main() -> None:
        await turns.take("k")
        with pytest.raises(OperationTimeoutError):
            await bounded(turns.take("k"), 0.05, "put_writes")
        turns.give("k")
        await asyncio.wait_for(turns.take("k"), 1)
        turns.give("k")

    asyncio.run(main())
