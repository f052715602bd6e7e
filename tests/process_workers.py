"""Worker processes for ``test_processes.py``: run as ``python process_workers.py <job> ...``.

Every job is a separate OS process that imports praisonsession afresh, as a real second
program sharing a store would. Jobs:

``increment URL BARRIER NAME COUNT``
    Open ``Session("shared", "u")`` once, wait at the barrier, call
    ``increment_state("hits")`` COUNT times and print the returned values as a JSON list.
``append URL BARRIER NAME COUNT``
    Open the store, wait at the barrier, append COUNT messages ``{"role": "user", "content":
    "NAME-i"}`` one call at a time through ``runtime.run(store.append_messages(...))`` and print
    the returned log lengths as a JSON list.
``pop URL BARRIER NAME COUNT``
    Open the store, wait at the barrier, then remove the last message of log ``log`` of
    session ``shared`` until the log is empty, each time through ``truncate_log`` with the
    length it just counted as ``expected`` (a ``ConflictError`` means another process popped
    first: count again). Print the messages it removed as a JSON list; COUNT is unused.
``chat URL BARRIER NAME COUNT LLM_URL``
    Open ``Session("shared", "u")`` and its agent ``Tutor`` (LLM at LLM_URL), wait at the
    barrier, then chat COUNT turns ``"NAME-i"``; print the agent's history length at the end.
``recall-chat URL DATA_DIR BARRIER NAME COUNT LLM_URL QUERY [KEY]``
    Open ``Session("shared", "u")`` (memory under DATA_DIR, an embedder that records what it
    embeds; KEY: the store's encryption key) and its agent ``Tutor`` with memory on and a
    window of 2 turns; wait at the barrier (``-``: none), chat COUNT turns ``said(NAME, i)``,
    wait for the agent's background indexing, then print as JSON the texts embedded as
    documents, those embedded as queries, and the turns ``recall_turns`` finds for QUERY
    before the last request's window.
``crash-writer URL SESSION_ID ACK_FILE``
    Open the session, print ``ready``, wait for a line on stdin, then write forever (until the
    parent kills it). After each call returns it appends one acknowledgement line to ACK_FILE:
    ``set i`` after ``set_state(f"k{i}", i)``, ``inc n`` after ``increment_state("n")``
    returned ``n``, and ``save i`` after ``save_modules(agent=...)`` stored turn ``i``.

``group-writer URL ACK_FILE THREADS``
    THREADS threads of one process, each with a store of its own on URL (a SQLite file at
    durability "power": they share one commit group), half driving their calls inline, half on
    an event loop of their own; print ``ready``, wait for a line on stdin, then each appends
    messages ``{"n": n}`` to log ``log`` of its session ``w<i>`` (user ``crash``), one call at a
    time, forever; after each call returns it appends ``i n`` to ACK_FILE.
``group-increment URL BARRIER NAME COUNT THREADS``
    THREADS threads, each with a store of its own on URL, wait at the barrier, then each
    increments ``hits`` of session ``shared`` (user ``u``) COUNT times; print every returned
    value as a JSON list.

``fork-loop URL SOURCE PREFIX ACK_FILE``
    Open session SOURCE of user ``crash``, print ``ready``, wait for a line on stdin, then
    forever: fork it to ``PREFIX-i`` (acknowledged ``fork i``), delete ``PREFIX-(i-1)``
    (acknowledged ``deleted i-1``), so that a store never holds more than a few forks.
``restore-loop URL SESSION_ID``
    Open the session, print ``ready``, wait for a line on stdin, then restore its two
    snapshots in turn, forever.
``die-mid-archive URL KIND ARCHIVE LINE``
    ``KIND`` export: export session ``s`` of user ``u`` to ARCHIVE and exit at once (as a
    kill would: no cleanup) when line LINE is about to be written. ``KIND`` import: import
    ARCHIVE as session ``imported`` and exit when it has read LINE lines of the records.

``fork-dies URL DATA_DIR SOURCE NEW_ID WHEN FACT...``
    Add each FACT as a long-term memory of session SOURCE of user ``crash`` (memories under
    DATA_DIR; the state ``tag`` set to SOURCE), fork it to NEW_ID and SIGKILL itself in between
    the fork's two steps: ``before-copy`` once its memories are staged, as
    the session copy begins; ``after-copy`` once the session is copied, before its memories
    are adopted.
``read-and-die URL SESSION_ID``
    Read the state of session SESSION_ID of user ``u`` (which slides a sliding TTL), print it
    as JSON, and SIGKILL itself without closing the store.

The barrier is a directory: each worker creates ``ready-NAME`` once it is set up and then
waits for the parent to create ``go``, so all workers start their loops together.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import time
from pathlib import Path

from praisonsession import (
    ConflictError,
    MessageLog,
    Session,
    SessionExpiredError,
    StateModule,
    open_store,
)
from praisonsession._internal import runtime
from praisonsession.stores.record import record_key

BARRIER_TIMEOUT = 60.0
CRASH_TRIALS = 20  # kills per crash test
WRITERS_AHEAD = 2  # workers started early, so Python's start-up overlaps a trial
# Change it (or set the variable) to explore other kill moments; failures print the seed.
CRASH_SEED = int(os.environ.get("PS_TEST_CRASH_SEED", "20240611"))


def worker_command(*args: str) -> list[str]:
    """The command line that runs one job of this file in a new Python process."""
    return [sys.executable, str(Path(__file__).resolve()), *args]


def wait_at_barrier(barrier: Path, name: str) -> None:
    """Announce that this worker is ready, then wait until the parent says go."""
    (barrier / f"ready-{name}").touch()
    wait_for(barrier / "go", name)


def wait_for(path: Path, name: str) -> None:
    """Wait until the parent makes ``path``."""
    deadline = time.monotonic() + BARRIER_TIMEOUT
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"worker {name}: no {path.name} within {BARRIER_TIMEOUT} s")
        time.sleep(0.001)


def increment(url: str, barrier: str, name: str, count: str) -> None:
    session = Session(session_id="shared", user_id="u", store=url)
    wait_at_barrier(Path(barrier), name)
    values = [session.increment_state("hits") for _ in range(int(count))]
    session.close()
    print(json.dumps(values))


def append(url: str, barrier: str, name: str, count: str) -> None:
    store = open_store(url)
    wait_at_barrier(Path(barrier), name)
    lengths = []
    for i in range(int(count)):
        message = {"role": "user", "content": f"{name}-{i}"}
        lengths.append(runtime.run(store.append_messages("shared", "u", "log", [message])))
    runtime.run(store.close())
    print(json.dumps(lengths))


def pop(url: str, barrier: str, name: str, count: str) -> None:
    """Pop the shared log's last message until it is empty, racing the other workers."""
    store = open_store(url)
    key = record_key("shared", "u")
    wait_at_barrier(Path(barrier), name)
    popped: list[dict[str, object]] = []
    while (length := runtime.run(store.backend.count_log(key, path="log"))) > 0:
        try:
            popped += runtime.run(
                store.backend.truncate_log(key, path="log", length=length - 1, expected=length)
            )
        except ConflictError:
            continue  # another process popped between the count and the cut
    runtime.run(store.close())
    print(json.dumps(popped))


