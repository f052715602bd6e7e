"""PraisonSaver beyond LangGraph's suite, on every backend: the framework's bytes come back
equal, a thread is one of our sessions with all its namespaces inside, users are kept apart,
TTL, purge, erasure and encryption reach checkpoints, values are stored once, DeltaChannel
graphs rebuild as with LangGraph's own saver, and a graph interrupted in one process is resumed
and continued in another."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from adapter_packaging import assert_benchmark_prints
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command

from backends import ENCRYPTION_KEY, SERVERS, STORE_BACKENDS, store_url
from lg_graphs import (
    approval_graph,
    chat_graph,
    chat_input,
    fan_out_graph,
    summary,
    turn_graph,
    turn_input,
)
from praisonsession import Session, erase_user, open_store
from praisonsession._internal import runtime
from praisonsession.errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    KeyRequiredError,
    SessionCorruptedError,
    StoreUnavailableError,
)
from praisonsession.integrations import langgraph_threads
from praisonsession.integrations.langgraph import PraisonSaver
from praisonsession.integrations.langgraph_threads import CHECKPOINTS, WRITES, writes_name

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(params=STORE_BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of each kind, by URL (memory:// is one store per saver)."""
    if request.param == "memory":
        return "memory://"
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return store_url(request.param, tmp_path)


@pytest.fixture
def saver(url: str) -> Any:
    with PraisonSaver(url) as opened:
        yield opened


def config(thread_id: str, ns: str = "", **more: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, **more}}


