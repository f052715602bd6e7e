"""LangGraph checkpoints: PraisonSaver next to LangGraph's own SQLite savers, in one run.

Run from the repository root, in the frameworks' environment (``make test`` builds it)::

    .venv-frameworks/bin/python benchmarks/bench_langgraph.py [--json results.json] [--quick]

Four parts:

1. **Bytes stored**: a graph that appends one message per step (``tests/frameworks/lg_graphs.py``)
   runs 50, 100 and 200 steps on a fresh SQLite file per saver; the file is compacted
   (``VACUUM INTO``) and its size printed, for ``PraisonSaver``, ``SqliteSaver`` and
   ``PraisonSaver`` with LangGraph's ``DeltaChannel``. Targets: ours no more than
   ``SqliteSaver`` at every size, and with ``DeltaChannel`` growth linear in steps (the bytes
   of 200 steps at most 2.3x those of 100; a value copied whole per step makes it near 4x).
2. **Speed**, the sync methods against ``SqliteSaver`` and the async ones against
   ``AsyncSqliteSaver``, in 3 rounds, the two savers taking turns call by call on one thread:
   one step (``put`` of a checkpoint, then ``get_tuple`` of the thread's latest) on a fresh
   thread of 10 and of 1,000 checkpoints each round, ``list(config, limit=10)`` of a thread of
   2,000, a turn of a chat graph (``invoke``/``ainvoke`` of ``lg_graphs.turn_graph``, two
   nodes, a conversation's first 100 turns on a new thread each round; LangGraph saves each
   step's checkpoint and each task's writes in the background while the next step runs, so the
   saves of one thread overlap) and a map step (``lg_graphs.fan_out_graph``: 8 tasks at once,
   their writes reaching the saver together; 100 runs, a new thread each); then each op
   alone: ``put`` on a thread of 10, ``put_writes`` (a task's two writes to the latest
   checkpoint, a checkpoint put before each call, not timed), the same on a thread another
   saver object wrote first (10 checkpoints with writes: another process, an earlier run),
   timed from a second after the saver's first writes there, ``get_tuple`` of a given
   (older) ``checkpoint_id`` in a thread of 1,000, and ``delete_thread`` of a thread of 20
   checkpoints (60 calls, each thread written before its call, not timed); and ``put_writes``
   of a new task to a checkpoint already holding the writes of 1 and of 1,000 tasks (a
   map-reduce step's ``Send``s: for 1, a checkpoint put and written once before each call, not
   timed; for 1,000, one checkpoint filled before the round, which gains the round's tasks
   too). Ratio = our ops/s / theirs in each round;
   targets: the best round at least 1.0 and the median at least 1.1, and ours flat (a step's
   ops/s at 10 checkpoints within 1.2x of 1,000, put_writes' at 1 task within 1.2x of 1,000).
3. **WAL frames per put**, each side: the write-ahead log's growth over 200 puts while a
   reader holds it (so no checkpoint restarts it), at 10 and at 1,000 checkpoints, on a file
   per side and size holding that one thread.
4. **Where a sync put's time goes**: ``put`` on a thread of 10 checkpoints, by each saver and by
   the raw engine (the same checkpoint serialized by LangGraph's serde, one ``INSERT`` and a
   commit into a one-table file: what any saver must at least do), each at
   ``synchronous=NORMAL`` (no fsync at commit: the CPU) and at ``synchronous=FULL`` (the
   durability of parts 2 and 3), taking turns call by call, each WAL first grown past its
   automatic checkpoint as the other parts' files are. FULL less NORMAL is the commit's fsync;
   the report says how near 1.1x of ``SqliteSaver``'s put the raw engine's put comes, and what
   the fsync costs when the raw engine writes the row into 2 and 4 tables (a page each). Two
   more writers bound what a saver on our layout can reach: our store's append alone (the
   record appended through our store, none of the saver's work) and the raw engine writing
   our rows (that record and the store's two statements, no praisonsession code at all). And
   the ceiling of a saver that writes one row a step: the raw engine's step (its put, then
   ``get_tuple`` of the newest answered from memory) beside ``SqliteSaver``'s.

Durability, the same on both sides and read back with ``PRAGMA`` from each side's own
connection (the run stops if not): WAL with ``synchronous=FULL`` (the WAL fsynced at every
commit). Ours is ``sqlite://...?durability=power``; LangGraph's savers set WAL themselves and
``synchronous=FULL`` is set on their connection here (SQLite's default, made explicit).
LangGraph's ``PostgresSaver`` is not installed in this environment
(``langgraph-checkpoint-postgres``), so there is no PostgreSQL pair.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "frameworks"))  # the graphs of the tests

from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint  # noqa: E402
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: E402

from lg_graphs import chat_graph, chat_input, fan_out_graph, turn_graph, turn_input  # noqa: E402
from praisonsession._internal import runtime  # noqa: E402
from praisonsession._internal.json_data import dumps  # noqa: E402
from praisonsession.integrations.langgraph import PraisonSaver  # noqa: E402
from praisonsession.integrations.langgraph_threads import (  # noqa: E402
    CHECKPOINTS,
    pack,
    writes_name,
)
from praisonsession.stores import Key  # noqa: E402
from praisonsession.stores.backend import LogWrite  # noqa: E402
from praisonsession.stores.backends.sqlite.schema import (  # noqa: E402
    APPEND_AT,
    BUMP_LIVE,
    DATA_VERSION,
)
from praisonsession.stores.guard import beneath  # noqa: E402

OURS = "PraisonSaver"
#: Part 4's writer that is our store's write alone (:class:`StorePut`).
STORE_ALONE = "our store's append alone"
#: Part 4's writer that is the raw engine writing our rows (:class:`OurRowsRaw`).
OUR_ROWS = "raw engine, our rows"
#: The reader beside the sync savers' get_tuple by id that is our store's read alone.
STORE_READ = "our store's read alone"
BEST_TARGET = 1.0
MEDIAN_TARGET = 1.1
FLAT_TARGET = 1.2
GROWTH_TARGET = 2.3
SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
SYNCHRONOUS = "FULL"
K = TypeVar("K")  # what names each call taking turns


def compact_size(path: Path) -> int:
    """The bytes a SQLite file needs once its free pages and WAL are gone."""
    target = path.with_suffix(".vacuumed")
    conn = sqlite3.connect(path)
    conn.execute("VACUUM INTO ?", (str(target),))
    conn.close()
    size = target.stat().st_size
    target.unlink()
    return size


def ours_url(path: Path) -> str:
    return f"sqlite://{path}?durability=power"


def stored_bytes(folder: Path, steps: int) -> dict[str, int]:
    """One thread of ``steps`` messages per saver, on a file of its own; compacted sizes."""
    sizes: dict[str, int] = {}
    config = {"configurable": {"thread_id": "chat"}, "recursion_limit": 4 * steps}
    for name, delta in (("PraisonSaver", False), ("PraisonSaver + DeltaChannel", True)):
        path = folder / f"bytes-{steps}-{int(delta)}.db"
        saver = PraisonSaver(ours_url(path))
        result = chat_graph(saver, steps, delta=delta).invoke(chat_input(), config)
        assert len(result["messages"]) == steps, name
        saver.close()
        sizes[name] = compact_size(path)
    path = folder / f"bytes-{steps}-lg.db"
    with SqliteSaver.from_conn_string(str(path)) as saver:
        result = chat_graph(saver, steps).invoke(chat_input(), config)
        assert len(result["messages"]) == steps, "SqliteSaver"
    sizes["SqliteSaver"] = compact_size(path)
    return sizes


# -- speed ------------------------------------------------------------------------------------


def checkpoint(saver: Any, previous: dict[str, Any] | None, n: int) -> tuple[Any, dict[str, Any]]:
    """Step ``n``'s checkpoint (two channels changed) and its ``new_versions``."""
    made = empty_checkpoint()
    old = previous["channel_versions"] if previous else {}
    versions = {c: saver.get_next_version(old.get(c), None) for c in ("step", "note")}
    made["channel_values"] = {"step": n, "note": f"step {n}: " + "x" * 200}
    made["channel_versions"] = versions
    made["versions_seen"] = {"node": dict(versions)}
    return made, versions


