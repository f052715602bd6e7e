"""Many OS processes share one store: nothing is lost, nothing is torn, SIGKILL included.

Every test here starts real Python processes (``tests/process_workers.py``) against a real JSON
directory, SQLite file or redis-server; nothing is mocked. They are the evidence behind two
promises of ``Session``: ``increment_state`` and ``append_messages`` are atomic across
processes, and a write that returned is durable, even if its process is killed the next instant.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from backends import (
    SERVERS,
    SHARED,
    connections_named,
    naming_connections,
    wait_until_disconnected,
    worker_name,
)
from backends import store_url as shared_store_url
from held import SAFETY
from praisonsession import Session, open_store
from praisonsession._internal import runtime
from praisonsession.agents.compaction import SUMMARY_PROMPT
from process_workers import (
    CRASH_SEED,
    CRASH_TRIALS,
    WRITERS_AHEAD,
    Agent,
    turn_message,
    worker_command,
)

PROCESSES = 4
INCREMENTS_PER_PROCESS = 500
APPENDS_PER_PROCESS = 100
CREATES_PER_PROCESS = 1_200


@pytest.fixture(params=SHARED)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of each shareable kind: ``json://<tmp>/j``, ``sqlite://<tmp>/s.db``, the
    test session's redis-server under a key prefix of this test's own, and its PostgreSQL
    server under a schema of this test's own."""
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return shared_store_url(request.param, tmp_path)


