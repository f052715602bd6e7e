"""Group commit: the writers of one process on one SQLite file at ``synchronous=FULL`` share
commits (``stores/backends/sqlite/shared.py``), and each keeps what it had alone.

Real files, real threads, real processes. Where a test needs several writers in one
transaction, it makes the batch happen rather than hoping for it: a plain ``sqlite3``
connection holds the file's write lock while the writers queue behind the first, which waits
for the lock; the test releases it once all of them are queued.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from praisonsession import (
    InvalidValueError,
    OperationTimeoutError,
    Session,
    SqliteSession,
    StoreUnavailableError,
    open_store,
)
from praisonsession._internal import runtime
from praisonsession.stores import StoreBackend
from praisonsession.stores.backends.sqlite import shared
from praisonsession.stores.backends.sqlite.shared import CommitGroup
from praisonsession.stores.guard import beneath
from praisonsession.stores.testing import StoreConformance
from process_workers import CRASH_SEED, worker_command

WAIT = 60.0  # seconds a test waits for its threads to reach a state before it fails


def group_of(store: SqliteSession) -> CommitGroup:
    group = beneath(store.backend)._group
    assert group is not None
    return group


def wait_until(condition: Any, what: str) -> None:
    """Wait for ``condition()``; fail (never hang) if it does not come."""
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {WAIT:g} s")
        time.sleep(0.001)


def warm_store(tmp_path: Path) -> tuple[Path, SqliteSession, CommitGroup]:
    """A store at durability="power" on a new file, written once so that its file and its
    commit group exist before the test queues anything."""
    path = tmp_path / "s.db"
    store = SqliteSession(path, durability="power")
    asyncio.run(store.increment("warm", "u", "n"))
    return path, store, group_of(store)


def write_lock_held(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection holding the file's write lock (``BEGIN IMMEDIATE``): every
    writer waits for it until the test ends that transaction."""
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    return blocker


def queued_behind_the_lock(path: Path, group: Any, writer: Any, count: int) -> None:
    """Run ``writer(i)`` for each i in ``range(count)`` in threads that queue one by one while
    a plain sqlite3 connection holds the write lock, then let it go: the first writer leads
    and the others meet in its next transaction."""
    blocker = write_lock_held(path)  # the write lock: the first writer waits for it
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(count)]
    for queued, thread in enumerate(threads, 1):
        thread.start()
        wait_until(lambda n=queued: len(group.queue) == n, f"{queued} writers queued")
    blocker.execute("ROLLBACK")
    for thread in threads:
        thread.join()
    blocker.close()


# -- the shared suite, on grouped stores -------------------------------------------------------


class TestGrouped(StoreConformance):
    """The whole conformance suite on a store at "power", where writes go through the commit
    group (its many-thread cases then commit in shared transactions)."""

    def make_backend(self, root: Path, **ttl: Any) -> StoreBackend:
        return SqliteSession(root / "grouped.db", durability="power", **ttl).backend


class TestOneByOne(StoreConformance):
    """The same with ``group_commit=False``: each write its own commit, in turn."""

    def make_backend(self, root: Path, **ttl: Any) -> StoreBackend:
        store = SqliteSession(root / "one.db", durability="power", group_commit=False, **ttl)
        return store.backend


# -- the switch --------------------------------------------------------------------------------


def test_group_commit_is_on_at_power_and_off_below_it_or_when_asked(tmp_path: Path) -> None:
    assert SqliteSession(tmp_path / "a.db", durability="power").backend.group_commit is True
    assert SqliteSession(tmp_path / "b.db", synchronous="EXTRA").backend.group_commit is True
    assert SqliteSession(tmp_path / "c.db").backend.group_commit is False  # NORMAL
    off = open_store(f"sqlite://{tmp_path}/d.db?durability=power&group_commit=off")
    assert off.backend.group_commit is False
    with pytest.raises(InvalidValueError, match="group_commit"):
        open_store(f"sqlite://{tmp_path}/e.db?group_commit=maybe")
    with pytest.raises(InvalidValueError, match="group_commit"):
        SqliteSession(tmp_path / "f.db", group_commit="no")  # type: ignore[arg-type]


# -- one transaction, many writers -------------------------------------------------------------


def increment(store: SqliteSession, session_id: str) -> Any:
    return asyncio.run(store.increment(session_id, "u", "n"))


def append(store: SqliteSession, session_id: str) -> Any:
    """Inline, on the calling thread (no loop), as the synchronous Session runs it."""
    return runtime.run(
        store.append_messages(session_id, "u", "log", [{"from": session_id}]), inline=True
    )