class Thread:
    """A thread of one saver: its config, and the last checkpoint put (for the versions)."""

    def __init__(self, saver: Any, thread_id: str) -> None:
        self.saver = saver
        self.config: dict[str, Any] = {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": ""}
        }
        self.last: dict[str, Any] | None = None
        self.steps = 0
        self.ids: list[str] = []  # every checkpoint put, oldest first

    def next(self) -> tuple[dict[str, Any], Any, dict[str, Any], dict[str, Any]]:
        made, versions = checkpoint(self.saver, self.last, self.steps)
        metadata = {"source": "loop", "step": self.steps, "parents": {}}
        self.last = made
        self.steps += 1
        return self.config, made, metadata, versions

    def put(self) -> None:
        config, made, metadata, versions = self.next()
        self.config = self.saver.put(config, made, metadata, versions)
        self.ids.append(made["id"])

    async def aput(self) -> None:
        config, made, metadata, versions = self.next()
        self.config = await self.saver.aput(config, made, metadata, versions)
        self.ids.append(made["id"])

    def at(self, step: int) -> dict[str, Any]:
        """The config of the checkpoint put at ``step``, as a graph names an older one."""
        return {"configurable": {"thread_id": self.config["configurable"]["thread_id"],
                                 "checkpoint_ns": "", "checkpoint_id": self.ids[step]}}  # fmt: skip

    def writes(self, task: int) -> tuple[dict[str, Any], list[tuple[str, Any]], str]:
        """A task's writes to the latest checkpoint: ``put_writes``' arguments."""
        return self.config, [("note", f"task {task}: " + "y" * 200), ("step", task)], f"t{task}"

    def latest(self) -> dict[str, Any]:
        """The thread's config as a graph passes it: its namespace, no checkpoint id."""
        return {"configurable": {"thread_id": self.config["configurable"]["thread_id"],
                                 "checkpoint_ns": ""}}  # fmt: skip

    def check(self, found: Any, name: str) -> None:
        if found is None or found.checkpoint["channel_values"]["step"] != self.steps - 1:
            raise RuntimeError(f"{name}: get_tuple did not return the last checkpoint put")


class Chat:
    """A chat graph of one saver (``lg_graphs.turn_graph``: two nodes a turn) on a new thread,
    a turn a call: what a user's graph does with the saver, LangGraph saving each step's
    checkpoint and each task's writes in the background while the next step runs."""

    def __init__(self, saver: Any, thread_id: str) -> None:
        self.graph = turn_graph(saver)
        self.config = {"configurable": {"thread_id": thread_id}}
        self.turns = 0

    def turn(self, _: int) -> None:
        self.graph.invoke(turn_input(self.turns), self.config)
        self.turns += 1

    async def aturn(self, _: int) -> None:
        await self.graph.ainvoke(turn_input(self.turns), self.config)
        self.turns += 1

    def check(self, values: dict[str, Any], name: str) -> None:
        if len(values["messages"]) != 2 * self.turns or len(values["notes"]) != self.turns:
            raise RuntimeError(f"{name}: the chat graph's thread lost a turn")


class MapStep:
    """A map step of one saver (``lg_graphs.fan_out_graph``): :data:`PARTS` tasks run at
    once, their writes reaching the saver together; a new thread a call."""

    def __init__(self, saver: Any, number: int) -> None:
        self.graph = fan_out_graph(saver, PARTS)
        self.number = number

    def config(self, i: int) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"map-{self.number}-{i}"}}

    def run(self, i: int) -> None:
        check_parts(self.graph.invoke({"results": []}, self.config(i))["results"])

    async def arun(self, i: int) -> None:
        check_parts((await self.graph.ainvoke({"results": []}, self.config(i)))["results"])


#: The tasks of a map step.
PARTS = 8


def check_parts(results: list[str]) -> None:
    if sorted(results) != sorted(f"part {n}" for n in range(PARTS)):
        raise RuntimeError(f"a map step lost a task's result: {results}")


def check_listed(listed: list[Any], count: int, name: str) -> None:
    steps = [t.checkpoint["channel_values"]["step"] for t in listed]
    if steps != list(range(count - 1, count - 11, -1)):
        raise RuntimeError(f"{name}: list(limit=10) did not return the 10 newest")


def check_found(found: Any, step: int, name: str) -> None:
    if found is None or found.checkpoint["channel_values"]["step"] != step:
        raise RuntimeError(f"{name}: get_tuple by checkpoint_id did not return checkpoint {step}")


def store_read(thread: Thread, picks: list[int]) -> Callable[[int], None]:
    """Our store's read alone for ``get_tuple`` by id: the record at its position (known) and
    its writes document, in the one transaction our saver reads them in. Nothing is unpacked
    or deserialized: about the least any read of a checkpoint from our store costs (a
    transaction, the session's liveness, the rows)."""
    backend = thread.saver.store.backend
    key = thread.saver._thread_key(thread.config["configurable"]["thread_id"])

    def read(i: int) -> None:
        at, wanted = picks[i], thread.ids[picks[i]]
        names = [writes_name("", wanted)]
        found, _ = runtime.run(
            backend.read_log_and_modules(
                key, path=CHECKPOINTS, start=at, stop=at + 1, names=lambda _: names
            ),
            inline=True,  # as ours runs
        )
        if len(found) != 1 or found[0].get("id") != wanted:
            raise RuntimeError(f"{STORE_READ}: no checkpoint {at} at its position")

    return read


def check_writes(found: Any, name: str) -> None:
    """The latest checkpoint holds the one task's writes put to it, both channels."""
    if found is None or [w[1] for w in found.pending_writes] != ["note", "step"]:
        raise RuntimeError(f"{name}: put_writes' writes are not the latest checkpoint's")


