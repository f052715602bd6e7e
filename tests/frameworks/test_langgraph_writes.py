"""Pending writes of one checkpoint written by many tasks (a map-reduce step's ``Send``s): past
the few its writes document holds, each task's writes are appended to the log below it, so a
write costs the same whatever the checkpoint holds. On every backend: every task's writes
come back in LangGraph's order, as ``SqliteSaver`` gives them, repeats ignored and special
channels replaced as LangGraph's savers do, from two processes at once (threads at once:
``test_langgraph.py``), and through prune, copies, encryption and threads written with every
write in the document."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import WRITES_IDX_MAP, empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

from backends import ENCRYPTION_KEY
from praisonsession.integrations.langgraph import PraisonSaver
from praisonsession.integrations.langgraph_threads import WRITES, Write, pack, writes_name
from praisonsession.stores import Key, LogWrite

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TASKS = 40  # each writing two channels: past what a writes document holds merged
LOG = ".more"  # the log below a writes document
ERROR, INTERRUPT = "__error__", "__interrupt__"  # two of LangGraph's special channels
assert ERROR in WRITES_IDX_MAP and INTERRUPT in WRITES_IDX_MAP


def put(saver: Any, thread_id: str, step: int, parent: dict[str, Any] | None = None) -> Any:
    """A checkpoint of one channel, as a graph's step puts it; its config."""
    checkpoint = empty_checkpoint()
    version = saver.get_next_version(None, None)
    checkpoint["channel_values"] = {"step": step}
    checkpoint["channel_versions"] = {"step": version}
    target = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    if parent is not None:
        target["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    return saver.put(target, checkpoint, {"source": "loop", "step": step}, {"step": version})


def calls() -> list[tuple[list[tuple[str, Any]], str, str]]:
    """``put_writes`` calls of a fan-out step (writes, task id, task path), out of order, with
    repeats: a regular one again (ignored), and special channels written again (replaced)."""
    made = []
    for n in reversed(range(TASKS)):
        writes: list[tuple[str, Any]] = [("out", n), ("log", f"task {n} " + "x" * (n % 7) * 40)]
        made.append((writes, f"task-{n:02d}", f"~__pregel_push, {n % 3}"))
    made.insert(3, ([(ERROR, "first failure")], "task-05", "~__pregel_push, 2"))
    made.append(([("out", "again")], "task-07", "~__pregel_push, 1"))  # a repeat: ignored
    made.append(([(ERROR, "last failure")], "task-05", "~__pregel_push, 2"))  # replaced
    made.append(([(INTERRUPT, "ask")], "task-09", "~__pregel_push, 0"))
    made.append(([(INTERRUPT, "ask again")], "task-09", "~__pregel_push, 0"))
    return made


def langgraphs(tmp_path: Path) -> list[tuple[str, str, Any]]:
    """What LangGraph's own SqliteSaver gives back for :func:`calls`."""
    with SqliteSaver.from_conn_string(str(tmp_path / "langgraph.db")) as saver:
        stored = put(saver, "t", 1)
        for writes, task_id, task_path in calls():
            saver.put_writes(stored, writes, task_id, task_path)
        return list(saver.get_tuple(stored).pending_writes)


def logged(saver: PraisonSaver, stored: dict[str, Any]) -> list[Any]:
    """The messages of the log below the checkpoint's writes document, read from the store."""
    name = writes_name("", stored["configurable"]["checkpoint_id"])
    key = Key("default_user", stored["configurable"]["thread_id"])
    found = asyncio.run(saver.store.backend.read_modules(key, names=[name]))
    return [] if found is None else found.logs.get(name + LOG, [])


def test_many_tasks_writes_all_come_back_as_langgraphs_saver_gives_them(
    store: Any, tmp_path: Path
) -> None:
    expected = langgraphs(tmp_path)
    with PraisonSaver(store) as saver:
        stored = put(saver, "t", 1)
        for writes, task_id, task_path in calls():
            saver.put_writes(stored, writes, task_id, task_path)
        assert saver.get_tuple(stored).pending_writes == expected
        assert [t.pending_writes for t in saver.list(stored, limit=1)] == [expected]
        assert len(logged(saver, stored)) > TASKS // 2  # most of them were appended
        put(saver, "t", 2, parent=stored)  # and the newest is another checkpoint
    with PraisonSaver(store) as fresh:  # remembers nothing: read from the store
        assert fresh.get_tuple(stored).pending_writes == expected
        fresh.put_writes(stored, [("out", "late")], "task-99", "~__pregel_push, 9")
        assert fresh.get_tuple(stored).pending_writes == [
            *expected,
            ("task-99", "out", "late"),
        ]
    assert {w[1] for w in expected} == {"out", "log", ERROR, INTERRUPT}
    assert ("task-05", ERROR, "last failure") in expected
    assert ("task-07", "out", 7) in expected and ("task-07", "out", "again") not in expected


WRITER = """
import sys
from praisonsession.integrations.langgraph import PraisonSaver

url, checkpoint_id, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
stored = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}
with PraisonSaver(url) as saver:
    print("ready", flush=True)
    sys.stdin.readline()
    for n in range(first, first + 60):
        saver.put_writes(stored, [("out", n), ("log", f"t{n}")], f"task-{n:03d}")
"""


def test_two_processes_writing_one_checkpoint_at_once_lose_nothing(url: str) -> None:
    with PraisonSaver(url) as saver:
        stored = put(saver, "t", 1)
        saver.put_writes(stored, [("out", -1)], "task-first")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    checkpoint_id = stored["configurable"]["checkpoint_id"]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, checkpoint_id, str(first)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for first in (0, 60)
    ]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
    for writer in writers:  # both go together
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        _, errors = writer.communicate(timeout=300)
        assert writer.returncode == 0, errors
    with PraisonSaver(url) as saver:
        writes = saver.get_tuple(stored).pending_writes
    assert sorted(value for _, channel, value in writes if channel == "out") == list(range(-1, 120))
    assert len(writes) == 1 + 2 * 120


