"""Google ADK sessions: PraisonSessionService next to ADK's own SQLite services, in one run.

Run from the repository root, in the frameworks' environment (``make test`` builds it)::

    .venv-frameworks/bin/python benchmarks/bench_adk.py [--json results.json] [--quick]

Three services, each on a SQLite file of its own in one temporary folder, from one event loop:
``PraisonSessionService`` on ``sqlite://``, ADK's ``SqliteSessionService`` (aiosqlite) and
ADK's ``DatabaseSessionService`` on ``sqlite+aiosqlite``. Measures:

1. ``append_event``: one model reply with a session state delta, appended to a session the
   caller holds (as a Runner does); median µs.
2. ``get_session(num_recent_events=20)`` of a session of 100 and of 30,000 events; median µs.
3. ``list_sessions(app_name, user_id)`` of one user (100 sessions) with 10,000 sessions of
   the app in the store (100 users), and ``list_sessions(app_name)`` of every user (the 10,000);
   median and p95 µs.

Durability, the same for all (stated in the output with what each connection reports): every
acknowledged write survives a power loss. Ours runs at durability ``"power"`` (WAL,
``synchronous=FULL``: the WAL is fsynced at each commit); ADK's services keep SQLite's defaults
(rollback journal, ``synchronous=FULL``).

Histories and the 10,000 sessions are written before the timing, each service's in its own
schema: ours through our backend in batches, ADK's through SQLite (``SqliteSessionService``'s
tables) and SQLAlchemy (``DatabaseSessionService``'s models) in one transaction, since ADK's
own calls take about 10 ms each. The services take turns call by call (ours, theirs, ...), so a
change in the machine's state touches them alike; ratio = their median / ours, at least 1.0
where ours is at least as fast. Flat: ours at 30,000 events within 1.2x of ours at 100. Every
service's events are read back and checked equal to what was appended.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
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

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

from praisonsession.integrations.adk import (
    EVENTS_LOG,
    SESSION_DOC,
    PraisonSessionService,
    session_record_id,
)
from praisonsession.stores import LogWrite, record_key

APP = "bench"
RATIO_TARGET = 1.0
FLAT_TARGET = 1.2
LIST_P95_TARGET_MS = 20.0
RECENT = 20
OURS = "PraisonSessionService"


def event(n: int, at: float) -> Event:
    """Turn ``n``'s reply: text, and a state delta, as an agent's output_key writes."""
    content = types.Content(role="model", parts=[types.Part(text=f"Reply {n}: it is sunny ☀.")])
    return Event(
        invocation_id=f"inv-{n}",
        author="helper",
        content=content,
        actions=EventActions(state_delta={"turn": n}),
        timestamp=at,
    )


# -- seeding: histories and sessions written in each service's own schema ---------------------


async def seed_ours(url: str, session_id: str, count: int, start: float) -> None:
    service = PraisonSessionService(url)
    session = await service.create_session(app_name=APP, user_id="u", session_id=session_id)
    backend = service.store.backend
    key = record_key(session_record_id(APP, session.id), "u")
    for at in range(0, count, 1000):
        batch = [
            json.loads(event(n, start + n).model_dump_json(exclude_none=True))
            for n in range(at, min(count, at + 1000))
        ]
        held = at + len(batch)
        doc = {SESSION_DOC: {"state": {"turn": held - 1}, "time": start + held - 1, "events": held}}
        await backend.write_modules(key, doc, [LogWrite(EVENTS_LOG, batch, at)])
    await service.close()


async def seed_sqlite(path: Path, session_id: str, count: int, start: float) -> None:
    service = SqliteSessionService(str(path))
    await service.create_session(app_name=APP, user_id="u", session_id=session_id)
    rows = []
    for n in range(count):
        e = event(n, start + n)
        data = e.model_dump_json(exclude_none=True)
        rows.append((e.id, APP, "u", session_id, e.invocation_id, e.timestamp, data))
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute(
            "UPDATE sessions SET update_time=? WHERE app_name=? AND id=?",
            (start + count - 1, APP, session_id),
        )
    await service.close()


async def seed_database(url: str, session_id: str, count: int, start: float) -> None:
    service = DatabaseSessionService(url)
    session = await service.create_session(app_name=APP, user_id="u", session_id=session_id)
    schema = service._get_schema_classes()
    async with service.database_session_factory() as db:
        for n in range(count):
            db.add(schema.StorageEvent.from_event(session, event(n, start + n)))
        stored = await db.get(schema.StorageSession, (APP, "u", session_id))
        stored.update_time = _naive(start + count - 1)
        await db.commit()
    await service.close()


async def seed_sessions(folder: Path, users: int, each: int) -> None:
    """``users`` x ``each`` sessions of the app in each service's store, with a little state."""
    ours = PraisonSessionService(f"sqlite://{folder}/ours-list.db?durability=process")
    sqlite_service = SqliteSessionService(str(folder / "sqlite-list.db"))
    database = DatabaseSessionService(f"sqlite+aiosqlite:///{folder}/database-list.db")
    for user in range(users):  # each user's state rows, as ADK makes them
        for service in (ours, sqlite_service, database):
            await service.create_session(
                app_name=APP, user_id=f"user{user}", session_id="s0", state={"user:plan": "pro"}
            )
    now = time.time()
    for user in range(users):
        for n in range(1, each):
            await ours.create_session(
                app_name=APP, user_id=f"user{user}", session_id=f"s{n}", state={"n": n}
            )
    rows = [
        (APP, f"user{u}", f"s{n}", json.dumps({"n": n}), now + n, now + n)
        for u in range(users)
        for n in range(1, each)
    ]
    with sqlite3.connect(folder / "sqlite-list.db") as db:
        db.executemany("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)", rows)
    schema = database._get_schema_classes()
    async with database.database_session_factory() as db:
        for app, user_id, sid, state, created, updated in rows:
            db.add(
                schema.StorageSession(
                    app_name=app,
                    user_id=user_id,
                    id=sid,
                    state=json.loads(state),
                    create_time=_naive(created),
                    update_time=_naive(updated),
                )
            )
        await db.commit()
    for service in (ours, sqlite_service, database):
        await service.close()