def test_a_lone_writer_commits_without_the_queue_and_one_behind_a_busy_file_leads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that finds nobody leading and the file free commits alone: no Writer joins
    the queue, each write is still one counted commit. One that finds the file busy (another
    connection holds the write lock) leads the queue instead, and a writer queuing behind it
    meanwhile shares its commit."""
    path = tmp_path / "s.db"
    store = SqliteSession(path, durability="power")
    group = group_of(store)
    append(store, "warm")
    joined: list[Any] = []
    join = CommitGroup.join
    monkeypatch.setattr(CommitGroup, "join", lambda self, w: joined.append(w) or join(self, w))
    commits, writes = group.commits, group.writes
    for n in range(5):
        assert append(store, "lone") == n + 1  # the log's length after each append
    assert (joined, group.commits - commits, group.writes - writes) == ([], 5, 5)
    assert not group.leading and group.queue == []

    commits = group.commits
    queued_behind_the_lock(path, group, lambda i: append(store, f"busy-{i}"), 2)
    assert group.commits - commits == 1  # the two writers, one transaction
    assert len(joined) == 1  # the first led from the lone path, the second joined behind it
    for i in range(2):
        assert runtime.run(store.read_messages(f"busy-{i}", "u", "log"), inline=True) == [
            {"from": f"busy-{i}"}
        ]
    assert not group.leading and group.queue == []


@pytest.mark.parametrize("bad_at", [0, 2])
def test_one_writers_error_fails_that_writer_alone_in_a_shared_commit(
    tmp_path: Path, bad_at: int
) -> None:
    """Four writers on four stores of one file in one transaction; the one whose increment
    meets a text value gets InvalidValueError (as the leader, 0, or as a follower, 2), the
    other three are committed by the same commit, and its session is as it was."""
    path = tmp_path / "s.db"
    stores = [SqliteSession(path, durability="power") for _ in range(4)]
    asyncio.run(stores[0].patch_state("bad", "u", {"n": "not a number"}))
    group = group_of(stores[0])
    assert all(group_of(store) is group for store in stores)  # one group per file
    commits, writes = group.commits, group.writes
    outcomes: dict[int, Any] = {}

    def writer(i: int) -> None:
        try:
            if i == bad_at:
                outcomes[i] = increment(stores[i], "bad")
            elif i % 2:
                outcomes[i] = append(stores[i], f"s{i}")
            else:
                outcomes[i] = increment(stores[i], f"s{i}")
        except Exception as exc:
            outcomes[i] = exc

    queued_behind_the_lock(path, group, writer, 4)

    assert (group.commits - commits, group.writes - writes) == (1, 4)
    assert isinstance(outcomes.pop(bad_at), InvalidValueError)
    for i, outcome in outcomes.items():
        assert outcome == 1, (i, outcome)
    reader = SqliteSession(path, durability="power")
    assert asyncio.run(reader.get_value("bad", "u", "n")) == "not a number"
    for i in outcomes:
        if i % 2:
            assert asyncio.run(reader.read_messages(f"s{i}", "u", "log")) == [{"from": f"s{i}"}]
        else:
            assert asyncio.run(reader.get_value(f"s{i}", "u", "n")) == 1


def test_order_within_each_session_is_kept_across_shared_commits(tmp_path: Path) -> None:
    """Eight threads (four inline, four on loops of their own), each appending 0..49 to its
    own session one call at a time and, from every other thread, to one shared session: each
    session holds its writer's messages in the order written, nothing lost or doubled."""
    path = tmp_path / "s.db"
    count = 50

    def writer(i: int) -> None:
        store = SqliteSession(path, durability="power")

        async def on_loop() -> None:
            for n in range(count):
                await store.append_messages(f"w{i}", "u", "log", [{"n": n}])
                await store.append_messages("shared", "u", "log", [{"w": i, "n": n}])

        if i % 2:
            asyncio.run(on_loop())
        else:
            session = Session(f"w{i}", "u", store=store)
            shared = Session("shared", "u", store=store)
            for n in range(count):
                session.append_messages("log", [{"n": n}])
                shared.append_messages("log", [{"w": i, "n": n}])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reader = SqliteSession(path, durability="power")
    for i in range(8):
        stored = asyncio.run(reader.read_messages(f"w{i}", "u", "log"))
        assert stored == [{"n": n} for n in range(count)]
    shared = asyncio.run(reader.read_messages("shared", "u", "log"))
    assert len(shared) == 8 * count
    for i in range(8):
        assert [m["n"] for m in shared if m["w"] == i] == list(range(count))