def test_writes_stored_all_in_the_document_are_read_and_continued(store: Any) -> None:
    """A thread written before writes had a log: every write of a checkpoint merged in its
    document, each ``put_writes`` an entry of the writes log. It reads as before, and more
    tasks' writes go on after those it holds."""
    with PraisonSaver(store) as saver:
        stored = put(saver, "t", 1)
        backend = saver._threads.backend
    checkpoint_id = stored["configurable"]["checkpoint_id"]
    old = [
        Write(f"task-{n:02d}", idx, channel, saver.serde.dumps_typed(value), "")
        for n in range(12)
        for idx, (channel, value) in enumerate([("out", n), ("log", f"t{n}")])
    ]
    items = [[w.task_id, w.idx, w.channel, w.task_path, *pack(w.value)] for w in old]
    entries = [
        {"role": "writes", "content": f"task-{n:02d} wrote out, log", "id": checkpoint_id}
        for n in range(12)
    ]
    asyncio.run(
        backend.write_modules(
            Key("default_user", "t"),
            documents={writes_name("", checkpoint_id): {"w": items}},
            writes=[LogWrite(WRITES, entries, None)],
        )
    )
    with PraisonSaver(store) as saver:
        writes = saver.get_tuple(stored).pending_writes
        assert [(t, c, v) for t, c, v in writes if c == "out"] == [
            (f"task-{n:02d}", "out", n) for n in range(12)
        ]
        for n in range(5, 40):  # 5 to 11 again: repeats, ignored
            saver.put_writes(stored, [("out", n * 100), ("log", f"t{n}")], f"task-{n:02d}")
        outs = [v for _, c, v in saver.get_tuple(stored).pending_writes if c == "out"]
        assert logged(saver, stored)
    assert outs == [*range(12), *(n * 100 for n in range(12, 40))]