def _naive(at: float) -> datetime.datetime:
    """A time as DatabaseSessionService stores it on SQLite: UTC without a zone."""
    return datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc).replace(tzinfo=None)


# -- durability, as each connection reports it ------------------------------------------------


def durability(folder: Path) -> dict[str, str]:
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    ours = sqlite3.connect(folder / "ours-appends.db")
    mode = ours.execute("PRAGMA journal_mode").fetchone()[0]
    ours.close()
    defaults = sqlite3.connect(folder / "probe.db")  # what aiosqlite and SQLAlchemy connect with
    sync = names[defaults.execute("PRAGMA synchronous").fetchone()[0]]
    journal = defaults.execute("PRAGMA journal_mode").fetchone()[0]
    defaults.close()
    return {
        OURS: f"{mode.upper()}, synchronous=FULL (durability 'power')",
        "SqliteSessionService": f"{journal.upper()} journal, synchronous={sync} (defaults)",
        "DatabaseSessionService": f"{journal.upper()} journal, synchronous={sync} (defaults)",
    }


# -- timing -----------------------------------------------------------------------------------


async def interleaved(
    calls: dict[str, Callable[[], Awaitable[Any]]], times: dict[str, list[float]], n: int
) -> None:
    for _ in range(n):
        for name, call in calls.items():
            start = time.perf_counter()
            await call()
            times[name].append(time.perf_counter() - start)