def check_held(found: Any, tasks: int, args: argparse.Namespace, name: str) -> None:
    """Every task's two writes came back: those the checkpoint held and the timed calls'."""
    wanted = 2 * (tasks + (1 if tasks == args.tasks[0] else args.calls))
    if found is None or len(found.pending_writes) != wanted:
        got = None if found is None else len(found.pending_writes)
        raise RuntimeError(f"{name}: {got} pending writes, not {wanted}")


def turns(
    calls: dict[K, Callable[[int], Any]],
    n: int,
    prepare: dict[K, Callable[[int], Any]] | None = None,
) -> dict[K, float]:
    """Ops/s of each call, ``n`` calls each taking turns one by one: the machine's state at
    any moment (other work, the disk's flushes) touches every saver alike. ``prepare`` (not
    timed) readies each saver's call ``i`` just before it (a checkpoint to write to, a thread
    to delete)."""
    spent = dict.fromkeys(calls, 0.0)
    for i in range(n):
        for name, call in calls.items():
            if prepare:
                prepare[name](i)
            start = time.perf_counter()
            call(i)
            spent[name] += time.perf_counter() - start
    return {name: n / seconds for name, seconds in spent.items()}


async def aturns(
    calls: dict[K, Callable[[int], Awaitable[Any]]],
    n: int,
    prepare: dict[K, Callable[[int], Awaitable[Any]]] | None = None,
) -> dict[K, float]:
    """:func:`turns` for coroutines."""
    spent = dict.fromkeys(calls, 0.0)
    for i in range(n):
        for name, call in calls.items():
            if prepare:
                await prepare[name](i)
            start = time.perf_counter()
            await call(i)
            spent[name] += time.perf_counter() - start
    return {name: n / seconds for name, seconds in spent.items()}


Rounds = dict[str, dict[str, list[float]]]  # measure -> saver -> ops/s of each round


def record(rounds: Rounds, measure: str, ops: dict[str, float]) -> None:
    for name, value in ops.items():
        rounds.setdefault(measure, {}).setdefault(name, []).append(value)


#: Seconds a saver resuming a thread waits before its timed writes: a checkpoint whose id was
#: minted later than this after its first writes there holds none it has not seen
#: (``langgraph_threads._MINTED_MARGIN``), so its writes read nothing first.
RESUMED_AFTER = 1.1


def other_savers(savers: dict[str, Any]) -> dict[str, Any]:
    """Another saver object per saver, on the same store (another process, an earlier run):
    what it writes, the saver finds there as a thread it did not write."""
    return {
        name: PraisonSaver(saver.store) if name == OURS else type(saver)(saver.conn)
        for name, saver in savers.items()
    }


def writes_to_latest(
    rounds: Rounds, measure: str, threads: dict[str, Thread], args: argparse.Namespace
) -> None:
    """``measure``: a task's writes to each thread's latest checkpoint, a checkpoint put
    before each call (not timed); every thread's writes read back after."""
    record(
        rounds,
        measure,
        turns(
            {n: (lambda i, t=t: t.saver.put_writes(*t.writes(i))) for n, t in threads.items()},
            args.calls,
            prepare={n: (lambda _, t=t: t.put()) for n, t in threads.items()},
        ),
    )
    for name, thread in threads.items():
        check_writes(thread.saver.get_tuple(thread.latest()), name)


async def awrites_to_latest(
    rounds: Rounds, measure: str, threads: dict[str, Thread], args: argparse.Namespace
) -> None:
    """:func:`writes_to_latest` through the async methods."""
    record(
        rounds,
        measure,
        await aturns(
            {n: (lambda i, t=t: t.saver.aput_writes(*t.writes(i))) for n, t in threads.items()},
            args.calls,
            prepare={n: (lambda _, t=t: t.aput()) for n, t in threads.items()},
        ),
    )
    for name, thread in threads.items():
        check_writes(await thread.saver.aget_tuple(thread.latest()), name)


def step_threads(
    savers: dict[str, Any], sizes: list[int], number: int
) -> dict[tuple[int, str], Thread]:
    """A fresh thread per history size and saver, keyed (size, saver): the step at every size
    is timed in one run of turns, so what the machine does meanwhile (other work, the load
    moving) reaches each size alike, and ours at 10 and at 1,000 compare fairly (flatness)."""
    return {
        (size, name): Thread(saver, f"step-{number}-{size}")
        for size in sizes
        for name, saver in savers.items()
    }


def record_steps(rounds: Rounds, ops: dict[tuple[int, str], float]) -> None:
    for (size, name), value in ops.items():
        record(rounds, f"step_{size}", {name: value})


def sync_rounds(savers: dict[str, Any], args: argparse.Namespace) -> Rounds:
    """Each round: a step (``put`` + ``get_tuple`` of the latest) on fresh threads of each
    history size, ``list(limit=10)`` of a long thread, then each op alone; the savers taking
    turns."""
    rounds: Rounds = {}
    listed = {name: Thread(saver, "listed") for name, saver in savers.items()}
    for _ in range(args.listed):
        for thread in listed.values():
            thread.put()
    older = {name: Thread(saver, "by-id") for name, saver in savers.items()}
    for _ in range(args.sizes[-1]):
        for thread in older.values():
            thread.put()
    for number in range(args.rounds):
        sized = step_threads(savers, args.sizes, number)
        for (size, _), thread in sized.items():
            for _ in range(size):
                thread.put()

        def step(thread: Thread) -> Callable[[int], Any]:
            def one(_: int) -> None:
                thread.put()
                thread.saver.get_tuple(thread.latest())

            return one

        record_steps(rounds, turns({k: step(t) for k, t in sized.items()}, args.calls))
        for (_, name), thread in sized.items():
            thread.check(thread.saver.get_tuple(thread.latest()), name)

        def lister(thread: Thread) -> Callable[[int], Any]:
            return lambda _: list(thread.saver.list(thread.latest(), limit=10))

        record(rounds, "list", turns({n: lister(t) for n, t in listed.items()}, args.calls))
        chats = {name: Chat(saver, f"chat-{number}") for name, saver in savers.items()}
        record(rounds, "graph", turns({n: c.turn for n, c in chats.items()}, args.graph_turns))
        for name, chat in chats.items():
            chat.check(chat.graph.get_state(chat.config).values, name)
        maps = {name: MapStep(saver, number) for name, saver in savers.items()}
        record(rounds, "map", turns({n: m.run for n, m in maps.items()}, args.graph_turns))
        sync_ops(rounds, savers, older, number, args)
    for name, thread in listed.items():
        check_listed(list(thread.saver.list(thread.latest(), limit=10)), args.listed, name)
    return rounds


