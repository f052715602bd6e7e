"""Flatness in a session's logs: what reading a module's documents (and the logs below them)
costs when the session holds many message logs under other modules.

Run from the repository root, in the frameworks' environment (LangGraph's part needs it)::

    .venv-frameworks/bin/python benchmarks/bench_logs_below.py [--json out.json] [--quick]

``read_modules`` answers with the documents named and every log below them (``name`` or
``name.*``).
LangGraph's saver puts a checkpoint's 17th and later writes in a log below its writes
document (``langgraph/writes/<ns>/<id>.more``), so a thread whose steps fan out to many tasks
gains a log a checkpoint; an AgentScope or PraisonAI session gains one a module that logs.
Three parts, on ``memory://``, ``json://``, SQLite, Redis and (``--postgres``) PostgreSQL, the
two sides of each taking turns call by call:

1. ``read_modules`` of one module (a document, no log below it) in a session of 0 and of
   1,000 logs under other modules.
2. ``PraisonSaver``, sync: ``get_tuple`` of a thread's latest checkpoint, and ``put_writes``
   of a task to it, on two threads of 500 checkpoints each, one whose checkpoints hold 16
   writes (their documents full, no log) and one whose checkpoints hold 18 (500 logs); the
   latest checkpoint of both holds 4 writes.
3. ``append_log`` of one message to one log, then ``read_log`` of its last message, in a
   session with a sliding TTL (one hour) of 0 and of 1,000 logs (``--logs N`` for another
   count): a write, and a read that slides the TTL, of one log among many.

Ratio = median time with many logs / median time with none; target: at most 1.2 (flat).
The time is wall-clock per call (a server's work counts), the median of each side's calls.
JSON misses by design: it reads and writes a session's whole document each operation (so its
every call grows with the session, logs or not). Until schema 4 PostgreSQL kept every log's
length in its session's row, which a write to a log rewrote (``put_writes`` past 16 writes,
``append_log``), and Redis expired every key of a session with a TTL on each write and read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the servers of the test suite
sys.path.insert(0, str(HERE))

from bench_langgraph import Thread  # noqa: E402

from praisonsession.integrations.langgraph import PraisonSaver  # noqa: E402
from praisonsession.stores import Key, LogWrite, open_store  # noqa: E402
from redis_server import RedisServer  # noqa: E402

FLAT_TARGET = 1.2
PARTS = ("read_modules", "langgraph", "one_log")


def timed_turns(sides: dict[str, Callable[[], Any]], calls: int) -> dict[str, float]:
    """Each side's median microseconds a call, the sides taking turns call by call."""
    spent: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(calls):
        for name, call in sides.items():
            started = time.perf_counter()
            call()
            spent[name].append(time.perf_counter() - started)
    return {name: statistics.median(times) * 1e6 for name, times in spent.items()}


# -- 1. read_modules ------------------------------------------------------------------------


def read_modules_part(url: str, logs: int, calls: int) -> dict[str, float]:
    backend = open_store(url).backend
    loop = asyncio.new_event_loop()
    run = loop.run_until_complete
    keys = {0: Key("bench", "few"), logs: Key("bench", "many")}
    try:
        for count, key in keys.items():
            document = {"v": "x" * 200}
            run(backend.write_modules(key, documents={"read": document}, writes=[]))
            for first in range(0, count, 100):
                writes = [
                    LogWrite(f"module{i}.log", [{"role": "user", "content": f"m{i}"}], None)
                    for i in range(first, min(count, first + 100))
                ]
                run(backend.write_modules(key, documents={}, writes=writes))

        def reader(key: Key) -> Callable[[], Any]:
            def read() -> None:
                stored = run(backend.read_modules(key, names=["read"]))
                if stored is None or stored.logs or "read" not in stored.documents:
                    raise RuntimeError(f"{url}: read_modules did not return the one document")

            return read

        return timed_turns({str(n): reader(k) for n, k in keys.items()}, calls)
    finally:
        run(backend.close())
        loop.close()


# -- 2. LangGraph ---------------------------------------------------------------------------


def langgraph_part(url: str, checkpoints: int, calls: int) -> dict[str, dict[str, float]]:
    saver = PraisonSaver(url)
    threads = {0: Thread(saver, "few"), checkpoints: Thread(saver, "many")}
    for logs, thread in threads.items():
        # each task writes 2: 8 tasks fill a writes document (16), a 9th starts its log
        tasks = 9 if logs else 8
        for _ in range(checkpoints):
            thread.put()
            for task in range(tasks):
                saver.put_writes(*thread.writes(task))
        thread.put()  # the latest, the same on both: 2 tasks' writes, no log
        for task in range(2):
            saver.put_writes(*thread.writes(task))
    for thread in threads.values():
        found = saver.get_tuple(thread.latest())
        thread.check(found, url)
        if len(found.pending_writes) != 4:
            raise RuntimeError(f"{url}: {len(found.pending_writes)} writes, not 4")

    def latest(thread: Thread) -> Callable[[], Any]:
        return lambda: thread.check(saver.get_tuple(thread.latest()), url)

    counter = iter(range(1000, 10**9))

    def writes(thread: Thread) -> Callable[[], Any]:
        return lambda: saver.put_writes(*thread.writes(next(counter)))

    out = {
        "get_tuple": timed_turns({str(n): latest(t) for n, t in threads.items()}, calls),
        "put_writes": timed_turns({str(n): writes(t) for n, t in threads.items()}, calls),
    }
    saver.close()
    return out


