"""praisonsession at the limit: ours, the raw engine and the peers, side by side in one run.

Run from the repository root (``make bench`` runs it last)::

    .venv/bin/python benchmarks/bench_limits.py [--json results.json] [--quick] [--no-peers]

Each measure goes through the synchronous ``praisonsession.Session`` facade, next to the
engine underneath it run bare in the same process (``raw_engines.py``) and to the peers
(each in its own virtualenv, see ``README.md``), at a stated durability:

1. ``increment_state`` on SQLite at durability "process" (``synchronous=NORMAL``) and "power"
   (``FULL``), against bare ``sqlite3`` ``UPDATE`` + ``COMMIT`` with the same pragmas, and
   against PraisonAI's ``Session.increment_state`` (which fsyncs every write). Ours and the
   raw engine take turns, five rounds each, each timed as one loop with one clock around it;
   the ratio is taken within each round and their median compared (every round is printed).
2. ``increment_state`` on Redis from one process, against bare redis-py ``INCRBY`` and
   ``EVALSHA`` round trips on the same server (three alternating rounds). The server says
   what a write survives (``appendonly``, ``appendfsync``); the client cannot change it.
3. A turn on Redis (saving one new message with ``save_modules``) at 10 and at 10,000
   messages of history, against AgentScope's ``RedisSession`` on the same server and the
   same workload, median ms per save (two alternating rounds).
4. ``Session()`` cold start: ``import`` + ``Session()`` + first ``set_state`` in fresh
   processes (median), compiling from source as this environment makes Python do, and with
   a bytecode cache.
5. ``add_memories`` of 2,000 short memories, against the embedding model alone on the same
   texts; knowledge ingestion in tokens/s against the model alone on the same chunks.

It prints a Markdown table (the one in ``benchmarks/README.md``) and the targets, PASS/MISS.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench_foundation import PRAISONAI, bench_cold_start, run_peer, time_increments
from bench_memory import bench_add_memories, bench_ingest
from bench_redis import _median_ms, bench_agentscope, bench_save
from raw_engines import (
    SQLITE_SYNCHRONOUS,
    redis_round_trips,
    redis_server_durability,
    sqlite_increment_statements,
    sqlite_update_commit,
)

from praisonsession import Session
from redis_server import RedisServer

RAW_SQLITE_TARGET = 0.65
RAW_REDIS_TARGET = 0.50
COLD_START_TARGET_MS = 40.0
ADD_MEMORIES_TARGET = 400.0
INGEST_OF_MODEL_TARGET = 0.85


@dataclass
class Row:
    """One line of the table: our figure, the raw engine's, the peer's, and the verdict."""

    measure: str
    durability: str
    ours: str
    raw: str = "-"
    peer: str = "-"
    of_raw: str = "-"
    vs_peer: str = "-"
    target: str = ""
    passed: bool | None = None


def rounds(count: int, *measures: Callable[[], float]) -> list[float]:
    """Run the measures in turn, ``count`` rounds; the median of each."""
    return [statistics.median(figures) for figures in paired(count, *measures)]


def paired(count: int, *measures: Callable[[], float]) -> list[list[float]]:
    """Run the measures in turn, ``count`` rounds; every figure of each, round by round, so
    that a ratio can be taken within each round (the machine drifts less within one)."""
    seen: list[list[float]] = [[] for _ in measures]
    for _ in range(count):
        for figures, measure in zip(seen, measures, strict=True):
            figures.append(measure())
    return seen


def facade_increments(url: str, n: int) -> float:
    """``Session.increment_state`` per second, timed as the bare engine's loop is (one clock
    around the loop, nothing inside it), and checked: the key must read ``n`` after."""
    with Session(store=url) as session:
        session.increment_state("warm-up")
        start = time.perf_counter()
        for _ in range(n):
            session.increment_state("hits")
        elapsed = time.perf_counter() - start
        final = session.get_state("hits")
    if final != n:
        raise RuntimeError(f"increment_state counted {final}, not {n}")
    return n / elapsed


# -- 1. SQLite ----------------------------------------------------------------------------


def sqlite_rows(
    args: argparse.Namespace, praisonai: dict[str, Any] | None, floors: dict[str, Any]
) -> list[Row]:
    """Ours, the bare UPDATE+COMMIT, and (in ``floors``) our own statements run bare."""
    rows = []
    for durability, n in (("process", args.n_sqlite), ("power", args.n_sqlite_power)):
        synchronous = SQLITE_SYNCHRONOUS[durability]

        def ours(durability: str = durability, n: int = n) -> float:
            folder = tempfile.mkdtemp(prefix="ps-limits-sqlite-")
            try:
                return facade_increments(f"sqlite://{folder}/s.db?durability={durability}", n)
            finally:
                shutil.rmtree(folder, ignore_errors=True)

        mines, raws, floors_seen = paired(
            args.rounds,
            ours,
            lambda s=synchronous, n=n: sqlite_update_commit(s, n),
            lambda s=synchronous, n=n: sqlite_increment_statements(s, n),
        )
        mine, raw, floor = (statistics.median(f) for f in (mines, raws, floors_seen))
        shares = [m / r for m, r in zip(mines, raws, strict=True)]
        share = statistics.median(shares)  # each round's ratio: the two sides side by side
        floors[durability] = {
            "ops_per_s": floor,
            "of_raw": floor / raw,
            "ours_of_floor": mine / floor,
            "rounds_of_raw": shares,
        }
        theirs = praisonai["increments_per_s"] if praisonai else None
        rows.append(
            Row(
                measure="increment_state, SQLite (ops/s)",
                durability=f"{durability} (synchronous={synchronous})",
                ours=f"{mine:,.0f}",
                raw=f"{raw:,.0f} (sqlite3 UPDATE+COMMIT)",
                peer="-" if theirs is None else f"PraisonAI {theirs:,.0f} (fsync per write)",
                of_raw=f"{share:.0%}",
                vs_peer="-" if theirs is None else f"{mine / theirs:,.1f}x",
                target=f">= {RAW_SQLITE_TARGET:.0%} of raw",
                passed=share >= RAW_SQLITE_TARGET,
            )
        )
    return rows


# -- 2 and 3. Redis -----------------------------------------------------------------------


def redis_rows(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    server = RedisServer().start()
    try:
        config = redis_server_durability(server.url)
        level = f"server: appendonly {config['appendonly']}, appendfsync {config['appendfsync']}"

        def ours() -> float:
            url = f"{server.url}?key_prefix=limits-{uuid.uuid4().hex[:12]}"
            figures = time_increments(url, args.n_redis)
            if not figures["correct"]:
                raise RuntimeError(f"increment_state counted {figures['final']}")
            return figures["ops_per_s"]

        raw_figures: list[dict[str, float]] = []

        def raw() -> float:
            raw_figures.append(redis_round_trips(server.url, args.n_redis))
            return max(raw_figures[-1].values())

        mine, fastest = rounds(args.rounds, ours, raw)
        incrby = statistics.median(r["incrby"] for r in raw_figures)
        evalsha = statistics.median(r["evalsha"] for r in raw_figures)
        share = mine / fastest
        rows = [
            Row(
                measure="increment_state, Redis, 1 process (ops/s)",
                durability=level,
                ours=f"{mine:,.0f}",
                raw=f"{incrby:,.0f} INCRBY / {evalsha:,.0f} EVALSHA (redis-py)",
                of_raw=f"{share:.0%}",
                target=f">= {RAW_REDIS_TARGET:.0%} of raw",
                passed=share >= RAW_REDIS_TARGET,
            )
        ]
        sizes = [10, 10_000]
        ours_ms: dict[int, list[float]] = {size: [] for size in sizes}
        theirs_ms: dict[int, list[float]] = {size: [] for size in sizes}
        for _ in range(2):
            url = f"{server.url}?key_prefix=limits-{uuid.uuid4().hex[:12]}"
            saved = bench_save(url, sizes, args.turns)
            for size in sizes:
                ours_ms[size].append(saved["save_ms"][str(size)])
            peer = None if args.no_peers else bench_agentscope(server.url, sizes, args.turns)
            if peer and "results" in peer:
                for size in sizes:
                    theirs_ms[size].append(_median_ms(peer["results"][str(size)]))
        for size in sizes:
            mine_ms = statistics.median(ours_ms[size])
            theirs = statistics.median(theirs_ms[size]) if theirs_ms[size] else None
            speedup = None if theirs is None else theirs / mine_ms
            rows.append(
                Row(
                    measure=f"a turn on Redis @{size:,} messages (ms per save)",
                    durability=level,
                    ours=f"{mine_ms:.3f}",
                    peer="-" if theirs is None else f"AgentScope RedisSession {theirs:.3f}",
                    vs_peer="-" if speedup is None else f"{speedup:,.2f}x faster",
                    target="faster than AgentScope",
                    passed=None if speedup is None else speedup > 1,
                )
            )
        return rows, config
    finally:
        server.stop()


# -- 4 and 5. cold start, memory ----------------------------------------------------------


def cold_rows(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    cold = bench_cold_start(args.cold_runs)
    rows = []
    for mode, how in (
        ("as_is", "compiled from source (PYTHONDONTWRITEBYTECODE, as here)"),
        ("cached", "bytecode cached"),
    ):
        median = cold[mode]["median_ms"]
        rows.append(
            Row(
                measure=f"Session() cold start, {how} (ms)",
                durability="process",
                ours=f"{median:.1f}",
                target=f"< {COLD_START_TARGET_MS:g} ms",
                passed=median < COLD_START_TARGET_MS,
            )
        )
    return rows, cold


def memory_rows(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    root = Path(tempfile.mkdtemp(prefix="ps-limits-memory-"))
    try:
        batch = bench_add_memories(root, args.memories, seed=1234, singles=20)
        ingest = bench_ingest(root, args.files, args.corpus_mb, seed=1234)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = [
        Row(
            measure=(
                f"add_memories, {batch['memories']:,} short texts of "
                f"~{batch['avg_tokens']:.0f} tokens (memories/s)"
            ),
            durability="-",
            ours=f"{batch['memories_per_s']:,.0f}",
            raw=f"{batch['model_texts_per_s']:,.0f} (the model alone)",
            of_raw=f"{batch['of_model']:.0%}",
            target=f">= {ADD_MEMORIES_TARGET:g}/s",
            passed=batch["memories_per_s"] >= ADD_MEMORIES_TARGET,
        ),
        Row(
            measure=f"knowledge ingestion, {ingest['chunks_added']:,} chunks (tokens/s)",
            durability="-",
            ours=f"{ingest['ingest_tokens_per_s']:,.0f}",
            raw=f"{ingest['embed_tokens_per_s']:,.0f} (the model alone)",
            of_raw=f"{ingest['of_model']:.0%}",
            target=f">= {INGEST_OF_MODEL_TARGET:.0%} of the model",
            passed=ingest["of_model"] >= INGEST_OF_MODEL_TARGET,
        ),
    ]
    return rows, {"add_memories": batch, "ingest": ingest}


# -- report -------------------------------------------------------------------------------

COLUMNS = [
    ("measure", "measure"),
    ("durability", "durability"),
    ("ours", "ours"),
    ("raw", "raw engine"),
    ("of_raw", "ours / raw"),
    ("peer", "peer"),
    ("vs_peer", "ours vs peer"),
    ("target", "target"),
]


def markdown(rows: list[Row]) -> str:
    lines = [
        "| " + " | ".join(title for _, title in COLUMNS) + " | |",
        "|" + "---|" * (len(COLUMNS) + 1),
    ]
    for row in rows:
        verdict = "SKIP" if row.passed is None else "PASS" if row.passed else "MISS"
        cells = [str(getattr(row, name)) for name, _ in COLUMNS]
        lines.append("| " + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (5)")
    parser.add_argument(
        "--only",
        action="append",
        choices=("sqlite", "redis", "cold", "memory"),
        help="measure only these parts (repeatable); all of them by default",
    )
    parser.add_argument("--n-sqlite", type=int, default=20_000)
    parser.add_argument("--n-sqlite-power", type=int, default=1_000)
    parser.add_argument("--n-redis", type=int, default=5_000)
    parser.add_argument("--turns", type=int, default=50, help="Redis saves timed per size")
    parser.add_argument("--cold-runs", type=int, default=9)
    parser.add_argument("--memories", type=int, default=2_000)
    parser.add_argument("--files", type=int, default=12, help="files in the ingested corpus")
    parser.add_argument("--corpus-mb", type=float, default=0.3)
    parser.add_argument("--no-peers", action="store_true", help="skip PraisonAI and AgentScope")
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.n_sqlite, args.n_sqlite_power, args.n_redis = 1, 2000, 200, 1000
        args.turns, args.cold_runs, args.memories = 10, 3, 300
        args.files, args.corpus_mb = 3, 0.05
    return args


def main() -> None:
    args = parse_args()
    print(
        f"praisonsession at the limit: Python {platform.python_version()}, {os.cpu_count()} "
        f"CPUs, {platform.platform()}"
    )
    if hasattr(os, "getloadavg"):
        print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    figures: dict[str, Any] = {}
    parts = set(args.only or ("sqlite", "redis", "cold", "memory"))
    rows: list[Row] = []
    if "sqlite" in parts:
        praisonai = None if args.no_peers else run_peer(PRAISONAI)
        figures["praisonai"] = praisonai
        floors: dict[str, Any] = {}
        rows += sqlite_rows(args, praisonai, floors)
        figures["sqlite_floor"] = floors
        print("1. SQLite measured; the statements of our increment, run bare (no Python around):")
    for durability, floor in figures.get("sqlite_floor", {}).items():
        print(
            f"   {durability}: {floor['ops_per_s']:,.0f}/s = {floor['of_raw']:.0%} of the bare "
            f"UPDATE+COMMIT; our facade runs at {floor['ours_of_floor']:.0%} of them; ours of "
            f"raw, round by round: {', '.join(f'{r:.2f}' for r in floor['rounds_of_raw'])}"
        )
    if "redis" in parts:
        redis, figures["redis_server"] = redis_rows(args)
        rows += redis
        print("2-3. Redis measured")
    if "cold" in parts:
        cold, figures["cold_start"] = cold_rows(args)
        rows += cold
        print("4. cold start measured")
    if "memory" in parts:
        memory, figures["memory"] = memory_rows(args)
        rows += memory
        print("5. memory measured\n")
    table = markdown(rows)
    print(table)
    missed = [row.measure for row in rows if row.passed is False]
    print(f"\n{len(rows) - len(missed)} of {len(rows)} targets met" + (":" if missed else "."))
    for measure in missed:
        print(f"  MISS: {measure}")
    if hasattr(os, "getloadavg"):
        print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        figures["rows"] = [asdict(row) for row in rows]
        figures["table"] = table
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str) + "\n")
        print(f"All figures written to {args.json}")


if __name__ == "__main__":
    sys.exit(main())