def sync_ops(
    rounds: Rounds,
    savers: dict[str, Any],
    older: dict[str, Thread],
    number: int,
    args: argparse.Namespace,
) -> None:
    """One round of each op alone: ``put``, ``put_writes`` (on a thread of this saver's, and
    on one another saver wrote first), ``get_tuple`` by id and ``delete_thread``."""
    puts = {name: Thread(saver, f"put-{number}") for name, saver in savers.items()}
    for _ in range(args.sizes[0]):
        for thread in puts.values():
            thread.put()
    record(rounds, "put", turns({n: (lambda _, t=t: t.put()) for n, t in puts.items()}, args.calls))

    written = {name: Thread(saver, f"writes-{number}") for name, saver in savers.items()}
    writes_to_latest(rounds, "put_writes", written, args)

    resumed = {n: Thread(other, f"resumed-{number}") for n, other in other_savers(savers).items()}
    for _ in range(args.sizes[0]):
        for thread in resumed.values():
            thread.put()
            thread.saver.put_writes(*thread.writes(0))
    for name, thread in resumed.items():  # the saver resumes the thread: its first writes there
        thread.saver = savers[name]
        thread.put()
        thread.saver.put_writes(*thread.writes(0))
    time.sleep(RESUMED_AFTER)
    writes_to_latest(rounds, "resumed", resumed, args)

    for tasks in args.tasks:
        held = {name: Thread(saver, f"held-{number}-{tasks}") for name, saver in savers.items()}

        def holding(thread: Thread, tasks: int = tasks) -> Callable[[int], None]:
            def fill(i: int) -> None:
                if i == 0 or tasks == args.tasks[0]:
                    thread.put()
                    for task in range(tasks):
                        thread.saver.put_writes(*thread.writes(task))

            return fill

        record(
            rounds,
            f"held_{tasks}",
            turns(
                {
                    n: (lambda i, t=t, k=tasks: t.saver.put_writes(*t.writes(k + i)))
                    for n, t in held.items()
                },
                args.calls,
                prepare={n: holding(t) for n, t in held.items()},
            ),
        )
        for name, thread in held.items():
            check_held(thread.saver.get_tuple(thread.latest()), tasks, args, name)

    picks = random.Random(number).choices(range(args.sizes[-1] - 1), k=args.calls)

    def by_id(name: str, thread: Thread) -> Callable[[int], None]:
        return lambda i: check_found(thread.saver.get_tuple(thread.at(picks[i])), picks[i], name)

    reads = {n: by_id(n, t) for n, t in older.items()}
    reads[STORE_READ] = store_read(older[OURS], picks)
    record(rounds, "by_id", turns(reads, args.calls))

    doomed: dict[str, Thread] = {}

    def build(name: str) -> Callable[[int], None]:
        def fill(i: int) -> None:
            doomed[name] = thread = Thread(savers[name], f"delete-{number}-{i}")
            for _ in range(args.deleted):
                thread.put()

        return fill

    def delete(name: str) -> Callable[[int], None]:
        return lambda _: savers[name].delete_thread(
            doomed[name].config["configurable"]["thread_id"]
        )

    record(
        rounds,
        "delete",
        turns({n: delete(n) for n in savers}, args.deletes, prepare={n: build(n) for n in savers}),
    )
    for name, thread in doomed.items():
        if thread.saver.get_tuple(thread.latest()) is not None:
            raise RuntimeError(f"{name}: delete_thread left a checkpoint")


async def async_rounds(savers: dict[str, Any], args: argparse.Namespace) -> Rounds:
    """:func:`sync_rounds` through the async methods."""
    rounds: Rounds = {}
    listed = {name: Thread(saver, "listed") for name, saver in savers.items()}
    for _ in range(args.listed):
        for thread in listed.values():
            await thread.aput()
    older = {name: Thread(saver, "by-id") for name, saver in savers.items()}
    for _ in range(args.sizes[-1]):
        for thread in older.values():
            await thread.aput()
    for number in range(args.rounds):
        sized = step_threads(savers, args.sizes, number)
        for (size, _), thread in sized.items():
            for _ in range(size):
                await thread.aput()

        def step(thread: Thread) -> Callable[[int], Awaitable[Any]]:
            async def one(_: int) -> None:
                await thread.aput()
                await thread.saver.aget_tuple(thread.latest())

            return one

        record_steps(rounds, await aturns({k: step(t) for k, t in sized.items()}, args.calls))
        for (_, name), thread in sized.items():
            thread.check(await thread.saver.aget_tuple(thread.latest()), name)

        def lister(thread: Thread) -> Callable[[int], Awaitable[Any]]:
            async def listing(_: int) -> list[Any]:
                return [t async for t in thread.saver.alist(thread.latest(), limit=10)]

            return listing

        record(rounds, "list", await aturns({n: lister(t) for n, t in listed.items()}, args.calls))
        chats = {name: Chat(saver, f"chat-{number}") for name, saver in savers.items()}
        record(
            rounds, "graph", await aturns({n: c.aturn for n, c in chats.items()}, args.graph_turns)
        )
        for name, chat in chats.items():
            chat.check((await chat.graph.aget_state(chat.config)).values, name)
        maps = {name: MapStep(saver, number) for name, saver in savers.items()}
        record(rounds, "map", await aturns({n: m.arun for n, m in maps.items()}, args.graph_turns))
        await async_ops(rounds, savers, older, number, args)
    for name, thread in listed.items():
        check_listed([t async for t in thread.saver.alist(thread.latest(), limit=10)],
                     args.listed, name)  # fmt: skip
    return rounds


async def async_ops(
    rounds: Rounds,
    savers: dict[str, Any],
    older: dict[str, Thread],
    number: int,
    args: argparse.Namespace,
) -> None:
    """:func:`sync_ops` through the async methods."""
    puts = {name: Thread(saver, f"put-{number}") for name, saver in savers.items()}
    for _ in range(args.sizes[0]):
        for thread in puts.values():
            await thread.aput()
    record(
        rounds,
        "put",
        await aturns({n: (lambda _, t=t: t.aput()) for n, t in puts.items()}, args.calls),
    )

    written = {name: Thread(saver, f"writes-{number}") for name, saver in savers.items()}
    await awrites_to_latest(rounds, "put_writes", written, args)

    resumed = {n: Thread(other, f"resumed-{number}") for n, other in other_savers(savers).items()}
    for _ in range(args.sizes[0]):
        for thread in resumed.values():
            await thread.aput()
            await thread.saver.aput_writes(*thread.writes(0))
    for name, thread in resumed.items():  # the saver resumes the thread: its first writes there
        thread.saver = savers[name]
        await thread.aput()
        await thread.saver.aput_writes(*thread.writes(0))
    await asyncio.sleep(RESUMED_AFTER)
    await awrites_to_latest(rounds, "resumed", resumed, args)

    for tasks in args.tasks:
        held = {name: Thread(saver, f"held-{number}-{tasks}") for name, saver in savers.items()}

        def holding(thread: Thread, tasks: int = tasks) -> Callable[[int], Awaitable[None]]:
            async def fill(i: int) -> None:
                if i == 0 or tasks == args.tasks[0]:
                    await thread.aput()
                    for task in range(tasks):
                        await thread.saver.aput_writes(*thread.writes(task))

            return fill

        record(
            rounds,
            f"held_{tasks}",
            await aturns(
                {
                    n: (lambda i, t=t, k=tasks: t.saver.aput_writes(*t.writes(k + i)))
                    for n, t in held.items()
                },
                args.calls,
                prepare={n: holding(t) for n, t in held.items()},
            ),
        )
        for name, thread in held.items():
            check_held(await thread.saver.aget_tuple(thread.latest()), tasks, args, name)

    picks = random.Random(number).choices(range(args.sizes[-1] - 1), k=args.calls)

    def by_id(name: str, thread: Thread) -> Callable[[int], Awaitable[None]]:
        async def one(i: int) -> None:
            check_found(await thread.saver.aget_tuple(thread.at(picks[i])), picks[i], name)

        return one

    record(rounds, "by_id", await aturns({n: by_id(n, t) for n, t in older.items()}, args.calls))

    doomed: dict[str, Thread] = {}

    def build(name: str) -> Callable[[int], Awaitable[None]]:
        async def fill(i: int) -> None:
            doomed[name] = thread = Thread(savers[name], f"delete-{number}-{i}")
            for _ in range(args.deleted):
                await thread.aput()

        return fill

    def delete(name: str) -> Callable[[int], Awaitable[None]]:
        return lambda _: savers[name].adelete_thread(
            doomed[name].config["configurable"]["thread_id"]
        )

    record(
        rounds,
        "delete",
        await aturns(
            {n: delete(n) for n in savers}, args.deletes, prepare={n: build(n) for n in savers}
        ),
    )
    for name, thread in doomed.items():
        if await thread.saver.aget_tuple(thread.latest()) is not None:
            raise RuntimeError(f"{name}: adelete_thread left a checkpoint")


