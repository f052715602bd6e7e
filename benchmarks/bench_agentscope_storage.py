"""AgentScope 2.0's app storage: PraisonStorage next to AgentScope's own SQL storage, in one run.

Run from the repository root, in the frameworks' environment (``make test`` builds it)::

    .venv-frameworks/bin/python benchmarks/bench_agentscope_storage.py [--json out.json] [--quick]

Two storages, each on a SQLite file of its own in one temporary folder, from one event loop:
``PraisonStorage("sqlite://...")`` and AgentScope's ``AsyncSQLAlchemyStorage`` on
``sqlite+aiosqlite``. Measures, median µs:

1. ``update_session_state``: the write after every turn, an ``AgentState`` of 20 messages;
2. ``get_session`` of that session;
3. ``upsert_message``: a new message appended to a session of each history size;
4. ``list_messages (latest)``: the latest page (50) of a session of each history size;
5. ``list_messages (cursor)``: the page before a message in the middle of the history;
6. ``get_message`` by id in the middle of the history.

Durability, the same for both (printed with what each connection reports): every acknowledged
write survives a power loss. Ours runs at durability ``"power"`` (WAL, ``synchronous=FULL``);
AgentScope's keeps SQLite's defaults (rollback journal, ``synchronous=FULL``). Histories are
written before the timing through each storage's own ``upsert_message`` (ours at durability
``"process"`` while seeding). The storages take turns call by call, so a change in the
machine's state touches both alike; ratio = AgentScope's median / ours, at least 1.0 where ours
is at least as fast. Flat: ours at the largest history within 1.5x of ours at the smallest.
Every page read is checked equal between the two.
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

from agentscope.app.storage import AsyncSQLAlchemyStorage, ChatModelConfig, SessionConfig
from agentscope.message import AssistantMsg, Msg, TextBlock, UserMsg
from agentscope.state import AgentState

from praisonsession.integrations.agentscope import PraisonStorage

OURS = "PraisonStorage"
THEIRS = "AsyncSQLAlchemyStorage"
PAGE = 50
FLAT = 1.5


def config() -> SessionConfig:
    model = ChatModelConfig(type="openai", credential_id="c", model="gpt-4o", parameters={})
    return SessionConfig(workspace_id="ws", chat_model_config=model)


def message(n: int) -> Msg:
    text = f"message {n}: " + "a reply of a few sentences, as a model writes them. " * 4
    if n % 2:
        return AssistantMsg(name="Friday", content=[TextBlock(text=text)])
    return UserMsg(name="ada", content=text)


def state(turn: int) -> AgentState:
    return AgentState(summary=f"turn {turn}", context=[message(n) for n in range(20)])


async def interleaved(
    calls: dict[str, Callable[[], Awaitable[Any]]], times: dict[str, list[float]], n: int
) -> None:
    for _ in range(n):
        for name, call in calls.items():
            start = time.perf_counter()
            await call()
            times[name].append(time.perf_counter() - start)


def durability(folder: Path) -> dict[str, str]:
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    ours = sqlite3.connect(folder / "ours.db")
    mode = ours.execute("PRAGMA journal_mode").fetchone()[0]
    ours.close()
    probe = sqlite3.connect(folder / "probe.db")  # what aiosqlite and SQLAlchemy connect with
    sync = names[probe.execute("PRAGMA synchronous").fetchone()[0]]
    journal = probe.execute("PRAGMA journal_mode").fetchone()[0]
    probe.close()
    return {
        OURS: f"{mode.upper()}, synchronous=FULL (durability 'power')",
        THEIRS: f"{journal.upper()} journal, synchronous={sync} (SQLite's defaults)",
    }


async def seed(storage: Any, sizes: list[int]) -> dict[int, list[str]]:
    """Two sessions per history size: ``h<size>`` to read, ``a<size>`` to append to; the ids
    of ``h<size>``'s messages, in order."""
    ids: dict[int, list[str]] = {}
    for size in sizes:
        ids[size] = []
        for n in range(size):
            msg = message(n)
            await storage.upsert_message("u", f"h{size}", msg)
            await storage.upsert_message("u", f"a{size}", message(n))
            ids[size].append(msg.id)
    return ids