def test_a_writer_cancelled_while_queued_leaves_nothing_and_the_rest_commit(
    tmp_path: Path,
) -> None:
    """On an event loop, a write cancelled while it waits in the queue leaves it with nothing
    applied; the writers around it go on."""
    path = tmp_path / "s.db"
    stores = [SqliteSession(path, durability="power") for _ in range(3)]
    asyncio.run(stores[0].patch_state("w0", "u", {"n": 0}))
    group = group_of(stores[0])
    blocker = write_lock_held(path)
    results: dict[str, Any] = {}

    def first() -> None:
        results["first"] = increment(stores[0], "w0")

    async def cancelled() -> None:
        task = asyncio.ensure_future(stores[1].increment("w1", "u", "n"))
        await asyncio.to_thread(wait_until, lambda: len(group.queue) == 2, "second queued")
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            results["second"] = "cancelled"

    lead = threading.Thread(target=first)
    lead.start()
    wait_until(lambda: len(group.queue) == 1, "the first writer waiting for the lock")
    asyncio.run(cancelled())
    assert len(group.queue) == 1  # it left the queue
    third = threading.Thread(target=lambda: results.setdefault("third", append(stores[2], "w2")))
    third.start()
    wait_until(lambda: len(group.queue) == 2, "the third writer queued")
    blocker.execute("ROLLBACK")
    lead.join()
    third.join()
    blocker.close()
    assert results == {"first": 1, "second": "cancelled", "third": 1}
    assert asyncio.run(stores[0].get_value("w1", "u", "n")) is None


# -- processes ---------------------------------------------------------------------------------