# -- durability and WAL frames ----------------------------------------------------------------


def described(journal: str, synchronous: int) -> str:
    return f"{journal.upper()}, synchronous={SYNC_NAMES[synchronous]}"


def ours_pragmas(saver: PraisonSaver) -> str:
    """Read back from the connection our store uses on this thread (one per thread)."""
    conn = beneath(saver.store.backend)._connection()  # type: ignore[attr-defined]
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    return described(journal, conn.execute("PRAGMA synchronous").fetchone()[0])


def theirs_setup(conn: sqlite3.Connection) -> str:
    """LangGraph's savers set WAL; synchronous=FULL is set here as well, then read back."""
    conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    return described(journal, conn.execute("PRAGMA synchronous").fetchone()[0])


async def atheirs_setup(conn: Any) -> str:
    await conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
    journal = (await (await conn.execute("PRAGMA journal_mode")).fetchone())[0]
    synchronous = (await (await conn.execute("PRAGMA synchronous")).fetchone())[0]
    return described(journal, synchronous)


def wal_frames(path: Path, thread: Thread, n: int) -> float:
    """WAL frames one ``put`` writes: the WAL emptied, then a reader holding its snapshot (so
    no checkpoint can restart the WAL meanwhile) while ``n`` puts append to it."""
    probe = sqlite3.connect(path, isolation_level=None)
    try:
        probe.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = probe.execute("PRAGMA page_size").fetchone()[0]
        probe.execute("BEGIN")
        probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        wal = Path(f"{path}-wal")
        before = max(wal.stat().st_size if wal.exists() else 0, 32)  # 32: the WAL's header
        for _ in range(n):
            thread.put()
        grown = wal.stat().st_size - before
        probe.execute("ROLLBACK")
    finally:
        probe.close()
    return grown / (page + 24) / n


def frames(folder: Path, sizes: list[int], n: int) -> dict[str, Any]:
    """Each side's WAL frames per put, on a file of its own per size holding one thread."""
    found: dict[str, dict[str, float]] = {OURS: {}, "SqliteSaver": {}}
    for size in sizes:
        path = folder / f"frames-ours-{size}.db"
        ours = PraisonSaver(ours_url(path))
        thread = Thread(ours, "frames")
        for _ in range(size):
            thread.put()
        found[OURS][str(size)] = wal_frames(path, thread, n)
        ours.close()
        path = folder / f"frames-lg-{size}.db"
        with SqliteSaver.from_conn_string(str(path)) as theirs:
            theirs.setup()
            theirs_setup(theirs.conn)
            thread = Thread(theirs, "frames")
            for _ in range(size):
                thread.put()
            found["SqliteSaver"][str(size)] = wal_frames(path, thread, n)
    return found