# -- 3. one append among many logs ---------------------------------------------------------


def append_part(url: str, logs: int, calls: int) -> dict[str, dict[str, float]]:
    backend = open_store(url, default_ttl=3600).backend
    loop = asyncio.new_event_loop()
    run = loop.run_until_complete
    keys = {0: Key("bench", "few"), logs: Key("bench", "many")}
    try:
        for count, key in keys.items():
            run(backend.write_modules(key, documents={"doc": {"v": 1}}, writes=[]))
            for first in range(0, count, 100):
                writes = [
                    LogWrite(f"module{i}.log", [{"role": "user", "content": f"m{i}"}], None)
                    for i in range(first, min(count, first + 100))
                ]
                run(backend.write_modules(key, documents={}, writes=writes))
            info = run(backend.read_record(key))
            if info is None or info.ttl != 3600:
                raise RuntimeError(f"{url}: the session has no TTL of an hour")

        def appender(key: Key) -> Callable[[], Any]:
            message = [{"role": "user", "content": "x" * 100}]
            return lambda: run(backend.append_log(key, write=LogWrite("chat", message, -1)))

        def reader(key: Key) -> Callable[[], Any]:
            return lambda: run(backend.read_log(key, path="chat", start=-1, stop=None))

        return {
            "append_log": timed_turns({str(n): appender(k) for n, k in keys.items()}, calls),
            "read_log": timed_turns({str(n): reader(k) for n, k in keys.items()}, calls),
        }
    finally:
        run(backend.close())
        loop.close()


# -- stores ---------------------------------------------------------------------------------


@contextmanager
def stores(args: argparse.Namespace) -> Iterator[dict[str, Callable[[str], str]]]:
    """Each store's URL maker: a fresh place for each part's name."""
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        made: dict[str, Callable[[str], str]] = {
            "memory": lambda name: "memory://",
            "json": lambda name: f"json://{folder / name}",
            "sqlite": lambda name: f"sqlite:///{folder / name}.db",
        }
        server = RedisServer().start()
        stack.callback(server.stop)
        made["redis"] = lambda name: f"{server.url}?key_prefix={name}"
        if args.postgres:
            from postgres_server import SERVER_WAL, PostgresServer

            pg = PostgresServer(max_wal_size=SERVER_WAL).start()
            stack.callback(pg.stop)
            made["postgres"] = lambda name: f"{pg.url}?schema={name}"
        yield {k: v for k, v in made.items() if not args.only or k in args.only}


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"load": os.getloadavg()}
    with stores(args) as urls:
        for store, url in urls.items():
            measured: dict[str, Any] = {}
            if "read_modules" in args.parts:
                measured["read_modules"] = read_modules_part(
                    url(f"rm_{store}"), args.logs, args.calls
                )
            if "langgraph" in args.parts:
                measured |= langgraph_part(url(f"lg_{store}"), args.checkpoints, args.calls)
            if "one_log" in args.parts:
                measured |= append_part(url(f"ap_{store}"), args.logs, args.calls)
            results[store] = measured
            print(f"{store} done", flush=True)
    results["load_after"] = os.getloadavg()
    return results


def report(results: dict[str, Any], args: argparse.Namespace) -> bool:
    print(f"\nload {results['load'][0]:.1f} -> {results['load_after'][0]:.1f}")
    rows = [
        ("read_modules", f"read_modules, 0 / {args.logs:,} logs"),
        ("get_tuple", f"get_tuple latest, 0 / {args.checkpoints:,} logs"),
        ("put_writes", f"put_writes, 0 / {args.checkpoints:,} logs"),
        ("append_log", f"append_log (TTL), 0 / {args.logs:,} logs"),
        ("read_log", f"read_log of the last (TTL), 0 / {args.logs:,} logs"),
    ]
    ok = True
    print(f"| store | measure | none (us) | many (us) | many / none <= {FLAT_TARGET:g} |")
    print("|---|---|---|---|---|")
    for store, measured in results.items():
        if not isinstance(measured, dict):
            continue
        for name, label in rows:
            if name not in measured:
                continue
            few, many = measured[name].values()
            ratio = many / few
            ok &= ratio <= FLAT_TARGET
            verdict = "pass" if ratio <= FLAT_TARGET else "miss"
            print(f"| {store} | {label} | {few:,.1f} | {many:,.1f} | {ratio:.2f} ({verdict}) |")
    print(f"flat (every ratio <= {FLAT_TARGET:g}): {'yes' if ok else 'NO'}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--quick", action="store_true", help="fewer calls, smaller sessions")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL too (initdb)")
    parser.add_argument("--only", nargs="*", help="these stores only (memory json sqlite ...)")
    parser.add_argument(
        "--parts",
        nargs="*",
        choices=PARTS,
        default=PARTS,
        help="these parts only (1 read_modules, 2 langgraph, 3 one_log: append_log and read_log)",
    )
    parser.add_argument("--logs", type=int, help="logs of the many-logs session (1,000)")
    parser.add_argument("--checkpoints", type=int, help="checkpoints of each thread (500)")
    args = parser.parse_args()
    calls, logs, checkpoints = (50, 200, 100) if args.quick else (300, 1000, 500)
    args.calls, args.logs = calls, args.logs or logs
    args.checkpoints = args.checkpoints or checkpoints
    results = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    report(results, args)


if __name__ == "__main__":
    main()
