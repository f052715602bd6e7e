"""What every ``SqliteBackend`` of this process on one file shares: its connections (one per
thread) and, at ``synchronous=FULL``, group commit.

**Why share.** At ``FULL`` a commit waits for an fsync of the WAL, a fraction of a
millisecond to milliseconds; one writer's Python work is a small part of that. Writers of one
process that each commit on their own queue for SQLite's write lock and poll for it, so 8
threads go barely faster than one. With group commit the first writer that arrives *leads*:
it takes the write lock, runs its statements, commits. Writers that arrive meanwhile queue
here; when the commit returns, the first of them leads the next transaction and runs every
queued writer's statements in it, each inside a ``SAVEPOINT``, then commits once: one fsync
for all of them.

**Durability, unchanged.** A writer's call returns only after the ``COMMIT`` that holds its
statements has returned, which at ``FULL`` is after the fsync that makes it durable. A crash
(SIGKILL) before that point loses only writes whose callers are still waiting, none of them
acknowledged; SQLite's WAL makes the transaction all or nothing. One writer's error (a bad
value, a conflict, a refused session) rolls back to its own savepoint: the others' writes
commit, and only that caller gets the error. An error that ends the whole transaction (a full
disk, an I/O error) fails the writer whose statement met it; the writers whose work went with
the transaction run again in the next one, the same as if they had queued later.

**Deadlines.** A call's deadline (``timeout=``) that runs out while its write is queued takes
the write out with nothing applied, and the call times out. Once the write is in a
transaction, the deadline no longer decides: the call waits for the commit and returns the
write's outcome (``known_despite``), since a caller told "timed out" tries again, and a write
that was committed would then be made twice.

A store with ``group_commit=False`` leads transactions of its own write alone: the writers
of the process still take turns here rather than poll SQLite's lock, one commit each.

Processes do not share this queue: each process has its own, and they meet at SQLite's write
lock as before (WAL, ``BEGIN IMMEDIATE``, ``busy_timeout``).

**Keeping the commits full.** The writers a commit answers come back with their next write
one after another: they take turns at the GIL. A leader that began at once would carry the
first of them alone and the rest in the commit after (two fsyncs, and their CPU, for what
one would do), so a leader whose queue holds the writes of fewer threads than the last
transaction did waits for the others, at most as long as that transaction took
(``gather``); the writer whose arrival makes up the count wakes it. It counts threads, not
writes: a thread whose other write is still queued sends nothing more until that one has
committed. A lone writer expects only its own thread and never waits.
Waking a writer costs the leader little: a writer on a thread with no loop, or on an idle
loop, waits on a lock the leader releases; waking a loop from another thread takes a system
call in which the leader let go of the GIL, to each writer just woken in turn, so the
leader's next ``BEGIN`` started late. An idle loop is held so for ``HOLD`` at most; a writer
still waiting then waits on its loop (cancellable there), and a loop with anything else to
run, or on which the leader runs, is never held.

Tasks of one event loop batch too: a leader whose loop has other callbacks ready yields to
them (a few turns of the loop at most) before it begins, and those tasks that write queue
behind it; its transaction then runs on a worker thread (``on_a_worker``), so the loop's
other tasks go on during the fsync instead of waiting for it, and each writer is answered on
the loop once the commit has returned. A writer alone on an idle loop, or on a thread with no
loop, commits on its own thread: no handoff, nothing to wait for.

A store of one file is keyed here by its resolved path and ``synchronous``; the stores of a
key share each thread's connection, which is what lets a leader run another store's
statements (they read the thread's connection from the same table). The last store to close
closes the connections.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Callable, Coroutine
from pathlib import Path
from threading import get_ident
from typing import Any

from ...._internal.runtime import cancelled_by_deadline, drive
from ...._internal.turns import wake

#: The most writers one transaction carries: a leader's wait is bounded, and a queue longer
#: than this commits in several transactions.
MAX_BATCH = 64

#: Seconds a writer on an idle event loop waits for its outcome on its thread, as a thread
#: with no loop does, before it gives the loop back and waits there (then cancellable).
HOLD = 0.005

#: The longest a leader waits for the writers it expects (``CommitGroup.gather``).
GATHER = 0.002

QUEUED, TAKEN, LEAD, DONE = "queued", "taken", "lead", "done"


class Thread:
    """One thread's connection to the file, its reused cursor, and whether an event loop
    runs on that thread (its checkpoints then go to a worker, see ``SharedFile.commits``)."""

    __slots__ = ("conn", "cursor", "on_loop")

    def __init__(self, conn: sqlite3.Connection, cursor: sqlite3.Cursor, on_loop: bool) -> None:
        self.conn = conn
        self.cursor = cursor
        self.on_loop = on_loop


class Writer:
    """One write call in a commit group: its work, its outcome, and how it is woken."""

    __slots__ = (
        "error",
        "future",
        "interrupted",
        "loop",
        "state",
        "thread",
        "value",
        "wake",
        "work",
    )

    def __init__(self, work: Callable[[sqlite3.Connection], Any]) -> None:
        self.work = work
        self.thread = get_ident()  # whose writes the leader gathers (``CommitGroup.gather``)
        self.state = QUEUED
        self.value: Any = None
        self.error: BaseException | None = None
        #: A leader's cancellation that came while its transaction ran on a worker thread
        #: (``on_a_worker``): raised once every writer of the transaction has its outcome,
        #: unless it is the deadline's alone and the leader's own outcome is in.
        self.interrupted: BaseException | None = None
        self.wake: Any = None  # a held lock the leader releases (a thread with no loop)
        self.loop: Any = None  # or the writer's loop and future (a thread running a loop)
        self.future: Any = None

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value

    def _park(self, leader_loop: Any, queued: list[Writer]) -> None:
        """Make what this writer will wait on (under the group's lock, before it is seen): a
        held lock the leader releases, on a thread with no loop or an idle loop; a future of
        its loop when the loop has other work, when the leader runs there (the leader's
        commit is answered on that loop), or when another writer of the loop is queued (it
        may be handed the lead, or its outcome, there): a loop they need is never held."""
        loop = _loop()
        if loop is not None:
            self.loop = loop
            if (
                loop is leader_loop
                or not idle(loop)
                or any(writer.loop is loop for writer in queued)
            ):
                self.future = loop.create_future()
                return
        self.wake = threading.Lock()
        self.wake.acquire()

    def _signal(self) -> bool:
        """Wake the writer; False when it cannot be (its loop has closed)."""
        return wake(self.wake, self.loop, self.future)


def idle(loop: Any) -> bool:
    """Whether ``loop`` (asyncio's own) has nothing to run: no callback ready, no timer and
    no file watched but its own wake-up socket. Its thread may then wait for a commit as a
    thread with no loop does, for ``HOLD`` at most; any other loop is never held."""
    try:
        return not loop._ready and not loop._scheduled and len(loop._selector.get_map()) <= 1
    except AttributeError:
        return False


def cancelled(exc: BaseException) -> bool:
    """``exc`` is asyncio's cancellation (asyncio not imported: it cannot be)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


def others_ready() -> bool:
    """Whether other callbacks of this thread's running loop are ready to run now: tasks
    of one loop never run while a transaction runs inline, so a leader lets them reach the
    queue first (asyncio's own loop shows them; another loop is never waited for)."""
    loop = _loop()
    return loop is not None and bool(getattr(loop, "_ready", None))


def _loop() -> Any:
    """This thread's running event loop, or None."""
    global _running_loop
    if _running_loop is None:
        if "asyncio" not in sys.modules:  # no loop can run before asyncio is imported
            return None
        from asyncio import events

        _running_loop = events._get_running_loop
    return _running_loop()


_running_loop: Callable[[], Any] | None = None


async def on_a_worker(transaction: Coroutine[Any, Any, Any], leader: Writer) -> Any:
    """Run ``transaction`` (it suspends only through ``runtime.pause``) on a worker thread
    and return its outcome, the loop running its other tasks meanwhile: a leader whose loop
    has other work commits there, so the fsync does not stop them. It is never cut short: a
    cancellation meanwhile is kept on ``leader.interrupted`` for the leader to raise once
    every writer of the transaction has its outcome."""
    import asyncio
    import contextvars

    loop = asyncio.get_running_loop()
    call = contextvars.copy_context().run  # the call's deadline goes along
    try:
        done = loop.run_in_executor(None, call, drive, transaction)  # a future: no task to cancel
    except RuntimeError:  # the loop's executor is shut down (the loop is ending): commit here
        return await transaction
    while True:
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError as exc:
            if done.done() and not done.cancelled() and done.exception() is exc:
                raise  # the transaction's own outcome, not a cancellation of this task
            leader.interrupted = exc


async def _to_its_end(future: Any) -> None:
    """Wait for ``future`` (a writer's outcome, which its leader always sends), whatever
    cancels the waiting task meanwhile."""
    import asyncio

    while not future.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(future)


def known_despite(exc: BaseException) -> bool:
    """Whether a writer whose outcome is in returns it although ``exc`` interrupted its wait:
    when ``exc`` is the cancel of the call's deadline alone. The deadline's timeout says a
    write was not made, and a caller that gets it tries again, so a write that is committed
    returns; any other cancel is the caller's own, raised after the outcome is in."""
    return cancelled(exc) and cancelled_by_deadline()


class CommitGroup:
    """The queue of one file's writers and who leads (see the module's docstring)."""

    __slots__ = (
        "commits",
        "expect",
        "gate",
        "leader_loop",
        "leading",
        "lock",
        "patience",
        "queue",
        "taken_at",
        "writes",
    )

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.leading = False
        self.leader_loop: Any = None  # the loop the leader's outcome reaches it on, or None
        self.queue: list[Writer] = []
        #: The writers the last transaction carried and those queued behind it: how many
        #: the next leader waits for (``gather``), and how long at most, what it took.
        self.expect = 0
        self.patience = 0.0
        self.taken_at = 0.0
        self.gate: threading.Lock | None = None  # held by a leader while it gathers
        #: Transactions committed and the writes they carried (read by the benchmark and
        #: the tests; only a leader adds to them).
        self.commits = 0
        self.writes = 0

    def forget_after_fork(self) -> None:
        """In a forked child no thread of the parent leads or waits."""
        self.lock = threading.Lock()
        self.leading = False
        self.leader_loop = self.gate = None
        self.queue = []

    def lead_alone(self) -> bool:
        """Lead now, with no ``Writer`` queued, when nobody leads (then nobody waits either):
        a lone writer commits its own work without the queue's handoffs. Writers arriving
        meanwhile queue as behind any leader, and ``pass_on`` hands the first of them the
        lead once the lone commit has returned (or ``lead_queued`` takes them along). Not
        while the last transaction carried others: they are on their way back, and a leader
        waits for them in the queue (``gather``)."""
        with self.lock:
            if self.leading or self.expect > 1:
                return False
            self.leading = True
            self.leader_loop = _loop()
            return True

    def lead_queued(self, writer: Writer) -> None:
        """A lone leader (``lead_alone``) that found the file busy queues first, still leading:
        the writers that queue while it waits for the file go in its transaction."""
        with self.lock:
            self.queue.insert(0, writer)

    def join(self, writer: Writer) -> bool:
        """Queue ``writer``; True when it leads now (nobody else does)."""
        with self.lock:
            if not self.leading:
                self.queue.append(writer)
                self.leading = True
                self.leader_loop = _loop()
                return True
            writer._park(self.leader_loop, self.queue)
            self.queue.append(writer)
            if self.gate is not None and _threads(self.queue) >= self.expect:
                self.gate.release()  # the last writer the gathering leader waited for
                self.gate = None
            return False

    def gather(self) -> None:
        """Before its ``BEGIN``, a leader whose queue holds the writes of fewer threads than
        the last transaction did waits for the others, at most as long as that transaction
        took (``GATHER`` at most); the writer whose arrival makes up the count wakes it. The
        writers answered by the last commit are on their way back with their next write, one
        at a time (they take turns at the GIL): starting at once commits them a few at a
        time, each commit an fsync and its CPU, where one commit carries them all. A lone
        writer expects only its own thread and never waits; a leader whose expected writers
        stopped waits once, then expects only those it found."""
        loop = _loop()
        if loop is not None and not idle(loop):  # never hold a loop with work of its own
            return
        with self.lock:
            if _threads(self.queue) >= self.expect:
                return
            gate = self.gate = threading.Lock()
            gate.acquire()
        try:
            gate.acquire(timeout=min(self.patience, GATHER))
        finally:
            with self.lock:
                self.gate = None

    async def wait(self, writer: Writer) -> bool:
        """Wait until a leader has committed ``writer``'s work (False) or made it the
        leader (True). Cancelled or interrupted while still queued, it leaves the queue
        with nothing applied. Once its work is in a transaction it waits for the outcome:
        the call's deadline running out then returns that outcome (a committed write is
        never reported as timed out), and any other cancellation is raised after it (the
        write may then be applied, as it may on the network stores)."""
        if writer.future is None:  # a held lock (a thread with no loop, or an idle loop)
            try:
                held = writer.wake.acquire(timeout=-1 if writer.loop is None else HOLD)
                if not held and not self.unpark(writer):  # its outcome is on its way
                    writer.wake.acquire()
            except BaseException:
                self.withdraw(writer)
                raise
            if writer.future is None:
                return writer.state is LEAD
        try:
            await writer.future
        except BaseException as exc:
            state = self.withdraw(writer)
            if state is QUEUED or state is LEAD:  # out of the queue: nothing applied
                raise
            if state is TAKEN:  # in a transaction: its end decides
                await _to_its_end(writer.future)
            if not known_despite(exc):
                raise
        return writer.state is LEAD

    def unpark(self, writer: Writer) -> bool:
        """A writer that held its idle loop for ``HOLD`` waits on the loop instead, with a
        future the leader resolves; False when its outcome (or the lead) is already on its
        way through the lock."""
        with self.lock:
            if writer.state is DONE or writer.state is LEAD:
                return False
            writer.future = writer.loop.create_future()
            return True

    def withdraw(self, writer: Writer) -> str:
        """Take ``writer`` out of the queue (handing the lead on if it had it); TAKEN when
        a leader is running its work, with a new future to wait on; DONE when its outcome
        is in."""
        with self.lock:
            state = writer.state
            if state is TAKEN and writer.future is not None:
                writer.future = writer.loop.create_future()
            elif state in (QUEUED, LEAD):
                self.queue.remove(writer)
                writer.state = DONE
                if state is LEAD:
                    self._promote()
        return state

    def leave(self, leader: Writer) -> None:
        """The leader's own write ends with an error of its own (it keeps the lead until
        ``pass_on``)."""
        with self.lock:
            if leader in self.queue:
                self.queue.remove(leader)
            leader.state = DONE

    def take(self, limit: int) -> list[Writer]:
        """The writers the next transaction carries, at most ``limit`` (the leader's own
        first)."""
        with self.lock:
            batch = self.queue[:limit]
            del self.queue[:limit]
            for writer in batch:
                writer.state = TAKEN
            self.expect = _threads(batch) + _threads(self.queue)
        self.taken_at = time.perf_counter()
        return batch

    def requeue(self, writers: list[Writer]) -> None:
        """Writers whose work was rolled back with its transaction, first in line again."""
        with self.lock:
            for writer in writers:
                writer.state = QUEUED
                writer.value = writer.error = None
            self.queue[:0] = writers

    def settle(self, writers: list[Writer], leader: Writer) -> None:
        """Hand each writer its outcome, after the commit that holds it has returned."""
        self.patience = time.perf_counter() - self.taken_at
        with self.lock:
            for writer in writers:
                writer.state = DONE
        for writer in writers:
            if writer is not leader:
                writer._signal()

    def pass_on(self) -> None:
        """The leader is done: the first queued writer leads, or nobody."""
        with self.lock:
            self._promote()

    def _promote(self) -> None:
        while self.queue:
            writer = self.queue[0]
            writer.state = LEAD
            self.leader_loop = writer.loop
            if writer._signal():
                return
            del self.queue[0]  # its loop is gone: it will never run
            writer.state = DONE
        self.leading = False


def _threads(writers: list[Writer]) -> int:
    """How many threads ``writers`` come from: a leader waits for threads, not writes (a
    thread whose other write is still queued sends nothing more until that one commits)."""
    return len({writer.thread for writer in writers})


class SharedFile:
    """One file at one ``synchronous`` in this process: each thread's connection, the open
    stores that use them, the commits since the last checkpoint, whether one runs and holds
    writers back, and the commit group."""

    __slots__ = (
        "__weakref__",
        "checkpointing",
        "commits",
        "connections",
        "group",
        "held",
        "lock",
        "threads",
        "users",
    )

    def __init__(self, grouped: bool) -> None:
        self.threads: dict[int, Thread] = {}  # by thread ident
        self.connections: list[sqlite3.Connection] = []
        self.lock = threading.Lock()
        self.users = 0
        self.commits = 0  # of loop connections since the last checkpoint
        self.checkpointing = False
        self.held = False  # the checkpoint asks this process's writers to wait for it
        self.group = CommitGroup() if grouped else None

    def here(self) -> Thread | None:
        return self.threads.get(get_ident())

    def add(self, thread: Thread) -> None:
        self.threads[get_ident()] = thread
        with self.lock:
            self.connections.append(thread.conn)

    def attach(self) -> None:
        with self.lock:
            self.users += 1

    def detach(self) -> None:
        """A store closed: the last one closes the connections."""
        with self.lock:
            self.users -= 1
            if self.users > 0:
                return
            connections, self.connections = self.connections, []
            self.threads.clear()  # the stores hold this table itself
        for conn in connections:
            conn.close()

    def forget_after_fork(self, inherited: list[sqlite3.Connection]) -> None:
        """In a forked child: the parent's connections are never used (SQLite forbids it),
        and no thread of the parent leads or waits here."""
        inherited.extend(self.connections)
        self.connections = []
        self.threads.clear()
        self.lock = threading.Lock()
        self.commits, self.checkpointing, self.held = 0, False, False  # its thread stayed behind
        if self.group is not None:
            self.group.forget_after_fork()


_files: weakref.WeakValueDictionary[tuple[Path, str], SharedFile] = weakref.WeakValueDictionary()
_files_lock = threading.Lock()


def shared_file(path: Path, synchronous: str) -> SharedFile:
    """The one ``SharedFile`` of ``path`` at ``synchronous`` in this process."""
    with _files_lock:
        found = _files.get((path, synchronous))
        if found is None:
            found = _files[path, synchronous] = SharedFile(synchronous in ("FULL", "EXTRA"))
        return found


def forget_after_fork(inherited: list[sqlite3.Connection]) -> None:
    global _files_lock
    _files_lock = threading.Lock()
    for found in list(_files.values()):
        found.forget_after_fork(inherited)