def raw_connection(path: Path, synchronous: str) -> sqlite3.Connection:
    """A plain ``sqlite3`` connection of part 4's raw writers: WAL, ``synchronous`` as asked,
    each transaction begun and committed by the writer itself."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    return conn


class RawPut:
    """The raw engine's put: the checkpoint and metadata serialized by LangGraph's serde, one
    ``INSERT`` into a one-table file and a commit. No saver does less. With ``tables`` > 1
    the same row goes into each of that many tables in the one commit: a page more each."""

    def __init__(self, path: Path, synchronous: str, tables: int) -> None:
        self.serde = JsonPlusSerializer()
        self.conn = raw_connection(path, synchronous)
        self.inserts = [f"INSERT INTO puts{n} VALUES (?,?,?)" for n in range(tables)]
        for n in range(tables):
            self.conn.execute(f"CREATE TABLE puts{n} (id TEXT PRIMARY KEY, checkpoint, meta)")
        # SQLite moves it only for other connections' commits: read once, not in each put
        (self.version,) = self.conn.execute(DATA_VERSION).fetchone()
        self.newest: Any = None

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return SqliteSaver.get_next_version(self, current, channel)

    def put(self, config: Any, made: Any, metadata: Any, versions: Any) -> Any:
        row = (made["id"], self.serde.dumps_typed(made)[1], self.serde.dumps_typed(metadata)[1])
        self.conn.execute("BEGIN IMMEDIATE")
        for insert in self.inserts:
            self.conn.execute(insert, row)
        self.conn.execute("COMMIT")
        self.newest = CheckpointTuple(config, made, metadata)
        return config

    def get_tuple(self, config: Any) -> Any:
        """The newest checkpoint put, from memory while ``PRAGMA data_version`` says no
        other connection has committed since: the least the read of a step costs."""
        (version,) = self.conn.execute(DATA_VERSION).fetchone()
        if version != self.version:
            raise RuntimeError("raw engine: another connection wrote its file")
        return self.newest


def saver_record(serde: Any, made: Any, metadata: Any, at: int) -> dict[str, Any]:
    """The record our saver appends for a put at position ``at`` (checkpoint, metadata and
    values serialized by ``serde`` and packed as the saver packs them): what part 4's writers
    below it write without the saver."""
    saved = dict(made)
    values = saved.pop("channel_values")
    return {
        "role": "checkpoint", "content": "", "ns": "", "id": made["id"], "parent": None,
        "versions": saved["channel_versions"], "at": at,
        "checkpoint": pack(serde.dumps_typed(saved)),
        "metadata": pack(serde.dumps_typed(metadata)),
        "values": {name: pack(serde.dumps_typed(v)) for name, v in values.items()},
    }  # fmt: skip


class StorePut:
    """Our store's write alone: the record our saver would append (checkpoint, metadata and
    values serialized by LangGraph's serde and packed as the saver packs them), appended to
    the thread's log in one write at the length it holds. None of the saver's own work (the
    index, each value stored once, the view the next read uses), so no saver on our store can
    do less; what it costs against ``SqliteSaver`` is the floor of ours."""

    def __init__(self, path: Path, durability: str) -> None:
        self.saver = PraisonSaver(f"sqlite://{path}?durability={durability}")
        self.serde = self.saver.serde
        self.backend = self.saver.store.backend
        self.key: Key | None = None
        self.length = 0

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.saver.get_next_version(current, channel)

    def put(self, config: Any, made: Any, metadata: Any, versions: Any) -> Any:
        if self.key is None:  # the thread made by the saver itself, as its first checkpoint
            self.key = self.saver._thread_key(config["configurable"]["thread_id"])
            self.length = 1
            return self.saver.put(config, made, metadata, versions)
        record = saver_record(self.serde, made, metadata, self.length)
        write = LogWrite(CHECKPOINTS, [record], self.length)
        runtime.run(self.backend.append_log(self.key, write=write), inline=True)  # as ours runs
        self.length += 1
        return config


class OurRowsRaw:
    """The raw engine writing what our store writes for a put, and nothing of praisonsession
    on the way: the record :class:`StorePut` appends, encoded as our store encodes it, and the
    store's two statements (the session's version row, the record at the log's length) in one
    commit on a connection of its own. What the layout itself costs, whatever code writes it."""

    def __init__(self, path: Path, synchronous: str, durability: str) -> None:
        self.path, self.synchronous = path, synchronous
        self.saver = PraisonSaver(f"sqlite://{path}?durability={durability}")
        self.serde = self.saver.serde
        self.conn: sqlite3.Connection | None = None
        self.ids: tuple[str, str, str] = ("", "", CHECKPOINTS)
        self.length = 0

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.saver.get_next_version(current, channel)

    def put(self, config: Any, made: Any, metadata: Any, versions: Any) -> Any:
        if self.conn is None:  # the thread (its session and log) made by the saver itself
            key = self.saver._thread_key(config["configurable"]["thread_id"])
            self.ids = (key.user_id, key.session_id, CHECKPOINTS)
            self.length = 1
            config = self.saver.put(config, made, metadata, versions)
            self.saver.close()
            self.conn = raw_connection(self.path, self.synchronous)
            return config
        record = saver_record(self.serde, made, metadata, self.length)
        text = dumps(record)
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(BUMP_LIVE, (time.time(), 0, *self.ids[:2]))
        appended = self.conn.execute(APPEND_AT, (*self.ids, self.length, text)).rowcount
        self.conn.execute("COMMIT")
        if appended != 1:
            raise RuntimeError(f"{OUR_ROWS}: the record was not appended at {self.length}")
        self.length += 1
        return config


#: Part 4's raw engines, by the tables (so pages) each put writes in its one commit.
RAW_TABLES = {"raw engine": 1, "raw engine, 2 tables": 2, "raw engine, 4 tables": 4}
#: The file names of part 4's writers.
WHO = {
    OURS: "ours",
    STORE_ALONE: "store",
    OUR_ROWS: "rows",
    "SqliteSaver": "lg",
    **{name: f"raw{n}" for name, n in RAW_TABLES.items()},
}
#: Part 4's puts at most before its timed ones, whatever the WAL's size.
WARM_PUTS = 5_000


#: Part 4's writers whose step (a put, then ``get_tuple`` of the newest) is timed too.
STEPPED = ("raw engine", "SqliteSaver")


def checked_step(_: int, thread: Thread, name: str) -> None:
    """A step of part 4's writer: a put, then ``get_tuple`` of the newest, checked."""
    thread.put()
    thread.check(thread.saver.get_tuple(thread.latest()), name)


#: Microseconds per call, by writer and ``synchronous``, one figure per round.
Costs = dict[str, dict[str, list[float]]]


def cost_rounds(
    costs: Costs, calls: dict[str, Callable[[int], Any]], synchronous: str, args: argparse.Namespace
) -> None:
    """``args.rounds`` rounds of ``calls`` taking turns call by call, into ``costs``."""
    for _ in range(args.rounds):
        for name, speed in turns(calls, args.calls).items():
            costs.setdefault(name, {}).setdefault(synchronous, []).append(1e6 / speed)


def put_costs(folder: Path, args: argparse.Namespace) -> tuple[Costs, Costs]:
    """Microseconds per ``put`` on a thread of ``sizes[0]``, per writer and ``synchronous``,
    one list per round; the writers taking turns call by call. Each WAL is first grown past
    SQLite's automatic checkpoint (1,000 pages), as in part 2's files: a commit that grows
    the WAL costs a costlier fsync (the file's size) than one that reuses it. Then, the same
    way, per step of the :data:`STEPPED` writers: the raw engine's is the ceiling of a saver
    that writes one row a step and answers the newest from memory."""
    costs: Costs = {}
    steps: Costs = {}
    for synchronous, durability in (("NORMAL", "process"), ("FULL", "power")):

        def file(name: str, synchronous: str = synchronous) -> Path:
            return folder / f"cost-{WHO[name]}-{synchronous}.db"

        ours = PraisonSaver(f"sqlite://{file(OURS)}?durability={durability}")
        alone = StorePut(file(STORE_ALONE), durability)
        rows = OurRowsRaw(file(OUR_ROWS), synchronous, durability)
        with SqliteSaver.from_conn_string(str(file("SqliteSaver"))) as theirs:
            theirs.setup()
            theirs.conn.execute(f"PRAGMA synchronous={synchronous}")
            raws = {
                name: RawPut(file(name), synchronous, tables) for name, tables in RAW_TABLES.items()
            }
            writers = {
                OURS: ours,
                STORE_ALONE: alone,
                OUR_ROWS: rows,
                "SqliteSaver": theirs,
                **raws,
            }
            threads = {name: Thread(saver, "cost") for name, saver in writers.items()}
            for _ in range(args.sizes[0]):
                for thread in threads.values():
                    thread.put()
            for name, thread in threads.items():  # each WAL past its first checkpoint
                wal = Path(f"{file(name)}-wal")
                for _ in range(WARM_PUTS):
                    thread.put()
                    if wal.stat().st_size >= args.warm_wal:
                        break
                for _ in range(args.sizes[0]):  # the checkpoint made, the WAL restarted
                    thread.put()
            puts = {n: (lambda _, t=t: t.put()) for n, t in threads.items()}
            cost_rounds(costs, puts, synchronous, args)
            stepped = {n: partial(checked_step, thread=threads[n], name=n) for n in STEPPED}
            cost_rounds(steps, stepped, synchronous, args)
            for raw in raws.values():
                raw.conn.close()
            if rows.conn is not None:
                rows.conn.close()
        ours.close()
        alone.saver.close()
    return costs, steps


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": args.sizes, "listed": args.listed, "bytes": {}}
    results.update(calls=args.calls, rounds=args.rounds, frame_puts=args.frame_puts)
    results.update(deletes=args.deletes, deleted=args.deleted, tasks=args.tasks)
    results.update(graph_turns=args.graph_turns)
    folder = Path(tempfile.mkdtemp(prefix="ps-bench-lg-"))
    try:
        for steps in args.steps:
            results["bytes"][steps] = stored_bytes(folder, steps)
        ours = PraisonSaver(ours_url(folder / "sync-ours.db"))
        with SqliteSaver.from_conn_string(str(folder / "sync-lg.db")) as theirs:
            theirs.setup()
            durability = {"SqliteSaver": theirs_setup(theirs.conn)}
            ours.get_tuple({"configurable": {"thread_id": "opened"}})  # opens its connection
            durability["PraisonSaver (sync)"] = ours_pragmas(ours)
            results["sync"] = sync_rounds({OURS: ours, "SqliteSaver": theirs}, args)
        ours.close()
        results["frames"] = frames(folder, args.sizes, args.frame_puts)
        results["costs"], results["steps"] = put_costs(folder, args)

        async def asynchronous() -> dict[str, Any]:
            mine = PraisonSaver(ours_url(folder / "async-ours.db"))
            async with AsyncSqliteSaver.from_conn_string(str(folder / "async-lg.db")) as lg:
                await lg.setup()
                durability["AsyncSqliteSaver"] = await atheirs_setup(lg.conn)
                await mine.aget_tuple({"configurable": {"thread_id": "opened"}})
                durability["PraisonSaver (async)"] = ours_pragmas(mine)
                figures = await async_rounds({OURS: mine, "AsyncSqliteSaver": lg}, args)
            await mine.aclose()
            return figures

        results["async"] = asyncio.run(asynchronous())
        results["durability"] = durability
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    wanted = described("wal", 2)
    for name, how in results["durability"].items():
        if how != wanted:
            raise RuntimeError(f"{name} ran at {how}, not {wanted}: the comparison is void")
    return results


