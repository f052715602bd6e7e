"""Google ADK sessions: PraisonSessionService next to ADK's own SQLite services, in one run.

Run from the repository root, in the frameworks' environment (``make test`` builds it)::

    .venv-frameworks/bin/python benchmarks/bench_adk.py [--json results.json] [--quick]

Three services, each on a SQLite file of its own in one temporary folder, from one event loop:
``PraisonSessionService`` on ``sqlite://``, ADK's ``SqliteSessionService`` (aiosqlite) and
ADK's ``DatabaseSessionService`` on ``sqlite+aiosqlite``. Measures:

1. ``append_event``: one model reply with a session state delta, appended to a session the
   caller holds (as a Runner does); and one whose delta also sets ``app:`` and ``user:`` keys
   (which ADK keeps in the app's and the user's state, apart from the session's).
2. ``get_session(num_recent_events=20)`` of a session of 100 and of 30,000 events, and of the
   30,000 with ``GetSessionConfig(num_recent_events=10)`` and with ``after_timestamp`` (the
   last 10 events' time).
3. ``list_sessions(app_name, user_id)`` of one user (100 sessions) with 10,000 sessions of
   the app in the store (100 users), and ``list_sessions(app_name)`` of every user (the 10,000).
4. ``create_session`` with a little state, and ``delete_session`` of a session of 100 events
   (each written before the timing).

Durability, the same for all: every acknowledged write survives a power loss. Every file is in
WAL mode and every connection commits at ``synchronous=FULL`` (the WAL fsynced at each
commit): ours at durability ``"power"``, ADK's services at SQLite's default ``synchronous`` on
files put in WAL mode before they open them. The output reads both back by ``PRAGMA`` on the
connection each service commits with.

Histories (those deleted too) and the 10,000 sessions are written before the timing, each
service's in its own schema: ours through our backend in batches, ADK's through SQLite
(``SqliteSessionService``'s tables) and SQLAlchemy (``DatabaseSessionService``'s models) in one
transaction, since ADK's own calls take about 10 ms each. Each measure runs in rounds (3 by
default); in a round the services take turns call by call, the order turning each time, so a
change in the machine's state (and the garbage one leaves to collect) touches them alike. A
round's figure is its median call, in calls per second; its ratio is ours / theirs in calls per
second (at least 1.0 where ours is at least as fast), and the output gives the best and the
median round's ratio. Targets: the best round at least 1.0 and the median round at least 1.1
against each of ADK's services. Flat: ours at 30,000 events within 1.2x of ours at 100, the two
sizes taking turns with no other service between them. Every service's events are read back and
checked equal to what was appended (the ``app:`` and ``user:`` state too), the sessions created
listed with their state, the ones deleted gone, and every service lists the same sessions of
every user with the same state.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
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
from praisonsession.stores.guard import beneath

APP = "bench"
RATIO_TARGET = 1.0  # the best round's ours / theirs, against each service
MEDIAN_TARGET = 1.1  # the median round's
RECENT_FEW = 10  # get_session with a config: the last 10 events, by count or by time
DELETED_EVENTS = 100  # the events of each session delete_session removes
FLAT_TARGET = 1.2
LIST_P95_TARGET_MS = 20.0
RECENT = 20
OURS = "PraisonSessionService"
PRAGMAS = ("journal_mode", "synchronous")
SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def event(n: int, at: float, scoped: bool = False) -> Event:
    """Turn ``n``'s reply: text, and a state delta, as an agent's output_key writes;
    ``scoped``: the delta also sets an ``app:`` and a ``user:`` key."""
    content = types.Content(role="model", parts=[types.Part(text=f"Reply {n}: it is sunny ☀.")])
    delta: dict[str, Any] = {"turn": n}
    if scoped:
        delta.update({"app:visits": n, "user:last_turn": n})
    return Event(
        invocation_id=f"inv-{n}",
        author="helper",
        content=content,
        actions=EventActions(state_delta=delta),
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
        await backend.write_modules(key, documents=doc, writes=[LogWrite(EVENTS_LOG, batch, at)])
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


# -- durability, as each service's own connection reports it ----------------------------------


def wal(path: Path) -> None:
    """Put an ADK service's file in WAL mode (kept by the file: its connections open in it)."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")