def services(folder: Path, kind: str) -> dict[str, BaseSessionService]:
    return {
        OURS: PraisonSessionService(f"sqlite://{folder}/ours-{kind}.db?durability=power"),
        "SqliteSessionService": SqliteSessionService(str(folder / f"sqlite-{kind}.db")),
        "DatabaseSessionService": DatabaseSessionService(
            f"sqlite+aiosqlite:///{folder}/database-{kind}.db"
        ),
    }


async def bench(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {"sizes": sizes, "users": args.users, "each": args.each}
    figures: dict[str, dict[str, float]] = {}
    start = time.time() - 10 * max(sizes)
    for size in sizes:  # one history file per service, every size in it
        name = f"h{size}"
        await seed_ours(f"sqlite://{folder}/ours-history.db?durability=process", name, size, start)
        await seed_sqlite(folder / "sqlite-history.db", name, size, start)
        await seed_database(f"sqlite+aiosqlite:///{folder}/database-history.db", name, size, start)
    await seed_sessions(folder, args.users, args.each)

    # 1. append_event
    appenders = services(folder, "appends")
    held = {
        name: await s.create_session(app_name=APP, user_id="u", session_id="a")
        for name, s in appenders.items()
    }
    counter = dict.fromkeys(appenders, 0)
    appends: dict[str, list[float]] = {name: [] for name in appenders}

    def appender(name: str) -> Callable[[], Awaitable[Any]]:
        async def append() -> None:
            n = counter[name]
            counter[name] += 1
            await appenders[name].append_event(held[name], event(n, time.time()))

        return append

    # 2. get_session(num_recent_events=20)
    readers = services(folder, "history")
    reads: dict[int, dict[str, list[float]]] = {size: {n: [] for n in readers} for size in sizes}
    config = GetSessionConfig(num_recent_events=RECENT)

    def reader(name: str, size: int) -> Callable[[], Awaitable[Any]]:
        return lambda: readers[name].get_session(
            app_name=APP, user_id="u", session_id=f"h{size}", config=config
        )

    # 3. list_sessions
    listers = services(folder, "list")
    one: dict[str, list[float]] = {n: [] for n in listers}
    every: dict[str, list[float]] = {n: [] for n in listers}
    for _ in range(args.rounds):
        await interleaved({n: appender(n) for n in appenders}, appends, args.appends)
        for size in sizes:
            await interleaved({n: reader(n, size) for n in readers}, reads[size], args.reads)
        await interleaved({n: _lister(s, "user7") for n, s in listers.items()}, one, args.lists)
        await interleaved({n: _lister(s, None) for n, s in listers.items()}, every, args.all_lists)

    for name in appenders:  # what each appended is what it reads back
        got = await appenders[name].get_session(app_name=APP, user_id="u", session_id="a")
        if got is None or [e.invocation_id for e in got.events] != [
            f"inv-{n}" for n in range(counter[name])
        ]:
            raise RuntimeError(f"{name}: the events read back differ from those appended")
        listed = await listers[name].list_sessions(app_name=APP, user_id="user7")
        if len(listed.sessions) != args.each:
            raise RuntimeError(f"{name}: listed {len(listed.sessions)} sessions, not {args.each}")
        for size in sizes:
            tail = await readers[name].get_session(
                app_name=APP, user_id="u", session_id=f"h{size}", config=config
            )
            expected = [f"inv-{n}" for n in range(max(0, size - RECENT), size)]
            if tail is None or [e.invocation_id for e in tail.events] != expected:
                raise RuntimeError(f"{name}: the last {RECENT} events at {size} differ")
    for group in (appenders, readers, listers):
        for service in group.values():
            await service.close()  # type: ignore[attr-defined]

    for name in appenders:
        row = figures[name] = {"append_event_us": statistics.median(appends[name]) * 1e6}
        for size in sizes:
            row[f"get_session_{size}_us"] = statistics.median(reads[size][name]) * 1e6
        row["list_one_user_us"] = statistics.median(one[name]) * 1e6
        row["list_one_user_p95_us"] = _p95(one[name]) * 1e6
        row["list_every_user_us"] = statistics.median(every[name]) * 1e6
    results["figures"] = figures
    results["durability"] = durability(folder)
    return results


def _lister(service: BaseSessionService, user: str | None) -> Callable[[], Awaitable[Any]]:
    return lambda: service.list_sessions(app_name=APP, user_id=user)


def _p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


# -- report -----------------------------------------------------------------------------------


def report(results: dict[str, Any]) -> bool:
    sizes, figures = results["sizes"], results["figures"]
    total = results["users"] * results["each"]
    print("\nDurability (every acknowledged write survives a power loss):")
    for name, how in results["durability"].items():
        print(f"  {name}: {how}")
    names = list(figures)
    measures = [("append_event", "append_event_us")]
    measures += [
        (f"get_session(num_recent_events={RECENT}) @{size:,} events", f"get_session_{size}_us")
        for size in sizes
    ]
    measures += [
        (f"list_sessions, one user ({results['each']}) @{total:,}", "list_one_user_us"),
        (f"list_sessions, one user, p95 @{total:,}", "list_one_user_p95_us"),
        (f"list_sessions, every user @{total:,}", "list_every_user_us"),
    ]
    print(f"\n| measure | {' | '.join(f'{n} (µs)' for n in names)} | ratio |")
    print(f"|---|{'---|' * len(names)}---|")
    verdicts: list[tuple[str, str, bool]] = []
    ours = figures[OURS]
    for label, field in measures:
        cells = " | ".join(f"{figures[n][field]:,.0f}" for n in names)
        ratios = [(n, figures[n][field] / ours[field]) for n in names if n != OURS]
        print(f"| {label} | {cells} | {', '.join(f'{r:.2f}x {n}' for n, r in ratios)} |")
        best = min(r for _, r in ratios)
        verdicts.append((f"{label} vs ADK's best >= {RATIO_TARGET:g}", f"{best:.2f}x", best >= 1.0))
    flat = ours[f"get_session_{sizes[-1]}_us"] / ours[f"get_session_{sizes[0]}_us"]
    verdicts.append(
        (f"get_session flat, @{sizes[-1]:,} / @{sizes[0]:,} <= {FLAT_TARGET:g}",
         f"{flat:.2f}x", flat <= FLAT_TARGET)
    )  # fmt: skip
    p95 = ours["list_one_user_p95_us"] / 1000
    verdicts.append(
        (f"list_sessions one user p95 @{total:,} < {LIST_P95_TARGET_MS:g} ms",
         f"{p95:.2f}ms", p95 < LIST_P95_TARGET_MS)
    )  # fmt: skip
    print("\nTargets (ratio: ADK's best median / ours)")
    for label, value, passed in verdicts:
        print(f"  {label:66} {value:>8}  {'PASS' if passed else 'MISS'}")
    return all(passed for _, _, passed in verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternations of the services")
    parser.add_argument("--appends", type=int, default=40, help="append_event timed per round")
    parser.add_argument("--reads", type=int, default=100, help="get_session timed per round")
    parser.add_argument("--lists", type=int, default=40, help="one user's listings per round")
    parser.add_argument("--all-lists", type=int, default=2, help="every user's, per round")
    parser.add_argument("--sizes", default="100,30000", help="history sizes (first,...,last)")
    parser.add_argument("--users", type=int, default=100, help="users of the listed app")
    parser.add_argument("--each", type=int, default=100, help="sessions of each user")
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.appends, args.reads, args.lists, args.all_lists = 2, 5, 10, 5, 1
        args.sizes, args.users, args.each = "100,1000", 10, 20
    print(
        f"Python {sys.version.split()[0]}, {args.rounds} rounds; histories of {args.sizes} "
        f"events; {args.users} users x {args.each} sessions listed"
    )
    folder = Path(tempfile.mkdtemp(prefix="ps-bench-adk-"))
    try:
        results = asyncio.run(bench(args, folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