def run_together(
    job: str,
    url: str,
    tmp_path: Path,
    count: int | str,
    before_go: Callable[[], object] | None = None,
    *extra: str,
    processes: int = PROCESSES,
    after_go: Callable[[Path], object] | None = None,
) -> dict[str, list[int]]:
    """Run ``job`` in ``processes`` workers released at the same moment; their JSON outputs.

    ``before_go`` runs once every worker is ready, just before they are released, and
    ``after_go`` (given the barrier's folder) once they are; ``extra`` arguments follow the
    count on each worker's command line.
    """
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    names = [f"w{n}" for n in range(processes)]
    procs = {
        name: subprocess.Popen(
            worker_command(job, url, str(barrier), name, str(count), *extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for name in names
    }
    try:
        deadline = time.monotonic() + 60
        while not all((barrier / f"ready-{name}").exists() for name in names):
            for name, proc in procs.items():
                if proc.poll() is not None:
                    pytest.fail(f"worker {name} exited before the barrier:\n{proc.stderr.read()}")
            if time.monotonic() > deadline:
                pytest.fail("the workers did not all reach the barrier within 60 s")
            time.sleep(0.005)
        if before_go is not None:
            before_go()
        (barrier / "go").touch()
        if after_go is not None:
            after_go(barrier)
        results = {}
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, f"worker {name} failed:\n{err}"
            results[name] = json.loads(out)
        return results
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def assert_each_strictly_increasing(results: dict[str, list[int]], count: int) -> None:
    for name, values in results.items():
        assert len(values) == count, name
        assert all(a < b for a, b in itertools.pairwise(values)), f"{name} went backwards"


@pytest.mark.slow
def test_increments_from_four_processes_are_atomic_and_never_lost(
    store_url: str, tmp_path: Path
) -> None:
    """4 processes x 500 ``increment_state`` calls: the counter ends at 2000, and every call
    got its own new value (1..2000 each handed out exactly once)."""
    results = run_together("increment", store_url, tmp_path, INCREMENTS_PER_PROCESS)

    total = PROCESSES * INCREMENTS_PER_PROCESS
    with Session("shared", "u", store=store_url) as session:
        assert session.get_state("hits") == total
    assert_each_strictly_increasing(results, INCREMENTS_PER_PROCESS)
    returned = [value for values in results.values() for value in values]
    assert sorted(returned) == list(range(1, total + 1))


def test_appends_from_four_processes_keep_every_message_in_order(
    store_url: str, tmp_path: Path
) -> None:
    """4 processes x 100 ``append_messages`` calls on one log: 400 messages, none lost or
    duplicated, each process's messages in the order it sent them, and every append saw a
    distinct new length."""
    results = run_together("append", store_url, tmp_path, APPENDS_PER_PROCESS)

    total = PROCESSES * APPENDS_PER_PROCESS
    store = open_store(store_url)
    try:
        log = runtime.run(store.read_messages("shared", "u", "log"))
    finally:
        runtime.run(store.close())
    assert len(log) == total
    assert all(message["role"] == "user" for message in log)
    for name in results:
        mine = [m["content"] for m in log if m["content"].startswith(f"{name}-")]
        assert mine == [f"{name}-{i}" for i in range(APPENDS_PER_PROCESS)]
    assert_each_strictly_increasing(results, APPENDS_PER_PROCESS)
    lengths = [length for values in results.values() for length in values]
    assert sorted(lengths) == list(range(1, total + 1))


@pytest.mark.slow
def test_four_processes_popping_one_log_remove_each_message_exactly_once(
    store_url: str, tmp_path: Path
) -> None:
    """4 processes pop the last message of one 400-message log, each pop a ``truncate_log``
    that expects the length it counted, until the log is empty: every message is removed by
    exactly one of them, and each process removed its share newest first."""
    total = PROCESSES * APPENDS_PER_PROCESS
    store = open_store(store_url)
    try:
        messages = [{"role": "user", "content": f"m{i}"} for i in range(total)]
        runtime.run(store.append_messages("shared", "u", "log", messages))
    finally:
        runtime.run(store.close())

    results = run_together("pop", store_url, tmp_path, 0)

    popped = [m["content"] for values in results.values() for m in values]
    assert sorted(popped) == sorted(m["content"] for m in messages)  # none twice, none lost
    for values in results.values():
        numbers = [int(m["content"][1:]) for m in values]
        assert numbers == sorted(numbers, reverse=True)
    store = open_store(store_url)
    try:
        assert runtime.run(store.read_messages("shared", "u", "log")) == []
    finally:
        runtime.run(store.close())


TURNS_PER_PROCESS = 200


@pytest.mark.slow
def test_sessions_created_by_four_processes_at_once_are_all_listed(
    store_url: str, tmp_path: Path
) -> None:
    """4 processes x 1,200 new sessions of one user at once: paging through the user's
    sessions finds every one, once, in order (the JSON store's index takes every entry, and
    is rewritten at least once meanwhile)."""
    results = run_together("create", store_url, tmp_path, CREATES_PER_PROCESS)

    made = sorted(session_id for ids in results.values() for session_id in ids)
    assert len(made) == PROCESSES * CREATES_PER_PROCESS
    store = open_store(store_url)
    try:
        listed: list[str] = []
        while True:
            after = listed[-1] if listed else None
            page = runtime.run(store.list_sessions("lister", limit=500, after=after))
            listed += [info.session_id for info in page]
            if len(page) < 500:
                break
    finally:
        runtime.run(store.close())
    assert listed == made


@pytest.mark.slow
def test_two_processes_chatting_with_one_agent_keep_every_turn(
    store_url: str, tmp_path: Path, server
) -> None:
    """2 processes x 200 turns with the same agent of the same session, at the same time:
    800 messages, every turn whole (its question right before its answer), each process's
    turns in the order it took them, and each process's history the store's, as far as it
    read."""
    results = run_together(
        "chat", store_url, tmp_path, TURNS_PER_PROCESS, None, server.url, processes=2
    )

    with Session("shared", "u", store=store_url) as session:
        agent = session.Agent("Tutor", memory=False, llm={"base_url": server.url, "model": "m"})
        history = agent.history.to_list()
        summaries = agent.summaries.to_list()
    assert len(history) == 2 * 2 * TURNS_PER_PROCESS
    questions = history[0::2]
    assert [m["role"] for m in questions] == ["user"] * (2 * TURNS_PER_PROCESS)
    assert history[1::2] == [
        {"role": "assistant", "content": f"You said: {m['content']}"} for m in questions
    ]
    for name in results:
        mine = [m["content"] for m in questions if m["content"].startswith(f"{name}-")]
        assert mine == [f"{name}-{i}" for i in range(TURNS_PER_PROCESS)]
    assert all(2 * TURNS_PER_PROCESS <= length <= len(history) for length in results.values())
    # besides one request per turn, the summary calls of compaction, each saved as a record
    summary_calls = [
        r
        for r in server.chat_requests
        if r.body["messages"][0]["content"].startswith(SUMMARY_PROMPT[:40])
    ]
    assert len(server.chat_requests) - len(summary_calls) == 2 * TURNS_PER_PROCESS
    assert len(summary_calls) == len(summaries)


def test_a_session_written_by_one_process_is_read_by_another(
    store_url: str, tmp_path: Path
) -> None:
    """One process writes state and an agent's conversation; a second, started afterwards,
    reads back exactly that."""
    written = subprocess.run(
        worker_command("write-session", store_url, "handover"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert written.returncode == 0, written.stderr
    read = subprocess.run(
        worker_command("read-session", store_url, "handover"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert read.returncode == 0, read.stderr
    wrote, got = json.loads(written.stdout), json.loads(read.stdout)
    assert got["reader"] != wrote["state"]["writer"]  # really another process
    assert got["state"] == wrote["state"]
    assert got["state"]["count"] == 3 and got["state"]["nested"] == {"list": [1, 2.5, None]}
    assert (
        got["messages"]
        == wrote["messages"]
        == [{"role": "user", "content": f"turn {i}"} for i in range(3)]
    )
    assert got["turns"] == 3


@pytest.mark.slow
def test_ttl_expiry_is_seen_by_every_process(store_url: str, tmp_path: Path) -> None:
    """A session with a TTL that 4 watcher processes each see live is then given 1.5 s
    (one touch), and just after that expiry each finds it gone (no state, not listed,
    SessionExpiredError). The short TTL starts once they have all looked: no pause of theirs
    can let it run out before."""
    store = open_store(store_url)

    def create() -> None:
        runtime.run(store.create_session("ephemeral", "u", ttl=10 * SAFETY))  # outlasts pauses
        runtime.run(store.patch_state("ephemeral", "u", {"a": 1}))

    def expire_once_seen(barrier: Path) -> None:
        seen = [barrier / f"seen-w{n}" for n in range(PROCESSES)]
        deadline = time.monotonic() + SAFETY
        while not all(path.exists() for path in seen):
            assert time.monotonic() < deadline, "the watchers did not all look at the session"
            time.sleep(0.005)
        info = runtime.run(store.touch("ephemeral", "u", ttl=1.5))
        assert info is not None and info.expires_at is not None
        told = barrier / "expiring.tmp"
        told.write_text(repr(info.expires_at))
        told.rename(barrier / "expiring")  # whole, or not there yet

    try:
        results = run_together(
            "watch-expiry",
            store_url,
            tmp_path,
            "ephemeral",
            before_go=create,
            after_go=expire_once_seen,
        )
    finally:
        runtime.run(store.close())
    assert len(results) == PROCESSES
    for name, seen in results.items():
        assert seen == {
            "live_before": True,
            "exists_after": False,
            "state_after": {},
            "listed_after": [],
            "must_exist": "SessionExpiredError",
        }, name


# -- crash safety ---------------------------------------------------------------------------


@dataclass
class Writer:
    """A crash-writer process and the files it leaves behind."""

    proc: subprocess.Popen[str]
    session_id: str
    ack_file: Path
    log_file: Path
    log: IO[str]

    def stderr(self) -> str:
        self.log.flush()
        return self.log_file.read_text()


def start_writer(url: str, tmp_path: Path, trial: int) -> Writer:
    session_id = f"crash-{trial}"
    ack_file = tmp_path / f"{session_id}.acks"
    log_file = tmp_path / f"{session_id}.stderr"
    log = open(log_file, "w")  # noqa: SIM115 - closed by the test once the writer is dead
    proc = subprocess.Popen(
        worker_command(
            "crash-writer",
            naming_connections(url, worker_name(tmp_path, trial)),
            session_id,
            str(ack_file),
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=tmp_path,
    )
    return Writer(proc, session_id, ack_file, log_file, log)


def read_acks(ack_file: Path) -> dict[str, list[int]]:
    """The acknowledged calls, by kind; a line cut short by the kill was never acknowledged."""
    acks: dict[str, list[int]] = {"set": [], "inc": [], "save": []}
    if ack_file.exists():
        for line in ack_file.read_text().split("\n")[:-1]:
            kind, number = line.split()
            acks[kind].append(int(number))
    return acks


def check_crashed_session(url: str, session_id: str, acks: dict[str, list[int]]) -> tuple[int, int]:
    """Assert that the killed writer's session is intact.

    Returns how many acknowledged calls were checked, and whether the call in flight at the
    kill was found stored (0 or 1).

    The writer's turn ``i`` is ``set_state(f"k{i}", i)``, ``increment_state("n")`` and
    ``save_modules(agent=...)`` with turn ``i`` appended; each is acknowledged after it returns,
    so at most one call (the one in flight at the kill) may be stored without an ack.
    """
    sets, incs, saves = acks["set"], acks["inc"], acks["save"]
    assert sets == list(range(len(sets)))
    assert incs == list(range(1, len(incs) + 1)), "increment_state returned a wrong value"
    assert saves == list(range(len(saves)))

    with Session(session_id, "crash", store=url) as session:
        state = session.restore_state()
        agent = Agent()
        session.load_modules(agent=agent)

        lost = [i for i in sets if state.get(f"k{i}") != i]
        assert not lost, f"acknowledged set_state calls lost: {lost}"
        written_keys = {key for key in state if key.startswith("k")}
        acked_keys = {f"k{i}" for i in sets}
        assert written_keys in (acked_keys, acked_keys | {f"k{len(sets)}"})
        n = state.get("n", 0)
        assert len(incs) <= n <= len(incs) + 1
        stored = agent.memory.to_list()
        assert len(saves) <= len(stored) <= len(saves) + 1
        assert stored == [turn_message(i) for i in range(len(stored))]
        assert agent.turns == len(stored), "module document and its log saved apart"
        in_flight = (written_keys != acked_keys) + (n - len(incs)) + (len(stored) - len(saves))
        assert in_flight <= 1, "more than the one call in flight is stored unacknowledged"

        # The crashed session stays writable: the next turn appends after the stored ones.
        agent.memory.append(turn_message(len(stored)))
        agent.turns = len(stored) + 1
        session.save_modules(agent=agent)
        assert session.increment_state("n") == n + 1
        reloaded = Agent()
        session.load_modules(agent=reloaded)
        assert reloaded.memory.to_list() == [turn_message(i) for i in range(len(stored) + 1)]
        assert reloaded.turns == len(stored) + 1
    return len(sets) + len(incs) + len(saves), in_flight


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
@pytest.mark.parametrize("durability", ["process", "power"])
def test_sigkill_at_a_random_moment_never_loses_an_acknowledged_write(
    store_url: str, durability: str, tmp_path: Path
) -> None:
    """20 writers are killed with SIGKILL 20-300 ms into a write loop (the same store file
    for all of them, one session each). After every kill the session loads, every
    acknowledged ``set_state``, ``increment_state`` and ``save_modules`` is there, and the
    session accepts new writes. At either durability: a process crash is what "process"
    promises to survive (for Redis the server decides; the setting is carried through)."""
    store_url += ("&" if "?" in store_url else "?") + f"durability={durability}"
    backend = store_url.split(":", 1)[0]
    rng = random.Random(f"{CRASH_SEED}-{backend}")
    print(f"\n{backend} at {durability}: crash seed {CRASH_SEED} (set PS_TEST_CRASH_SEED)")
    checked = stored_unacknowledged = 0
    writers: list[Writer] = []
    try:
        for trial in range(CRASH_TRIALS):
            while len(writers) < min(trial + 1 + WRITERS_AHEAD, CRASH_TRIALS):
                writers.append(start_writer(store_url, tmp_path, len(writers)))
            writer = writers[trial]
            ready = writer.proc.stdout.readline()
            assert ready == "ready\n", f"writer {trial} did not start:\n{writer.stderr()}"
            named = connections_named(store_url, worker_name(tmp_path, trial))
            assert named != 0, f"writer {trial}'s connections do not carry its name"
            delay = rng.uniform(0.020, 0.300)
            writer.proc.stdin.write("go\n")
            writer.proc.stdin.flush()
            time.sleep(delay)
            os.kill(writer.proc.pid, signal.SIGKILL)
            writer.proc.wait(timeout=30)
            assert writer.proc.returncode == -signal.SIGKILL, (
                f"writer {trial} stopped before the kill:\n{writer.stderr()}"
            )
            wait_until_disconnected(store_url, worker_name(tmp_path, trial))  # its last COMMIT
            acks = read_acks(writer.ack_file)
            context = f"seed {CRASH_SEED}, trial {trial}, kill after {delay * 1000:.0f} ms"
            try:
                found = check_crashed_session(store_url, writer.session_id, acks)
            except AssertionError as exc:
                raise AssertionError(f"{context}: {exc}") from exc
            checked += found[0]
            stored_unacknowledged += found[1]
    finally:
        for writer in writers:
            if writer.proc.poll() is None:
                writer.proc.kill()
                writer.proc.wait()
            for stream in (writer.proc.stdin, writer.proc.stdout, writer.log):
                if stream is not None:
                    stream.close()
    print(
        f"{backend} at {durability}: {CRASH_TRIALS} trials, {checked} acknowledged writes checked, "
        f"{stored_unacknowledged} kills landed between a write and its acknowledgement"
    )
    assert checked >= CRASH_TRIALS, "the writers were killed before they acknowledged anything"
