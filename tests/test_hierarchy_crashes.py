"""Forks and restores killed with SIGKILL at random moments, and exports and imports cut
short: all or nothing, every time, and nothing left behind for long.

Real worker processes (``process_workers.py``) fork or restore a session with a few thousand
messages, so that a copy takes long enough to be interrupted, and are killed at a random
moment; then this process looks at what the store holds. Nothing is mocked.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import (
    SERVERS,
    SHARED,
    connections_named,
    naming_connections,
    postgres_schema,
    store_url,
    wait_until_disconnected,
    worker_name,
)
from praisonsession import Session, SessionBase, erase_user, open_store
from praisonsession._internal import runtime
from praisonsession.archive import STAGING_TTL
from praisonsession.clock import ManualClock
from praisonsession.stores import Branches
from praisonsession.stores.backend import all_records
from praisonsession.stores.reserved import SNAPSHOT_OWNER
from process_workers import CRASH_SEED, CRASH_TRIALS, WRITERS_AHEAD, Agent, worker_command
from sessions import staged_copies

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL"),
]

USER = "crash"
MESSAGES = 3000  # in the module's log: a copy takes a few milliseconds, long enough to hit


@pytest.fixture(params=SHARED)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return store_url(request.param, tmp_path)


@pytest.fixture
def store(url: str) -> Iterator[SessionBase]:
    store = open_store(url)
    yield store
    runtime.run(store.close())


def write_content(session: Session, tag: str, messages: int) -> None:
    """State, a module with a long log and a plain field, and a second log, all marked
    ``tag``: content of two tags never mixes unless a copy was torn."""
    store, ids = session.store, (session.session_id, session.user_id)
    runtime.run(store.replace_state(*ids, {"tag": tag, "n": messages}))
    agent = Agent()
    agent.memory.extend({"role": "user", "content": f"{tag}-{i}"} for i in range(messages))
    agent.turns = messages
    session.save_modules(agent=agent)
    runtime.run(store.clear_messages(*ids, "side"))
    side = [{"role": "note", "content": f"{tag}-side-{i}"} for i in range(messages // 10)]
    runtime.run(store.append_messages(*ids, "side", side))


def content_of(store: SessionBase, session_id: str, user_id: str = USER) -> dict[str, Any]:
    """What a reader sees of the session, loaded as a program would."""
    with Session(session_id, user_id, store=store) as session:
        agent = Agent()
        session.load_modules(agent=agent)
        return {
            "state": session.restore_state(),
            "memory": agent.memory.to_list(),
            "turns": agent.turns,
            "side": runtime.run(store.read_messages(session_id, user_id, "side")),
        }


class Workers:
    """Worker processes started ahead of their trials (Python's start-up overlaps a trial),
    each released by a line on stdin and killed with SIGKILL after a random delay; a trial
    looks at the store once the server has ended the dead worker's connections."""

    def __init__(self, tmp_path: Path, url: str, command: Any) -> None:
        self.tmp_path = tmp_path
        self.url = url
        self.command = command  # (trial, its worker's URL) -> worker command line
        self.procs: list[subprocess.Popen[str]] = []

    def name(self, trial: int) -> str:
        """What worker ``trial``'s connections are called on a store's server."""
        return worker_name(self.tmp_path, trial)

    def start_until(self, trial: int) -> None:
        while len(self.procs) < min(trial + 1 + WRITERS_AHEAD, CRASH_TRIALS):
            log = open(self.tmp_path / f"worker-{len(self.procs)}.stderr", "w")  # noqa: SIM115
            self.procs.append(
                subprocess.Popen(
                    self.command(
                        len(self.procs), naming_connections(self.url, self.name(len(self.procs)))
                    ),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    cwd=self.tmp_path,
                )
            )
            log.close()

    def kill_after(self, trial: int, delay: float, acked: Path | None = None) -> None:
        """Kill worker ``trial`` ``delay`` seconds after its go, or after the first line of
        its ``acked`` file: a loaded machine may take longer than the delay to do anything.
        Returns once the store's server is done with what the worker sent before it died."""
        self.start_until(trial)
        proc = self.procs[trial]
        ready = proc.stdout.readline()
        stderr = self.tmp_path / f"worker-{trial}.stderr"
        assert ready == "ready\n", f"worker {trial} did not start:\n{stderr.read_text()}"
        proc.stdin.write("go\n")
        proc.stdin.flush()
        while acked is not None and not read_acks(acked):
            assert proc.poll() is None, f"worker {trial} ended by itself:\n{stderr.read_text()}"
            time.sleep(0.002)
        named = connections_named(self.url, self.name(trial))
        assert named != 0, f"worker {trial}'s connections do not carry its name"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL, f"worker {trial} ended by itself:\n" + (
            stderr.read_text()
        )
        wait_until_disconnected(self.url, self.name(trial))

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()


def read_acks(path: Path) -> list[tuple[str, int]]:
    if not path.exists():
        return []
    return [
        (kind, int(n)) for kind, n in (line.split() for line in path.read_text().split("\n")[:-1])
    ]


# -- fork ---------------------------------------------------------------------------------------


def test_a_fork_killed_at_any_moment_is_absent_or_complete(
    url: str, store: SessionBase, tmp_path: Path
) -> None:
    """20 workers fork a 3,000-message session in a loop (deleting the fork before) and are
    killed 20-200 ms after their first acknowledged fork (a fork, a deletion or the next fork
    under way). Every fork the store then holds is a complete copy with its parent
    link, every acknowledged fork is there unless its deletion was acknowledged, and the
    store stays usable (the source is unchanged, a new fork works)."""
    rng = random.Random(f"{CRASH_SEED}-fork-{url.split(':')[0]}")
    source = Session("source", USER, store=store)
    write_content(source, "source", MESSAGES)
    expected = content_of(store, "source")
    workers = Workers(
        tmp_path,
        url,
        lambda t, u: worker_command("fork-loop", u, "source", f"t{t}", str(tmp_path / f"{t}.acks")),
    )
    started = time.monotonic()
    in_flight_found = forks_made = 0
    try:
        for trial in range(CRASH_TRIALS):
            delay = rng.uniform(0.020, 0.200)
            workers.kill_after(trial, delay, acked=tmp_path / f"{trial}.acks")
            context = f"seed {CRASH_SEED}, trial {trial}, kill {delay * 1000:.0f} ms after a fork"
            acks = read_acks(tmp_path / f"{trial}.acks")
            forked = [n for kind, n in acks if kind == "fork"]
            deleted = {n for kind, n in acks if kind == "deleted"}
            forks_made += len(forked)
            present = sorted(
                int(info.session_id.split("-")[1])
                for info in runtime.run(store.list_sessions(USER, limit=1000))
                if info.session_id.startswith(f"t{trial}-")
            )
            alive = {n for n in forked if n not in deleted}
            # killed after a fork's ack: the deletion of the one before may have happened
            deleting = {acks[-1][1] - 1} if acks and acks[-1][0] == "fork" else set()
            in_flight = len(forked)  # the fork under way at the kill, if one was
            assert alive - deleting <= set(present), f"{context}: an acknowledged fork is gone"
            assert set(present) <= alive | {in_flight}, f"{context}: {present} {acks[-2:]}"
            in_flight_found += in_flight in present
            for n in present:
                session_id = f"t{trial}-{n}"
                assert content_of(store, session_id) == expected, f"{context}: {session_id} torn"
                parent = runtime.run(Branches(store.backend).parent_of(session_id, USER))
                assert parent == ("source", USER), f"{context}: {session_id} lost its parent"
    finally:
        workers.close()
    took = time.monotonic() - started
    assert content_of(store, "source") == expected
    assert content_of(store, source.fork("after").session_id) == expected
    assert forks_made >= CRASH_TRIALS, "the workers were killed before they forked anything"
    print(
        f"\n{url.split(':')[0]}: {CRASH_TRIALS} kills in {took:.1f} s, {forks_made} forks made; "
        f"the fork in flight was found complete {in_flight_found} times, absent otherwise"
    )


FACTS = ["Ada drinks green tea", "Ada rides a bike to work", "Ada reads about whales"]


def memories_seen(session: Session) -> list[tuple[str, str]]:
    """(text, session) of every memory of the user that ``session`` lists."""
    return sorted((m["text"], m["metadata"]["session_id"]) for m in session.list_memories())


@pytest.mark.parametrize("when", ["before-copy", "after-copy"])
def test_a_fork_killed_between_its_memories_and_its_copy_is_absent_or_has_them(
    url: str, store: SessionBase, tmp_path: Path, when: str
) -> None:
    """A fork's memories live in the vector store, its session in the store: a worker forking
    a session with three memories kills itself between the two steps. Killed before the
    session copy, there is no fork and no session sees the copies it staged (not the source,
    not another, not a new session under the fork's id), and the next fork to that id leaves
    none behind; killed after it, the fork holds the memories when it is next opened."""
    data_dir = str(tmp_path / "data")
    settings = {"data_dir": data_dir}

    def opened(session_id: str) -> Session:
        return Session(session_id, USER, store=store, settings=settings)

    # the worker adds the memories too: this process opens the vector store after it is
    # done (embedded Chroma opened earlier in a process would not see another's writes)
    died = subprocess.run(
        worker_command("fork-dies", url, data_dir, "source", "fork", when, *FACTS),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert died.returncode == -signal.SIGKILL, died.stderr
    source = opened("source")
    ids = sorted(m["id"] for m in source.list_memories())
    assert len(ids) == len(FACTS)
    theirs = [(fact, "source") for fact in sorted(FACTS)]
    if when == "before-copy":
        assert not runtime.run(store.exists("fork", USER))
        assert staged_copies(source, "fork") == sorted(FACTS)  # in the store, seen by nobody:
        other, reused = opened("other"), opened("fork")
        for session in (source, other, reused):
            assert memories_seen(session) == theirs
            hits = session.search_memory("what does Ada drink?", limit=10)
            assert sorted(hit["id"] for hit in hits) == ids
            assert {hit["metadata"]["session_id"] for hit in hits} == {"source"}
            assert [m["text"] for m in runtime.run(session._core._memories())] == (
                sorted(FACTS) if session is source else []
            )
        reused.delete()
        child = source.fork("fork")  # the next fork to that id: its own copies, no others
        assert staged_copies(source, "fork") == []
    else:
        assert runtime.run(store.exists("fork", USER))
        assert staged_copies(source, "fork") == sorted(FACTS)  # staged, not adopted yet
        child = opened("fork")  # opening its memory adopts them
    assert child.get_state("tag") == "source"
    assert memories_seen(child) == [(fact, "fork") for fact in sorted(FACTS)]
    assert sorted(m["id"] for m in child.list_memories()) == ids
    assert staged_copies(source, "fork") == []
    assert memories_seen(source) == theirs  # the source's own, unchanged
    child.clear_memory("long")
    assert memories_seen(child) == theirs  # the fork's copies were its own


def test_a_deletion_whose_commit_the_server_still_runs_lands_after_the_kill(
    postgres_url: str, tmp_path: Path
) -> None:
    """Why a trial waits for the server to end the dead worker's connections before it looks:
    a worker killed while PostgreSQL runs its COMMIT leaves that COMMIT to land after the kill.
    Here the COMMIT of the worker's first deletion is held (a deferred trigger waits for a
    lock this test holds), as a loaded machine holds it by not scheduling the server: after
    the kill the fork it deletes is still listed, and a reader of the listing would find it
    gone (the crash test once failed so: "t16-7 torn", read as an empty session). Once the
    server has ended the connection, the deletion has landed and nothing changes any more."""
    import psycopg
    from psycopg import sql

    url = store_url("postgres", tmp_path)
    store = open_store(url)
    write_content(Session("source", USER, store=store), "source", 10)
    expected = content_of(store, "source")
    name = postgres_schema(tmp_path)
    schema = sql.Identifier(name)
    acks = tmp_path / "0.acks"
    workers = Workers(
        tmp_path, url, lambda t, u: worker_command("fork-loop", u, "source", "t", str(acks))
    )
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL(
                "CREATE FUNCTION {s}.held_commit() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN PERFORM pg_advisory_xact_lock(hashtext('held:' || TG_TABLE_SCHEMA)); "
                "RETURN NULL; END $$"
            ).format(s=schema)
        )
        admin.execute(
            sql.SQL(
                "CREATE CONSTRAINT TRIGGER held_commit AFTER DELETE ON {s}.ps_sessions "
                "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {s}.held_commit()"
            ).format(s=schema)
        )
        admin.execute("SELECT pg_advisory_lock(hashtext('held:' || %s))", (name,))
        try:
            workers.start_until(0)
            proc = workers.procs[0]
            assert proc.stdout.readline() == "ready\n"
            proc.stdin.write("go\n")
            proc.stdin.flush()
            held = (
                "SELECT 1 FROM pg_stat_activity WHERE application_name = %s "
                "AND query = 'COMMIT' AND wait_event = 'advisory'"
            )
            while not admin.execute(held, (workers.name(0),)).fetchall():
                assert proc.poll() is None, "the worker ended by itself"
                time.sleep(0.002)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            assert read_acks(acks) == [("fork", 0), ("fork", 1)]  # then it deleted t-0

            assert listed(store, "t-") == ["t-0", "t-1"]
            assert connections_named(url, workers.name(0))  # its COMMIT still running
            admin.execute("SELECT pg_advisory_unlock(hashtext('held:' || %s))", (name,))
            wait_until_disconnected(url, workers.name(0))
            assert listed(store, "t-") == ["t-1"]  # the deletion landed after the kill
            assert content_of(store, "t-1") == expected
        finally:
            workers.close()
            runtime.run(store.close())


def listed(store: SessionBase, prefix: str) -> list[str]:
    infos = runtime.run(store.list_sessions(USER, limit=1000))
    return sorted(info.session_id for info in infos if info.session_id.startswith(prefix))


# -- restore ------------------------------------------------------------------------------------


def test_a_restore_killed_at_any_moment_leaves_one_content_or_the_other(
    url: str, store: SessionBase, tmp_path: Path
) -> None:
    """20 workers restore a session's two snapshots in turn (3,000 messages marked A, 2,000
    marked B, each with its state and a second log) and are killed 20-200 ms in. Each time,
    the session holds exactly A or exactly B, never a mix; its snapshots are untouched; it
    takes new writes."""
    rng = random.Random(f"{CRASH_SEED}-restore-{url.split(':')[0]}")
    session = Session("r", USER, store=store)
    write_content(session, "B", MESSAGES - 1000)
    session.snapshot("B")
    b = content_of(store, "r")
    write_content(session, "A", MESSAGES)
    session.snapshot("A")
    a = content_of(store, "r")
    snapshots = session.snapshots()
    workers = Workers(tmp_path, url, lambda t, u: worker_command("restore-loop", u, "r"))
    seen = {"A": 0, "B": 0}
    started = time.monotonic()
    try:
        for trial in range(CRASH_TRIALS):
            delay = rng.uniform(0.020, 0.200)
            workers.kill_after(trial, delay)
            found = content_of(store, "r")
            context = f"seed {CRASH_SEED}, trial {trial}, kill after {delay * 1000:.0f} ms"
            assert found in (a, b), f"{context}: a mix of both: {summary(found)}"
            seen[found["state"]["tag"]] += 1
    finally:
        workers.close()
    took = time.monotonic() - started
    assert session.snapshots() == snapshots
    for snapshot, expected in zip(snapshots, (b, a), strict=True):
        session.restore(snapshot)
        assert content_of(store, "r") == expected
    session.set_state("after", True)
    assert session.get_state("after") is True
    print(f"\n{url.split(':')[0]}: {CRASH_TRIALS} kills in {took:.1f} s, left as {seen}")


def summary(content: dict[str, Any]) -> dict[str, Any]:
    return {
        "state": content["state"],
        "turns": content["turns"],
        "memory": (len(content["memory"]), content["memory"][:1], content["memory"][-1:]),
        "side": (len(content["side"]), content["side"][:1]),
    }


# -- staging left by a killed export or import ----------------------------------------------


@pytest.fixture(params=SHARED)
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return store_url(request.param, tmp_path)


def staging(store: SessionBase) -> list[str]:
    hidden = runtime.run(all_records(store.backend, SNAPSHOT_OWNER))
    return sorted(info.session_id for info in hidden if "snapshot" not in info.metadata)


@pytest.mark.parametrize("cleanup", ["expiry", "erase_user"])
@pytest.mark.parametrize("kind", ["export", "import"])
def test_what_a_killed_export_or_import_leaves_expires_or_goes_with_its_user(
    any_url: str, kind: str, cleanup: str, tmp_path: Path, frozen_clock: ManualClock
) -> None:
    """A process that dies while exporting (its consistent copy made) or importing (half
    the sections staged) leaves hidden staging sessions holding the user's data; no session
    appears. After STAGING_TTL ``purge_expired`` removes them (before it, it leaves them: an
    export or import may still be running); erasing the user removes them at once (and
    erasing another user does not)."""
    store = open_store(any_url)
    try:
        source = Session("s", "u", store=store)
        write_content(source, "x", 1200)
        source.snapshot("one")
        archive = tmp_path / "s.jsonl"
        source.export(archive)
        lines = len(archive.read_bytes().splitlines())
        line = 2 if kind == "export" else lines * 2 // 3  # past the session, into a snapshot
        died = subprocess.run(
            worker_command("die-mid-archive", any_url, kind, str(archive), str(line)),
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert died.returncode == 9, died.stderr
        left = staging(store)
        assert len(left) == (1 if kind == "export" else 2)
        assert all(s.startswith(f"{kind}\x1e") for s in left)
        assert [i.session_id for i in runtime.run(store.list_sessions("u"))] == ["s"]

        assert runtime.run(store.purge_expired()) == 0
        assert staging(store) == left
        if cleanup == "expiry":
            frozen_clock.advance(STAGING_TTL + 600)
            assert runtime.run(store.purge_expired()) == len(left)
            assert staging(store) == []
            assert [s.label for s in source.snapshots()] == ["one"]
            assert content_of(store, "s", "u")["state"] == {"tag": "x", "n": 1200}
        else:
            erase_user("v", store=store)
            assert staging(store) == left
            erase_user("u", store=store)
            assert staging(store) == []
            assert runtime.run(all_records(store.backend, SNAPSHOT_OWNER)) == []
    finally:
        runtime.run(store.close())
