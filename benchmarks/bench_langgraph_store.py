"""LangGraph's long-term store: PraisonStore next to LangGraph's own SQLite stores, in one run.

Run from the repository root, in the frameworks' environment (``make test`` builds it)::

    .venv-frameworks/bin/python benchmarks/bench_langgraph_store.py [--json results.json] [--quick]

``PraisonStore`` against ``SqliteStore`` (the sync methods) and ``AsyncSqliteStore`` (the async
ones, on aiosqlite), op by op, in 3 rounds, the two stores taking turns call by call on one
thread. Each side holds the same items: 10 users, each with the namespaces ``(user,
"memories")`` and ``(user, "prefs")`` of 100 items (``{"text": ..., "n": ...}``). The ops:

- ``put`` of a new item, and of an item that exists (an update: its ``created_at`` kept);
- ``get`` of an item;
- ``search`` of one namespace with a filter (``{"n": k}``: one item of 100 matches) and
  without one (the 10 updated last);
- ``list_namespaces(prefix=(user,))``;
- ``delete`` of an item (each put just before its call, not timed).

Every answer is checked (the item, the one match, the 10 newest, the two namespaces, the
deleted item gone). Ratio = our ops/s / theirs in each round; targets: the best round at least
1.0 and the median at least 1.1.

Semantic search is left out: ``SqliteStore`` searches by meaning only with an ``index`` of an
embedding function and the ``sqlite-vec`` extension, neither installed here, and ours embeds
with its own offline model. So ``PraisonStore`` runs with ``index=False`` (what
``SqliteStore`` does without an ``index``: no embedding on ``put``).

Durability, the same on both sides and read back with ``PRAGMA`` from each side's own
connection (the run stops if not): WAL with ``synchronous=FULL`` (the WAL fsynced at every
commit). Ours is ``sqlite://...?durability=power``; LangGraph's stores are given WAL and
``synchronous=FULL`` on their connection here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiosqlite
from bench_langgraph import (
    BEST_TARGET,
    MEDIAN_TARGET,
    SYNCHRONOUS,
    Rounds,
    atheirs_setup,
    aturns,
    ours_pragmas,
    record,
    speed_rows,
    theirs_setup,
    turns,
)
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from praisonsession.integrations.langgraph_store import PraisonStore

OURS = "PraisonStore"
USERS = 10
NAMESPACES = ("memories", "prefs")
#: A measure's arguments for call i, and the check of its answer (answer, i, store's name).
Arguments = Callable[[int], tuple[tuple[Any, ...], dict[str, Any]]]
Checked = Callable[[Any, int, str], None]
#: A measure: its field, the store method it calls, its arguments and its check.
Op = tuple[str, str, Arguments, Checked]


def item(n: int, text: str = "fact") -> dict[str, Any]:
    return {"text": f"{text} {n}: " + "x" * 60, "n": n}


def new_item(n: int) -> dict[str, Any]:
    """An item put (and deleted) in the rounds: no ``n``, so that no filter finds it."""
    return {"text": f"new {n}: " + "x" * 60, "new": n}


def ops(items: int, number: int) -> list[Op]:
    """The measures of round ``number``: what each store is called with, and how its answer
    is checked."""

    def user(i: int) -> str:
        return f"user-{i % USERS}"

    def fresh(i: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return fresh_of(number, i), {}

    def update(i: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return ((user(i), "prefs"), f"k{i % items}", item(i % items, "again")), {}

    def got(i: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return ((user(i), "memories"), f"k{i % items}"), {}

    def filtered(i: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return ((user(i), "memories"),), {"filter": {"n": i % items}, "limit": 10}

    def newest(i: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return ((user(i), "prefs"),), {"limit": 10}

    def namespaces(i: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (), {"prefix": (user(i),)}

    def gone(i: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return ((user(i), "memories"), f"new-{number}-{i}"), {}

    def nothing(found: Any, i: int, name: str) -> None:
        check(found is None, name, f"put answered {found!r}")

    def the_item(found: Any, i: int, name: str) -> None:
        check(found is not None and found.value == item(i % items), name, f"get: {found!r}")

    def one_match(found: Any, i: int, name: str) -> None:
        check([f.key for f in found] == [f"k{i % items}"], name, f"search(filter): {found!r}")

    def ten(found: Any, i: int, name: str) -> None:
        check(len(found) == min(10, items), name, f"search(): {len(found)} items")

    def both(found: Any, i: int, name: str) -> None:
        wanted = [(user(i), namespace) for namespace in sorted(NAMESPACES)]
        check(sorted(found) == wanted, name, f"list_namespaces: {found!r}")

    return [
        ("put_new", "put", fresh, nothing),
        ("put_update", "put", update, nothing),
        ("get", "get", got, the_item),
        ("search_filter", "search", filtered, one_match),
        ("search_newest", "search", newest, ten),
        ("list_namespaces", "list_namespaces", namespaces, both),
        ("delete", "delete", gone, nothing),
    ]


def check(ok: bool, name: str, what: str) -> None:
    if not ok:
        raise SystemExit(f"{name}: wrong answer, {what}")


def labels(items: int) -> list[tuple[str, str]]:
    return [
        ("put of a new item", "put_new"),
        ("put of an item that exists (an update)", "put_update"),
        ("get of an item", "get"),
        (f"search(filter=...) of a namespace of {items:,}, 1 match", "search_filter"),
        (f"search() of a namespace of {items:,}, the 10 newest", "search_newest"),
        (f"list_namespaces(prefix=(user,)), {len(NAMESPACES)} a user", "list_namespaces"),
        ("delete of an item", "delete"),
    ]


def filled(items: int) -> list[tuple[tuple[str, str], str, dict[str, Any]]]:
    """Every item each side holds before the rounds."""
    return [
        ((f"user-{u}", namespace), f"k{n}", item(n))
        for u in range(USERS)
        for namespace in NAMESPACES
        for n in range(items)
    ]


def sync_rounds(stores: dict[str, Any], args: argparse.Namespace) -> Rounds:
    for args_ in filled(args.items):
        for store in stores.values():
            store.put(*args_)
    rounds: Rounds = {}
    for number in range(args.rounds):
        for field, method, arguments, checked in ops(args.items, number):
            calls = {n: sync_call(s, n, method, arguments, checked) for n, s in stores.items()}
            prepare = None
            if method == "delete":  # each deleted item put just before its call, not timed
                prepare = {n: sync_put(s, number) for n, s in stores.items()}
            record(rounds, field, turns(calls, args.calls, prepare))
        for name, store in stores.items():  # the deleted items are gone
            check(store.get(*fresh_of(number, 0)[:2]) is None, name, "a deleted item was found")
    return rounds


def sync_call(
    store: Any, name: str, method: str, arguments: Arguments, checked: Checked
) -> Callable[[int], None]:
    def one(i: int) -> None:
        positional, named = arguments(i)
        checked(getattr(store, method)(*positional, **named), i, name)

    return one


def sync_put(store: Any, number: int) -> Callable[[int], None]:
    return lambda i: store.put(*fresh_of(number, i))


async def async_rounds(stores: dict[str, Any], args: argparse.Namespace) -> Rounds:
    for args_ in filled(args.items):
        for store in stores.values():
            await store.aput(*args_)
    rounds: Rounds = {}
    for number in range(args.rounds):
        for field, method, arguments, checked in ops(args.items, number):
            calls = {n: async_call(s, n, method, arguments, checked) for n, s in stores.items()}
            prepare = None
            if method == "delete":
                prepare = {n: async_put(s, number) for n, s in stores.items()}
            record(rounds, field, await aturns(calls, args.calls, prepare))
        for name, store in stores.items():
            gone = await store.aget(*fresh_of(number, 0)[:2])
            check(gone is None, name, "a deleted item was found")
    return rounds


def async_call(
    store: Any, name: str, method: str, arguments: Arguments, checked: Checked
) -> Callable[[int], Awaitable[None]]:
    async def one(i: int) -> None:
        positional, named = arguments(i)
        checked(await getattr(store, "a" + method)(*positional, **named), i, name)

    return one


def async_put(store: Any, number: int) -> Callable[[int], Awaitable[None]]:
    async def put(i: int) -> None:
        await store.aput(*fresh_of(number, i))

    return put


def fresh_of(number: int, i: int) -> tuple[tuple[str, str], str, dict[str, Any]]:
    """The item round ``number``'s call ``i`` of ``put`` of a new item made (and ``delete``
    removes)."""
    return (f"user-{i % USERS}", "memories"), f"new-{number}-{i}", new_item(i)


def run(args: argparse.Namespace) -> dict[str, Any]:
    print(f"Python {sys.version.split()[0]}, {args.rounds} rounds of {args.calls} timed calls "
          f"per measure and store; targets: best round >= {BEST_TARGET:g}, median >= "
          f"{MEDIAN_TARGET:g}")  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="bench-lg-store-"))
    results: dict[str, Any] = {"items": args.items, "rounds": args.rounds, "calls": args.calls}
    durability: dict[str, str] = {}
    ours = PraisonStore(f"sqlite://{folder / 'ours.db'}?durability=power", index=False)
    conn = sqlite3.connect(folder / "theirs.db", check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    theirs = SqliteStore(conn)
    theirs.setup()
    durability["SqliteStore"] = theirs_setup(conn)
    results["sync"] = sync_rounds({OURS: ours, "SqliteStore": theirs}, args)
    durability[OURS] = ours_pragmas(ours)
    conn.close()
    ours.close()

    async def async_part() -> Rounds:
        aours = PraisonStore(f"sqlite://{folder / 'aours.db'}?durability=power", index=False)
        async with aiosqlite.connect(folder / "atheirs.db", isolation_level=None) as aconn:
            await aconn.execute("PRAGMA journal_mode=WAL")
            atheirs = AsyncSqliteStore(aconn)
            await atheirs.setup()
            durability["AsyncSqliteStore"] = await atheirs_setup(aconn)
            found = await async_rounds({OURS: aours, "AsyncSqliteStore": atheirs}, args)
        durability[f"{OURS} (async)"] = ours_pragmas(aours)
        await aours.aclose()
        return found

    results["async"] = asyncio.run(async_part())
    results["durability"] = durability
    wanted = f"WAL, synchronous={SYNCHRONOUS}"
    for name, found in durability.items():
        check(found == wanted, name, f"durability {found}, not {wanted}")
    return results


def report(results: dict[str, Any]) -> bool:
    verdicts: list[tuple[str, str, bool]] = []
    print("\nDurability (each side's connection, read back with PRAGMA)")
    for name, how in results["durability"].items():
        print(f"  {name}: {how}")
    print(
        f"\nSpeed: {results['rounds']} rounds of {results['calls']} calls per store and measure, "
        "the stores taking turns call by call; ratio = our ops/s / theirs, per round"
    )
    for mode in ("sync", "async"):
        speed_rows(results[mode], labels(results["items"]), mode, OURS, verdicts)
    print("\nTargets")
    for label, value, passed in verdicts:
        print(f"  {label:80} {value:>7}  {'PASS' if passed else 'MISS'}")
    return all(passed for _, _, passed in verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per measure, round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--items", type=int, default=100, help="items of each namespace")
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.items = 10, 20
    results = run(args)
    passed = report(results)
    if args.json:
        Path(args.json).write_text(json.dumps({**results, "passed": passed}, indent=2))


if __name__ == "__main__":
    main()
