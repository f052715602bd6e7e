"""The sync-to-async bridge: one private loop, usable from any thread, cleanly stopped."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from held import SAFETY, HungServer, let_go_after_safety
from llm_server import Reply
from praisonsession import (
    AsyncSession,
    OperationTimeoutError,
    PraisonSessionError,
    RedisSession,
    RuntimeShutdownError,
    Session,
    SqliteSession,
)
from praisonsession._internal import runtime
from praisonsession._internal import runtime as execution
from praisonsession.stores import Key, SessionBase
from praisonsession.stores.backends.memory import InMemoryBackend


async def where() -> str:
    await asyncio.sleep(0)
    return threading.current_thread().name


def test_coroutines_run_on_the_private_loop_thread() -> None:
    assert runtime.run(where()) == "praisonsession-loop"
    assert runtime.is_running()


def test_run_works_from_many_threads_at_once() -> None:
    results: list[int] = []

    async def square(n: int) -> int:
        await asyncio.sleep(0.001)
        return n * n

    def worker(n: int) -> None:
        results.append(runtime.run(square(n)))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == sorted(n * n for n in range(20))


def test_run_works_while_the_caller_runs_its_own_loop() -> None:
    async def cell() -> str:
        return runtime.run(where())  # a sync call from inside a running loop, as in Jupyter

    assert asyncio.run(cell()) == "praisonsession-loop"


def test_a_sync_call_from_the_loop_itself_explains_instead_of_deadlocking() -> None:
    async def nested() -> None:
        runtime.run(where())

    with pytest.raises(RuntimeError, match="await"):
        runtime.run(nested())


def test_inline_stores_run_on_the_callers_thread(tmp_path) -> None:
    seen: list[str] = []

    async def probe() -> None:
        await execution.pause(0)
        seen.append(threading.current_thread().name)

    runtime.run(probe(), inline=True)
    assert seen == [threading.current_thread().name]


def test_inline_runs_use_the_loop_when_the_caller_has_one() -> None:
    async def cell() -> str:
        return runtime.run(where(), inline=True)

    assert asyncio.run(cell()) == "praisonsession-loop"


def test_shutdown_joins_the_thread_and_the_next_call_restarts_it() -> None:
    runtime.run(where())
    runtime.shutdown()
    assert not runtime.is_running()
    assert not [t for t in threading.enumerate() if t.name == "praisonsession-loop"]
    assert runtime.run(where()) == "praisonsession-loop"


def test_the_interpreter_exits_cleanly_with_the_loop_running(tmp_path) -> None:
    code = (
        "from praisonsession import Session\n"
        "from praisonsession._internal import runtime\n"
        "import asyncio\n"
        f"s = Session('s', store='json://{tmp_path}/j')\n"
        "s.set_state('a', 1)\n"
        "async def ping(): return 'pong'\n"
        "print(runtime.run(ping()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.strip() == "pong"
    assert done.stderr == ""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork exists on POSIX only")
def test_a_forked_child_gets_its_own_loop(tmp_path) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    Session("s", store=url).set_state("n", 1)
    runtime.run(where())  # the parent's loop thread is running
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: threads do not survive fork, so the runtime must restart
        try:
            name = runtime.run(where())
            value = Session("s", store=url).increment_state("n")
            os.write(writer, f"{name} {value}".encode())
        finally:
            os._exit(0)
    os.close(writer)
    _, status = os.waitpid(pid, 0)
    assert os.read(reader, 100).decode() == "praisonsession-loop 2"
    assert status == 0


# -- timeouts: every call is bounded, and says what timed out --------------------------------


def failure(call) -> BaseException:
    """Run ``call``, which must raise; the error."""
    with pytest.raises(PraisonSessionError) as raised:
        call()
    return raised.value


def started_on_a_thread(call: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    """``call`` started on a thread of its own, and the list that receives what it raises."""
    outcome: list[BaseException] = []

    def caller() -> None:
        try:
            call()
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    return thread, outcome


@pytest.fixture
def sqlite_lock(tmp_path) -> Iterator[tuple[str, Callable[[], None]]]:
    """A SQLite store, and a way to make another connection hold its write lock (as a stuck
    process would) until the test ends, or :data:`SAFETY` seconds (then a waiting write
    goes through, and the test's assertions that nothing was written fail)."""
    url = f"sqlite://{tmp_path}/s.db"
    Session("s", store=url).set_state("n", 0)  # schema, WAL and the session exist
    holder = sqlite3.connect(tmp_path / "s.db", isolation_level=None, check_same_thread=False)
    guard = threading.Lock()

    def release() -> None:
        with guard:
            if holder.in_transaction:
                holder.execute("ROLLBACK")

    with let_go_after_safety(release):
        yield url, lambda: holder.execute("BEGIN IMMEDIATE")
    release()
    holder.close()


def test_a_write_to_a_locked_sqlite_file_fails_typed_within_the_timeout(sqlite_lock) -> None:
    url, lock = sqlite_lock
    session = Session("s", store=url, timeout=1)
    lock()
    error = failure(lambda: session.increment_state("n"))
    assert isinstance(error, OperationTimeoutError) and isinstance(error, TimeoutError)
    assert "increment_state on session 's'" in str(error) and "timeout=1 s" in str(error)
    assert session.get_state("n") == 0  # reads go on (WAL), and nothing was written


def test_a_write_waits_for_a_lock_released_within_its_timeout(tmp_path) -> None:
    """The other side of the timeout: a writer waits for the lock, it does not give up at
    once, and once the holder lets go it writes."""
    url = f"sqlite://{tmp_path}/s.db"
    Session("s", store=url).set_state("n", 0)
    holder = sqlite3.connect(tmp_path / "s.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    outcome: list[object] = []
    writer = threading.Thread(
        target=lambda: outcome.append(Session("s", store=url, timeout=SAFETY).increment_state("n"))
    )
    writer.start()
    writer.join(0.5)  # the writer waits meanwhile (one that gave up at once has ended)
    assert writer.is_alive() and outcome == []
    holder.execute("ROLLBACK")
    holder.close()
    writer.join(SAFETY)
    assert outcome == [1]


def test_opening_a_session_on_a_locked_sqlite_file_is_bounded_too(sqlite_lock) -> None:
    url, lock = sqlite_lock
    lock()
    error = failure(lambda: Session("new", store=url, timeout=1))
    assert isinstance(error, OperationTimeoutError) and "timeout=1 s" in str(error)


def test_the_async_core_is_bounded_on_the_callers_loop(sqlite_lock) -> None:
    url, lock = sqlite_lock
    lock()
    session = AsyncSession("s", store=url, timeout=1)
    error = failure(lambda: asyncio.run(session.increment_state("n")))
    assert isinstance(error, OperationTimeoutError) and "timeout=1 s" in str(error)


def test_a_json_session_locked_by_another_process_fails_typed(tmp_path) -> None:
    url = f"json://{tmp_path}/j"
    Session("s", store=url).set_state("n", 0)
    lock = tmp_path / "j" / "default_user" / "s.lock"  # the session's own lock
    with open(lock, "rb+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another open file description: another "process"
        with let_go_after_safety(lambda: fcntl.flock(held, fcntl.LOCK_UN)):
            error = failure(lambda: Session("s", store=url, timeout=1).set_state("n", 1))
    assert isinstance(error, OperationTimeoutError) and "timeout=1 s" in str(error)
    assert Session("s", store=url).get_state("n") == 0  # nothing was written


def test_a_redis_server_that_never_answers_fails_typed_within_the_timeout(
    hung_server: HungServer,
) -> None:
    url = f"redis://127.0.0.1:{hung_server.port}/0"
    # closed after SAFETY, the connection would break: StoreUnavailableError, not this
    error = failure(lambda: Session("s", store=url, timeout=1))
    assert isinstance(error, OperationTimeoutError) and "timeout=1 s" in str(error)


class StuckEmbedder:
    """An embedder that answers only once the test releases it (or after :data:`SAFETY`
    seconds): a stand-in for a stuck model or vector server."""

    name = "slow-test-embedder"
    dimension = 4

    def __init__(self) -> None:
        self.release = threading.Event()

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.release.wait(SAFETY)
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]


def test_memory_calls_are_bounded_by_the_timeout(tmp_path) -> None:
    """A call that waited for the embedder instead would return (a memory added, found)."""
    embedder = StuckEmbedder()
    session = Session(
        "s",
        store=f"sqlite://{tmp_path}/s.db",
        timeout=1,
        memory_config={"embedder": embedder},
        settings={"data_dir": str(tmp_path / "data")},
    )
    try:
        error = failure(lambda: session.add_memory("a fact"))
        assert isinstance(error, OperationTimeoutError) and "add_memory" in str(error)
        assert "timeout=1 s" in str(error)
        error = failure(lambda: session.search_memory("a fact"))
        assert isinstance(error, OperationTimeoutError) and "search_memory" in str(error)
    finally:
        embedder.release.set()


def test_an_agent_waits_for_a_slow_llm_no_longer_than_the_timeout(tmp_path, server) -> None:
    session = Session("s", store=f"sqlite://{tmp_path}/s.db", timeout=1)
    agent = session.Agent("Tutor", memory=False, llm={"base_url": server.url, "model": "m"})
    # a caller that waited for the reply (held back SAFETY s) would get "late", not an error
    server.queue(Reply.text("late", delay=SAFETY), Reply.text("late again", delay=SAFETY))
    error = failure(lambda: agent.chat("hello?"))
    assert isinstance(error, OperationTimeoutError) and "timeout=1 s" in str(error), error
    assert agent.history == []  # no half turn
    server.reset()  # the abandoned request may not have taken its reply yet


# -- shutdown: nothing hangs -----------------------------------------------------------------


def test_a_call_in_flight_during_shutdown_is_woken_by_it() -> None:
    """The call waits for an hour; only shutdown can end it before the join's safety."""
    started = threading.Event()

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    thread, outcome = started_on_a_thread(lambda: runtime.run(forever()))
    assert started.wait(SAFETY)
    runtime.shutdown()
    thread.join(SAFETY)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], RuntimeShutdownError)
    assert runtime.run(where()) == "praisonsession-loop"  # and it starts again on demand


