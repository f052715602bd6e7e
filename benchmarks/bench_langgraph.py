"""LangGraph checkpoints: PraisonSaver next to LangGraph's own SQLite savers, in one run.

Run from the repository root, in the frameworks' environment (``make test`` builds it)::

    .venv-frameworks/bin/python benchmarks/bench_langgraph.py [--json results.json] [--quick]

Two parts:

1. **Bytes stored**: a graph that appends one message per step (``tests/frameworks/lg_graphs.py``)
   runs 50, 100 and 200 steps on a fresh SQLite file per saver; the file is compacted
   (``VACUUM INTO``) and its size printed, for ``PraisonSaver``, ``SqliteSaver`` and
   ``PraisonSaver`` with LangGraph's ``DeltaChannel``. Targets: ours no more than
   ``SqliteSaver`` at every size, and with ``DeltaChannel`` growth linear in steps (the bytes
   of 200 steps at most 2.3x those of 100; a value copied whole per step makes it near 4x).
2. **Speed**, the sync methods against ``SqliteSaver`` and the async ones against
   ``AsyncSqliteSaver``, taking turns call by call on one thread each: one step (``put`` of a
   checkpoint, then ``get_tuple`` of the thread's latest) at 10 and 1,000 checkpoints of
   history, and ``list(limit=10)`` at 10,000 checkpoints. Median µs; ratio = theirs / ours,
   at least 1.0 where ours is as fast; flat: ours at 1,000 within 1.2x of ours at 10.

Durability, stated in the output: ours on ``sqlite://...?durability=power`` (WAL,
``synchronous=FULL``, the WAL fsynced at every commit); LangGraph's savers set WAL and keep
SQLite's default ``synchronous``, read from their own connection. LangGraph's ``PostgresSaver``
is not installed in this environment (``langgraph-checkpoint-postgres``), so there is no
PostgreSQL pair.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "frameworks"))  # the graphs of the tests

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: E402

from lg_graphs import chat_graph, chat_input  # noqa: E402
from praisonsession.integrations.langgraph import PraisonSaver  # noqa: E402

RATIO_TARGET = 1.0
FLAT_TARGET = 1.2
GROWTH_TARGET = 2.3
SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


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

    def next(self) -> tuple[dict[str, Any], Any, dict[str, Any], dict[str, Any]]:
        made, versions = checkpoint(self.saver, self.last, self.steps)
        metadata = {"source": "loop", "step": self.steps, "parents": {}}
        self.last = made
        self.steps += 1
        return self.config, made, metadata, versions

    def put(self) -> None:
        config, made, metadata, versions = self.next()
        self.config = self.saver.put(config, made, metadata, versions)

    async def aput(self) -> None:
        config, made, metadata, versions = self.next()
        self.config = await self.saver.aput(config, made, metadata, versions)

    def latest(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.config["configurable"]["thread_id"]}}


def timed_turns(calls: dict[str, Callable[[], Any]], n: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(n):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return times


async def atimed_turns(
    calls: dict[str, Callable[[], Awaitable[Any]]], n: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(n):
        for name, call in calls.items():
            start = time.perf_counter()
            await call()
            times[name].append(time.perf_counter() - start)
    return times


def check_latest(saver: Any, thread: Thread, name: str) -> None:
    found = saver.get_tuple(thread.latest())
    if found is None or found.checkpoint["channel_values"]["step"] != thread.steps - 1:
        raise RuntimeError(f"{name}: get_tuple did not return the last checkpoint put")


def sync_speed(savers: dict[str, Any], sizes: list[int], listed: int, n: int) -> dict[str, Any]:
    figures: dict[str, dict[str, float]] = {name: {} for name in savers}
    for size in sizes:
        threads = {name: Thread(saver, f"speed-{size}") for name, saver in savers.items()}
        for thread in threads.values():
            for _ in range(size):
                thread.put()

        def step(thread: Thread) -> Callable[[], Any]:
            def one() -> None:
                thread.put()
                thread.saver.get_tuple(thread.latest())

            return one

        times = timed_turns({name: step(t) for name, t in threads.items()}, n)
        for name, thread in threads.items():
            check_latest(thread.saver, thread, name)
            figures[name][f"step_{size}_us"] = statistics.median(times[name]) * 1e6
    threads = {name: Thread(saver, "listed") for name, saver in savers.items()}
    for thread in threads.values():
        for _ in range(listed):
            thread.put()

    def lister(thread: Thread) -> Callable[[], Any]:
        return lambda: list(thread.saver.list(thread.latest(), limit=10))

    times = timed_turns({name: lister(t) for name, t in threads.items()}, n)
    for name, thread in threads.items():
        got = list(thread.saver.list(thread.latest(), limit=10))
        steps = [t.checkpoint["channel_values"]["step"] for t in got]
        if steps != list(range(listed - 1, listed - 11, -1)):
            raise RuntimeError(f"{name}: list(limit=10) did not return the 10 newest")
        figures[name]["list_us"] = statistics.median(times[name]) * 1e6
    return figures


async def async_speed(
    savers: dict[str, Any], sizes: list[int], listed: int, n: int
) -> dict[str, Any]:
    figures: dict[str, dict[str, float]] = {name: {} for name in savers}
    for size in sizes:
        threads = {name: Thread(saver, f"aspeed-{size}") for name, saver in savers.items()}
        for thread in threads.values():
            for _ in range(size):
                await thread.aput()

        def step(thread: Thread) -> Callable[[], Awaitable[Any]]:
            async def one() -> None:
                await thread.aput()
                await thread.saver.aget_tuple(thread.latest())

            return one

        times = await atimed_turns({name: step(t) for name, t in threads.items()}, n)
        for name, thread in threads.items():
            found = await thread.saver.aget_tuple(thread.latest())
            if found.checkpoint["channel_values"]["step"] != thread.steps - 1:
                raise RuntimeError(f"{name}: aget_tuple did not return the last checkpoint")
            figures[name][f"step_{size}_us"] = statistics.median(times[name]) * 1e6
    threads = {name: Thread(saver, "alisted") for name, saver in savers.items()}
    for thread in threads.values():
        for _ in range(listed):
            await thread.aput()

    def lister(thread: Thread) -> Callable[[], Awaitable[Any]]:
        async def listing() -> list[Any]:
            return [t async for t in thread.saver.alist(thread.latest(), limit=10)]

        return listing

    times = await atimed_turns({name: lister(t) for name, t in threads.items()}, n)
    for name in savers:
        figures[name]["list_us"] = statistics.median(times[name]) * 1e6
    return figures


def lg_durability(conn: sqlite3.Connection) -> str:
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = SYNC_NAMES[conn.execute("PRAGMA synchronous").fetchone()[0]]
    return f"{mode.upper()}, synchronous={sync}"


def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {"sizes": sizes, "listed": args.listed, "bytes": {}}
    folder = Path(tempfile.mkdtemp(prefix="ps-bench-lg-"))
    try:
        for steps in args.steps:
            results["bytes"][steps] = stored_bytes(folder, steps)
        ours = PraisonSaver(ours_url(folder / "sync-ours.db"))
        with SqliteSaver.from_conn_string(str(folder / "sync-lg.db")) as theirs:
            theirs.setup()
            results["durability"] = {
                "PraisonSaver": "WAL, synchronous=FULL (durability 'power')",
                "SqliteSaver": lg_durability(theirs.conn),
            }
            savers = {"PraisonSaver": ours, "SqliteSaver": theirs}
            results["sync"] = sync_speed(savers, sizes, args.listed, args.calls)
        ours.close()

        async def asynchronous() -> dict[str, Any]:
            mine = PraisonSaver(ours_url(folder / "async-ours.db"))
            async with AsyncSqliteSaver.from_conn_string(str(folder / "async-lg.db")) as lg:
                await lg.setup()
                savers = {"PraisonSaver": mine, "AsyncSqliteSaver": lg}
                figures = await async_speed(savers, sizes, args.listed, args.calls)
            await mine.aclose()
            return figures

        results["async"] = asyncio.run(asynchronous())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results


# -- report -----------------------------------------------------------------------------------


def report(results: dict[str, Any]) -> bool:
    verdicts: list[tuple[str, str, bool]] = []
    steps = sorted(results["bytes"])
    names = list(results["bytes"][steps[0]])
    print("\nBytes stored by a thread that appends one message per step (compacted SQLite file)")
    print(f"  | steps | {' | '.join(names)} |")
    print(f"  |---|{'---|' * len(names)}")
    for n in steps:
        row = results["bytes"][n]
        print(f"  | {n} | {' | '.join(f'{row[k]:,}' for k in names)} |")
    for n in steps:
        row = results["bytes"][n]
        ratio = row["SqliteSaver"] / row["PraisonSaver"]
        verdicts.append((f"bytes @{n} steps: SqliteSaver / ours >= 1", f"{ratio:.2f}x", ratio >= 1))
    if len(steps) >= 2:
        low, high = steps[-2], steps[-1]
        delta = "PraisonSaver + DeltaChannel"
        growth = results["bytes"][high][delta] / results["bytes"][low][delta]
        verdicts.append(
            (f"DeltaChannel bytes @{high} / @{low} <= {GROWTH_TARGET:g}", f"{growth:.2f}x",
             growth <= GROWTH_TARGET)
        )  # fmt: skip
    print("\nDurability")
    for name, how in results["durability"].items():
        print(f"  {name}: {how}")
    print("  AsyncSqliteSaver: as SqliteSaver (the same setup, through aiosqlite)")
    sizes, listed = results["sizes"], results["listed"]
    measures = [(f"put + get_tuple @{s:,} checkpoints", f"step_{s}_us") for s in sizes]
    measures.append((f"list(limit=10) @{listed:,} checkpoints", "list_us"))
    for mode in ("sync", "async"):
        figures = results[mode]
        who = list(figures)
        ours = figures["PraisonSaver"]
        print(f"\n{mode} methods, median µs")
        print(f"  | measure | {' | '.join(who)} | ratio |")
        print(f"  |---|{'---|' * len(who)}---|")
        for label, field in measures:
            cells = " | ".join(f"{figures[n][field]:,.0f}" for n in who)
            ratios = [(n, figures[n][field] / ours[field]) for n in who if n != "PraisonSaver"]
            print(f"  | {label} | {cells} | {', '.join(f'{r:.2f}x' for _, r in ratios)} |")
            for n, ratio in ratios:
                verdicts.append(
                    (f"{mode}: {label} vs {n} >= {RATIO_TARGET:g}", f"{ratio:.2f}x", ratio >= 1)
                )
        flat = ours[f"step_{sizes[-1]}_us"] / ours[f"step_{sizes[0]}_us"]
        verdicts.append(
            (f"{mode}: step flat, @{sizes[-1]:,} / @{sizes[0]:,} <= {FLAT_TARGET:g}",
             f"{flat:.2f}x", flat <= FLAT_TARGET)
        )  # fmt: skip
    print("\nTargets (ratio: LangGraph's figure / ours)")
    for label, value, passed in verdicts:
        print(f"  {label:62} {value:>7}  {'PASS' if passed else 'MISS'}")
    return all(passed for _, _, passed in verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per measure")
    parser.add_argument("--sizes", default="10,1000", help="checkpoints of history (first,last)")
    parser.add_argument("--listed", type=int, default=10000, help="checkpoints under list()")
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    args.steps = [50, 100, 200]
    if args.quick:
        args.calls, args.sizes, args.listed, args.steps = 10, "10,100", 200, [20, 40]
    print(f"Python {sys.version.split()[0]}, {args.calls} timed calls per measure and saver")
    results = run(args)
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
