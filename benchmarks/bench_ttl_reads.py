"""A read of a session whose TTL slides, beside the raw engine's floor with and without a flush.

Run from the repository root::

    .venv/bin/python benchmarks/bench_ttl_reads.py [--quick] [--json results.json]

A read of a session with a sliding TTL writes the session's new expiry. It acknowledges no
write of the caller's, so its commit does not wait for a disk flush of its own: SQLite at
durability "power" commits it at ``synchronous=NORMAL`` (flushed by the next commit that is),
PostgreSQL with ``synchronous_commit`` off for that transaction alone. In one run, per store,
microseconds per ``Session.get_state`` of one key (the synchronous facade):

- of a session with no TTL (nothing to slide), and of one with ``session_ttl=3600``;
- beside the raw engine doing the least such a read must, with the same connection settings:
  on SQLite the value's ``SELECT``, then ``BEGIN IMMEDIATE``, the expiry's ``UPDATE`` and
  ``COMMIT`` at ``NORMAL`` (the slide unflushed) and at ``FULL`` (flushed); on PostgreSQL one
  autocommit ``UPDATE ... RETURNING`` of the expiry with the value, ``synchronous_commit`` on
  and off.

The SQLite files are WAL with the durability's ``synchronous``; the PostgreSQL server runs
with ``fsync`` and ``synchronous_commit`` on (its defaults). The measures take turns, round
by round; best and median of the rounds. Checks what it read; no timing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the server helpers of the test suite

from raw_engines import SQLITE_SYNCHRONOUS  # noqa: E402

from postgres_server import PostgresServer  # noqa: E402
from praisonsession import Session  # noqa: E402

TTL = 3600.0


def per_read(n: int, read: Callable[[], Any], expected: Any, who: str) -> float:
    """µs per call of ``read``, ``n`` in a row, each checked to return ``expected``."""
    start = time.perf_counter()
    for _ in range(n):
        if read() != expected:
            raise RuntimeError(f"{who}: the read did not find a == 1")
    return (time.perf_counter() - start) / n * 1e6


def facade_reads(session: Session, n: int) -> float:
    """µs per ``get_state("a")`` of ``session``, which holds ``a == 1``."""
    return per_read(n, partial(session.get_state, "a"), 1, session.session_id)


def sqlite_floor(path: Path, synchronous: str) -> Callable[[int], float]:
    """The raw engine's read that slides: the value's SELECT, then the expiry's UPDATE in a
    write transaction of its own, committed at ``synchronous``."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT, expires REAL)")
    conn.execute("INSERT OR REPLACE INTO kv VALUES ('a', '1', 0)")

    def read() -> Any:
        (value,) = conn.execute("SELECT v FROM kv WHERE k='a'").fetchone()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE kv SET expires=? WHERE k='a'", (time.time() + TTL,))
        conn.execute("COMMIT")
        return value

    return lambda n: per_read(n, read, "1", f"raw SQLite at {synchronous}")


def postgres_floor(url: str, synchronous_commit: str) -> Callable[[int], float]:
    """The raw engine's read that slides: one autocommit UPDATE ... RETURNING the value."""
    import psycopg

    conn = psycopg.connect(url, autocommit=True)
    conn.execute(f"SET synchronous_commit = {synchronous_commit}")
    conn.execute("CREATE TABLE IF NOT EXISTS kv (k text PRIMARY KEY, v text, expires float8)")
    conn.execute("INSERT INTO kv VALUES ('a', '1', 0) ON CONFLICT (k) DO NOTHING")

    def read() -> Any:
        slide = "UPDATE kv SET expires = %s WHERE k = 'a' RETURNING v"
        return conn.execute(slide, (time.time() + TTL,)).fetchone()

    return lambda n: per_read(n, read, ("1",), f"raw PostgreSQL, {synchronous_commit}")


def sessions(url: str) -> dict[str, Session]:
    """A session without a TTL and one with ``TTL``, each holding ``a == 1``."""
    made = {
        "ours, no TTL": Session("plain", store=url),
        "ours, TTL slides": Session("timed", store=url, session_ttl=TTL),
    }
    for session in made.values():
        session.set_state("a", 1)
    return made


def take_turns(measures: dict[str, Callable[[int], float]], n: int, rounds: int) -> dict[str, Any]:
    """µs per read of each measure, the measures taking turns round by round."""
    runs: dict[str, list[float]] = {name: [] for name in measures}
    for measure in measures.values():
        measure(max(1, n // 10))  # connections open, caches warm
    for _ in range(rounds):
        for name, measure in measures.items():
            runs[name].append(measure(n))
    return {name: {"best": min(r), "median": statistics.median(r)} for name, r in runs.items()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"reads": args.reads, "rounds": args.rounds, "stores": {}}
    with tempfile.TemporaryDirectory(prefix="ps-ttl-reads-") as folder:
        for durability, synchronous in SQLITE_SYNCHRONOUS.items():
            url = f"sqlite://{folder}/ours-{durability}.db?durability={durability}"
            opened = sessions(url)
            measures: dict[str, Callable[[int], float]] = {
                name: (lambda n, s=session: facade_reads(s, n)) for name, session in opened.items()
            }
            for floor in ("NORMAL", "FULL"):
                path = Path(folder) / f"raw-{durability}-{floor}.db"
                measures[f"raw engine, slide at {floor}"] = sqlite_floor(path, floor)
            store = f'SQLite, durability "{durability}" (synchronous={synchronous})'
            results["stores"][store] = take_turns(measures, args.reads, args.rounds)
            for session in opened.values():
                session.close()
        with PostgresServer(durable=True) as server:
            opened = sessions(server.url)
            measures = {
                name: (lambda n, s=session: facade_reads(s, n)) for name, session in opened.items()
            }
            for setting in ("off", "on"):
                name = f"raw engine, synchronous_commit={setting}"
                measures[name] = postgres_floor(server.url, setting)
            store = "PostgreSQL (fsync on, synchronous_commit on)"
            results["stores"][store] = take_turns(measures, args.reads, args.rounds)
            for session in opened.values():
                session.close()
    return results


def report(results: dict[str, Any]) -> None:
    print(f"{results['reads']:,} reads a measure a round, {results['rounds']} rounds, µs a read")
    for store, measures in results["stores"].items():
        timed = measures["ours, TTL slides"]
        print(f"\n{store}")
        print("| measure | µs, best | µs, median | ours with a TTL / it (best, median) |")
        print("|---|---|---|---|")
        for name, figures in measures.items():
            ratio = (timed["best"] / figures["best"], timed["median"] / figures["median"])
            print(
                f"| {name} | {figures['best']:,.1f} | {figures['median']:,.1f} | "
                f"{ratio[0]:.2f}x, {ratio[1]:.2f}x |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts: correctness only")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    args.reads, args.rounds = (50, 1) if args.quick else (1000, 3)
    results = run(args)
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