def left_running_on_the_loop(work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``work()`` started as a task of the runtime's loop, and left running there."""

    async def spawn() -> None:
        asyncio.get_running_loop().create_task(work())
        await asyncio.sleep(0)

    runtime.run(spawn())


def test_shutdown_cancels_the_loops_tasks() -> None:
    cancelled = threading.Event()

    async def worker() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    left_running_on_the_loop(worker)
    runtime.shutdown()
    assert cancelled.is_set()


def test_shutdown_cancels_again_a_task_whose_cancel_was_lost() -> None:
    """A cancel can be lost: Python 3.11's ``wait_for`` returns the result of a future that
    finished as the cancel came (redis-py sends each command through it), and the task goes
    on to its next wait. Shutdown cancels a task still running again, so it ends with the
    loop instead of being destroyed pending when it is collected."""
    cancels: list[str] = []
    ended = threading.Event()

    async def worker() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancels.append("lost")  # as wait_for loses it: the task carries on
        try:
            await asyncio.sleep(3600)  # the answer of a hung server
        except asyncio.CancelledError:
            cancels.append("ended")
            ended.set()
            raise

    left_running_on_the_loop(worker)
    runtime.shutdown()
    assert ended.is_set() and cancels == ["lost", "ended"]


def test_a_session_call_in_flight_during_shutdown_gets_a_typed_error(
    hung_server: HungServer,
) -> None:
    """A call waiting on the loop is woken by shutdown, not by its own timeout (SAFETY, which
    would raise OperationTimeoutError) nor by the server closing after SAFETY (a connection
    error). (A Redis store given an asyncio pool runs its calls there; one made from a URL
    runs them on the caller's thread instead: see the next test.)"""
    import redis.asyncio

    url = f"redis://127.0.0.1:{hung_server.port}/0"

    def call() -> None:
        pool = redis.asyncio.ConnectionPool.from_url(url)
        Session("s", store=RedisSession(connection_pool=pool), timeout=SAFETY)

    thread, outcome = started_on_a_thread(call)
    hung_server.accept()  # connected: waiting for an answer that never comes
    runtime.shutdown()
    thread.join(2 * SAFETY)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], RuntimeShutdownError)


