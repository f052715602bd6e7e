"""OpenAI Agents SDK sessions: PraisonSession next to the SDK's own backends, in one run.

Run from the repository root, in the frameworks' environment (``make test`` builds it)::

    .venv-frameworks/bin/python benchmarks/bench_openai_agents.py [--json results.json] [--quick]

Every operation of the SDK's protocol, each on its own session per backend, on the same
items, from one event loop:

1. ``add_items`` of one turn: the four items a Runner stores for a turn that called a tool
   (the user's message, the function call, its output, the assistant's answer).
2. ``get_items(limit=20)`` at 10, 100 and 10,000 items of history.
3. ``get_items()`` (no limit: the whole history) at 100 items.
4. ``pop_item`` of a session of 100 items; the popped item is added back after the timed
   call, so every pop is of the same session.
5. ``clear_session`` of a session of 100 items; the items are added back after the timed
   call.

Each pair runs at the same durability, read back from each side's own connection and printed:

- SQLite: ``PraisonSession`` on ``sqlite://`` at durability ``"power"`` against the SDK's
  ``SQLiteSession``: both WAL with ``synchronous=FULL`` (the WAL is fsynced at every commit),
  as ``PRAGMA journal_mode`` and ``PRAGMA synchronous`` answer on the connection each
  commits with; and ``SQLAlchemySession`` on ``sqlite+aiosqlite`` (SQLite's defaults:
  rollback journal, ``synchronous=FULL``).
- Redis: ``PraisonSession`` on ``redis://`` against the SDK's ``RedisSession`` on the same
  server, which decides what a write survives (its ``appendonly`` / ``appendfsync`` are
  printed); a ``redis-server`` is started on 127.0.0.1 (``tests/redis_server.py``).

The backends take turns call by call (ours, theirs, ours ...), so that a change in the
machine's state touches them alike, in ``--rounds`` rounds (3 by default); what is done
after a timed call to restore its session (a pop's item, a clear's items) is not timed. Each
round gives each backend's operations per second (calls / their summed time) and the ratio
ours / theirs; a row passes when the best round's ratio is at least 1.0 and the median
round's at least 1.1. Flat: ours at 10,000 items of history within 1.2x of ours at 100 (median
rounds), the smallest history that fills the limit: at 10 items a read returns 10, at 100 and
10,000 it returns 20, so 10 against 10,000 would time twice the items, not the history's
growth. The reads of every size take turns call by call as well, so that a load moving
between sizes does not read as growth. Every backend's items are read back at the end and
checked equal to what was added: a lost or reordered item stops the run.
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
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the redis-server helper of the test suite

from raw_engines import redis_server_durability  # noqa: E402

from praisonsession.integrations.openai_agents import PraisonSession  # noqa: E402
from redis_server import RedisServer  # noqa: E402

RATIO_TARGET = 1.0
MEDIAN_TARGET = 1.1
FLAT_TARGET = 1.2
LIMIT = 20
#: The items of the sessions read whole, popped from and cleared.
WHOLE = 100


def turn(n: int) -> list[dict[str, Any]]:
    """The items a Runner stores for turn ``n`` of a conversation that calls a tool."""
    call_id = f"call_{n}"
    return [
        {"role": "user", "content": f"What is the weather in city {n}? ☀"},
        {
            "type": "function_call",
            "call_id": call_id,
            "name": "get_weather",
            "arguments": json.dumps({"city": f"city {n}"}),
        },
        {"type": "function_call_output", "call_id": call_id, "output": f"Sunny, {n % 30} °C"},
        {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": f"It is sunny in city {n}.", "annotations": []}
            ],
        },
    ]


def history(size: int) -> list[dict[str, Any]]:
    """``size`` items of earlier turns."""
    items: list[dict[str, Any]] = []
    n = 0
    while len(items) < size:
        items.extend(turn(n))
        n += 1
    return items[:size]


# -- the backends -----------------------------------------------------------------------------


class Backend:
    """One implementation of the SDK's protocol: how to make a session of it, and close it."""

    def __init__(self, name: str, make: Callable[[str], Any], close: Callable[[Any], Any]) -> None:
        self.name = name
        self.make = make
        self.close = close


def _sync_close(session: Any) -> None:
    session.close()


async def _async_close(session: Any) -> None:
    await session.close()


async def _dispose(session: Any) -> None:
    await session.engine.dispose()