def test_prune_empties_the_logs_of_the_checkpoints_it_drops(store: Any) -> None:
    with PraisonSaver(store) as saver:
        first = put(saver, "t", 1)
        for n in range(TASKS):
            saver.put_writes(first, [("out", n)], f"task-{n:02d}")
        newest = put(saver, "t", 2, parent=first)
        for n in range(TASKS):
            saver.put_writes(newest, [("out", n)], f"task-{n:02d}")
        saver.copy_thread("t", "copy")
        assert logged(saver, first)
        saver.prune(["t"], strategy="keep_latest")
        assert saver.get_tuple(first) is None
        assert logged(saver, first) == []
        outs = [v for _, _, v in saver.get_tuple(newest).pending_writes]
        assert outs == list(range(TASKS))
        copied = dict(first, configurable={**first["configurable"], "thread_id": "copy"})
        assert [v for _, _, v in saver.get_tuple(copied).pending_writes] == list(range(TASKS))


def test_writes_in_the_log_are_sealed_at_rest_with_an_encryption_key(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/sealed.db"
    with PraisonSaver(url, settings={"encryption_key": ENCRYPTION_KEY}) as saver:
        stored = put(saver, "t", 1)
        for n in range(TASKS):
            saver.put_writes(stored, [("secret", f"code {n}")], f"task-{n:02d}")
    with PraisonSaver(url, settings={"encryption_key": ENCRYPTION_KEY}) as saver:
        found = [v for _, _, v in saver.get_tuple(stored).pending_writes]
        assert len(logged(saver, stored)) > TASKS // 2
    assert found == [f"code {n}" for n in range(TASKS)]
    raw = (tmp_path / "sealed.db").read_bytes()
    assert b"code 3" not in raw and b"task-03" not in raw


@pytest.mark.parametrize("checkpoint_ns", ["", "fan.out:1"])
def test_a_task_writing_again_after_the_document_filled_keeps_its_first_writes(
    store: Any, checkpoint_ns: str
) -> None:
    """A namespace with a dot keeps every write in the document (a log below a dotted name
    is not found on every backend); both behave alike."""
    with PraisonSaver(store) as saver:
        checkpoint = empty_checkpoint()
        target = {"configurable": {"thread_id": "t", "checkpoint_ns": checkpoint_ns}}
        stored = saver.put(target, checkpoint, {"source": "loop", "step": 1}, {})
        for n in range(TASKS):
            saver.put_writes(stored, [("out", n)], f"task-{n:02d}")
        saver.put_writes(stored, [("out", "again"), ("more", 1)], "task-00")
        writes = saver.get_tuple(stored).pending_writes
    assert writes[:2] == [("task-00", "out", 0), ("task-00", "more", 1)]
    assert [v for _, c, v in writes if c == "out"] == list(range(TASKS))


def test_many_writes_stored_before_their_checkpoint_are_all_read_with_it(store: Any) -> None:
    """LangGraph's durability="async" may store tasks' writes to a checkpoint while it is
    still being put: the put made after a read of the newest keeps a view of what it wrote,
    which must not take the writes document alone for all of them."""
    with PraisonSaver(store) as saver, PraisonSaver(store) as other:
        first = put(saver, "t", 1)
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None
        ahead = empty_checkpoint()
        target = {"configurable": {**first["configurable"], "checkpoint_id": ahead["id"]}}
        for n in range(TASKS):
            other.put_writes(target, [("out", n)], f"task-{n:02d}")
        ahead["channel_values"] = {"step": 2}
        ahead["channel_versions"] = {"step": saver.get_next_version(1, None)}
        saver.put(first, ahead, {"source": "loop", "step": 2}, dict(ahead["channel_versions"]))
        newest = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert newest.checkpoint["id"] == ahead["id"]
    assert [v for _, _, v in newest.pending_writes] == list(range(TASKS))