def test_an_inline_call_in_flight_during_shutdown_ends_at_its_own_timeout(
    hung_server: HungServer,
) -> None:
    """Run on the caller's thread, the call does not wait on the loop: shutdown returns while
    the call is still waiting (it can end only at its timeout), and the call then ends at that
    timeout, typed (after SAFETY the server would close: another error)."""
    url = f"redis://127.0.0.1:{hung_server.port}/0"
    # a timeout longer than any stall before the assert, shorter than the socket's
    thread, outcome = started_on_a_thread(
        lambda: Session("s", store=f"{url}?socket_timeout=25", timeout=10)
    )
    hung_server.accept()  # connected: waiting for an answer that never comes
    runtime.shutdown()
    assert thread.is_alive() and outcome == []  # shutdown did not wait for it
    thread.join(2 * SAFETY)
    assert len(outcome) == 1 and isinstance(outcome[0], OperationTimeoutError)
    assert "timeout=10 s" in str(outcome[0])


# -- fork: a child never uses its parent's loop or connections -------------------------------


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork exists on POSIX only")
def test_forked_children_each_open_their_own_sqlite_connection(tmp_path) -> None:
    store = SqliteSession(tmp_path / "s.db")
    session = Session("s", store=store)
    session.set_state("n", 0)
    parents = store.backend._here().conn
    children = []
    for _ in range(2):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            try:
                value = session.increment_state("n")
                own = (
                    store.backend._here().conn is not parents
                    and store.backend._here().conn is not None
                )
                os.write(writer, f"{value} {own}".encode())
            finally:
                os._exit(0)
        os.close(writer)
        os.waitpid(pid, 0)
        children.append(os.read(reader, 100).decode())
        os.close(reader)
    assert children == ["1 True", "2 True"]
    assert store.backend._here().conn is parents  # the parent goes on with its own
    assert session.increment_state("n") == 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork exists on POSIX only")