def test_threads_of_three_processes_on_one_file_count_every_increment(tmp_path: Path) -> None:
    """3 processes x 4 threads x 40 increments of one key: each process's threads share
    commits, the processes meet at SQLite's lock; every value 1..480 is handed out once."""
    url = f"sqlite://{tmp_path}/s.db?durability=power"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    names = ["p0", "p1", "p2"]
    procs = [
        subprocess.Popen(
            worker_command("group-increment", url, str(barrier), name, "40", "4"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for name in names
    ]
    try:
        wait_until(
            lambda: (
                all((barrier / f"ready-{n}").exists() for n in names)
                or any(p.poll() is not None for p in procs)
            ),
            "every worker at the barrier",
        )
        (barrier / "go").touch()
        values: list[int] = []
        for proc in procs:
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err
            values += json.loads(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert sorted(values) == list(range(1, 3 * 4 * 40 + 1))


def acknowledged(proc: subprocess.Popen[str], ack_file: Path, count: int) -> bool:
    """The writer has stopped, or acknowledged ``count`` writes."""
    if proc.poll() is not None:
        return True
    return ack_file.exists() and ack_file.read_bytes().count(b"\n") >= count


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_mid_batch_loses_no_acknowledged_write(tmp_path: Path) -> None:
    """Eight threads of one process append to their own sessions through the commit group
    (four inline, four on loops), acknowledging each write once it returned; the process is
    killed with SIGKILL after a random number of acknowledgements, while batches are on
    their way. Every acknowledged message is stored, in order, and at most the one write in
    flight per writer beyond it."""
    rng = random.Random(f"{CRASH_SEED}-group-commit")
    url = f"sqlite://{tmp_path}/s.db?durability=power"
    for trial in range(3):
        ack_file = tmp_path / f"acks-{trial}"
        proc = subprocess.Popen(
            worker_command("group-writer", url, str(ack_file), "8"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        try:
            assert proc.stdout is not None and proc.stdin is not None
            assert proc.stdout.readline() == "ready\n", proc.stderr
            proc.stdin.write("go\n")
            proc.stdin.flush()
            kill_after = rng.randint(40, 400)
            wait_until(
                partial(acknowledged, proc, ack_file, kill_after),
                f"{kill_after} acknowledgements",
            )
            assert proc.poll() is None, proc.communicate()[1]
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.communicate()
        acked: dict[int, int] = {}
        for line in ack_file.read_text().split("\n")[:-1]:
            writer, n = map(int, line.split())
            assert n == acked.get(writer, -1) + 1  # each writer acknowledges in order
            acked[writer] = n
        store = open_store(url)
        for writer in range(8):
            stored = asyncio.run(store.read_messages(f"w{writer}", "crash", "log"))
            held = acked.get(writer, -1) + 1
            assert [m["n"] for m in stored] == list(range(len(stored))), (trial, writer)
            assert len(stored) - held in (0, 1), (trial, writer, len(stored), held)
            # what a trial left, the next one's writers continue from: start them clean
            asyncio.run(store.delete_session(f"w{writer}", "crash"))
        asyncio.run(store.close())


def test_tasks_of_one_loop_share_a_commit(tmp_path: Path) -> None:
    """Eight tasks of one event loop, started together, each incrementing its own session:
    the first leads, lets the others queue behind it, and one commit carries all eight."""
    store = SqliteSession(tmp_path / "s.db", durability="power")
    asyncio.run(store.increment("warm", "u", "n"))  # the file and its schema exist
    group = group_of(store)
    commits, writes = group.commits, group.writes

    async def together() -> list[Any]:
        return await asyncio.gather(*(store.increment(f"s{i}", "u", "n") for i in range(8)))

    assert asyncio.run(together()) == [1] * 8
    assert (group.commits - commits, group.writes - writes) == (1, 8)
    for i in range(8):
        assert asyncio.run(store.get_value(f"s{i}", "u", "n")) == 1


def test_a_writer_whose_statement_ends_the_transaction_fails_alone(tmp_path: Path) -> None:
    """When SQLite itself ends the shared transaction on one writer's statement (a full disk,
    an I/O error; here the writer's statement rolls it back and raises as SQLite would), that
    writer gets StoreUnavailableError, and the writers whose work went with the transaction
    run again and commit in the next one."""
    path = tmp_path / "s.db"
    stores = [SqliteSession(path, durability="power") for _ in range(3)]
    asyncio.run(stores[0].increment("warm", "u", "n"))
    group = group_of(stores[0])
    commits, writes = group.commits, group.writes
    outcomes: dict[int, Any] = {}

    def failing(conn: sqlite3.Connection) -> None:
        conn.execute("ROLLBACK")
        raise sqlite3.OperationalError("disk I/O error")

    def writer(i: int) -> None:
        try:
            if i == 1:
                backend = beneath(stores[i].backend)
                outcomes[i] = asyncio.run(backend._transaction(failing, True))
            else:
                outcomes[i] = append(stores[i], f"s{i}")
        except Exception as exc:
            outcomes[i] = exc

    queued_behind_the_lock(path, group, writer, 3)
    assert isinstance(outcomes[1], StoreUnavailableError)
    assert "disk I/O error" in str(outcomes[1])
    assert (outcomes[0], outcomes[2]) == (1, 1)
    assert (group.commits - commits, group.writes - writes) == (1, 2)
    for i in (0, 2):
        assert asyncio.run(stores[0].read_messages(f"s{i}", "u", "log")) == [{"from": f"s{i}"}]


def test_a_busy_loops_commit_runs_off_the_loop_and_a_lone_writer_inline(
    tmp_path: Path,
) -> None:
    """A leader whose loop has other tasks ready runs the shared transaction on a worker
    thread, so the loop goes on during the fsync; a writer alone on an idle loop commits on
    the loop's own thread (no handoff)."""
    store = SqliteSession(tmp_path / "s.db", durability="power")
    backend = beneath(store.backend)
    asyncio.run(store.increment("warm", "u", "n"))
    ran_on: list[int] = []

    def work(conn: sqlite3.Connection) -> int:
        ran_on.append(threading.get_ident())
        return len(ran_on)

    async def lone() -> int:
        await backend._transaction(work, True)
        return threading.get_ident()

    loop_thread = asyncio.run(lone())
    assert ran_on == [loop_thread]
    ran_on.clear()

    async def together() -> tuple[int, list[Any]]:
        found = await asyncio.gather(*(backend._transaction(work, True) for _ in range(4)))
        return threading.get_ident(), found

    loop_thread, found = asyncio.run(together())
    assert sorted(found) == [1, 2, 3, 4]  # each writer its own outcome
    assert len(set(ran_on)) == 1 and ran_on[0] != loop_thread  # one transaction, a worker's


def test_a_leader_cancelled_while_its_commit_runs_off_the_loop_settles_everyone(
    tmp_path: Path,
) -> None:
    """The leader is cancelled while the shared transaction runs on the worker: the
    transaction is not cut short; the other writers get their outcomes, the leader's write is
    committed with theirs and the leader gets the cancellation."""
    path = tmp_path / "s.db"
    store = SqliteSession(path, durability="power")
    backend = beneath(store.backend)
    asyncio.run(store.increment("warm", "u", "n"))
    started, release = threading.Event(), threading.Event()

    def held(conn: sqlite3.Connection) -> int:
        started.set()
        release.wait(WAIT)  # holds the transaction on the worker thread
        return 0

    async def scenario() -> list[Any]:
        leader = asyncio.ensure_future(store.increment("lead", "u", "n"))
        followers = [asyncio.ensure_future(store.increment(f"f{i}", "u", "n")) for i in range(3)]
        blocker = asyncio.ensure_future(backend._transaction(held, True))
        await asyncio.to_thread(started.wait, WAIT)
        leader.cancel()
        await asyncio.sleep(0)
        release.set()
        return await asyncio.gather(leader, *followers, blocker, return_exceptions=True)

    outcomes = asyncio.run(scenario())
    assert isinstance(outcomes[0], asyncio.CancelledError)
    assert outcomes[1:] == [1, 1, 1, 0]
    assert asyncio.run(store.get_value("lead", "u", "n")) == 1  # committed with the others


def test_a_busy_loop_whose_executor_is_shut_down_commits_on_the_loop(tmp_path: Path) -> None:
    """A loop ending (its default executor already shut down) has no worker to lend: its
    grouped writers commit on the loop's own thread, every one of them."""
    store = SqliteSession(tmp_path / "s.db", durability="power")
    asyncio.run(store.increment("warm", "u", "n"))

    async def ending() -> list[Any]:
        await asyncio.get_running_loop().shutdown_default_executor()
        return await asyncio.gather(*(store.increment(f"s{i}", "u", "n") for i in range(4)))

    assert asyncio.run(ending()) == [1] * 4
    for i in range(4):
        assert asyncio.run(store.get_value(f"s{i}", "u", "n")) == 1


# -- how writers wait, and how a leader gathers them ---------------------------------------------


def test_writers_on_idle_loops_wait_on_their_thread_and_busy_loops_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follower whose loop has nothing else to do waits on a lock the leader releases (no
    system call to wake its loop, the leader keeps the GIL); one whose loop has a timer
    waits on a future of its loop. Both get their own outcome from the shared commit."""
    monkeypatch.setattr(shared, "HOLD", WAIT)  # no writer gives its loop back meanwhile
    path, store, group = warm_store(tmp_path)
    commits = group.commits
    outcomes: dict[int, Any] = {}
    parked: dict[int, str] = {}

    async def with_a_timer(i: int) -> Any:
        sleeper = asyncio.ensure_future(asyncio.sleep(WAIT))  # the loop has a timer
        try:
            return await store.increment(f"s{i}", "u", "n")
        finally:
            sleeper.cancel()

    def writer(i: int) -> None:
        if i == 0:
            outcomes[i] = increment(store, "s0")  # leads, waiting for the file
        elif i == 1:
            outcomes[i] = increment(store, "s1")  # an idle loop
        else:
            outcomes[i] = asyncio.run(with_a_timer(i))

    def note() -> None:
        for i, queued in enumerate(group.queue[1:], 1):
            parked[i] = "lock" if queued.future is None else "future"

    blocker = write_lock_held(path)
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for queued, thread in enumerate(threads, 1):
        thread.start()
        wait_until(lambda n=queued: len(group.queue) == n, f"{queued} writers queued")
    note()
    blocker.execute("ROLLBACK")
    for thread in threads:
        thread.join()
    blocker.close()
    assert parked == {1: "lock", 2: "future"}
    assert outcomes == {0: 1, 1: 1, 2: 1}
    assert group.commits - commits == 1


def test_two_writers_of_one_loop_both_wait_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writes of one loop queued at once (as ADK's append writes its event and the
    listing's copy): the second finds the loop idle but its sibling queued, and waits on the
    loop too, since the sibling may be handed the lead or its outcome there; held, the loop
    would keep it from both."""
    monkeypatch.setattr(shared, "HOLD", WAIT)
    path, store, group = warm_store(tmp_path)
    blocker = write_lock_held(path)
    lead = threading.Thread(target=lambda: increment(store, "lead"))
    lead.start()
    wait_until(lambda: len(group.queue) == 1, "the leader waiting for the file")
    found: dict[str, Any] = {}

    async def both() -> list[Any]:
        return await asyncio.gather(store.increment("a", "u", "n"), store.increment("b", "u", "n"))

    pair = threading.Thread(target=lambda: found.setdefault("outcomes", asyncio.run(both())))
    pair.start()
    wait_until(lambda: len(group.queue) == 3, "both writes of the loop queued")
    parked = ["lock" if queued.future is None else "future" for queued in group.queue[1:]]
    blocker.execute("ROLLBACK")
    lead.join()
    pair.join()
    blocker.close()
    assert parked == ["future", "future"]
    assert found["outcomes"] == [1, 1]


def test_a_writer_holds_its_idle_loop_for_a_moment_then_gives_it_back(tmp_path: Path) -> None:
    """A follower on an idle loop that is still waiting after ``HOLD`` waits on its loop
    instead: the loop's other work goes on (here a call come back from a thread), and the
    writer still gets its outcome from the commit."""
    path, store, group = warm_store(tmp_path)
    blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    lead = threading.Thread(target=lambda: increment(store, "lead"))
    lead.start()
    wait_until(lambda: len(group.queue) == 1, "the leader waiting for the file")

    async def follower() -> tuple[Any, Any, bool]:
        task = asyncio.ensure_future(store.increment("f", "u", "n"))

        def given_back() -> Any:
            wait_until(lambda: len(group.queue) == 2, "the follower queued")
            mine = group.queue[1]
            wait_until(lambda: mine.future is not None, "the follower giving its loop back")
            return mine

        mine = await asyncio.to_thread(given_back)  # returns only if the loop runs again
        waiting = not task.done()
        await asyncio.to_thread(blocker.execute, "ROLLBACK")
        return mine, await task, waiting

    mine, outcome, waiting = asyncio.run(follower())
    lead.join()
    blocker.close()
    assert mine.wake is not None  # it waited on its thread first
    assert waiting and outcome == 1
    assert asyncio.run(store.get_value("lead", "u", "n")) == 1


def gathering_for_three(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """A store at power durability whose next leader expects three threads (as after a
    transaction of three) and gathers for as long as the tests' waits allow."""
    monkeypatch.setattr(shared, "GATHER", WAIT)
    store = SqliteSession(tmp_path / "s.db", durability="power")
    asyncio.run(store.increment("warm", "u", "n"))
    group = group_of(store)
    group.expect, group.patience = 3, WAIT
    return store, group


def test_a_leader_waits_for_the_writers_it_expects_and_commits_them_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leader expecting three writers (the last transaction carried three) waits for the
    other two before its BEGIN, and the one whose arrival makes up the count wakes it: one
    commit for the three. A lone writer afterwards expects only itself."""
    store, group = gathering_for_three(tmp_path, monkeypatch)
    commits, writes = group.commits, group.writes
    outcomes: dict[int, Any] = {}

    def writer(i: int) -> None:
        outcomes[i] = append(store, f"s{i}")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    threads[0].start()
    wait_until(lambda: group.gate is not None, "the leader gathering")
    threads[1].start()
    wait_until(lambda: len(group.queue) == 2, "the second writer queued")
    assert group.gate is not None  # the leader still waits for the third
    threads[2].start()
    for thread in threads:
        thread.join()
    assert outcomes == {0: 1, 1: 1, 2: 1}
    assert (group.commits - commits, group.writes - writes) == (1, 3)
    assert group.expect == 3 and group.gate is None
    assert append(store, "alone") == 1
    assert group.expect == 1


def test_a_gathering_leader_counts_threads_not_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leader expecting three threads keeps waiting when a second thread queues two writes
    at once (they are one thread's, which sends nothing more until they commit), and the
    third thread's arrival wakes it: one commit for the four writes."""
    monkeypatch.setattr(shared, "HOLD", WAIT)
    store, group = gathering_for_three(tmp_path, monkeypatch)
    commits, writes = group.commits, group.writes
    outcomes: dict[str, Any] = {}

    async def two() -> list[Any]:
        return await asyncio.gather(store.increment("a", "u", "n"), store.increment("b", "u", "n"))

    threads = [
        threading.Thread(target=lambda: outcomes.setdefault("lead", append(store, "lead"))),
        threading.Thread(target=lambda: outcomes.setdefault("two", asyncio.run(two()))),
        threading.Thread(target=lambda: outcomes.setdefault("third", append(store, "third"))),
    ]
    threads[0].start()
    wait_until(lambda: group.gate is not None, "the leader gathering")
    threads[1].start()
    wait_until(lambda: len(group.queue) == 3, "the second thread's two writes queued")
    assert group.gate is not None  # two threads so far: it still waits
    threads[2].start()
    for thread in threads:
        thread.join()
    assert outcomes == {"lead": 1, "two": [1, 1], "third": 1}
    assert (group.commits - commits, group.writes - writes) == (1, 4)


def test_a_leader_whose_expected_writers_never_come_commits_alone(tmp_path: Path) -> None:
    """The writers a leader expects may have stopped: it waits no longer than its last
    transaction took, commits, and then expects only the writers it found."""
    store = SqliteSession(tmp_path / "s.db", durability="power")
    asyncio.run(store.increment("warm", "u", "n"))
    group = group_of(store)
    group.expect = 8
    commits = group.commits
    assert append(store, "alone") == 1
    assert group.commits - commits == 1
    assert group.expect == 1


def test_a_leader_interrupted_while_it_gathers_leaves_the_group_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KeyboardInterrupt in a leader's wait for the writers it expects: its write was not
    begun and is not applied; it leaves the queue and hands the lead on, and the next write
    commits as before."""
    store = SqliteSession(tmp_path / "s.db", durability="power")
    asyncio.run(store.increment("warm", "u", "n"))
    group = group_of(store)
    group.expect = 2  # expects another thread: the write goes through the queue and gathers

    def interrupted(self: CommitGroup) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(CommitGroup, "gather", interrupted)
    with pytest.raises(KeyboardInterrupt):
        increment(store, "lost")
    monkeypatch.undo()
    assert (group.queue, group.leading, group.gate) == ([], False, None)
    assert increment(store, "kept") == 1
    assert asyncio.run(store.get_value("lost", "u", "n")) is None


# -- deadlines: a write's caller learns what became of it ----------------------------------------


class Deadline:
    """A call run within a deadline, as ``timeout=`` runs it (``runtime.bounded``), that the
    test ends when it chooses: the call's own timeout is made to fire at once on its loop, so
    no test waits for a clock."""

    def __init__(self) -> None:
        self.scope: Any = None
        self.task: Any = None
        self.loop: Any = None

    async def run(self, work: Any) -> Any:
        async def noting() -> Any:
            self.scope = runtime._scopes.get()[-1][0]  # the timeout of this call
            self.task, self.loop = asyncio.current_task(), asyncio.get_running_loop()
            return await work

        return await runtime.bounded(noting(), WAIT, ("increment", "timed"))

    async def expire(self) -> None:
        """On the call's loop: its deadline runs out now, and the call is told."""
        self.scope.reschedule(self.loop.time())
        while not self.task.cancelling():
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # the call's task runs on its cancel

    def end(self) -> None:
        """:meth:`expire` from another thread."""
        asyncio.run_coroutine_threadsafe(self.expire(), self.loop).result(WAIT)


def outcome_of(call: Any) -> Any:
    try:
        return call()
    except Exception as exc:
        return exc


def test_a_write_committed_after_its_deadline_ran_out_succeeds_on_threads(
    tmp_path: Path,
) -> None:
    """Three threads' writes in one slow commit (its leader's work is held until the test
    lets it go): one thread's deadline runs out while its write is in the transaction, and a
    synchronous writer's ran out long before the commit. The commit holds both writes, so
    both callers get their outcome, not a timeout (which a retry would answer by writing
    them twice)."""
    path = tmp_path / "s.db"
    store = SqliteSession(path, durability="power")
    backend = beneath(store.backend)
    asyncio.run(store.increment("warm", "u", "n"))
    group = group_of(store)
    started, release = threading.Event(), threading.Event()

    def held(conn: sqlite3.Connection) -> int:
        started.set()
        release.wait(WAIT)  # the commit is slow for as long as the test wants
        return 0

    deadline = Deadline()
    outcomes: dict[str, Any] = {}
    writers = {
        "lead": lambda: runtime.run(backend._transaction(held, True), inline=True),
        "timed": lambda: asyncio.run(deadline.run(store.increment("timed", "u", "n"))),
        "late": lambda: runtime.run(
            runtime.bounded(store.increment("late", "u", "n"), 0.001, ("increment", "late")),
            inline=True,
        ),
    }
    blocker = write_lock_held(path)  # the leader waits for the file; the others queue
    threads = []
    for queued, (name, call) in enumerate(writers.items(), 1):
        threads.append(
            threading.Thread(target=lambda n=name, c=call: outcomes.setdefault(n, outcome_of(c)))
        )
        threads[-1].start()
        wait_until(lambda n=queued: len(group.queue) == n, f"{queued} writers queued")
    blocker.execute("ROLLBACK")
    blocker.close()
    assert started.wait(WAIT)  # the three writes are in the held transaction
    deadline.end()
    release.set()
    for thread in threads:
        thread.join()
    assert outcomes == {"lead": 0, "timed": 1, "late": 1}
    assert asyncio.run(store.get_value("timed", "u", "n")) == 1
    assert asyncio.run(store.get_value("late", "u", "n")) == 1


def test_a_write_committed_after_its_deadline_ran_out_succeeds_on_one_loop(
    tmp_path: Path,
) -> None:
    """Tasks of one loop: the leader's shared transaction runs on a worker and is held there;
    the deadlines of the leader and of a follower run out meanwhile. Both writes are
    committed, and both callers get their outcome."""
    store = SqliteSession(tmp_path / "s.db", durability="power")
    backend = beneath(store.backend)
    asyncio.run(store.increment("warm", "u", "n"))
    started, release = threading.Event(), threading.Event()

    def held(conn: sqlite3.Connection) -> int:
        started.set()
        release.wait(WAIT)
        return 0

    async def scenario() -> list[Any]:
        deadlines = [Deadline(), Deadline()]
        leader = asyncio.ensure_future(deadlines[0].run(store.increment("lead", "u", "n")))
        follower = asyncio.ensure_future(deadlines[1].run(store.increment("f", "u", "n")))
        blocker = asyncio.ensure_future(backend._transaction(held, True))
        await asyncio.to_thread(started.wait, WAIT)
        for deadline in deadlines:
            await deadline.expire()
        release.set()
        return await asyncio.gather(leader, follower, blocker, return_exceptions=True)

    assert asyncio.run(scenario()) == [1, 1, 0]
    assert asyncio.run(store.get_value("lead", "u", "n")) == 1
    assert asyncio.run(store.get_value("f", "u", "n")) == 1


def test_a_write_whose_deadline_runs_out_in_the_queue_times_out_and_is_not_applied(
    tmp_path: Path,
) -> None:
    """The other half: a write still queued when its deadline runs out leaves the queue
    with nothing applied, and its caller gets OperationTimeoutError; the leader it waited
    behind commits its own."""
    path, store, group = warm_store(tmp_path)
    blocker = write_lock_held(path)
    outcomes: dict[str, Any] = {}
    lead = threading.Thread(target=lambda: outcomes.setdefault("lead", append(store, "lead")))
    lead.start()
    wait_until(lambda: len(group.queue) == 1, "the leader waiting for the file")
    deadline = Deadline()
    timed = threading.Thread(
        target=lambda: outcomes.setdefault(
            "timed", outcome_of(lambda: asyncio.run(deadline.run(store.increment("t", "u", "n"))))
        )
    )
    timed.start()
    wait_until(lambda: len(group.queue) == 2, "the timed writer queued")
    deadline.end()
    timed.join()
    assert len(group.queue) == 1  # it left the queue
    blocker.execute("ROLLBACK")
    blocker.close()
    lead.join()
    assert isinstance(outcomes["timed"], OperationTimeoutError)
    assert outcomes["lead"] == 1
    assert asyncio.run(store.get_value("t", "u", "n")) is None


def test_a_write_answered_just_before_its_deadline_ran_out_succeeds(tmp_path: Path) -> None:
    """The commit has answered a writer on a busy loop (its outcome is on the way to the
    loop) when its deadline runs out, before the loop wakes the writer: the loop is held by
    a callback of the test while both happen. The write is committed, and the caller gets
    its outcome."""
    path, store, group = warm_store(tmp_path)
    blocker = write_lock_held(path)
    answered, holding = threading.Event(), threading.Event()
    outcomes: dict[str, Any] = {}

    def leader() -> None:
        outcomes["lead"] = append(store, "lead")
        answered.set()  # its commit has answered every writer

    deadline = Deadline()

    async def timed() -> Any:
        timer = asyncio.ensure_future(asyncio.sleep(WAIT))  # the writer then waits on the loop
        try:
            return await deadline.run(store.increment("f", "u", "n"))
        finally:
            timer.cancel()

    lead = threading.Thread(target=leader)
    lead.start()
    wait_until(lambda: len(group.queue) == 1, "the leader waiting for the file")
    follower = threading.Thread(
        target=lambda: outcomes.setdefault("f", outcome_of(lambda: asyncio.run(timed())))
    )
    follower.start()
    wait_until(lambda: len(group.queue) == 2, "the follower queued")
    assert group.queue[1].future is not None  # it waits on its loop

    def hold() -> None:  # on the follower's loop: the deadline runs out, then the commit
        deadline.scope.reschedule(deadline.loop.time())
        holding.set()
        answered.wait(WAIT)

    deadline.loop.call_soon_threadsafe(hold)
    assert holding.wait(WAIT)
    blocker.execute("ROLLBACK")
    blocker.close()
    lead.join()
    follower.join()
    assert outcomes == {"lead": 1, "f": 1}
    assert asyncio.run(store.get_value("f", "u", "n")) == 1
