"""Forks, snapshots and archives: what they cost, and how the cost grows with the session.

Run from the repository root (``make bench`` runs it)::

    .venv/bin/python benchmarks/bench_hierarchy.py [--json results.json] [--quick]

For each store (``memory://``, ``json://`` and ``sqlite://`` at durability "process", and
``redis://`` on a redis-server this script starts on 127.0.0.1), a session holding 20 state
keys, a saved module and one message log of 10 or of 10,000 messages is, through the
synchronous ``Session`` facade:

1. forked (``fork``), snapshotted (``snapshot``) and restored (``restore``): one atomic copy
   of the whole session each;
2. exported (``export`` to a file) and imported (``Session.import_archive`` into an empty
   store of the same kind).

Each figure is the median of several runs, in ms, with the cost per message at 10,000 and the
growth from 10 to 10,000 messages: a copy is linear in what it copies, so the growth is at
most the 1,000x of the messages, and much less where the fixed cost of a call dominates at 10.
Beside them, the raw engine doing the same copy in the same run: bare ``sqlite3``
``INSERT ... SELECT`` of the session's rows in one transaction (the floor under a SQLite fork),
and Redis's own ``COPY`` of the keys of the session (the floor under a Redis fork). Last, the
peak Python memory of exporting a 100,000-message SQLite session (``tracemalloc``): an export
streams, so it stays far below the size of the file.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the redis-server helper of the test suite

from bench_foundation import fresh_store as empty_store  # noqa: E402
from bench_foundation import make_message  # noqa: E402

from praisonsession import Session, SessionBase  # noqa: E402
from redis_server import RedisServer  # noqa: E402

BACKENDS = ("memory", "json", "sqlite", "redis")
SIZES = (10, 10_000)
LOG = "chat"
USER = "bench"
LINEAR = 1000  # 10 -> 10,000 messages: a copy linear in what it copies grows by at most this


@contextmanager
def fresh_store(backend: str, redis_url: str) -> Iterator[str | SessionBase]:
    """An empty store of ``backend`` (``bench_foundation.fresh_store``), or a new key prefix
    on the Redis server."""
    if backend == "redis":
        yield f"{redis_url}?key_prefix=bench-{uuid.uuid4().hex[:12]}:"
        return
    with empty_store(backend, "process") as store:
        yield store


def seed(session: Session, messages: int) -> None:
    session.save_state({f"key{i}": {"value": i, "text": "ünïcode ✓ 中文"} for i in range(20)})
    for start in range(0, messages, 1000):
        page = [make_message(i) for i in range(start, min(start + 1000, messages))]
        session.append_messages(LOG, page)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds taken by ``call()``, and what it returned."""
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def bench_store(backend: str, messages: int, repeats: int, redis_url: str) -> dict[str, Any]:
    """fork, snapshot, restore, export and import of one session of ``messages`` messages."""
    samples: dict[str, list[float]] = {k: [] for k in ("fork", "snapshot", "restore", "export")}
    samples["import"] = []
    folder = Path(tempfile.mkdtemp(prefix="ps-bench-archive-"))
    try:
        with fresh_store(backend, redis_url) as store:
            session = Session("source", USER, store=store)
            seed(session, messages)
            for i in range(repeats):
                archive = folder / f"a{i}.jsonl"
                steps = (
                    ("fork", lambda i=i: session.fork(f"fork-{i}")),
                    ("snapshot", lambda i=i: session.snapshot(f"s{i}")),
                    ("restore", lambda: session.restore(session.snapshots()[-1])),
                    ("export", lambda archive=archive: session.export(archive)),
                )
                for name, step in steps:
                    seconds, _ = timed(step)
                    samples[name].append(seconds)
                size = archive.stat().st_size
            copied = Session(f"fork-{repeats - 1}", USER, store=store)
            if copied.message_count(LOG) != messages or copied.restore_state() != (
                session.restore_state()
            ):
                raise RuntimeError(f"{backend}: a fork did not copy the session")
        for i in range(repeats):  # each import into an empty store of the same kind
            with fresh_store(backend, redis_url) as target:
                archive = folder / f"a{i}.jsonl"
                seconds, _ = timed(lambda t=target, a=archive: Session.import_archive(a, store=t))
                samples["import"].append(seconds)
                imported = Session("source", USER, store=target)
                if imported.message_count(LOG) != messages:
                    raise RuntimeError(f"{backend}: an import lost messages")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    figures: dict[str, Any] = {name: median_ms(values) for name, values in samples.items()}
    figures["archive_bytes"] = size
    return figures


