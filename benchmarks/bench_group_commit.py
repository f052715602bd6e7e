"""Group commit: many writers of one process on one SQLite file, at synchronous=FULL.

Run from the repository root, in the frameworks' environment (``make test`` builds it)::

    .venv-frameworks/bin/python benchmarks/bench_group_commit.py [--json results.json] [--quick]

Each writer is a thread with its own event loop (``asyncio.run``) and its own session object
of the OpenAI Agents SDK's protocol, on its own conversation, all on one file; it adds one
turn at a time (``add_items`` of the four items a Runner stores for a turn that called a
tool) and waits for each. Turns per second over all writers, for:

- ``PraisonSession`` with group commit (the default at durability ``"power"``): writes that
  arrive while a commit is on its way to the disk share the next commit and its fsync;
- ``PraisonSession`` with ``?group_commit=off``: the same writers, each write its own commit;
- the SDK's ``SQLiteSession`` (one file, a lock per file in the process, a connection per
  thread), under the same writers.

With ``--frameworks`` (the default), the same for Google ADK (``append_event`` of one event:
``PraisonSessionService`` against ADK's ``SqliteSessionService``) and LangGraph (``put`` of a
checkpoint: ``PraisonSaver`` against ``SqliteSaver``), each writer on a session or thread of
its own.

Every side runs at the same durability: WAL with ``synchronous=FULL``, read back with
``PRAGMA`` from each side's own connection and printed (ADK's ``SqliteSessionService`` opens
its file with SQLite's defaults, a rollback journal: each round puts its file in WAL mode
before the service opens it, as ``bench_adk`` does). The sides take turns round by round
(``--rounds``), each round on fresh files, and the best and the median round of each are
printed; ratios are taken within each round (the sides a moment apart) and their median
printed. Each writer's items are read back at the end of a round and checked equal to what
it added, in order: a lost or reordered write stops the run. The
1-writer row is the single-writer path, grouped against one by one. The rows of tasks of
one event loop also say how late a task of the same loop that asks to wake every
millisecond woke (90th percentile): what a commit on the loop's thread costs its other
tasks.
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
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_openai_agents import turn  # noqa: E402

from praisonsession.integrations.openai_agents import PraisonSession  # noqa: E402

SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
NAMES = ("journal_mode", "synchronous")
TARGET = 2.0  # 8 writers, grouped, against the SDK's SQLiteSession


def pragmas(conn: sqlite3.Connection) -> str:
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = SYNCHRONOUS[conn.execute("PRAGMA synchronous").fetchone()[0]]
    return f"{mode.upper()}, synchronous={sync}"


class Side:
    """One backend under test: ``writer(folder, index)`` makes one writer's async callable
    ``write(n)`` and ``check()``; ``durability(folder)`` reads its pragmas back."""

    def __init__(
        self,
        name: str,
        writer: Callable[[Path, int], Any],
        durability: Any,
        group: Callable[[Path], Any] | None = None,
        sync: bool = False,
        prepare: Callable[[Path], None] | None = None,
    ) -> None:
        self.prepare = prepare  # readies a round's fresh folder before the writers open it
        self.sync = sync  # its writers call put(n) and verify(count) on threads with no loop
        self.name = name
        self.writer = writer
        self.durability = durability
        self.group = group  # ours: the file's commit group, which counts its commits


# -- the OpenAI Agents SDK ---------------------------------------------------------------------


class OpenAIWriter:
    def __init__(self, session: Any) -> None:
        self.session = session

    async def write(self, n: int) -> None:
        await self.session.add_items(turn(n))

    async def check(self, count: int) -> None:
        stored = await self.session.get_items()
        if stored != [item for n in range(count) for item in turn(n)]:
            raise RuntimeError("the items read back differ from those added")

    async def close(self) -> None:
        closing = self.session.close()
        if asyncio.iscoroutine(closing):
            await closing


def ours_openai(grouped: bool) -> Callable[[Path, int], Any]:
    switch = "" if grouped else "&group_commit=off"

    def make(folder: Path, index: int) -> OpenAIWriter:
        url = f"sqlite://{folder}/ours.db?durability=power{switch}"
        return OpenAIWriter(PraisonSession(f"writer-{index}", store=url))

    return make


def ours_durability(folder: Path) -> str:
    session = PraisonSession("probe", store=f"sqlite://{folder}/ours.db?durability=power")
    backend = session._store.backend
    while hasattr(backend, "inner"):  # under the key guard
        backend = backend.inner
    found = pragmas(backend._connection())
    session.close()
    return found


def ours_group(folder: Path) -> Any:
    """The commit group of ours.db, kept alive for the round; it counts commits and writes."""
    from praisonsession.stores.backends.sqlite.shared import shared_file

    return shared_file((folder / "ours.db").resolve(), "FULL")


def sdk_openai(folder: Path, index: int) -> OpenAIWriter:
    from agents import SQLiteSession

    return OpenAIWriter(SQLiteSession(f"writer-{index}", folder / "sdk.db"))


def sdk_durability(folder: Path) -> str:
    from agents import SQLiteSession

    probe = SQLiteSession("probe", folder / "sdk.db")
    found = pragmas(probe._get_connection())  # the SDK's own connection
    probe.close()
    return found


# -- Google ADK --------------------------------------------------------------------------------


class ADKWriter:
    """``append_event`` of one event to a session of its own."""

    def __init__(self, service: Any, index: int) -> None:
        self.service = service
        self.ids = {"app_name": "bench", "user_id": f"u{index}", "session_id": f"s{index}"}
        self.session: Any = None

    async def write(self, n: int) -> None:
        from google.adk.events.event import Event
        from google.genai import types

        if self.session is None:
            self.session = await self.service.create_session(**self.ids)
        reply = types.Content(role="model", parts=[types.Part(text=f"Reply {n}.")])
        made = Event(invocation_id=f"inv-{n}", author="helper", content=reply)
        await self.service.append_event(self.session, made)

    async def check(self, count: int) -> None:
        stored = await self.service.get_session(**self.ids)
        if [e.invocation_id for e in stored.events] != [f"inv-{n}" for n in range(count)]:
            raise RuntimeError("the events read back differ from those appended")

    async def close(self) -> None:
        closing = getattr(self.service, "close", None)
        if closing is not None:
            await closing()


def ours_adk(folder: Path, index: int) -> ADKWriter:
    from praisonsession.integrations.adk import PraisonSessionService

    url = f"sqlite://{folder}/ours.db?durability=power"
    return ADKWriter(PraisonSessionService(url), index)


def adk_sqlite(folder: Path, index: int) -> ADKWriter:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    return ADKWriter(SqliteSessionService(str(folder / "adk.db")), index)


def adk_wal(folder: Path) -> None:
    """ADK's service opens its file with SQLite's defaults (a rollback journal): the file is
    put in WAL mode first, as bench_adk does, so that both sides commit the same way (WAL,
    fsynced at each commit at SQLite's default ``synchronous=FULL``)."""
    with sqlite3.connect(folder / "adk.db") as db:
        db.execute("PRAGMA journal_mode=WAL")


def adk_durability(folder: Path) -> str:
    """Read back on the connection ADK's service commits with (aiosqlite)."""
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    adk_wal(folder)
    service = SqliteSessionService(str(folder / "adk.db"))

    async def read() -> list[Any]:
        async with service._get_db_connection() as db:
            return [(await (await db.execute(f"PRAGMA {n}")).fetchone())[0] for n in NAMES]

    mode, sync = asyncio.run(read())
    return f"{str(mode).upper()}, synchronous={SYNCHRONOUS[sync]} (file put in WAL first)"


# -- LangGraph ---------------------------------------------------------------------------------


class LangGraphWriter:
    """``put`` of one checkpoint to a thread of its own (the sync API, as a sync graph):
    each step changes one channel, ``turn``."""

    def __init__(self, saver: Any, index: int, close: Callable[[], Any]) -> None:
        self.saver = saver
        self.config: dict[str, Any] = {
            "configurable": {"thread_id": f"thread-{index}", "checkpoint_ns": ""}
        }
        self.version: Any = None
        self.close = close

    def put(self, n: int) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        self.version = self.saver.get_next_version(self.version, None)
        made = empty_checkpoint()
        made["channel_values"] = {"turn": n}
        made["channel_versions"] = {"turn": self.version}
        made["versions_seen"] = {"node": {"turn": self.version}}
        metadata = {"source": "loop", "step": n, "parents": {}}
        self.config = self.saver.put(self.config, made, metadata, {"turn": self.version})

    def verify(self, count: int) -> None:
        thread = {"configurable": {**self.config["configurable"]}}
        del thread["configurable"]["checkpoint_id"]  # the latest
        found = self.saver.get_tuple(thread)
        steps = len(list(self.saver.list(thread)))
        self.close()
        if found is None or found.checkpoint["channel_values"]["turn"] != count - 1:
            raise RuntimeError("get_tuple did not return the last checkpoint put")
        if steps != count:
            raise RuntimeError(f"{steps} checkpoints listed, {count} put")


def ours_langgraph(folder: Path, index: int) -> LangGraphWriter:
    from praisonsession.integrations.langgraph import PraisonSaver

    saver = PraisonSaver(f"sqlite://{folder}/ours.db?durability=power")
    return LangGraphWriter(saver, index, lambda: None)


def langgraph_sqlite(folder: Path, index: int) -> LangGraphWriter:
    from langgraph.checkpoint.sqlite import SqliteSaver

    opened = SqliteSaver.from_conn_string(str(folder / "lg.db"))
    saver = opened.__enter__()
    return LangGraphWriter(saver, index, lambda: opened.__exit__(None, None, None))


def langgraph_durability(folder: Path) -> str:
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(folder / "lg.db")) as saver:
        saver.setup()
        return pragmas(saver.conn)