# -- report -----------------------------------------------------------------------------------


def report(results: dict[str, Any]) -> bool:
    verdicts: list[tuple[str, str, bool]] = []
    steps = sorted(results["bytes"])
    names = list(results["bytes"][steps[0]]) if steps else []
    if steps:
        print(
            "\nBytes stored by a thread that appends one message per step (compacted SQLite file)"
        )
        print(f"  | steps | {' | '.join(names)} | ours / SqliteSaver |")
        print(f"  |---|{'---|' * len(names)}---|")
    for n in steps:
        row = results["bytes"][n]
        share = row[OURS] / row["SqliteSaver"]
        cells = " | ".join(f"{row[k]:,}" for k in names)
        print(f"  | {n} | {cells} | {share:.2f}x |")
        verdicts.append((f"bytes @{n} steps: ours / SqliteSaver <= 1", f"{share:.2f}x", share <= 1))
    if len(steps) >= 2:
        low, high = steps[-2], steps[-1]
        delta = "PraisonSaver + DeltaChannel"
        growth = results["bytes"][high][delta] / results["bytes"][low][delta]
        verdicts.append(
            (f"DeltaChannel bytes @{high} / @{low} <= {GROWTH_TARGET:g}", f"{growth:.2f}x",
             growth <= GROWTH_TARGET)
        )  # fmt: skip
    print("\nDurability (each side's connection, read back with PRAGMA)")
    for name, how in results["durability"].items():
        print(f"  {name}: {how}")
    print(f"\nWAL frames written per put (the WAL's growth over {results['frame_puts']} sync "
          "puts while a reader holds it; a file per side holding one thread)")  # fmt: skip
    for name, found in results["frames"].items():
        cells = ", ".join(f"{found[str(s)]:.2f} at {s:,} checkpoints" for s in results["sizes"])
        print(f"  {name}: {cells}")
    sizes, listed = results["sizes"], results["listed"]
    measures = [(f"put + get_tuple @{s:,} checkpoints", f"step_{s}") for s in sizes]
    measures.append((f"list(limit=10) @{listed:,} checkpoints", "list"))
    turns_label = f"a chat graph's turn (2 nodes), a thread's first {results['graph_turns']:,}"
    measures.append((turns_label, "graph"))
    measures.append((f"a map step of {PARTS} tasks at once (invoke, a new thread)", "map"))
    measures.append((f"put alone @{sizes[0]:,} checkpoints", "put"))
    measures.append(("put_writes (a task's 2 writes) to the latest", "put_writes"))
    measures.append(("put_writes to the latest, a thread another saver wrote first", "resumed"))
    tasks = results["tasks"]
    for t in tasks:
        whose = "task's" if t == 1 else "tasks'"
        measures.append((f"put_writes to a checkpoint holding {t:,} {whose} writes", f"held_{t}"))
    measures.append((f"get_tuple by checkpoint_id @{sizes[-1]:,} checkpoints", "by_id"))
    measures.append((f"delete_thread of {results['deleted']:,} checkpoints", "delete"))
    print(
        f"\nSpeed: {results['rounds']} rounds of {results['calls']} calls per saver and measure, "
        f"({results['deletes']} of delete_thread, {results['graph_turns']} of each graph), the "
        "savers taking turns call by call; "
        "ratio = our ops/s / theirs, per round"
    )
    for mode in ("sync", "async"):
        rounds = results[mode]
        theirs = speed_rows(rounds, measures, mode, OURS, verdicts)
        alone = rounds["by_id"].get(STORE_READ)
        if alone:
            by_id = statistics.median(rounds["by_id"][theirs])
            print(
                f"  Our store's read alone for a get_tuple by id (the record at its known "
                f"position and its writes document, one transaction, nothing deserialized): "
                f"{statistics.median(alone):,.0f} ops/s, "
                f"{statistics.median(alone) / by_id:.2f}x {theirs}'s whole get_tuple."
            )
        low = statistics.median(rounds[f"step_{sizes[0]}"][OURS])
        high = statistics.median(rounds[f"step_{sizes[-1]}"][OURS])
        verdicts.append(
            (f"{mode}: our step flat, @{sizes[0]:,} / @{sizes[-1]:,} ops/s <= {FLAT_TARGET:g}",
             f"{low / high:.2f}x", low / high <= FLAT_TARGET)
        )  # fmt: skip
        low = statistics.median(rounds[f"held_{tasks[0]}"][OURS])
        high = statistics.median(rounds[f"held_{tasks[-1]}"][OURS])
        label = f"{mode}: our put_writes flat, @{tasks[0]:,} / @{tasks[-1]:,} tasks"
        verdicts.append(
            (f"{label} <= {FLAT_TARGET:g}", f"{low / high:.2f}x", low / high <= FLAT_TARGET)
        )
    costs(results)
    print("\nTargets")
    for label, value, passed in verdicts:
        print(f"  {label:80} {value:>7}  {'PASS' if passed else 'MISS'}")
    return all(passed for _, _, passed in verdicts)