# -- the raw engines doing the same copy ------------------------------------------------------


def raw_sqlite_copy(messages: int, repeats: int) -> float:
    """Bare sqlite3: copy a session's rows (session, its head and 20 state keys, the messages)
    to a new id with ``INSERT ... SELECT`` in one transaction, on our own schema (4), WAL,
    synchronous=NORMAL.
    The floor under a SQLite fork; median ms."""
    folder = tempfile.mkdtemp(prefix="ps-raw-copy-")
    try:
        path = f"{folder}/s.db"
        seed(Session("source", USER, store=f"sqlite://{path}?durability=process"), messages)
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA synchronous=NORMAL")
        samples = []
        for i in range(repeats):
            new = f"raw-{i}"
            start = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            for table, columns in (
                ("ps_sessions", "format, created_at, ttl, metadata"),
                ("ps_state", "name, value, version, updated_at, expires_at"),
                ("ps_modules", "name, document"),
                ("ps_logs", "log"),
            ):
                conn.execute(
                    f"INSERT INTO {table} (user_id, session_id, {columns}) "
                    f"SELECT user_id, ?, {columns} FROM {table} "
                    "WHERE user_id=? AND session_id=?",
                    (new, USER, "source"),
                )
            conn.execute(  # each log's messages, renumbered from the copy's log
                "INSERT INTO ps_entries (id, message) SELECT e.id + (t.id - s.id) * 4294967296, "
                "e.message FROM ps_logs s JOIN ps_logs t ON t.user_id=s.user_id "
                "AND t.session_id=? AND t.log=s.log JOIN ps_entries e "
                "ON e.id >= s.id * 4294967296 AND e.id < (s.id + 1) * 4294967296 "
                "WHERE s.user_id=? AND s.session_id=?",
                (new, USER, "source"),
            )
            conn.execute("COMMIT")
            samples.append(time.perf_counter() - start)
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM ps_messages WHERE session_id=?", (f"raw-{repeats - 1}",)
        ).fetchone()
        conn.close()
        if count != messages:
            raise RuntimeError(f"the raw copy holds {count} messages, not {messages}")
        return median_ms(samples)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def raw_redis_copy(redis_url: str, messages: int, repeats: int) -> float:
    """Redis's own ``COPY`` of a session's keys (a hash of 20 state keys, a list of the
    messages, the metadata hash), in one MULTI/EXEC: the floor under a Redis fork; median ms."""
    import redis

    client = redis.Redis.from_url(redis_url)
    prefix = f"ps-raw-copy-{uuid.uuid4().hex[:8]}"
    try:
        client.hset(f"{prefix}:src:meta", mapping={"version": 1, "format": 1})
        client.hset(f"{prefix}:src:state", mapping={f"key{i}": json.dumps(i) for i in range(20)})
        for start in range(0, messages, 1000):
            page = [json.dumps(make_message(i)) for i in range(start, min(start + 1000, messages))]
            client.rpush(f"{prefix}:src:log", *page)
        samples = []
        for i in range(repeats):
            pipe = client.pipeline(transaction=True)
            for part in ("meta", "state", "log"):
                pipe.copy(f"{prefix}:src:{part}", f"{prefix}:c{i}:{part}")
            start = time.perf_counter()
            pipe.execute()
            samples.append(time.perf_counter() - start)
        if client.llen(f"{prefix}:c{repeats - 1}:log") != messages:
            raise RuntimeError("the raw Redis copy lost messages")
        return median_ms(samples)
    finally:
        keys = list(client.scan_iter(f"{prefix}:*"))
        if keys:
            client.delete(*keys)
        client.close()