def create(url: str, barrier: str, name: str, count: str) -> None:
    """Create ``count`` sessions of one user, all processes at once; the ids made."""
    store = open_store(url)
    wait_at_barrier(Path(barrier), name)
    made = [f"{name}-session-{i:05d}" for i in range(int(count))]
    for session_id in made:
        runtime.run(store.create_session(session_id, "lister"))
    runtime.run(store.close())
    print(json.dumps(made))


def chat(url: str, barrier: str, name: str, count: str, llm_url: str) -> None:
    session = Session(session_id="shared", user_id="u", store=url)
    agent = session.Agent("Tutor", memory=False, llm={"base_url": llm_url, "model": "m"})
    wait_at_barrier(Path(barrier), name)
    for i in range(int(count)):
        agent.chat(f"{name}-{i}")
    session.close()
    print(json.dumps(len(agent.history)))


TOPICS = ["sailing knots", "my locker code", "baking bread", "train timetables", "violin scales"]


def said(name: str, i: int) -> str:
    """What ``recall-chat`` worker NAME says in its turn ``i``."""
    return f"{name} turn {i}: a note about {TOPICS[i % len(TOPICS)]}, number {i * 37 % 101}"


def recall_chat(
    url: str,
    data_dir: str,
    barrier: str,
    name: str,
    count: str,
    llm_url: str,
    query: str,
    key: str | None = None,
) -> None:
    from praisonsession.recall.embeddings import MiniLMEmbedder

    embedded: list[str] = []
    queries: list[str] = []

    class Recording(MiniLMEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            embedded.extend(texts)
            return super().embed(texts)

        def embed_query(self, text: str) -> list[float]:
            queries.append(text)
            return super().embed_query(text)

    settings = {"data_dir": data_dir, "encryption_key": key}
    session = Session(
        session_id="shared",
        user_id="u",
        store=url,
        settings=settings,
        memory_config={"embedder": Recording()},
    )
    llm = {"base_url": llm_url, "model": "m"}
    agent = session.Agent("Tutor", memory=True, history_window=2, llm=llm)
    if barrier != "-":
        wait_at_barrier(Path(barrier), name)
    for i in range(int(count)):
        agent.chat(said(name, i))

    async def indexed() -> None:  # the agent's background indexing, done
        await asyncio.gather(*agent._indexing, return_exceptions=True)

    runtime.run(indexed())
    before = agent.last_request.window_start if agent.last_request else len(agent.history)
    found = session.recall_turns(agent.log_name, query, before, 4)
    session.close()
    print(json.dumps({"embedded": embedded, "queries": queries, "before": before,
                      "recalled": [start for start, _ in found]}))  # fmt: skip


class Agent(StateModule):
    """A StateModule holding a MessageLog (its memory) and a plain counter of turns."""

    def __init__(self) -> None:
        super().__init__()
        self.memory = MessageLog()
        self.turns = 0
        self.register_state("turns")


def turn_message(i: int) -> dict[str, str]:
    return {"role": "user", "content": f"turn {i}"}


def crash_writer(url: str, session_id: str, ack_file: str) -> None:
    session = Session(session_id=session_id, user_id="crash", store=url)
    agent = Agent()
    acks = os.open(ack_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def ack(line: str) -> None:
        # One unbuffered write(2) per line: once it returns, the line survives SIGKILL.
        os.write(acks, f"{line}\n".encode())

    print("ready", flush=True)
    sys.stdin.readline()
    i = 0
    while True:
        session.set_state(f"k{i}", i)
        ack(f"set {i}")
        ack(f"inc {session.increment_state('n')}")
        agent.memory.append(turn_message(i))
        agent.turns = i + 1
        session.save_modules(agent=agent)
        ack(f"save {i}")
        i += 1


def group_writer(url: str, ack_file: str, threads: str) -> None:
    import threading

    acks = os.open(ack_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    stores = [open_store(url) for _ in range(int(threads))]
    go = threading.Event()

    def inline(i: int) -> None:
        go.wait()
        for n in range(10**9):
            runtime.run(stores[i].append_messages(f"w{i}", "crash", "log", [{"n": n}]), inline=True)
            os.write(acks, f"{i} {n}\n".encode())  # one write(2): it survives SIGKILL whole

    def on_loop(i: int) -> None:
        async def write() -> None:
            for n in range(10**9):
                await stores[i].append_messages(f"w{i}", "crash", "log", [{"n": n}])
                os.write(acks, f"{i} {n}\n".encode())

        go.wait()
        asyncio.run(write())

    for i in range(int(threads)):
        threading.Thread(target=inline if i % 2 else on_loop, args=(i,), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.readline()
    go.set()
    time.sleep(3600)  # until killed


def group_increment(url: str, barrier: str, name: str, count: str, threads: str) -> None:
    import threading

    stores = [open_store(url) for _ in range(int(threads))]
    values: list[int] = []

    def increment(i: int) -> None:
        session = Session("shared", "u", store=stores[i])
        values.extend(session.increment_state("hits") for _ in range(int(count)))

    workers = [threading.Thread(target=increment, args=(i,)) for i in range(int(threads))]
    wait_at_barrier(Path(barrier), name)
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(json.dumps(values))


def write_session(url: str, session_id: str) -> None:
    with Session(session_id, "u", store=url) as session:
        session.set_state("writer", os.getpid())
        session.save_state({"title": "written elsewhere", "nested": {"list": [1, 2.5, None]}})
        for _ in range(3):
            session.increment_state("count")
        agent = Agent()
        for i in range(3):
            agent.memory.append(turn_message(i))
        agent.turns = 3
        session.save_modules(agent=agent)
        print(json.dumps({"state": session.restore_state(), "messages": agent.memory.to_list()}))


def read_session(url: str, session_id: str) -> None:
    with Session(session_id, "u", store=url) as session:
        agent = Agent()
        session.load_modules(agent=agent)
        out = {"state": session.restore_state(), "messages": agent.memory.to_list()}
        print(json.dumps({**out, "turns": agent.turns, "reader": os.getpid()}))


def watch_expiry(url: str, barrier: str, name: str, session_id: str) -> None:
    """Look at the session, say so, and look again just past the expiry the parent then
    gives it (the file ``expiring``)."""
    store = open_store(url)
    folder = Path(barrier)
    wait_at_barrier(folder, name)
    info = runtime.run(store.get_info(session_id, "u"))  # reads metadata, slides nothing
    seen: dict[str, object] = {"live_before": info is not None}
    (folder / f"seen-{name}").touch()
    wait_for(folder / "expiring", name)
    expires_at = float((folder / "expiring").read_text())
    time.sleep(max(0.0, expires_at - time.time()) + 0.3)
    seen["exists_after"] = runtime.run(store.exists(session_id, "u"))
    seen["state_after"] = runtime.run(store.get_state(session_id, "u"))
    listed = runtime.run(store.list_sessions("u"))
    seen["listed_after"] = [i.session_id for i in listed]
    try:
        runtime.run(store.get_state(session_id, "u", must_exist=True))
        seen["must_exist"] = "no error"
    except SessionExpiredError:
        seen["must_exist"] = "SessionExpiredError"
    runtime.run(store.close())
    print(json.dumps(seen))


def wait_for_go() -> None:
    print("ready", flush=True)
    sys.stdin.readline()


def fork_loop(url: str, source: str, prefix: str, ack_file: str) -> None:
    session = Session(source, "crash", store=url)
    acks = os.open(ack_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    wait_for_go()
    i = 0
    while True:
        session.fork(f"{prefix}-{i}")
        os.write(acks, f"fork {i}\n".encode())
        if i > 0:
            runtime.run(session.store.delete_session(f"{prefix}-{i - 1}", "crash"))
            os.write(acks, f"deleted {i - 1}\n".encode())
        i += 1


def restore_loop(url: str, session_id: str) -> None:
    session = Session(session_id, "crash", store=url)
    snapshots = session.snapshots()
    wait_for_go()
    while True:
        for snapshot in snapshots:
            session.restore(snapshot)


def fork_dies(url: str, data_dir: str, source: str, new_id: str, when: str, *facts: str) -> None:
    import signal

    from praisonsession.stores.branches import Branches

    copy = Branches.fork

    async def dying(self: Branches, *args: object, **kwargs: object) -> object:
        if when == "before-copy":
            os.kill(os.getpid(), signal.SIGKILL)
        copied = await copy(self, *args, **kwargs)  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGKILL)
        return copied

    Branches.fork = dying  # type: ignore[method-assign]
    session = Session(source, "crash", store=url, settings={"data_dir": data_dir})
    session.set_state("tag", source)
    session.add_memories(list(facts))
    session.fork(new_id)
    raise SystemExit("the fork finished: it was never killed")


class _DyingFile(io.RawIOBase):
    """A binary file that ends the process, as a kill would, at a chosen line: read in full
    once (an import checks the archive first), then cut at ``line`` on the second reading;
    or, written to, at the ``line``-th write."""

    def __init__(self, data: bytes, line: int) -> None:
        self.lines = data.splitlines(keepends=True)
        self.line = line
        self.readings = 0
        self.writes = 0

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.readings += 1
        return 0

    def __iter__(self):  # type: ignore[override]
        for number, line in enumerate(self.lines):
            if self.readings > 1 and number == self.line:
                os._exit(9)
            yield line

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.writes += 1
        if self.writes == self.line:
            os._exit(9)
        return len(data)


def read_and_die(url: str, session_id: str) -> None:
    """Read the session (a read of a sliding TTL moves its expiry), print what was read,
    then SIGKILL this process: no close, nothing flushed on the way out."""
    import signal

    store = open_store(url)
    state = runtime.run(store.get_state(session_id, "u"))
    os.write(1, (json.dumps(state) + "\n").encode())  # one write(2): it survives SIGKILL
    os.kill(os.getpid(), signal.SIGKILL)


def die_mid_archive(url: str, kind: str, archive: str, line: str) -> None:
    if kind == "export":
        Session("s", "u", store=url).export(_DyingFile(b"", int(line)))
    else:
        dying = _DyingFile(Path(archive).read_bytes(), int(line))
        Session.import_archive(dying, store=url, session_id="imported")
    raise SystemExit(f"{kind} finished: line {line} was never reached")


JOBS = {
    "increment": increment,
    "append": append,
    "create": create,
    "pop": pop,
    "chat": chat,
    "recall-chat": recall_chat,
    "crash-writer": crash_writer,
    "group-writer": group_writer,
    "group-increment": group_increment,
    "write-session": write_session,
    "read-session": read_session,
    "watch-expiry": watch_expiry,
    "fork-loop": fork_loop,
    "restore-loop": restore_loop,
    "die-mid-archive": die_mid_archive,
    "fork-dies": fork_dies,
    "read-and-die": read_and_die,
}

if __name__ == "__main__":
    JOBS[sys.argv[1]](*sys.argv[2:])