def _read_back(rows: list[Any]) -> str:
    (mode,), (sync,) = rows
    return f"{str(mode).upper()}, synchronous={SYNC_NAMES[sync]}"


async def durability(group: dict[str, BaseSessionService]) -> dict[str, str]:
    """``PRAGMA journal_mode`` and ``synchronous`` read on the connection each service
    commits with."""
    found: dict[str, str] = {}
    ours = beneath(group[OURS].store.backend)  # type: ignore[attr-defined]
    conn = ours._connection()  # our backend's connection on this thread (the loop's)
    rows = [conn.execute(f"PRAGMA {name}").fetchone() for name in PRAGMAS]
    found[OURS] = f"{_read_back(rows)} (durability 'power')"
    sqlite_service = group["SqliteSessionService"]
    async with sqlite_service._get_db_connection() as db:  # type: ignore[attr-defined]
        rows = [tuple(await (await db.execute(f"PRAGMA {n}")).fetchone()) for n in PRAGMAS]
    found["SqliteSessionService"] = _read_back(rows)
    database = group["DatabaseSessionService"]
    async with database.db_engine.connect() as conn:  # type: ignore[attr-defined]
        rows = [(await conn.exec_driver_sql(f"PRAGMA {n}")).fetchone() for n in PRAGMAS]
    found["DatabaseSessionService"] = _read_back(rows)
    return found


# -- timing: the services take turns call by call, round after round --------------------------


async def interleaved(
    calls: dict[str, Callable[[], Awaitable[Any]]],
    times: dict[str, list[float]],
    n: int,
    collect: bool = False,
) -> None:
    """``n`` calls of each, taking turns; the order turns round call by call, so no service
    always runs right after the same other one (and inherits its garbage to collect).
    ``collect``: the garbage is collected before each call, untimed, for calls that make so
    much (10,000 sessions listed) that a collection one starts lands in another's call."""
    order = list(calls.items())
    for turn in range(n):
        shift = turn % len(order)
        for name, call in order[shift:] + order[:shift]:
            if collect:
                gc.collect()
            start = time.perf_counter()
            await call()
            times[name].append(time.perf_counter() - start)


def services(folder: Path, kind: str) -> dict[str, BaseSessionService]:
    for name in (f"sqlite-{kind}.db", f"database-{kind}.db"):
        wal(folder / name)
    return {
        OURS: PraisonSessionService(f"sqlite://{folder}/ours-{kind}.db?durability=power"),
        "SqliteSessionService": SqliteSessionService(str(folder / f"sqlite-{kind}.db")),
        "DatabaseSessionService": DatabaseSessionService(
            f"sqlite+aiosqlite:///{folder}/database-{kind}.db"
        ),
    }


class Measure:
    """One row: each round's times of every service."""

    def __init__(self, label: str, names: list[str]) -> None:
        self.label = label
        self.rounds: list[dict[str, list[float]]] = []
        self.names = names

    def round(self) -> dict[str, list[float]]:
        self.rounds.append({name: [] for name in self.names})
        return self.rounds[-1]

    def ops(self, name: str) -> list[float]:
        """Each round's median calls per second."""
        return [1 / statistics.median(times[name]) for times in self.rounds]

    def ratios(self, theirs: str) -> list[float]:
        """Each round's ours / theirs, in calls per second."""
        return [o / t for o, t in zip(self.ops(OURS), self.ops(theirs), strict=True)]

    def median_us(self, name: str) -> float:
        return statistics.median(t for times in self.rounds for t in times[name]) * 1e6

    def p95_us(self, name: str) -> float:
        ordered = sorted(t for times in self.rounds for t in times[name])
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1e6

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "ops_per_s": {name: self.ops(name) for name in self.names},
            "median_us": {name: self.median_us(name) for name in self.names},
            "ratios": {name: self.ratios(name) for name in self.names if name != OURS},
        }