_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def _pragmas(conn: Any) -> str:
    """What a connection commits with, as SQLite answers."""
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = _SYNCHRONOUS[conn.execute("PRAGMA synchronous").fetchone()[0]]
    return f"{mode.upper()}, synchronous={sync}"


async def sqlite_durability(folder: Path) -> dict[str, str]:
    """Each side's journal mode and synchronous, read back from the connection it commits with."""
    from agents import SQLiteSession

    from praisonsession.stores.guard import beneath

    ours = PraisonSession("probe", store=f"sqlite://{folder}/ours.db?durability=power")
    await ours.add_items(turn(0))
    read_back = " (read back from its connection)"
    durability = {"PraisonSession": _pragmas(beneath(ours.store.backend)._connection()) + read_back}
    await ours.clear_session()
    ours.close()
    theirs = SQLiteSession("probe", folder / "sdk.db")
    durability["SQLiteSession"] = _pragmas(theirs._get_connection()) + read_back  # the SDK's
    theirs.close()
    check = sqlite3.connect(folder / "probe-defaults.db")  # what SQLAlchemySession runs at
    durability["SQLAlchemySession"] = _pragmas(check).replace(",", " journal,") + " (defaults)"
    check.close()
    return durability


def sqlite_backends(folder: Path) -> tuple[Backend, list[Backend]]:
    from agents import SQLiteSession

    ours = Backend(
        "PraisonSession",
        lambda sid: PraisonSession(sid, store=f"sqlite://{folder}/ours.db?durability=power"),
        _sync_close,
    )
    theirs = [
        Backend("SQLiteSession", lambda sid: SQLiteSession(sid, folder / "sdk.db"), _sync_close)
    ]
    try:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    except ImportError:  # sqlalchemy or aiosqlite not installed: the row is skipped
        return ours, theirs
    url = f"sqlite+aiosqlite:///{folder}/sqlalchemy.db"
    theirs.append(
        Backend(
            "SQLAlchemySession",
            lambda sid: SQLAlchemySession.from_url(sid, url=url, create_tables=True),
            _dispose,
        )
    )
    return ours, theirs


def redis_backends(url: str) -> tuple[Backend, list[Backend]]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    ours = Backend(
        "PraisonSession",
        lambda sid: PraisonSession(sid, store=f"{url}?key_prefix={prefix}:ours:"),
        _sync_close,
    )
    try:
        from agents.extensions.memory.redis_session import RedisSession
    except ImportError:
        return ours, []
    theirs = Backend(
        "RedisSession",
        lambda sid: RedisSession.from_url(sid, url=url, key_prefix=f"{prefix}:sdk"),
        _async_close,
    )
    return ours, [theirs]


# -- timing -----------------------------------------------------------------------------------


async def interleaved(
    calls: dict[str, Callable[[], Awaitable[Any]]],
    times: dict[str, list[float]],
    n: int,
    restore: Callable[[str, Any], Awaitable[None]] | None = None,
) -> None:
    """``n`` calls of each, taking turns call by call: the machine's state at any moment
    touches every backend alike. ``restore(name, result)``, untimed, undoes a call's change."""
    for _ in range(n):
        for name, call in calls.items():
            start = time.perf_counter()
            result = await call()
            times[name].append(time.perf_counter() - start)
            if restore is not None:
                await restore(name, result)


def rounds_of(times: list[dict[str, list[float]]], name: str) -> list[float]:
    """``name``'s operations per second in each round."""
    return [len(round_[name]) / sum(round_[name]) for round_ in times]