# -- running -----------------------------------------------------------------------------------


def run_side(
    side: Side, folder: Path, writers: int, turns: int
) -> tuple[float, float | None, float | None]:
    """Turns per second of ``writers`` threads, each adding ``turns`` turns, all started
    together, and (ours) writes per commit; each writer's writes are read back and checked."""
    folder.mkdir(parents=True, exist_ok=True)
    shared = None if side.group is None else side.group(folder)
    start = threading.Barrier(writers + 1)
    errors: list[BaseException] = []

    def thread(index: int) -> None:
        async def main() -> None:
            writer = side.writer(folder, index)
            try:
                await writer.write(0)  # the file, its schema and this writer's session exist
                start.wait()
                for n in range(1, turns + 1):
                    await writer.write(n)
                start.wait()
                await writer.check(turns + 1)
            finally:
                await writer.close()

        def plain() -> None:  # a synchronous API, on a thread with no loop
            writer = side.writer(folder, index)
            writer.put(0)
            start.wait()
            for n in range(1, turns + 1):
                writer.put(n)
            start.wait()
            writer.verify(turns + 1)

        try:
            if side.sync:
                plain()
            else:
                asyncio.run(main())
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            start.abort()

    threads = [threading.Thread(target=thread, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    try:
        start.wait()
        began = time.perf_counter()
        start.wait()
        elapsed = time.perf_counter() - began
    except threading.BrokenBarrierError:
        elapsed = 0.0
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{side.name}: {errors[0]!r}") from errors[0]
    per_commit = None
    if shared is not None and shared.group is not None and shared.group.commits:
        per_commit = shared.group.writes / shared.group.commits
    return writers * turns / elapsed, per_commit, None


def run_tasks(
    side: Side, folder: Path, writers: int, turns: int
) -> tuple[float, float | None, float | None]:
    """Turns per second of ``writers`` tasks of one event loop (one thread), each adding
    ``turns`` turns, (ours) writes per commit, and how long the loop was held: a task that
    asks to wake every millisecond meanwhile records how late it woke, 90th percentile, in
    ms (a commit run on the loop's thread holds every task of the loop for its fsync)."""
    folder.mkdir(parents=True, exist_ok=True)
    shared = None if side.group is None else side.group(folder)
    late: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            asked = time.perf_counter()
            await asyncio.sleep(0.001)
            late.append(time.perf_counter() - asked - 0.001)

    async def main() -> float:
        everyone = [side.writer(folder, i) for i in range(writers)]
        try:
            for writer in everyone:
                await writer.write(0)

            async def adds(writer: Any) -> None:
                for n in range(1, turns + 1):
                    await writer.write(n)

            stop = asyncio.Event()
            ticking = asyncio.ensure_future(ticker(stop))
            began = time.perf_counter()
            await asyncio.gather(*(adds(writer) for writer in everyone))
            elapsed = time.perf_counter() - began
            stop.set()
            await ticking
            for writer in everyone:
                await writer.check(turns + 1)
        finally:
            for writer in everyone:
                await writer.close()
        return elapsed

    try:
        elapsed = asyncio.run(main())
    except Exception as exc:
        raise RuntimeError(f"{side.name}: {exc!r}") from exc
    per_commit = None
    if shared is not None and shared.group is not None and shared.group.commits:
        per_commit = shared.group.writes / shared.group.commits
    held = statistics.quantiles(late, n=10)[-1] if len(late) > 1 else 0.0
    return writers * turns / elapsed, per_commit, held * 1e3


def bench(
    sides: list[Side], writers: int, turns: int, rounds: int, run: Any = run_side
) -> dict[str, Any]:
    """Each side's rounds, the order of the sides turning round by round; a round that
    fails (a framework's own "database is locked") is counted, not hidden. Each side's ratio
    to the last side (the framework's own) is taken within each round, where the two ran a
    moment apart, and the median of those is kept: the disk's state drifts between rounds."""
    figures: dict[str, list[float]] = {side.name: [] for side in sides}
    by_round: dict[str, list[float | None]] = {side.name: [] for side in sides}
    shared: dict[str, list[float]] = {side.name: [] for side in sides}
    stalls: dict[str, list[float]] = {side.name: [] for side in sides}
    failed: dict[str, list[str]] = {side.name: [] for side in sides}
    for turn_of in range(rounds):
        at = turn_of % len(sides)
        for side in sides[at:] + sides[:at]:
            folder = Path(tempfile.mkdtemp(prefix="ps-bench-gc-"))
            try:
                if side.prepare is not None:
                    side.prepare(folder)
                rate, per_commit, stall = run(side, folder, writers, turns)
            except RuntimeError as exc:
                failed[side.name].append(str(exc.__cause__ or exc))
                by_round[side.name].append(None)
                continue
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            figures[side.name].append(rate)
            by_round[side.name].append(rate)
            if per_commit is not None:
                shared[side.name].append(per_commit)
            if stall is not None:
                stalls[side.name].append(stall)
    reference = by_round[sides[-1].name]

    def paired(name: str) -> float:
        ratios = [
            ours / theirs
            for ours, theirs in zip(by_round[name], reference, strict=True)
            if ours is not None and theirs
        ]
        return statistics.median(ratios) if ratios else float("nan")

    return {
        name: {
            "best": max(found, default=0.0),
            "median": statistics.median(found) if found else 0.0,
            "ratio": paired(name),
            "rounds": found,
            "failed": failed[name],
            "writes_per_commit": statistics.median(shared[name]) if shared[name] else None,
            "loop_held_ms": statistics.median(stalls[name]) if stalls[name] else None,
        }
        for name, found in figures.items()
    }


def bench_one(sides: list[Side], calls: int, rounds: int) -> dict[str, Any]:
    """One writer: the sides take turns call by call on one loop; median µs per call."""
    times: dict[str, list[float]] = {side.name: [] for side in sides}
    folder = Path(tempfile.mkdtemp(prefix="ps-bench-gc-"))

    async def main() -> None:
        writers = {side.name: side.writer(folder / str(i), 0) for i, side in enumerate(sides)}
        try:
            for writer in writers.values():
                await writer.write(0)
            n = 0
            names = list(writers)
            for _ in range(rounds * calls):
                n += 1
                at = n % len(names)  # who goes first turns: the order costs nobody alone
                for name in names[at:] + names[:at]:
                    writer = writers[name]
                    began = time.perf_counter()
                    await writer.write(n)
                    times[name].append(time.perf_counter() - began)
            for writer in writers.values():
                await writer.check(n + 1)
        finally:
            for writer in writers.values():
                await writer.close()

    try:
        for i in range(len(sides)):
            (folder / str(i)).mkdir(parents=True)
        asyncio.run(main())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {name: {"median_us": statistics.median(t) * 1e6} for name, t in times.items()}


def durabilities(sides: list[Side]) -> dict[str, str]:
    folder = Path(tempfile.mkdtemp(prefix="ps-bench-gc-"))
    try:
        return {side.name: side.durability(folder) for side in sides}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def adk_sides() -> list[Side]:
    return [
        Side("PraisonSessionService", ours_adk, ours_durability, ours_group),
        Side("SqliteSessionService (ADK)", adk_sqlite, adk_durability, prepare=adk_wal),
    ]


def langgraph_sides() -> list[Side]:
    return [
        Side("PraisonSaver", ours_langgraph, ours_durability, ours_group, sync=True),
        Side("SqliteSaver (LangGraph)", langgraph_sqlite, langgraph_durability, sync=True),
    ]


def openai_sides() -> list[Side]:
    return [
        Side("PraisonSession, group commit", ours_openai(True), ours_durability, ours_group),
        Side("PraisonSession, one by one", ours_openai(False), ours_durability, ours_group),
        Side("SQLiteSession (SDK)", sdk_openai, sdk_durability),
    ]


def report(title: str, results: dict[str, Any], reference: str) -> None:
    print(f"\n{title}")
    for name, how in results["durability"].items():
        print(f"  {name}: {how}")
    tables = [(f"{w} writers (threads)", str(w)) for w in results["writers"] if w > 1]
    tables += [(f"{key.split()[0]} writers (tasks of one event loop)", key) for key in results]
    for label, key in tables:
        if key not in results or (label.endswith("loop)") and not key.endswith("tasks")):
            continue
        rows = results[key]
        held = any(found["loop_held_ms"] is not None for found in rows.values())
        extra = " a 1 ms timer's lateness, p90 (ms) |" if held else ""
        print(f"\n  {label}:")
        print(
            f"  | side | writes/s, median | best | / {reference}, median of rounds "
            "| writes per commit |" + extra
        )
        print("  |---|---|---|---|---|" + ("---|" if held else ""))
        for name, found in rows.items():
            ratio = found["ratio"]
            shared = found["writes_per_commit"]
            per_commit = "-" if shared is None else f"{shared:.1f}"
            stall = f" {found['loop_held_ms']:.1f} |" if held else ""
            print(
                f"  | {name} | {found['median']:,.0f} | {found['best']:,.0f} | {ratio:.2f}x "
                f"| {per_commit} |{stall}"
            )
        for name, found in rows.items():
            if found["failed"]:
                rounds = len(found["failed"]) + len(found["rounds"])
                print(
                    f"  {name} failed in {len(found['failed'])} of {rounds} rounds: "
                    f"{found['failed'][0]}"
                )
    one = results.get("1")
    if one is not None:
        print("\n  1 writer, the sides taking turns call by call (median µs per call):")
        print(f"  | side | µs per write | writes/s | {reference} / side |")
        print("  |---|---|---|---|")
        base = one[reference]["median_us"]
        for name, found in one.items():
            us = found["median_us"]
            print(f"  | {name} | {us:,.0f} | {1e6 / us:,.0f} | {base / us:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", default="8,1", help="writer counts (threads)")
    parser.add_argument("--turns", type=int, default=150, help="writes each writer makes")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every side")
    parser.add_argument("--no-frameworks", action="store_true", help="the OpenAI rows only")
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    if args.quick:
        args.turns, args.rounds = 10, 1
    counts = [int(w) for w in args.writers.split(",")]
    families = [("OpenAI Agents SDK, add_items of one turn", openai_sides(), counts)]
    if not args.no_frameworks:
        many = [c for c in counts if c > 1]
        families += [
            ("Google ADK, append_event of one event", adk_sides(), many),
            ("LangGraph, put of one checkpoint (sync)", langgraph_sides(), many),
        ]
    print(
        f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}; {args.turns} writes "
        f"per writer, {args.rounds} rounds"
    )
    everything: dict[str, Any] = {}
    for title, sides, writer_counts in families:
        results: dict[str, Any] = {"writers": writer_counts, "durability": durabilities(sides)}
        for writers in writer_counts:
            if writers == 1:
                results["1"] = bench_one(sides, args.turns, args.rounds)
            else:
                results[str(writers)] = bench(sides, writers, args.turns, args.rounds)
                if not sides[0].sync:
                    key = f"{writers} tasks"
                    results[key] = bench(sides, writers, args.turns, args.rounds, run_tasks)
        report(title, results, sides[-1].name)
        everything[title] = results
    eight = everything[families[0][0]].get("8")
    if eight is not None:
        ratio = eight["PraisonSession, group commit"]["ratio"]
        verdict = "PASS" if ratio >= TARGET else "MISS"
        target = f"8 writers, group commit >= {TARGET:g}x SQLiteSession"
        print(f"\nTarget: {target}: {ratio:.2f}x {verdict}")
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=2))


if __name__ == "__main__":
    main()