async def bench(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    total = args.users * args.each
    results: dict[str, Any] = {"sizes": sizes, "users": args.users, "each": args.each}
    start = time.time() - 10 * max(sizes)
    for size in sizes:  # one history file per service, every size in it
        name = f"h{size}"
        await seed_ours(f"sqlite://{folder}/ours-history.db?durability=process", name, size, start)
        await seed_sqlite(folder / "sqlite-history.db", name, size, start)
        await seed_database(f"sqlite+aiosqlite:///{folder}/database-history.db", name, size, start)
    await seed_sessions(folder, args.users, args.each)

    doomed = [f"d{n}" for n in range(args.rounds * args.deletes)]  # delete_session's
    for name in doomed:
        await seed_ours(f"sqlite://{folder}/ours-deletes.db?durability=process", name,
                        DELETED_EVENTS, start)  # fmt: skip
        await seed_sqlite(folder / "sqlite-deletes.db", name, DELETED_EVENTS, start)
        await seed_database(
            f"sqlite+aiosqlite:///{folder}/database-deletes.db", name, DELETED_EVENTS, start
        )

    appenders = services(folder, "appends")
    names = list(appenders)
    held = {
        name: await s.create_session(app_name=APP, user_id="u", session_id="a")
        for name, s in appenders.items()
    }
    held_scoped = {
        name: await s.create_session(app_name=APP, user_id="u", session_id="scoped")
        for name, s in appenders.items()
    }
    counter = dict.fromkeys(appenders, 0)
    scoped_counter = dict.fromkeys(appenders, 0)

    def appender(name: str) -> Callable[[], Awaitable[Any]]:
        async def append() -> None:
            n = counter[name]
            counter[name] += 1
            await appenders[name].append_event(held[name], event(n, time.time()))

        return append

    def scoped_appender(name: str) -> Callable[[], Awaitable[Any]]:
        async def append() -> None:
            n = scoped_counter[name]
            scoped_counter[name] += 1
            await appenders[name].append_event(held_scoped[name], event(n, time.time(), True))

        return append

    creators = services(folder, "creates")
    created = dict.fromkeys(creators, 0)

    def creator(name: str) -> Callable[[], Awaitable[Any]]:
        async def create() -> None:
            n = created[name]
            created[name] += 1
            state = {"topic": "weather", "city": "Lisbon", "n": n}
            await creators[name].create_session(
                app_name=APP, user_id="u", session_id=f"c{n}", state=state
            )

        return create

    deleters = services(folder, "deletes")
    deleted = dict.fromkeys(deleters, 0)

    def deleter(name: str) -> Callable[[], Awaitable[Any]]:
        async def delete() -> None:
            n = deleted[name]
            deleted[name] += 1
            await deleters[name].delete_session(app_name=APP, user_id="u", session_id=doomed[n])

        return delete

    readers = services(folder, "history")
    config = GetSessionConfig(num_recent_events=RECENT)
    largest = sizes[-1]
    few = GetSessionConfig(num_recent_events=RECENT_FEW)
    since = GetSessionConfig(after_timestamp=start + largest - RECENT_FEW)

    def reader(
        name: str, size: int, how: GetSessionConfig = config
    ) -> Callable[[], Awaitable[Any]]:
        return lambda: readers[name].get_session(
            app_name=APP, user_id="u", session_id=f"h{size}", config=how
        )

    listers = services(folder, "list")
    appends = Measure("append_event", names)
    scoped_appends = Measure("append_event, app: and user: state", names)
    creates = Measure("create_session, with state", names)
    deletes = Measure(f"delete_session @{DELETED_EVENTS} events", names)
    reads = {
        size: Measure(f"get_session(num_recent_events={RECENT}) @{size:,} events", names)
        for size in sizes
    }
    few_reads = Measure(f"get_session(num_recent_events={RECENT_FEW}) @{largest:,} events", names)
    since_reads = Measure(
        f"get_session(after_timestamp, last {RECENT_FEW}) @{largest:,} events", names
    )
    one = Measure(f"list_sessions, one user ({args.each}) @{total:,}", names)
    every = Measure(f"list_sessions, every user @{total:,}", names)
    for _ in range(args.rounds):
        await interleaved({n: appender(n) for n in names}, appends.round(), args.appends)
        await interleaved(
            {n: scoped_appender(n) for n in names}, scoped_appends.round(), args.appends
        )
        await interleaved({n: creator(n) for n in names}, creates.round(), args.appends)
        await interleaved({n: deleter(n) for n in names}, deletes.round(), args.deletes)
        for size in sizes:
            calls = {n: reader(n, size) for n in names}
            await interleaved(calls, reads[size].round(), args.reads)
        calls = {n: reader(n, largest, few) for n in names}
        await interleaved(calls, few_reads.round(), args.reads)
        calls = {n: reader(n, largest, since) for n in names}
        await interleaved(calls, since_reads.round(), args.reads)
        await interleaved(
            {n: _lister(s, "user7") for n, s in listers.items()}, one.round(), args.lists
        )
        await interleaved(
            {n: _lister(s, None) for n, s in listers.items()},
            every.round(),
            args.all_lists,
            collect=True,
        )

    # Flat: ours at each size, the sizes taking turns call by call with no other service
    # between them (ADK's SqliteSessionService reads all 30,000 events to return 20, and the
    # garbage it leaves lands in whichever call comes next)
    flat: dict[str, list[float]] = {str(size): [] for size in sizes}
    ours_reads = {str(size): reader(OURS, size) for size in sizes}
    for _ in range(args.rounds):
        await interleaved(ours_reads, flat, args.reads)
    results["get_session_us"] = {size: statistics.median(flat[str(size)]) * 1e6 for size in sizes}

    for name in names:  # what each wrote is what it reads back
        await _check_written(name, appenders[name], counter[name], scoped_counter[name])
        await _check_created_and_deleted(
            name, creators[name], created[name], deleters[name], doomed
        )
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
        expected = [f"inv-{n}" for n in range(largest - RECENT_FEW, largest)]
        for how in (few, since):
            tail = await readers[name].get_session(
                app_name=APP, user_id="u", session_id=f"h{largest}", config=how
            )
            if tail is None or [e.invocation_id for e in tail.events] != expected:
                raise RuntimeError(f"{name}: get_session({how!r}) read other events")
    everyone = {
        name: sorted((s.user_id, s.id, tuple(s.state.items())) for s in found.sessions)
        for name, service in listers.items()
        for found in [await service.list_sessions(app_name=APP)]
    }
    if len(everyone[OURS]) != total or any(v != everyone[OURS] for v in everyone.values()):
        raise RuntimeError("the services list different sessions of every user")
    results["durability"] = await durability(appenders)
    for group in (appenders, creators, deleters, readers, listers):
        for service in group.values():
            await service.close()  # type: ignore[attr-defined]
    measures = (appends, scoped_appends, creates, deletes, *reads.values(), few_reads,
                since_reads, one, every)  # fmt: skip
    results["measures"] = [m.to_json() for m in measures]
    results["one_user_p95_us"] = one.p95_us(OURS)
    return results


async def _check_written(
    name: str, service: BaseSessionService, appended: int, scoped: int
) -> None:
    """The events each appended read back in order, and the scoped state it set."""
    for session_id, count in (("a", appended), ("scoped", scoped)):
        got = await service.get_session(app_name=APP, user_id="u", session_id=session_id)
        if got is None or [e.invocation_id for e in got.events] != [
            f"inv-{n}" for n in range(count)
        ]:
            raise RuntimeError(f"{name}: the events read back differ from those appended")
    if scoped and (
        got.state.get("app:visits") != scoped - 1 or got.state.get("user:last_turn") != scoped - 1
    ):
        raise RuntimeError(f"{name}: the app: and user: state read back differ")


async def _check_created_and_deleted(
    name: str,
    creators: BaseSessionService,
    created: int,
    deleters: BaseSessionService,
    doomed: list[str],
) -> None:
    """Every session created listed with its state; every session deleted gone."""
    listed = await creators.list_sessions(app_name=APP, user_id="u")
    states = sorted((s.id, s.state.get("n")) for s in listed.sessions)
    if states != sorted((f"c{n}", n) for n in range(created)):
        raise RuntimeError(f"{name}: the sessions created read back differ")
    for session_id in doomed:
        if await deleters.get_session(app_name=APP, user_id="u", session_id=session_id):
            raise RuntimeError(f"{name}: session {session_id} is still there after its delete")


def _lister(service: BaseSessionService, user: str | None) -> Callable[[], Awaitable[Any]]:
    return lambda: service.list_sessions(app_name=APP, user_id=user)


# -- report -----------------------------------------------------------------------------------


def _ops(per_second: float) -> str:
    return f"{per_second:,.1f}" if per_second >= 10 else f"{per_second:.2f}"


def report(results: dict[str, Any]) -> bool:
    sizes, measures = results["sizes"], results["measures"]
    total = results["users"] * results["each"]
    print("\nDurability, read back by PRAGMA on each service's own connection:")
    for name, how in results["durability"].items():
        print(f"  {name}: {how}")
    names = list(measures[0]["ops_per_s"])
    theirs = [n for n in names if n != OURS]
    rounds = len(measures[0]["ratios"][theirs[0]])
    print(
        f"\nCalls per second (the median round's); ours / theirs in calls per second, each "
        f"round's, best and median of {rounds}:"
    )
    head = " | ".join(f"{n} (ops/s)" for n in names)
    ratio_head = " | ".join(f"ours / {n} (best, median)" for n in theirs)
    print(f"\n| measure | {head} | {ratio_head} |")
    print(f"|---|{'---|' * (len(names) + len(theirs))}")
    verdicts: list[tuple[str, str, bool]] = []
    for m in measures:
        cells = " | ".join(_ops(statistics.median(m["ops_per_s"][n])) for n in names)
        pairs = []
        for n in theirs:
            ratios = m["ratios"][n]
            pairs.append(f"{max(ratios):.2f}x, {statistics.median(ratios):.2f}x")
        print(f"| {m['label']} | {cells} | {' | '.join(pairs)} |")
        best = min(max(m["ratios"][n]) for n in theirs)
        median = min(statistics.median(m["ratios"][n]) for n in theirs)
        verdicts.append(
            (f"{m['label']}: vs each, best >= {RATIO_TARGET:g}, median >= {MEDIAN_TARGET:g}",
             f"{best:.2f}x, {median:.2f}x", best >= RATIO_TARGET and median >= MEDIAN_TARGET)
        )  # fmt: skip
    reads = results["get_session_us"]
    flat = reads[sizes[-1]] / reads[sizes[0]]
    verdicts.append(
        (f"get_session flat, @{sizes[-1]:,} / @{sizes[0]:,} <= {FLAT_TARGET:g}",
         f"{flat:.2f}x", flat <= FLAT_TARGET)
    )  # fmt: skip
    p95 = results["one_user_p95_us"] / 1000
    verdicts.append(
        (f"list_sessions one user p95 @{total:,} < {LIST_P95_TARGET_MS:g} ms",
         f"{p95:.2f}ms", p95 < LIST_P95_TARGET_MS)
    )  # fmt: skip
    print("\nTargets")
    for label, value, passed in verdicts:
        print(f"  {label:90} {value:>12}  {'PASS' if passed else 'MISS'}")
    return all(passed for _, _, passed in verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every measure")
    parser.add_argument("--appends", type=int, default=40, help="append_event timed per round")
    parser.add_argument("--deletes", type=int, default=20, help="delete_session per round")
    parser.add_argument("--reads", type=int, default=100, help="get_session timed per round")
    parser.add_argument("--lists", type=int, default=40, help="one user's listings per round")
    parser.add_argument("--all-lists", type=int, default=5, help="every user's, per round")
    parser.add_argument("--sizes", default="100,30000", help="history sizes (first,...,last)")
    parser.add_argument("--users", type=int, default=100, help="users of the listed app")
    parser.add_argument("--each", type=int, default=100, help="sessions of each user")
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.appends, args.reads, args.lists, args.all_lists = 2, 5, 10, 5, 2
        args.deletes = 3
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