async def bench_pair(
    ours: Backend, theirs: list[Backend], args: argparse.Namespace
) -> dict[str, Any]:
    """Every measure of one store: ours and theirs taking turns, call by call, round by round.
    Per measure and backend: ops/s in each round."""
    everyone = [ours, *theirs]
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {b.name: {} for b in everyone}
    sessions: dict[tuple[str, str], Any] = {}
    try:
        for backend in everyone:  # the histories, written in batches of a few turns
            for size in sizes:
                session = sessions[backend.name, f"h{size}"] = backend.make(f"history-{size}")
                items = history(size)
                for at in range(0, size, 400):
                    await session.add_items(items[at : at + 400])
            sessions[backend.name, "adds"] = backend.make("adds")
            for kind in ("whole", "pops", "clears"):
                session = sessions[backend.name, kind] = backend.make(kind)
                await session.add_items(history(WHOLE))
        added: dict[str, int] = {b.name: 0 for b in everyone}
        adds: list[dict[str, list[float]]] = []
        reads: dict[int, list[dict[str, list[float]]]] = {size: [] for size in sizes}
        others: dict[str, list[dict[str, list[float]]]] = {
            "get_items_all": [], "pop_item": [], "clear_session": []
        }  # fmt: skip
        whole = history(WHOLE)

        def on(kind: str, op: str) -> dict[str, Callable[[], Awaitable[Any]]]:
            return {b.name: getattr(sessions[b.name, kind], op) for b in everyone}

        async def put_back(name: str, popped: Any) -> None:
            if popped != whole[-1]:
                raise RuntimeError(f"{name}: pop_item returned {popped!r}, not the last item")
            await sessions[name, "pops"].add_items([popped])

        async def refill(name: str, _: Any) -> None:
            await sessions[name, "clears"].add_items(whole)

        timed_others = {
            "get_items_all": (on("whole", "get_items"), None, args.reads),
            "pop_item": (on("pops", "pop_item"), put_back, args.adds),
            "clear_session": (on("clears", "clear_session"), refill, args.adds),
        }

        def adder(name: str) -> Callable[[], Awaitable[None]]:
            async def add() -> None:
                await sessions[name, "adds"].add_items(turn(added[name]))
                added[name] += 1

            return add

        def reader(name: str, size: int) -> Callable[[], Awaitable[Any]]:
            session = sessions[name, f"h{size}"]
            return lambda: session.get_items(limit=LIMIT)

        for name in added:  # warm up: each side's first calls open files and connections
            for _ in range(3):
                await adder(name)()
                for size in sizes:
                    await reader(name, size)()
                for calls, restore, _n in timed_others.values():
                    result = await calls[name]()
                    if restore is not None:
                        await restore(name, result)
        for _ in range(args.rounds):
            adds.append({b.name: [] for b in everyone})
            await interleaved({b.name: adder(b.name) for b in everyone}, adds[-1], args.adds)
            # every size in the same turns: a load that moved between sizes would read as growth
            sized = {f"{b.name}@{size}": reader(b.name, size) for size in sizes for b in everyone}
            read_times: dict[str, list[float]] = {name: [] for name in sized}
            await interleaved(sized, read_times, args.reads)
            for size in sizes:
                reads[size].append({b.name: read_times[f"{b.name}@{size}"] for b in everyone})
            for field, (calls, restore, n) in timed_others.items():
                others[field].append({b.name: [] for b in everyone})
                await interleaved(calls, others[field][-1], n, restore)
        for backend in everyone:  # every item back, in order, equal to what was added
            stored = await sessions[backend.name, "adds"].get_items()
            expected = [item for n in range(added[backend.name]) for item in turn(n)]
            if stored != expected:
                raise RuntimeError(f"{backend.name}: the items read back differ from those added")
            for size in sizes:
                tail = await sessions[backend.name, f"h{size}"].get_items(limit=LIMIT)
                if tail != _paired_tail(history(size), LIMIT):
                    wrong = f"get_items(limit={LIMIT}) at {size} items"
                    raise RuntimeError(f"{backend.name}: {wrong} differs from the last items")
            for kind in ("whole", "pops", "clears"):
                if await sessions[backend.name, kind].get_items() != whole:
                    raise RuntimeError(f"{backend.name}: the {kind} session lost its items")
            figures = results[backend.name]
            figures["add_items"] = rounds_of(adds, backend.name)
            for size in sizes:
                figures[f"get_items_{size}"] = rounds_of(reads[size], backend.name)
            for field, times in others.items():
                figures[field] = rounds_of(times, backend.name)
    finally:
        for (name, _), session in sessions.items():
            backend = next(b for b in everyone if b.name == name)
            done = backend.close(session)
            if asyncio.iscoroutine(done):
                await done
    return results