def test_a_forked_child_loads_its_own_model_and_never_frees_the_inherited_one() -> None:
    """An ONNX session's threads stay in the parent: freeing it in the child can wait
    forever, so the child keeps it untouched and embeds with a model of its own."""
    from praisonsession.recall import core as recall

    inherited = recall.default_embedder("minilm")
    expected = inherited.embed_query("tea")
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            fresh = recall.default_embedder("minilm")
            same = fresh.embed_query("tea") == expected
            kept = any(e is inherited for e in recall._inherited)
            os.write(writer, f"{fresh is not inherited} {same} {kept}".encode())
        finally:
            os._exit(0)
    os.close(writer)
    begun = time.monotonic()
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() - begun > 60:
            os.kill(pid, signal.SIGKILL)
            pytest.fail("the forked child hung")
        time.sleep(0.05)
    answer = os.read(reader, 100).decode()
    os.close(reader)
    assert answer == "True True True"
    assert recall.default_embedder("minilm") is inherited  # the parent keeps its own


class BlockedBackend(InMemoryBackend):
    """A backend whose state reads block their thread until released: a disk that hangs."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.threads: list[str] = []

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        self.threads.append(threading.current_thread().name)
        self.release.wait(SAFETY)
        return await super().read_record_state(key, names=names, must_exist=must_exist)


@pytest.mark.parametrize("sync_calls", ["inline", "loop"])
def test_the_sync_calls_setting_says_where_a_store_call_runs(sync_calls: str) -> None:
    store = BlockedBackend()
    session = Session(
        "s", store=SessionBase(store), timeout=0.5, settings={"sync_calls": sync_calls}
    )
    assert session.runs_inline is (sync_calls == "inline")
    store.release.set()
    assert session.get_state("n", 0) == 0
    expected = threading.current_thread().name if sync_calls == "inline" else "praisonsession-loop"
    assert store.threads == [expected]
    store.release.clear()
    if sync_calls == "inline":  # the caller's thread is the one blocked: it waits it out
        releaser = threading.Timer(2, store.release.set)  # past the 0.5 s timeout
        releaser.start()
        try:
            assert session.get_state("n", 0) == 0
            assert store.release.is_set()  # it returned once released, not at its timeout
        finally:
            releaser.join()
    else:  # the caller gives up at its timeout; the loop's thread stays blocked
        try:  # a caller that waited for the block would get 0 when it ends (after SAFETY)
            error = failure(lambda: session.get_state("n", 0))
            assert isinstance(error, OperationTimeoutError) and "get_state" in str(error)
        finally:
            store.release.set()


def test_sync_calls_takes_only_its_two_words() -> None:
    with pytest.raises(PraisonSessionError, match="sync_calls"):
        Session("s", store="memory://", settings={"sync_calls": "threads"})


def test_a_cancel_is_told_apart_as_the_deadlines_alone_or_not() -> None:
    """``cancelled_by_deadline``: True only while a ``bounded`` call's time has run out and
    nothing else asked to cancel its task (what lets a committed write return its outcome);
    a cancel of its own, or no deadline at all, is False."""

    async def seen(other_cancel: bool) -> bool:
        async def work() -> bool:
            scope = runtime._scopes.get()[-1][0]
            task: Any = asyncio.current_task()
            assert not runtime.cancelled_by_deadline()  # nothing has run out yet
            scope.reschedule(asyncio.get_running_loop().time())
            if other_cancel:
                task.cancel()
            try:
                await asyncio.Event().wait()  # never set: the cancel ends it
            except asyncio.CancelledError:
                return runtime.cancelled_by_deadline()
            return False

        return await runtime.bounded(work(), 60, "waiting")

    async def unbounded() -> bool:
        task: Any = asyncio.current_task()
        task.cancel()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            task.uncancel()
            return runtime.cancelled_by_deadline()
        return True

    assert asyncio.run(seen(other_cancel=False)) is True
    assert asyncio.run(seen(other_cancel=True)) is False
    assert asyncio.run(unbounded()) is False


def test_a_bounded_call_left_pending_on_a_closed_loop_closes_quietly_later() -> None:
    """A task left pending when its loop is closed is closed later, wherever the garbage
    collector or its holder happens to be: the deadline it set belongs to the task's own
    context, and closing it elsewhere neither raises nor leaves a deadline behind here."""

    async def begin() -> Any:
        began = asyncio.Event()

        async def waiting() -> None:
            began.set()
            await asyncio.sleep(3600)

        task = asyncio.get_running_loop().create_task(runtime.bounded(waiting(), 30, "waiting"))
        await began.wait()
        return task

    loop = asyncio.new_event_loop()
    task = loop.run_until_complete(begin())
    coroutine = task.get_coro()
    loop.close()  # the task is still pending: nothing cancelled it
    task._log_destroy_pending = False  # what asyncio would print: not what is tested here
    coroutine.close()  # raised ValueError ("created in a different Context") before
    assert coroutine.cr_frame is None  # closed
    assert runtime.remaining(5.0) == 5.0  # no deadline was left in this context