async def bench(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    seeding = PraisonStorage(f"sqlite://{folder}/ours.db?durability=process")
    ids = {OURS: await seed(seeding, sizes)}
    await seeding.aclose()
    theirs = AsyncSQLAlchemyStorage(f"sqlite+aiosqlite:///{folder}/theirs.db")
    await theirs.__aenter__()
    ids[THEIRS] = await seed(theirs, sizes)
    storages: dict[str, Any] = {
        OURS: PraisonStorage(f"sqlite://{folder}/ours.db?durability=power"),
        THEIRS: theirs,
    }
    sessions = {
        name: (await s.upsert_session("u", "a", config(), state(0))).id
        for name, s in storages.items()
    }
    turn = dict.fromkeys(storages, 0)
    appended = {name: dict.fromkeys(sizes, 0) for name in storages}
    times: dict[str, dict[str, list[float]]] = {}

    def timer(measure: str) -> dict[str, list[float]]:
        return times.setdefault(measure, {name: [] for name in storages})

    def updater(name: str) -> Callable[[], Awaitable[Any]]:
        async def update() -> None:
            turn[name] += 1
            await storages[name].update_session_state("u", "a", sessions[name], state(turn[name]))

        return update

    def getter(name: str) -> Callable[[], Awaitable[Any]]:
        return lambda: storages[name].get_session("u", "a", sessions[name])

    def appender(name: str, size: int) -> Callable[[], Awaitable[Any]]:
        async def append() -> None:
            appended[name][size] += 1
            await storages[name].upsert_message("u", f"a{size}", message(appended[name][size]))

        return append

    def lister(name: str, size: int, cursor: bool) -> Callable[[], Awaitable[Any]]:
        before = ids[name][size][size // 2] if cursor else None
        return lambda: storages[name].list_messages("u", f"h{size}", PAGE, before)

    def fetcher(name: str, size: int) -> Callable[[], Awaitable[Any]]:
        return lambda: storages[name].get_message("u", f"h{size}", ids[name][size][size // 2])

    for _ in range(args.rounds):
        await interleaved({n: updater(n) for n in storages}, timer("update_session_state"), 10)
        await interleaved({n: getter(n) for n in storages}, timer("get_session"), 10)
        for size in sizes:
            at = f" @{size:,}"
            await interleaved(
                {n: appender(n, size) for n in storages}, timer("upsert_message" + at), 5
            )
            await interleaved(
                {n: lister(n, size, False) for n in storages},
                timer("list_messages (latest)" + at),
                10,
            )
            await interleaved(
                {n: lister(n, size, True) for n in storages},
                timer("list_messages (cursor)" + at),
                10,
            )
            await interleaved(
                {n: fetcher(n, size) for n in storages}, timer("get_message" + at), 10
            )

    for size in sizes:  # both storages answer the same pages
        pages = {}
        for name, storage in storages.items():
            page, more = await storage.list_messages("u", f"h{size}", PAGE, ids[name][size][-1])
            pages[name] = ([m.get_text_content() for m in page], more)
        if pages[OURS] != pages[THEIRS]:
            raise RuntimeError(f"the pages at {size} differ: {pages}")
    for name, storage in storages.items():
        got = await storage.get_session("u", "a", sessions[name])
        if got is None or got.state.summary != f"turn {turn[name]}":
            raise RuntimeError(f"{name}: the state read back is not the last one written")
        await storage.aclose()
    figures = {
        measure: {name: statistics.median(t) * 1e6 for name, t in by_name.items()}
        for measure, by_name in times.items()
    }
    return {"sizes": sizes, "figures": figures, "durability": durability(folder)}


def report(results: dict[str, Any]) -> bool:
    print("\nDurability (every acknowledged write survives a power loss):")
    for name, how in results["durability"].items():
        print(f"  {name}: {how}")
    print(f"\n| measure | {OURS} (µs) | {THEIRS} (µs) | ratio |")
    print("|---|---|---|---|")
    ok = True
    for measure, row in results["figures"].items():
        ratio = row[THEIRS] / row[OURS]
        ok &= ratio >= 1.0
        print(f"| {measure} | {row[OURS]:,.0f} | {row[THEIRS]:,.0f} | {ratio:.2f}x |")
    sizes = results["sizes"]
    small, large = sizes[0], sizes[-1]
    print()
    for measure in (
        "upsert_message",
        "list_messages (latest)",
        "list_messages (cursor)",
        "get_message",
    ):
        figures = results["figures"]
        growth = figures[f"{measure} @{large:,}"][OURS] / figures[f"{measure} @{small:,}"][OURS]
        flat = growth <= FLAT
        ok &= flat
        print(
            f"flat in history: {measure} @{large:,} / @{small:,} = {growth:.2f}x "
            f"({'ok' if flat else 'NOT flat'}, at most {FLAT}x)"
        )
    print("\nevery row at least 1.0x and flat:", "yes" if ok else "NO")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200,2000", help="history sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.rounds = "120,600", 2
    folder = Path(tempfile.mkdtemp(prefix="bench-as2-"))
    try:
        results = asyncio.run(bench(args, folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    ok = report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