def _paired_tail(items: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The last ``limit`` items, without an output whose call is not among them (what ours
    returns; the SDK's backends return the last ``limit`` as they are)."""
    tail = items[-limit:]
    calls = {item["call_id"] for item in tail if item.get("type") == "function_call"}
    return [i for i in tail if i.get("type") != "function_call_output" or i["call_id"] in calls]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": [int(s) for s in args.sizes.split(",")]}
    folder = Path(tempfile.mkdtemp(prefix="ps-bench-oa-"))
    try:
        if not args.no_sqlite:
            durability = await sqlite_durability(folder)
            ours, theirs = sqlite_backends(folder)
            durability = {b.name: durability[b.name] for b in [ours, *theirs]}
            results["sqlite"] = {"durability": durability, **await bench_pair(ours, theirs, args)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.no_redis:
        return results
    server = RedisServer().start()
    try:
        ours, theirs = redis_backends(server.url)
        results["redis"] = {
            "durability": redis_server_durability(server.url),
            **await bench_pair(ours, theirs, args),
        }
    finally:
        server.stop()
    return results


# -- report -----------------------------------------------------------------------------------


def report(results: dict[str, Any]) -> bool:
    sizes = results["sizes"]
    verdicts: list[tuple[str, str, bool]] = []
    for store in ("sqlite", "redis"):
        if store not in results:
            continue
        figures = results[store]
        durability = figures["durability"]
        print(f"\n{store}:")
        if store == "redis":
            print(
                f"  redis-server: appendonly {durability['appendonly']}, appendfsync "
                f"{durability['appendfsync']} (the server decides what a write survives, "
                "for both)"
            )
        else:
            for name, how in durability.items():
                print(f"  {name}: {how}")
        names = [n for n in figures if n != "durability"]
        ours = figures["PraisonSession"]
        measures = (
            [("add_items, one turn (4 items)", "add_items")]
            + [(f"get_items(limit={LIMIT}) @{size:,}", f"get_items_{size}") for size in sizes]
            + [
                (f"get_items() @{WHOLE}", "get_items_all"),
                (f"pop_item @{WHOLE}", "pop_item"),
                (f"clear_session @{WHOLE}", "clear_session"),
            ]
        )
        print(f"  ops/s, median of {len(ours['add_items'])} rounds; ratio = ours / theirs "
              "(best round, median round)")  # fmt: skip
        print(f"  | measure | {' | '.join(names)} | ratio best | ratio median |")
        print(f"  |---|{'---|' * len(names)}---|---|")
        for label, field in measures:
            cells = " | ".join(f"{statistics.median(figures[n][field]):,.0f}" for n in names)
            best, middle = [], []
            for n in names[1:]:
                ratios = [o / t for o, t in zip(ours[field], figures[n][field], strict=True)]
                best.append(f"{max(ratios):.2f}x {n}")
                middle.append(f"{statistics.median(ratios):.2f}x")
                verdicts += [
                    (f"{store}: {label} vs {n}, best round >= {RATIO_TARGET:g}",
                     f"{max(ratios):.2f}x", max(ratios) >= RATIO_TARGET),
                    (f"{store}: {label} vs {n}, median round >= {MEDIAN_TARGET:g}",
                     f"{statistics.median(ratios):.2f}x",
                     statistics.median(ratios) >= MEDIAN_TARGET),
                ]  # fmt: skip
            print(f"  | {label} | {cells} | {', '.join(best)} | {', '.join(middle)} |")
        full = [s for s in sizes if s >= LIMIT]  # a read of each returns LIMIT items
        if len(full) >= 2:
            first, last = (statistics.median(ours[f"get_items_{s}"]) for s in (full[0], full[-1]))
            flat = first / last  # ops/s: time at the last size over time at the first
            verdicts.append(
                (f"{store}: get_items flat, @{full[-1]:,} / @{full[0]:,} <= {FLAT_TARGET:g}",
                 f"{flat:.2f}x", flat <= FLAT_TARGET)
            )  # fmt: skip
    print("\nTargets (ratio: our ops/s / the SDK backend's)")
    for label, value, passed in verdicts:
        print(f"  {label:78} {value:>7}  {'PASS' if passed else 'MISS'}")
    return all(passed for _, _, passed in verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the backends' turns")
    parser.add_argument("--adds", type=int, default=300, help="add_items timed per round")
    parser.add_argument("--reads", type=int, default=1000, help="get_items timed per round")
    parser.add_argument("--sizes", default="10,100,10000", help="history sizes (first,...,last)")
    parser.add_argument("--no-redis", action="store_true", help="skip the Redis pair")
    parser.add_argument("--no-sqlite", action="store_true", help="skip the SQLite pairs")
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.adds, args.reads, args.sizes = 3, 10, 20, "10,100,1000"
    print(f"Python {sys.version.split()[0]}, {args.rounds} rounds of {args.adds} adds and "
          f"{args.reads} reads per size, per backend")  # fmt: skip
    results = asyncio.run(run(args))
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