def put(
    saver: PraisonSaver,
    thread_id: str,
    values: dict[str, Any],
    *,
    parent: dict[str, Any] | None = None,
    ns: str = "",
    changed: list[str] | None = None,
    **configurable: Any,
) -> dict[str, Any]:
    """A checkpoint holding ``values`` (each channel a new version unless listed otherwise)."""
    checkpoint = empty_checkpoint()
    previous = {} if parent is None else saver.get_tuple(parent).checkpoint["channel_versions"]
    versions = {}
    for channel in values:
        moves = changed is None or channel in changed
        versions[channel] = (
            saver.get_next_version(previous.get(channel), None) if moves else previous[channel]
        )
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = versions
    target = config(thread_id, ns, **configurable)
    if parent is not None:
        target["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    new = {c: v for c, v in versions.items() if changed is None or c in changed}
    return saver.put(target, checkpoint, {"source": "loop", "step": 1}, new)


# -- the framework's bytes stay the framework's ---------------------------------------------


class Recording(JsonPlusSerializer):
    """LangGraph's serializer, remembering every typed bytes it made and was handed back."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[tuple[str, bytes]] = []
        self.given: list[tuple[str, bytes]] = []

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        typed = super().dumps_typed(obj)
        self.made.append((typed[0], bytes(typed[1])))
        return typed

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self.given.append((data[0], bytes(data[1])))
        return super().loads_typed(data)


def test_every_value_comes_back_as_the_bytes_the_serializer_made(url: str) -> None:
    serde = Recording()
    with PraisonSaver(url, serde=serde) as saver:
        big = {"text": "x" * 5000, "blob": bytes(range(256)) * 8}
        stored = put(saver, "t", {"small": 1, "big": big, "raw": b"\x00\xffbytes"})
        saver.put_writes(stored, [("small", 2), ("big", big)], "task-1")
        made = set(serde.made)
        serde.given.clear()
        found = saver.get_tuple(stored)
    assert found.checkpoint["channel_values"] == {"small": 1, "big": big, "raw": b"\x00\xffbytes"}
    assert [(w[1], w[2]) for w in found.pending_writes] == [("small", 2), ("big", big)]
    assert serde.given and set(serde.given) <= made  # every byte handed back is one it made


# -- one session per thread, every namespace inside ------------------------------------------


def test_a_thread_is_one_session_holding_every_namespace(url: str) -> None:
    store = open_store(url)
    with PraisonSaver(store) as saver:
        root = put(saver, "chat-1", {"a": 1})
        child = put(saver, "chat-1", {"a": 2}, ns="tool:abc")
        assert saver.get_tuple(config("chat-1")).checkpoint["channel_values"] == {"a": 1}
        assert saver.get_tuple(config("chat-1", "tool:abc")).checkpoint["channel_values"] == {
            "a": 2
        }
        every = list(saver.list({"configurable": {"thread_id": "chat-1"}}))
        assert {t.config["configurable"]["checkpoint_ns"] for t in every} == {"", "tool:abc"}
        assert [
            t.config["configurable"]["checkpoint_ns"] for t in saver.list(config("chat-1"))
        ] == [""]
        session = Session("chat-1", store=store)
        assert [info.session_id for info in session.list_sessions()] == ["chat-1"]
        logs = session.list_logs()
        assert logs[CHECKPOINTS] == 2
        assert session.get_info().metadata["langgraph"] == "thread"
        saver.delete_thread("chat-1")
        assert saver.get_tuple(root) is None and saver.get_tuple(child) is None
        assert list(saver.list(config("chat-1", "tool:abc"))) == []
        session.close()
    asyncio.run(store.close())


def test_users_are_kept_apart_and_a_bound_saver_keeps_to_its_user(url: str) -> None:
    store = open_store(url)
    with PraisonSaver(store) as shared:
        put(shared, "t", {"who": "ada"}, user_id="ada")
        put(shared, "t", {"who": "bob"}, user_id="bob")
        put(shared, "t", {"who": "default"})
        ada = config("t", user_id="ada")
        assert shared.get_tuple(ada).checkpoint["channel_values"] == {"who": "ada"}
        assert shared.get_tuple(ada).config["configurable"]["user_id"] == "ada"
        assert shared.get_tuple(config("t")).checkpoint["channel_values"] == {"who": "default"}
        assert {t.checkpoint["channel_values"]["who"] for t in shared.list(None)} == {
            "ada",
            "bob",
            "default",
        }
    with PraisonSaver(store, user_id="bob") as bob:
        assert bob.get_tuple(config("t")).checkpoint["channel_values"] == {"who": "bob"}
        assert [t.checkpoint["channel_values"]["who"] for t in bob.list(None)] == ["bob"]
        with pytest.raises(InvalidIdError, match="bound to user 'bob'"):
            bob.get_tuple(config("t", user_id="ada"))
        bob.delete_thread("t")
        assert bob.get_tuple(config("t")) is None
    with PraisonSaver(store, user_id="ada") as ada_saver:
        assert ada_saver.get_tuple(config("t")) is not None  # ada's thread survived bob's
    asyncio.run(store.close())


def test_an_unchanged_value_is_stored_once(url: str) -> None:
    store = open_store(url)
    with PraisonSaver(store) as saver:
        profile = {"name": "Ada", "bio": "b" * 2000}
        last = put(saver, "t", {"profile": profile, "turn": 0})
        for turn in range(1, 6):
            last = put(
                saver, "t", {"profile": profile, "turn": turn}, parent=last, changed=["turn"]
            )
        records = asyncio.run(store.read_messages("t", "", CHECKPOINTS))
        assert sum("profile" in record["values"] for record in records) == 1
        assert all("turn" in record["values"] for record in records)
        found = saver.get_tuple(config("t"))
        assert found.checkpoint["channel_values"] == {"profile": profile, "turn": 5}
        middle = list(saver.list(config("t")))[3]
        assert middle.checkpoint["channel_values"]["profile"] == profile
    asyncio.run(store.close())


def steps_of(tuples: Any) -> list[int]:
    return [found.checkpoint["channel_values"]["step"] for found in tuples]


def test_a_saver_with_no_memory_of_a_thread_finds_every_checkpoint(url: str) -> None:
    """A put writes its record and, only now and then, documents: those finding checkpoints
    by id a block at a time, and a namespace's head when another namespace's record follows
    its last one. A saver that remembers nothing of the thread (another process) still finds
    every checkpoint by id, each namespace's newest, listing and ``before``."""
    store = open_store(url)
    made: dict[str, list[tuple[int, dict[str, Any]]]] = {"": [], "child": []}
    with PraisonSaver(store) as saver:
        for step in range(37):
            ns = "child" if step % 5 in (3, 4) else ""
            parent = made[ns][-1][1] if made[ns] else None
            made[ns].append((step, put(saver, "t", {"step": step}, parent=parent, ns=ns)))
    for round_ in range(2):
        with PraisonSaver(store) as fresh:  # nothing remembered
            for ns, puts in made.items():
                for step, stored in puts:
                    assert fresh.get_tuple(stored).checkpoint["channel_values"] == {"step": step}
                newest = fresh.get_tuple(config("t", ns))
                assert newest.checkpoint["channel_values"] == {"step": puts[-1][0]}
                assert steps_of(fresh.list(config("t", ns))) == [s for s, _ in reversed(puts)]
                assert steps_of(fresh.list(config("t", ns), limit=3)) == [
                    s for s, _ in reversed(puts[-3:])
                ]
                before = fresh.list(config("t", ns), before=puts[-3][1], limit=2)
                assert steps_of(before) == [puts[-4][0], puts[-5][0]]
            if round_ == 0:  # another saver goes on in the other namespace than the last
                made["child"].append(
                    (99, put(fresh, "t", {"step": 99}, parent=made["child"][-1][1], ns="child"))
                )
    assert len(steps_of(PraisonSaver(store).list(config("t", "")))) == len(made[""])
    asyncio.run(store.close())


def test_what_a_saver_remembers_of_its_threads_is_mostly_left_out_of_gc_walks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saver remembers thousands of positions and values by (thread, namespace, id): kept
    as tuples of plain str and int, which Python's garbage collector stops walking, so a
    full collection in a process holding a busy saver does not grow with them. Only the
    records it keeps (a few containers each) stay in its walks."""
    from praisonsession.integrations import langgraph_threads

    monkeypatch.setattr(langgraph_threads, "_REMEMBERED", 64)  # 64 records, 512 positions
    with PraisonSaver(f"sqlite://{tmp_path}/gc.db") as saver:
        parent = put(saver, "t", {"step": 0, "note": "n0"})
        gc.collect()
        before = len(gc.get_objects())
        for step in range(1, 1025):
            checkpoint = empty_checkpoint()
            versions = {"step": str(step), "note": str(step)}
            checkpoint["channel_values"] = {"step": step, "note": f"n{step}"}
            checkpoint["channel_versions"] = versions
            parent = saver.put(parent, checkpoint, {"source": "loop", "step": step}, versions)
        gc.collect()
        grown = len(gc.get_objects()) - before
    assert grown < 64 * 12  # the records' containers; 512 positions and 512 values add none


def test_a_checkpoint_at_a_remembered_position_is_checked_against_the_store(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saver keeps where more checkpoints are than it keeps records: one named by id is then
    read with its writes in one read. When another saver prunes the thread, those positions
    name other records or none, and the first saver still finds the right checkpoint, or
    none for one pruned away."""
    from praisonsession.integrations import langgraph_threads

    monkeypatch.setattr(langgraph_threads, "_REMEMBERED", 4)  # records forgotten, not positions
    store = open_store(url)
    with PraisonSaver(store) as saver, PraisonSaver(store) as other:
        made, parent = [], None
        for step in range(30):
            parent = put(saver, "t", {"step": step}, parent=parent)
            made.append(parent)
        saver.put_writes(made[10], [("step", 100)], "task-10")
        saver.put_writes(made[29], [("step", 200)], "task-29")
        for older in made[:6]:  # the records of made[10] and made[29] are forgotten by now
            saver.get_tuple(older)
        found = saver.get_tuple(made[10])
        assert found.checkpoint["channel_values"] == {"step": 10}
        assert [(w[1], w[2]) for w in found.pending_writes] == [("step", 100)]
        other.prune(["t"], strategy="keep_latest")
        assert saver.get_tuple(made[10]) is None
        latest = saver.get_tuple(made[29])
        assert latest.checkpoint["channel_values"] == {"step": 29}
        assert [(w[1], w[2]) for w in latest.pending_writes] == [("step", 200)]
    asyncio.run(store.close())


def test_a_thread_written_before_records_said_where_they_are_is_read_and_continued(
    url: str,
) -> None:
    """Threads stored by earlier versions: records without their position, and the position
    and head documents of every checkpoint. They are read as before and take new puts."""
    from praisonsession.integrations.langgraph_threads import at_name, head_name
    from praisonsession.stores import Key, LogWrite

    store = open_store(url)
    with PraisonSaver(store) as saver:
        last = None
        for step in range(5):
            last = put(saver, "t", {"step": step}, parent=last)
    key = Key("default_user", "t")
    records = asyncio.run(store.read_messages("t", "", CHECKPOINTS))
    documents: dict[str, Any] = {}
    for at, record in enumerate(records):
        del record["at"]
        documents[at_name("", record["id"])] = {"at": at}
        documents[head_name("")] = {"at": at, "id": record["id"]}
    asyncio.run(
        store.backend.write_modules(
            key, documents=documents, writes=[LogWrite(CHECKPOINTS, records, None)]
        )
    )
    with PraisonSaver(store) as older:
        assert older.get_tuple(config("t")).checkpoint["channel_values"] == {"step": 4}
        assert steps_of(older.list(config("t"))) == [4, 3, 2, 1, 0]
        first = older.get_tuple(config("t", checkpoint_id=records[0]["id"]))
        assert first.checkpoint["channel_values"] == {"step": 0}
        newer = put(older, "t", {"step": 5}, parent=config("t", checkpoint_id=records[4]["id"]))
        assert older.get_tuple(config("t")).checkpoint["channel_values"] == {"step": 5}
        assert (
            older.get_tuple(newer).parent_config["configurable"]["checkpoint_id"]
            == (records[4]["id"])
        )
        assert steps_of(older.list(config("t"), limit=3)) == [5, 4, 3]
    asyncio.run(store.close())


def test_concurrent_writes_of_parallel_tasks_are_all_kept(url: str) -> None:
    """8 threads, 80 tasks: the first merged into the writes document, most appended to the
    log below it once it filled (``test_langgraph_writes.py``)."""
    with PraisonSaver(url) as saver:
        stored = put(saver, "t", {"a": 1})
        other = PraisonSaver(saver.store)  # a second saver, as a second process would be
        start = threading.Barrier(8)

        def tasks(first: int) -> None:
            start.wait()
            for n in range(first, 80, 8):
                (saver if n % 2 else other).put_writes(
                    stored, [("out", n), ("log", f"t{n}")], f"task-{n:02d}"
                )

        workers = [threading.Thread(target=tasks, args=(n,)) for n in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        writes = saver.get_tuple(stored).pending_writes
        assert [value for _, channel, value in writes if channel == "out"] == list(range(80))
        assert len(writes) == 160


def refusals(saver: PraisonSaver, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The writes of ``saver``'s pending writes the store refused (ConflictError), as they come."""
    refused: list[str] = []
    backend = saver._threads.backend
    write_modules = backend.write_modules

    async def counted(*args: Any, **kwargs: Any) -> Any:
        try:
            return await write_modules(*args, **kwargs)
        except ConflictError as exc:
            refused.append(str(exc))
            raise

    monkeypatch.setattr(backend, "write_modules", counted)
    return refused


TURNS = 12


def test_a_graphs_background_saves_of_one_thread_are_never_refused(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph saves a step's writes on a worker thread while the next step runs: the
    saves of one thread overlap in one process, and take turns there instead of refusing
    each other (a refused write reads everything again and writes twice)."""
    with PraisonSaver(url) as saver:
        refused = refusals(saver, monkeypatch)
        graph = turn_graph(saver)
        thread = {"configurable": {"thread_id": "chat"}}
        for n in range(TURNS):
            graph.invoke(turn_input(n), thread)
        values = graph.get_state(thread).values
        assert len(values["messages"]) == 2 * TURNS
        assert values["notes"][-1] == f"looked up {2 * TURNS - 1}"
        assert refused == []


def test_a_map_steps_tasks_writes_are_all_kept_and_never_refused(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 tasks of one step finish at once, sync and async: every result kept, no write
    refused (the writes queued while one was stored go together in the next write)."""
    parts = [f"part {n}" for n in range(8)]

    async def mapped(saver: PraisonSaver) -> list[str]:
        return (await fan_out_graph(saver, 8).ainvoke({"results": []}, config("a")))["results"]

    with PraisonSaver(url) as saver:
        refused = refusals(saver, monkeypatch)
        ran = fan_out_graph(saver, 8).invoke({"results": []}, config("s"))["results"]
        assert sorted(ran) == parts
        assert sorted(asyncio.run(mapped(saver))) == parts
        for thread in ("s", "a"):
            pending = saver.get_tuple(config(thread)).pending_writes
            assert pending == []  # the step completed: its writes went into the checkpoint
        assert refused == []


def test_an_async_graphs_saves_of_one_thread_are_never_refused(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for ``ainvoke``: the saves are tasks of the graph's loop."""

    async def chat(saver: PraisonSaver) -> dict[str, Any]:
        graph = turn_graph(saver)
        thread = {"configurable": {"thread_id": "chat"}}
        for n in range(TURNS):
            await graph.ainvoke(turn_input(n), thread)
        return (await graph.aget_state(thread)).values

    with PraisonSaver(url) as saver:
        refused = refusals(saver, monkeypatch)
        values = asyncio.run(chat(saver))
        assert [m.content for m in values["messages"][-2:]] == [
            f"question {TURNS - 1}",
            f"reply {2 * TURNS - 1}",
        ]
        assert refused == []


class HeldWrites:
    """The saver's store writes, recorded; the first one held until ``let_go`` is set, so
    that other ``put_writes`` calls queue behind it."""

    def __init__(self, saver: PraisonSaver, monkeypatch: pytest.MonkeyPatch) -> None:
        self.saver, self.written = saver, []
        self.first_in, self.let_go = threading.Event(), threading.Event()
        self.refuse: str | None = None  # a task whose writes the store refuses
        backend = saver._threads.backend
        write_modules = backend.write_modules

        async def held(*args: Any, **kwargs: Any) -> Any:
            tasks = [m["task"] for m in kwargs["writes"][0].messages]
            self.written.append(tasks)
            if len(self.written) == 1:
                self.first_in.set()
                while not self.let_go.is_set():
                    await runtime.pause(0.001)
            if self.refuse in tasks:
                raise StoreUnavailableError(f"refused: a write holding {self.refuse}'s")
            return await write_modules(*args, **kwargs)

        monkeypatch.setattr(backend, "write_modules", held)

    def queue(self, stored: dict[str, Any], tasks: list[str]) -> dict[str, type | None]:
        """``put_writes`` of each task on a thread of its own, the first one's write held
        until the others are queued behind it; what each call raised, by task."""
        errors: dict[str, type | None] = {}

        def call(task: str) -> None:
            try:
                self.saver.put_writes(stored, [("out", task)], task)
                errors[task] = None
            except Exception as exc:
                errors[task] = type(exc)

        threads = [threading.Thread(target=call, args=(task,)) for task in tasks]
        threads[0].start()
        assert self.first_in.wait(5)
        for thread in threads[1:]:
            thread.start()
        key = self.saver._thread_key(stored["configurable"]["thread_id"])
        deadline = time.monotonic() + 10
        while len(self.saver._threads._queued.get(key, [])) < len(tasks) - 1:
            assert time.monotonic() < deadline, "the calls did not queue"
            time.sleep(0.001)
        self.let_go.set()
        for thread in threads:
            thread.join(10)
        return errors


def test_writes_queued_behind_another_are_stored_together_in_one_write(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tasks of a step finishing at once: the calls that queued while one wrote are
    stored by the next in one write (one commit), each call's entry in it, every write kept."""
    with PraisonSaver(url) as saver:
        stored = put(saver, "t", {"a": 1})
        held = HeldWrites(saver, monkeypatch)
        errors = held.queue(stored, [f"task-{n}" for n in range(6)])
        assert errors == {f"task-{n}": None for n in range(6)}
        assert held.written[0] == ["task-0"]
        assert sorted(held.written[1]) == [f"task-{n}" for n in range(1, 6)]
        assert len(held.written) == 2
        writes = saver.get_tuple(stored).pending_writes
        assert writes[0][2] == "task-0"
        assert sorted(value for _, _, value in writes) == [f"task-{n}" for n in range(6)]


def test_a_failed_write_of_several_calls_is_made_again_by_each_alone(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each caller gets the outcome of its own writes: when the write that carried several
    calls fails, each makes its own again, and only the call whose write fails alone gets
    the error; the others are stored."""
    with PraisonSaver(url) as saver:
        stored = put(saver, "t", {"a": 1})
        held = HeldWrites(saver, monkeypatch)
        held.refuse = "task-3"
        errors = held.queue(stored, [f"task-{n}" for n in range(6)])
        assert errors == {**{f"task-{n}": None for n in range(6)}, "task-3": StoreUnavailableError}
        assert ["task-3"] in held.written  # tried alone before its caller got the error
        writes = saver.get_tuple(stored).pending_writes
        assert sorted(value for _, _, value in writes) == [f"task-{n}" for n in (0, 1, 2, 4, 5)]


def module_reads(saver: PraisonSaver, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The names of each ``read_modules`` the saver's threads make from now on, in order."""
    reads: list[list[str]] = []
    read_modules = saver._threads.backend.read_modules

    async def counted(key: Any, *, names: list[str]) -> Any:
        reads.append(names)
        return await read_modules(key, names=names)

    monkeypatch.setattr(saver._threads.backend, "read_modules", counted)
    return reads


def writes_of(stored: dict[str, Any]) -> str:
    """The name of the writes document of the checkpoint a config names."""
    return writes_name("", stored["configurable"]["checkpoint_id"])


def outs(saver: PraisonSaver, stored: dict[str, Any]) -> list[tuple[str, Any]]:
    """The (task, value) of each pending write of a checkpoint, in the saver's order."""
    return [(task, value) for task, _, value in saver.get_tuple(stored).pending_writes]


def test_writes_to_a_new_checkpoint_read_nothing_first_and_keep_another_savers(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saver that wrote every writes document of a thread knows that a checkpoint it has not
    written to holds none, and writes without reading first; another saver's writes meanwhile
    (another process) move the writes log, so its write is refused and made again over what
    the other stored: nothing is lost."""
    with PraisonSaver(url) as saver:
        first = put(saver, "t", {"a": 1})
        saver.put_writes(first, [("out", 1)], "task-1")
        second = put(saver, "t", {"a": 2}, parent=first)
        reads = module_reads(saver, monkeypatch)
        third = put(saver, "t", {"a": 3}, parent=second)  # reads its parent's versions
        reads.clear()
        saver.put_writes(third, [("out", 5)], "task-5")
        assert reads == []  # a checkpoint just put: no writes to read
        PraisonSaver(saver.store).put_writes(second, [("out", 2)], "task-2")
        saver.put_writes(second, [("out", 3)], "task-3")
        saver.put_writes(first, [("out", 4)], "task-4")
        # the other saver's read (one store below both), then this one's after its refused write
        # (the other moved the writes log), and of a checkpoint the thread may hold writes of
        assert reads == [[writes_of(second)], [writes_of(second)], [writes_of(first)]]
        assert outs(saver, first) == [("task-1", 1), ("task-4", 4)]
        assert outs(saver, second) == [("task-2", 2), ("task-3", 3)]
        assert outs(saver, third) == [("task-5", 5)]


def test_writes_to_checkpoints_put_since_a_resumed_threads_first_writes_read_nothing(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread with writes stored before this saver knew it (an earlier run's, another
    process's): once its first writes are stored here, a checkpoint put here whose id was
    minted since holds none, and its writes are stored with nothing read first. A checkpoint
    minted before, one put again, and one another saver wrote to meanwhile are read: nothing
    is lost."""
    monkeypatch.setattr(langgraph_threads, "_MINTED_MARGIN", 0)  # no clock steps back here
    store = open_store(url)
    with PraisonSaver(store) as earlier:
        first = put(earlier, "t", {"a": 1})
        earlier.put_writes(first, [("out", 1)], "task-1")
    with PraisonSaver(store) as saver:
        minted_early = empty_checkpoint()  # its id minted before this saver's first writes
        second = put(saver, "t", {"a": 2}, parent=first)
        reads = module_reads(saver, monkeypatch)
        saver.put_writes(second, [("out", 2)], "task-2")
        assert reads == [[writes_of(second)]]  # the thread had writes before: read
        latest = second
        for step in range(3, 13):  # more than the few writes documents kept by name
            latest = put(saver, "t", {"a": step}, parent=latest)
            reads.clear()
            saver.put_writes(latest, [("out", step)], f"task-{step}")
            assert reads == []  # put since: nothing to read
            if step == 3:
                third = latest
        early = saver.put(
            {"configurable": {**latest["configurable"]}}, minted_early, {"step": 13}, {}
        )
        saver.put_writes(early, [("out", 13)], "task-13")
        assert reads == [[writes_of(early)]]
        again = empty_checkpoint()
        again["id"] = third["configurable"]["checkpoint_id"]
        saver.put(early, again, {"step": 14}, {})  # put again: its writes are kept
        reads.clear()
        saver.put_writes(third, [("out", 14)], "task-14")
        assert reads == [[writes_of(third)]]
        assert outs(saver, third) == [("task-14", 14), ("task-3", 3)]
        fourth = put(saver, "t", {"a": 15}, parent=early)
        PraisonSaver(saver.store).put_writes(fourth, [("out", 15)], "task-15")
        reads.clear()
        saver.put_writes(fourth, [("out", 16)], "task-16")  # refused: read, made again
        assert reads == [[writes_of(fourth)]]
        assert outs(saver, fourth) == [("task-15", 15), ("task-16", 16)]
        assert outs(saver, first) == [("task-1", 1)]
        assert outs(saver, second) == [("task-2", 2)]


def test_writes_past_the_names_a_saver_lists_still_read_nothing_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A saver lists the writes documents of a thread it wrote all of, up to a bound; past it,
    the checkpoints it puts are still known to hold no writes, and their writes are stored
    with nothing read first."""
    monkeypatch.setattr(langgraph_threads, "_MINTED_MARGIN", 0)
    monkeypatch.setattr(langgraph_threads, "_REMEMBERED", 4)  # the bound, made small
    with PraisonSaver(f"sqlite://{tmp_path / 'bound.db'}") as saver:
        reads = module_reads(saver, monkeypatch)
        latest = None
        for step in range(10):
            latest = put(saver, "t", {"a": step}, parent=latest)
            reads.clear()
            saver.put_writes(latest, [("out", step)], f"task-{step}")
            assert reads == [], step
        assert outs(saver, latest) == [("task-9", 9)]


class StoreCalls:
    """The record operations a saver's threads make on their backend, by name, in order."""

    NAMES = (
        "count_log",
        "read_record",
        "read_modules",
        "create_record",
        "create_record_with_modules",
        "write_modules",
        "append_log",
    )

    def __init__(self, saver: PraisonSaver, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[str] = []
        backend = saver._threads.backend
        for name in self.NAMES:
            monkeypatch.setattr(backend, name, self._recording(name, getattr(backend, name)))

    def _recording(self, name: str, operation: Any) -> Any:
        async def recorded(*args: Any, **kwargs: Any) -> Any:
            self.made.append(name)
            return await operation(*args, **kwargs)

        return recorded

    def taken(self) -> list[str]:
        made, self.made = self.made, []
        return made


def test_a_new_thread_is_made_with_its_first_checkpoint_in_one_write(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread's session, its mark and its first checkpoint are one write (one commit on
    SQLite), after one count; its first writes are one write, with nothing read first."""
    with PraisonSaver(url) as saver:
        calls = StoreCalls(saver, monkeypatch)
        first = put(saver, "new", {"a": 1})
        assert calls.taken() == ["count_log", "create_record_with_modules"]
        saver.put_writes(first, [("out", 1)], "task-1")
        assert calls.taken() == ["write_modules"]
        second = put(saver, "new", {"a": 2}, parent=first)  # reads its parent's versions
        assert [made for made in calls.taken() if made != "read_modules"] == ["append_log"]
        assert saver.get_tuple(first).pending_writes == [("task-1", "out", 1)]
        assert saver.get_tuple(config("new")).config == second
        listed = list(saver.list(None))  # every thread: found by its mark
        assert [t.config["configurable"]["checkpoint_id"] for t in listed] == [
            second["configurable"]["checkpoint_id"],
            first["configurable"]["checkpoint_id"],
        ]
        assert Session("new", store=saver.store).get_info().metadata == {"langgraph": "thread"}


def test_a_thread_whose_session_exists_is_marked_and_keeps_what_it_held(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread id naming a live session with no checkpoint (one of ours, or one whose
    writes another process stored first, as a graph's first task may): the one-step create
    is refused, the session is marked and the checkpoint appended, and nothing it held is
    lost."""
    store = open_store(url)
    with Session("ours", store=store) as session:
        session.set_state("topic", "kept")
    with PraisonSaver(store) as saver:
        other = PraisonSaver(store)  # another process: its writes before the first checkpoint
        checkpoint_id = str(uuid.uuid4())
        other.put_writes(config("early", checkpoint_id=checkpoint_id), [("out", 0)], "task-0")
        calls = StoreCalls(saver, monkeypatch)
        put(saver, "ours", {"a": 1})
        made = calls.taken()
        assert made[:2] == ["count_log", "create_record_with_modules"]  # refused: it is live
        assert "create_record" in made  # the mark, merged into its metadata
        assert made[-1] == "append_log"
        checkpoint = empty_checkpoint()
        checkpoint["id"] = checkpoint_id
        saver.put(config("early"), checkpoint, {"source": "input", "step": -1}, {})
        assert saver.get_tuple(config("early")).pending_writes == [("task-0", "out", 0)]
        threads = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
        assert threads == {"ours", "early"}
        with Session("ours", store=store) as session:
            assert session.get_state("topic") == "kept"
            assert session.get_info().metadata["langgraph"] == "thread"
        other.close()
    asyncio.run(store.close())


def test_sync_methods_work_from_a_thread_running_an_event_loop(url: str) -> None:
    async def cell() -> Any:  # what a Jupyter cell does: sync calls while a loop runs
        with PraisonSaver(url) as saver:
            stored = put(saver, "t", {"a": 1})
            return saver.get_tuple(stored).checkpoint["channel_values"]

    assert asyncio.run(cell()) == {"a": 1}


# -- lifecycle: TTL, purge, erasure, copies ---------------------------------------------------


def test_a_thread_expires_with_its_session_ttl_and_purge_removes_it(
    url: str, frozen_clock: Any
) -> None:
    with PraisonSaver(url, settings={"default_ttl": 60}) as saver:
        stored = put(saver, "t", {"a": 1})
        frozen_clock.advance(30)
        assert saver.get_tuple(stored) is not None  # a read restarts a sliding TTL
        frozen_clock.advance(61)
        assert saver.get_tuple(stored) is None
        assert list(saver.list(config("t"))) == []
        assert asyncio.run(saver.store.purge_expired()) >= 1


def test_praisonsession_purge_removes_expired_threads(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/ttl.db"
    with PraisonSaver(url, settings={"default_ttl": 0.2}) as saver:
        put(saver, "short", {"a": 1})
    import time

    time.sleep(0.5)
    done = _cli("purge", "--store", url, "--yes")
    assert done.returncode == 0, done.stderr
    rows = (
        sqlite3.connect(tmp_path / "ttl.db")
        .execute("SELECT COUNT(*) FROM ps_messages WHERE session_id='short'")
        .fetchone()
    )
    assert rows == (0,)


def test_erase_user_removes_their_checkpoints(url: str, tmp_path: Path) -> None:
    store = open_store(url)
    settings = {"data_dir": str(tmp_path / "data")}
    with PraisonSaver(store, settings=settings) as saver:
        put(saver, "t1", {"a": 1}, user_id="eve")
        put(saver, "t2", {"a": 2}, user_id="eve")
        put(saver, "t1", {"a": 3}, user_id="kim")
        report = erase_user("eve", store, settings=settings)
        assert sorted(report.session_ids) == ["t1", "t2"]
        assert saver.get_tuple(config("t1", user_id="eve")) is None
        assert saver.get_tuple(config("t1", user_id="kim")) is not None
    asyncio.run(store.close())


def test_copy_thread_is_a_fork_that_records_its_parent(url: str) -> None:
    store = open_store(url)
    with PraisonSaver(store) as saver:
        first = put(saver, "source", {"a": 1})
        put(saver, "source", {"a": 2}, parent=first)
        saver.copy_thread("source", "copy")
        assert [t.checkpoint["id"] for t in saver.list(config("copy"))] == [
            t.checkpoint["id"] for t in saver.list(config("source"))
        ]
        info = asyncio.run(store.get_info("copy"))
        assert info.metadata["parent"]["session_id"] == "source"
        with pytest.raises(ConflictError):
            saver.copy_thread("source", "copy")
        saver.copy_thread("missing", "nothing")  # a missing source copies nothing
        assert saver.get_tuple(config("nothing")) is None
    asyncio.run(store.close())


def test_delete_for_runs_reaches_every_thread_and_keeps_the_rest_readable(url: str) -> None:
    with PraisonSaver(url) as saver:
        a = put(saver, "a", {"x": 1}, run_id="run-1")
        a2 = put(saver, "a", {"x": 2}, parent=a, run_id="run-2", changed=[])
        put(saver, "b", {"y": 1}, run_id="run-1")
        saver.delete_for_runs(["run-1"])
        assert saver.get_tuple(config("b")) is None
        kept = list(saver.list(config("a")))
        assert [t.metadata["run_id"] for t in kept] == ["run-2"]
        # x was stored by the deleted checkpoint: it moved into the one kept
        assert saver.get_tuple(a2).checkpoint["channel_values"] == {"x": 1}


def test_input_is_checked_with_typed_errors(saver: PraisonSaver) -> None:
    with pytest.raises(InvalidIdError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(InvalidValueError, match="strategy"):
        saver.prune(["t"], strategy="everything")
    with pytest.raises(InvalidValueError, match="no checkpoint"):
        saver.put_writes(config("t"), [("a", 1)], "task")
    with pytest.raises(InvalidIdError, match="PraisonStore"):
        saver.get_tuple(config("langgraph-store/x"))
    with pytest.raises(InvalidValueError):
        saver.get_tuple("not a config")  # type: ignore[arg-type]


def test_bad_input_to_put_put_writes_and_list_is_refused_typed_and_stores_nothing(
    saver: PraisonSaver,
) -> None:
    """What LangGraph's serde cannot serialize, metadata that is no dict, writes that are no
    (channel, value) pairs, a limit that is no int, a version that is no number: each is
    refused with InvalidValueError (a TypeError and a ValueError, as LangGraph's own savers
    raise) naming what was wrong, and the thread holds what it held before."""
    stored = put(saver, "t", {"x": 1})
    saver.put_writes(stored, [("x", 2)], "task")
    unserializable = empty_checkpoint()
    unserializable["channel_values"] = {"x": 1, "handle": object()}
    unserializable["channel_versions"] = {"x": "2.0", "handle": "1.0"}
    with pytest.raises(InvalidValueError, match="'handle' cannot be serialized") as refused:
        saver.put(stored, unserializable, {"source": "loop", "step": 2}, {"handle": "1.0"})
    assert isinstance(refused.value, TypeError)
    with pytest.raises(InvalidValueError, match="metadata as a dict"):
        saver.put(stored, empty_checkpoint(), None, {})  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="'y' cannot be serialized"):
        saver.put_writes(stored, [("x", 3), ("y", object())], "task")
    with pytest.raises(InvalidValueError, match="list of \\(channel, value\\) pairs"):
        saver.put_writes(stored, None, "task")  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="1 is not one"):
        saver.put_writes(stored, [1], "task")  # type: ignore[list-item]
    with pytest.raises(InvalidValueError, match="limit must be an int"):
        list(saver.list(config("t"), limit="3"))  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="a channel's version") as refused:
        saver.get_next_version("latest", None)  # type: ignore[arg-type]
    assert isinstance(refused.value, ValueError)
    held = [(t.checkpoint["id"], t.pending_writes) for t in saver.list(config("t"))]
    assert held == [(stored["configurable"]["checkpoint_id"], [("task", "x", 2)])]
    saver.put_writes(stored, iter([("x", 4)]), "other")  # any iterable of pairs is taken
    assert ("other", "x", 4) in saver.get_tuple(stored).pending_writes


# -- encryption at rest -------------------------------------------------------------------------


def test_checkpoints_are_sealed_at_rest_with_an_encryption_key(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/sealed.db"
    with PraisonSaver(url, settings={"encryption_key": ENCRYPTION_KEY}) as saver:
        stored = put(saver, "t", {"secret": "the launch code is 1234"})
        saver.put_writes(stored, [("secret", "and the backup is 5678")], "task")
        assert saver.get_tuple(stored).checkpoint["channel_values"]["secret"].startswith("the")
    db = sqlite3.connect(tmp_path / "sealed.db")
    rows = [row[0] for row in db.execute("SELECT message FROM ps_messages")]
    rows += [row[0] for row in db.execute("SELECT document FROM ps_modules")]
    db.close()
    assert rows and all('"role"' not in row and '"w"' not in row for row in rows)
    with PraisonSaver(url) as without_key, pytest.raises(SessionCorruptedError):
        without_key.get_tuple(config("t"))  # sealed: never taken for data


def test_a_saver_without_the_key_neither_lists_nor_deletes_as_if_there_were_nothing(
    tmp_path: Path,
) -> None:
    """Every keyless read raises KeyRequiredError: listing every thread and deleting runs
    across them too, rather than an empty list or a delete that quietly did nothing."""
    url = f"sqlite://{tmp_path}/sealed.db"
    with PraisonSaver(url, settings={"encryption_key": ENCRYPTION_KEY}) as saver:
        stored = put(saver, "t", {"x": 1}, run_id="run-1")
    with PraisonSaver(url) as keyless:
        with pytest.raises(KeyRequiredError):
            list(keyless.list(None))
        with pytest.raises(KeyRequiredError):
            keyless.delete_for_runs(["run-1"])
        with pytest.raises(KeyRequiredError):
            list(PraisonSaver(url, user_id="default_user").list(None))
    with PraisonSaver(url, settings={"encryption_key": ENCRYPTION_KEY}) as saver:
        assert [t.config for t in saver.list(None)] == [stored]  # nothing was deleted


def test_an_empty_user_id_is_never_the_default_user(saver: PraisonSaver) -> None:
    put(saver, "t", {"x": 1})
    with pytest.raises(InvalidIdError, match="must not be empty"):
        PraisonSaver("memory://", user_id="")
    with pytest.raises(InvalidIdError, match="must not be empty"):
        saver.get_tuple(config("t", user_id=""))
    assert saver.get_tuple(config("t")) is not None


# -- graphs ---------------------------------------------------------------------------------------


def test_an_interrupted_graph_resumes_in_another_process_as_with_langgraphs_own_saver(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reference = approval_graph(InMemorySaver())
    thread = {"configurable": {"thread_id": "approve"}}
    reference.invoke({"steps": []}, thread)
    reference.invoke(Command(resume="yes"), thread)
    expected = summary(reference, thread)

    url = f"sqlite://{tmp_path}/graphs.db"
    with PraisonSaver(url) as saver:
        graph = approval_graph(saver)
        graph.invoke({"steps": []}, thread)
        assert graph.get_state(thread).next == ("ask",)
    done = subprocess.run(
        [sys.executable, str(HERE / "lg_graphs.py"), url, "approve", "yes"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(json.dumps(expected))
    with PraisonSaver(url) as again:  # and this process sees what the other one did
        assert summary(approval_graph(again), thread) == expected


def test_time_travel_resumes_from_an_earlier_checkpoint(url: str) -> None:
    results = []
    for saver in (InMemorySaver(), PraisonSaver(url)):
        graph = approval_graph(saver)
        thread = {"configurable": {"thread_id": f"tt-{uuid.uuid4().hex}"}}
        graph.invoke({"steps": []}, thread)
        graph.invoke(Command(resume="yes"), thread)
        history = list(graph.get_state_history(thread))
        before_ask = next(state for state in history if state.next == ("ask",))
        graph.update_state(before_ask.config, {"steps": ["rewound"]})
        graph.invoke(Command(resume="no"), graph.get_state(thread).config)
        results.append(summary(graph, thread))
    assert results[0] == results[1]


@pytest.mark.parametrize("delta", [False, True], ids=["plain", "delta"])
def test_a_growing_conversation_reads_back_as_with_langgraphs_own_saver(
    url: str, delta: bool
) -> None:
    thread = {"configurable": {"thread_id": "chat"}, "recursion_limit": 200}
    results = []
    for saver in (InMemorySaver(), PraisonSaver(url)):
        graph = chat_graph(saver, 30, delta=delta)
        graph.invoke(chat_input(), thread)
        found = summary(graph, thread)
        latest = graph.get_state(thread).config
        history = saver.get_delta_channel_history(config=latest, channels=["messages"])
        # task ids differ between runs; the channels, values and seed must not
        found["delta"] = {
            channel: ([(c, v) for _, c, v in entry["writes"]], entry.get("seed"))
            for channel, entry in history.items()
        }
        results.append(found)
    assert results[0] == results[1]
    assert len(results[1]["values"]["messages"]) == 30


def test_pruning_a_delta_thread_keeps_what_its_state_is_rebuilt_from(url: str) -> None:
    thread = {"configurable": {"thread_id": "chat"}, "recursion_limit": 200}
    with PraisonSaver(url) as saver:
        graph = chat_graph(saver, 25, delta=True)
        graph.invoke(chat_input(), thread)
        before = graph.get_state(thread).values
        saver.prune(["chat"], strategy="keep_latest")
        kept = list(saver.list(config("chat")))
        assert 1 < len(kept) < 26  # the newest and the ancestors back to a snapshot
        assert graph.get_state(thread).values == before
        saver.prune(["chat"], strategy="delete")
        assert saver.get_tuple(config("chat")) is None


def test_the_async_methods_run_a_graph_on_the_callers_loop(url: str) -> None:
    async def run() -> dict[str, Any]:
        async with PraisonSaver(url) as saver:
            graph = approval_graph(saver)
            thread = {"configurable": {"thread_id": "async"}}
            await graph.ainvoke({"steps": []}, thread)
            await graph.ainvoke(Command(resume="ok"), thread)
            state = await graph.aget_state(thread)
            return state.values

    assert asyncio.run(run())["steps"] == ["plan", "ask", "act:ok"]


# -- the command line sees threads as sessions -------------------------------------------------


def test_praisonsession_show_prints_a_thread(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/graphs.db"
    with PraisonSaver(url) as saver:
        graph = approval_graph(saver)
        graph.invoke({"steps": []}, {"configurable": {"thread_id": "shown"}})
    done = _cli("show", "shown", "--store", url)
    assert done.returncode == 0, done.stderr
    assert CHECKPOINTS in done.stdout and WRITES in done.stdout
    assert "loop step 1" in done.stdout
    listed = _cli("list", "--store", url)
    assert "shown" in listed.stdout


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praisonsession", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


@pytest.mark.slow
def test_the_benchmark_runs_quickly_and_prints_every_row(tmp_path: Path) -> None:
    """Every op compared with LangGraph's own savers, sync and async, at the same durability."""
    rows = [
        "| put + get_tuple @10 checkpoints |",
        "| list(limit=10) @200 checkpoints |",
        "| a chat graph's turn (2 nodes), a thread's first 5 |",
        "| a map step of 8 tasks at once (invoke, a new thread) |",
        "| put alone @10 checkpoints |",
        "| put_writes (a task's 2 writes) to the latest |",
        "| put_writes to the latest, a thread another saver wrote first |",
        "| put_writes to a checkpoint holding 1 task's writes |",
        "| put_writes to a checkpoint holding 100 tasks' writes |",
        "our put_writes flat, @1 / @100 tasks <= 1.2",
        "| get_tuple by checkpoint_id @100 checkpoints |",
        "| delete_thread of 5 checkpoints |",
        "sync methods vs SqliteSaver",
        "async methods vs AsyncSqliteSaver",
        "PraisonSaver (sync): WAL, synchronous=FULL",
        "AsyncSqliteSaver: WAL, synchronous=FULL",
        "Where a sync put's time goes",
        "| raw engine |",
        "| our store's append alone |",
        "| raw engine, our rows |",
        "Our rows written by the raw engine",
        "A step (put, then get_tuple of the newest) of the raw engine writing one row",
        "Our store's read alone for a get_tuple by id",
    ]
    assert_benchmark_prints("bench_langgraph.py", rows, tmp_path, timeout=600)


@pytest.mark.slow
def test_the_many_logs_benchmark_runs_quickly_and_prints_every_row(tmp_path: Path) -> None:
    """Reads and writes in sessions of many logs, on every store but PostgreSQL."""
    rows = [
        f"| {store} | {measure}, 0 / {count} logs |"
        for store in ("memory", "json", "sqlite", "redis")
        for measure, count in [
            ("read_modules", 200),
            ("get_tuple latest", 100),
            ("put_writes", 100),
            ("append_log (TTL)", 200),
            ("read_log of the last (TTL)", 200),
        ]
    ]
    assert_benchmark_prints("bench_logs_below.py", rows, tmp_path, timeout=600)