def speed_rows(
    rounds: Rounds,
    measures: list[tuple[str, str]],
    mode: str,
    ours_name: str,
    verdicts: list[tuple[str, str, bool]],
) -> str:
    """The table of one mode's measures (label, field), ours against the other side of
    ``rounds``, with a best-round and a median-round verdict each; the other side's name."""
    theirs = next(name for name in rounds[measures[0][1]] if name != ours_name)
    print(f"\n{mode} methods vs {theirs}")
    print(f"  | measure | ours ops/s | {theirs} ops/s | ratio per round | best | median |")
    print("  |---|---|---|---|---|---|")
    for label, field in measures:
        ours, their = rounds[field][ours_name], rounds[field][theirs]
        ratios = [a / b for a, b in zip(ours, their, strict=True)]
        best, middle = max(ratios), statistics.median(ratios)
        each = ", ".join(f"{r:.2f}" for r in ratios)
        speeds = f"{statistics.median(ours):,.0f} | {statistics.median(their):,.0f}"
        print(f"  | {label} | {speeds} | {each} | {best:.2f}x | {middle:.2f}x |")
        verdicts.append((f"{mode}: {label}, best >= {BEST_TARGET:g}", f"{best:.2f}x",
                         best >= BEST_TARGET))  # fmt: skip
        verdicts.append((f"{mode}: {label}, median >= {MEDIAN_TARGET:g}", f"{middle:.2f}x",
                         middle >= MEDIAN_TARGET))  # fmt: skip
    return theirs


def costs(results: dict[str, Any]) -> None:
    """Part 4: each writer's put at NORMAL and FULL, and how near 1.1x of SqliteSaver's put
    even the raw engine comes."""
    size, rounds, calls = results["sizes"][0], results["rounds"], results["calls"]
    print(
        f"\nWhere a sync put's time goes (put on a thread of {size:,} checkpoints, median of "
        f"{rounds} rounds of {calls} calls, the writers taking turns)"
    )
    print("  | writer | µs a put at NORMAL (no fsync: CPU) | at FULL | FULL - NORMAL (fsync) |")
    print("  |---|---|---|---|")

    def medians(part: str) -> dict[str, dict[str, float]]:
        return {
            name: {sync: statistics.median(each) for sync, each in found.items()}
            for name, found in results[part].items()
        }

    median, stepped = medians("costs"), medians("steps")
    for name, each in median.items():
        normal, full = each["NORMAL"], each["FULL"]
        print(f"  | {name} | {normal:.0f} | {full:.0f} | {full - normal:.0f} |")
    ours, theirs, raw = median[OURS], median["SqliteSaver"], median["raw engine"]
    allowed = theirs["FULL"] / MEDIAN_TARGET
    print(
        f"  At FULL, ours took {ours['FULL'] / theirs['FULL']:.2f}x SqliteSaver's time a put; "
        f"{MEDIAN_TARGET:g}x its speed is {allowed:.0f} µs a put. The raw engine's put, no saver "
        f"at all, took {raw['FULL']:.0f} µs ({raw['FULL'] / allowed:.2f}x of that): the commit's "
        f"fsync ({raw['FULL'] - raw['NORMAL']:.0f} µs there) is most of a put, and the CPU "
        f"beside it ours {ours['NORMAL']:.0f} µs, SqliteSaver's {theirs['NORMAL']:.0f}, the raw "
        f"engine's {raw['NORMAL']:.0f}."
    )
    floor = median[STORE_ALONE]
    print(
        f"  Our store's append alone (the saver's record, serialized, and nothing of the saver's "
        f"own work) took {floor['FULL']:.0f} µs at FULL, {theirs['FULL'] / floor['FULL']:.2f}x "
        f"SqliteSaver's speed, and {floor['NORMAL']:.0f} µs at NORMAL "
        f"({theirs['NORMAL'] / floor['NORMAL']:.2f}x): the most any saver on our store could reach."
    )
    rows = median[OUR_ROWS]
    reach = theirs["FULL"] / rows["FULL"]
    verdict = (
        f"below {MEDIAN_TARGET:g}x, no saver writing this layout reaches the step's median target"
        if reach < MEDIAN_TARGET
        else f"{allowed - rows['FULL']:.0f} µs left for a saver's own work at {MEDIAN_TARGET:g}x"
    )
    print(
        f"  Our rows written by the raw engine (the same record and statements, no praisonsession "
        f"code on the way: what the layout itself costs) took {rows['NORMAL']:.0f} µs at NORMAL, "
        f"{theirs['NORMAL'] / rows['NORMAL']:.2f}x SqliteSaver's speed, and {rows['FULL']:.0f} "
        f"µs at FULL ({reach:.2f}x): {verdict}."
    )
    fsyncs = ", ".join(
        f"{median[name]['FULL'] - median[name]['NORMAL']:.0f} µs with {tables}"
        for name, tables in RAW_TABLES.items()
    )
    print(f"  The raw engine's fsync by the tables (a page each) one commit writes: {fsyncs}.")
    one_row, their_step = stepped["raw engine"], stepped["SqliteSaver"]
    print(
        f"  A step (put, then get_tuple of the newest) of the raw engine writing one row, its read "
        f"answered from memory after one PRAGMA data_version, the ceiling of a saver of one row a "
        f"step: {one_row['FULL']:.0f} µs at FULL against SqliteSaver's {their_step['FULL']:.0f} "
        f"({their_step['FULL'] / one_row['FULL']:.2f}x its speed), {one_row['NORMAL']:.0f} against "
        f"{their_step['NORMAL']:.0f} at NORMAL ({their_step['NORMAL'] / one_row['NORMAL']:.2f}x). "
        f"At {MEDIAN_TARGET:g}x such a saver has "
        f"{their_step['FULL'] / MEDIAN_TARGET - one_row['FULL']:.0f} µs a step at FULL for "
        f"everything else it does."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per measure, round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--sizes", default="10,1000", help="checkpoints of history (first,last)")
    parser.add_argument("--listed", type=int, default=2000, help="checkpoints under list()")
    parser.add_argument("--frame-puts", type=int, default=200, help="puts counted for the WAL")
    parser.add_argument("--deletes", type=int, default=60, help="timed delete_thread calls")
    parser.add_argument("--deleted", type=int, default=20, help="checkpoints a deleted thread has")
    parser.add_argument("--tasks", default="1,1000", help="tasks' writes held (first,last)")
    parser.add_argument("--graph-turns", type=int, default=100, help="runs of each graph a round")
    parser.add_argument("--warm-wal", type=int, default=1001 * 4096, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    parser.add_argument("--no-bytes", action="store_true", help="skip the bytes part")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    args.steps = [] if args.no_bytes else [50, 100, 200]
    if args.quick:
        args.calls, args.sizes, args.listed, args.frame_puts = 10, "10,100", 200, 20
        args.deletes, args.deleted, args.tasks, args.warm_wal = 5, 5, "1,100", 0
        args.graph_turns = 5
        args.steps = [] if args.no_bytes else [20, 40]
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.tasks = [int(t) for t in args.tasks.split(",")]
    print(f"Python {sys.version.split()[0]}, {args.rounds} rounds of {args.calls} timed calls "
          "per measure and saver")  # fmt: skip
    results = run(args)
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