def export_peak(messages: int) -> dict[str, float]:
    """Peak Python memory while exporting a session of ``messages`` messages (tracemalloc),
    against the archive's size on disk."""
    folder = Path(tempfile.mkdtemp(prefix="ps-bench-peak-"))
    try:
        session = Session("big", USER, store=f"sqlite://{folder}/s.db?durability=process")
        seed(session, messages)
        tracemalloc.start()
        start = time.perf_counter()
        session.export(folder / "big.jsonl")
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        size = (folder / "big.jsonl").stat().st_size
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"messages": messages, "seconds": seconds, "peak_mb": peak / 1e6, "file_mb": size / 1e6}


# -- report ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no 100k export")
    parser.add_argument("--peak-messages", type=int, default=100_000)
    args = parser.parse_args()
    repeats = {10: 3 if args.quick else 7, 10_000: 1 if args.quick else 3}

    results: dict[str, Any] = {
        "durability": "process (SQLite synchronous=NORMAL; JSON no fsync "
        "per write; Redis: the server's, no append-only file here)"
    }
    server = RedisServer().start()
    try:
        for backend in BACKENDS:
            for size in SIZES:
                results[f"{backend}@{size}"] = bench_store(backend, size, repeats[size], server.url)
        for size in SIZES:
            results[f"raw_sqlite_copy@{size}"] = raw_sqlite_copy(size, repeats[size])
            results[f"raw_redis_copy@{size}"] = raw_redis_copy(server.url, size, repeats[size])
    finally:
        server.stop()
    if not args.quick:
        results["export_peak"] = export_peak(args.peak_messages)

    print(f"Durability: {results['durability']}\n")
    print("| store | op | @10 (ms) | @10,000 (ms) | µs per message @10,000 | growth 10 -> 10,000 |")
    print("|---|---|---|---|---|---|")
    for backend in BACKENDS:
        small, large = results[f"{backend}@10"], results[f"{backend}@10000"]
        for op in ("fork", "snapshot", "restore", "export", "import"):
            print(
                f"| {backend} | {op} | {small[op]:.2f} | {large[op]:.1f} | "
                f"{large[op] * 1000 / 10_000:.1f} | {large[op] / small[op]:.0f}x |"
            )
    print("\nBeside the raw engine, the same copy (fork):")
    print("| store | messages | fork, ours (ms) | raw engine (ms) | ours / raw |")
    print("|---|---|---|---|---|")
    for backend, raw in (("sqlite", "raw_sqlite_copy"), ("redis", "raw_redis_copy")):
        for size in SIZES:
            ours, bare = results[f"{backend}@{size}"]["fork"], results[f"{raw}@{size}"]
            print(f"| {backend} | {size:,} | {ours:.2f} | {bare:.2f} | {ours / bare:.1f}x |")
    if "export_peak" in results:
        peak = results["export_peak"]
        print(
            f"\nExport of {peak['messages']:,} messages (SQLite): {peak['seconds']:.1f} s, "
            f"archive {peak['file_mb']:.1f} MB, peak Python memory {peak['peak_mb']:.1f} MB"
        )
    print("\nTargets:")
    worst = max(
        results[f"{backend}@10000"][op] / results[f"{backend}@10"][op]
        for backend in BACKENDS
        for op in ("fork", "snapshot", "restore", "export", "import")
    )
    verdict = "PASS" if worst <= LINEAR else "MISS"
    print(
        f"  every cost grows at most linearly (<= {LINEAR:,}x from 10 to 10,000 messages): "
        f"worst {worst:,.0f}x  {verdict}"
    )
    if "export_peak" in results:
        peak = results["export_peak"]
        verdict = "PASS" if peak["peak_mb"] <= peak["file_mb"] / 4 else "MISS"
        print(
            f"  export streams (peak memory <= 1/4 of the archive): {peak['peak_mb']:.1f} MB "
            f"of {peak['file_mb']:.1f} MB  {verdict}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), "utf-8")


if __name__ == "__main__":
    main()
