"""Flatness in a session's logs: what reading a module's documents (and the logs below them)
costs when the session holds many message logs under other modules.

Run from the repository root, in the frameworks' environment (LangGraph's part needs it)::

    .venv-frameworks/bin/python benchmarks/bench_logs_below.py [--json out.json] [--quick]

``read_modules`` answers with the documents named and every log below them (``name`` or
``name.*``).
LangGraph's saver puts a checkpoint's 17th and later writes in a log below its writes
document (``langgraph/writes/<ns>/<id>.more``), so a thread whose steps fan out to many tasks
gains a log a checkpoint; an AgentScope or PraisonAI session gains one a module that logs.
Two parts, on ``memory://``, ``json://``, SQLite, Redis and (``--postgres``) PostgreSQL, the
two sides of each taking turns call by call:

1. ``read_modules`` of one module (a document, no log below it) in a session of 0 and of
   1,000 logs under other modules.
2. ``PraisonSaver``, sync: ``get_tuple`` of a thread's latest checkpoint, and ``put_writes``
   of a task to it, on two threads of 500 checkpoints each, one whose checkpoints hold 16
   writes (their documents full, no log) and one whose checkpoints hold 18 (500 logs); the
   latest checkpoint of both holds 4 writes.

Ratio = median time with many logs / median time with none; target: at most 1.2 (flat).
The time is wall-clock per call (a server's work counts), the median of each side's calls.
Two rows miss by design: JSON reads and writes a session's whole document each operation (so
its every call grows with the session, logs or not), and PostgreSQL keeps every log's length
in its session's row, which a write to a log rewrites (``put_writes`` past 16 writes).
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
            from postgres_server import PostgresServer

            pg = PostgresServer().start()
            stack.callback(pg.stop)
            made["postgres"] = lambda name: f"{pg.url}?schema={name}"
        yield {k: v for k, v in made.items() if not args.only or k in args.only}


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"load": os.getloadavg()}
    with stores(args) as urls:
        for store, url in urls.items():
            results[store] = {
                "read_modules": read_modules_part(url(f"rm_{store}"), args.logs, args.calls),
                **langgraph_part(url(f"lg_{store}"), args.checkpoints, args.calls),
            }
            print(f"{store} done", flush=True)
    results["load_after"] = os.getloadavg()
    return results


def report(results: dict[str, Any], args: argparse.Namespace) -> bool:
    print(f"\nload {results['load'][0]:.1f} -> {results['load_after'][0]:.1f}")
    rows = [
        ("read_modules", f"read_modules, 0 / {args.logs:,} logs"),
        ("get_tuple", f"get_tuple latest, 0 / {args.checkpoints:,} logs"),
        ("put_writes", f"put_writes, 0 / {args.checkpoints:,} logs"),
    ]
    ok = True
    print(f"| store | measure | none (us) | many (us) | many / none <= {FLAT_TARGET:g} |")
    print("|---|---|---|---|---|")
    for store, measured in results.items():
        if not isinstance(measured, dict):
            continue
        for name, label in rows:
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
    args = parser.parse_args()
    args.calls, args.logs, args.checkpoints = (50, 200, 100) if args.quick else (300, 1000, 500)
    results = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    report(results, args)


if __name__ == "__main__":
    main()
