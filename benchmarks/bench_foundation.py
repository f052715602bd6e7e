"""Foundation benchmark for praisonsession, with AgentScope and PraisonAI side by side.

Run from the repository root (``make bench`` does the same)::

    .venv/bin/python benchmarks/bench_foundation.py [--json results.json]

One run measures, through the synchronous ``praisonsession.Session`` facade (what users hold):

1. ``increment_state`` throughput (ops/s) and per-call latency (p50/p99, µs) for the
   ``memory://`` store and the ``sqlite://`` and ``json://`` stores at each durability
   ("process": survives a crash of the process; "power": survives a power loss too), checking
   the final value equals N; beside SQLite, the raw engine in the same run: bare ``sqlite3``
   ``UPDATE`` + ``COMMIT`` with the same ``synchronous`` (``raw_engines.py``), and our ratio.
2. The cost of saving one new message (``Session.save_modules(agent=...)``) when the agent's
   ``MessageLog`` already holds 10, 1,000 and 10,000 messages; only the save is timed. The
   ratio cost@10,000 / cost@10 should stay within 2x (saving is an append, not a rewrite).
3. The time to load a 10,000-message session into a fresh agent (``Session.load_modules``).
4. ``import praisonsession`` time (median of fresh subprocesses) and whether the import pulled
   in chromadb, redis, pydantic_settings or asyncio; and the cold start of a fresh process:
   ``import`` + ``Session()`` + the first ``set_state`` (median), compiling the package from
   source as this environment makes Python do (``PYTHONDONTWRITEBYTECODE``), and with a
   bytecode cache (``PYTHONPYCACHEPREFIX`` in a temporary directory), Python's usual case.
5. The peers, each in its own virtualenv (see ``benchmarks/README.md``): AgentScope 1.0.21's
   ``JSONSession`` save/load workload and praisonaiagents 1.7.17's ``Session.increment_state``
   (which fsyncs every write), printed next to our figures with the ratios, ours at both
   durability levels. A missing peer venv is skipped, with the
   commands that create it.
6. A table of targets: measured value and PASS/MISS.

Everything is written under temporary directories that are removed afterwards.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raw_engines import SQLITE_SYNCHRONOUS, sqlite_update_commit

from praisonsession import MessageLog, Session, SessionBase, StateModule, open_store

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
BACKENDS = ("memory", "sqlite", "json")
DURABILITIES = ("process", "power")
DEFAULT_DURABILITY = "process"  # what figures 2 and 3 run with (the default)
HEAVY_MODULES = ("chromadb", "redis", "pydantic_settings", "asyncio")

AGENTSCOPE_SETUP = (
    "python3 -m venv /tmp/as1 && /tmp/as1/bin/pip install "
    '"agentscope==1.0.21" "mcp==1.16.0" "pydantic<2.12" greenlet tqdm redis'
)
PRAISONAI_SETUP = (
    'python3 -m venv /tmp/praison && /tmp/praison/bin/pip install "praisonaiagents==1.7.17"'
)

# Targets
IMPORT_TARGET_MS = 150.0
COLD_START_TARGET_MS = 40.0
RAW_SQLITE_TARGET = 0.60  # our SQLite increment_state / bare UPDATE+COMMIT, at each durability
FLAT_SAVE_TARGET = 2.0
PRAISONAI_SPEEDUP_TARGET = 20.0
AGENTSCOPE_SPEEDUP_TARGET = 50.0


# -- workload pieces ----------------------------------------------------------------------


class BenchAgent(StateModule):
    """An agent stand-in whose only state is its conversation, like the AgentScope peer's."""

    def __init__(self) -> None:
        super().__init__()
        self.memory = MessageLog()


def make_message(i: int) -> dict[str, Any]:
    """One message, shaped (and sized) like a serialized AgentScope ``Msg``."""
    role = "user" if i % 2 == 0 else "assistant"
    return {
        "id": f"msg-{i:08d}-bench",
        "name": role,
        "role": role,
        "content": f"message {i} about topic {i % 7}",
        "metadata": None,
        "timestamp": "2025-01-01 00:00:00.000",
    }


@contextmanager
def fresh_store(backend: str, durability: str = DEFAULT_DURABILITY) -> Iterator[str | SessionBase]:
    """A fresh store for ``backend`` at ``durability``: a URL, its files removed on exit.

    For ``memory://`` it is one store opened from that URL and shared by every ``Session`` of
    the figure, since each ``Session(store="memory://")`` would otherwise get an empty store.
    """
    if backend == "memory":
        yield open_store("memory://")
        return
    tmp = tempfile.mkdtemp(prefix=f"ps-bench-{backend}-")
    try:
        path = f"{tmp}/s.db" if backend == "sqlite" else f"{tmp}/j"
        yield f"{backend}://{path}?durability={durability}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def increment_stores() -> list[tuple[str, str | None]]:
    """(backend, durability) of figure 1; memory:// has no durability to speak of."""
    return [("memory", None)] + [(b, d) for b in ("sqlite", "json") for d in DURABILITIES]


def label(backend: str, durability: str | None) -> str:
    return backend if durability is None else f"{backend}@{durability}"


def percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


def timed(call: Callable[[], Any]) -> float:
    """Seconds taken by ``call()``."""
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}x"


# -- figure 1: increment_state ------------------------------------------------------------


def bench_increment(backend: str, durability: str | None, n: int) -> dict[str, Any]:
    """N calls of ``Session.increment_state("hits")``: ops/s, p50/p99 µs, final value; for
    SQLite also the raw engine at the same durability, measured right after, and the ratio."""
    with fresh_store(backend, durability or DEFAULT_DURABILITY) as url:
        figures = time_increments(url, n)
    figures["durability"] = durability
    if backend == "sqlite":
        synchronous = SQLITE_SYNCHRONOUS[durability or DEFAULT_DURABILITY]
        figures["raw_ops_per_s"] = sqlite_update_commit(synchronous, n)
        figures["raw_engine"] = f"sqlite3 UPDATE+COMMIT, WAL, synchronous={synchronous}"
        figures["raw_ratio"] = figures["ops_per_s"] / figures["raw_ops_per_s"]
    return figures


def time_increments(store: str | SessionBase, n: int) -> dict[str, Any]:
    """Time N facade increments on one session of ``store``, and check the count they reach."""
    with Session(store=store) as session:
        session.increment_state("warm-up")
        latencies: list[float] = []
        start = time.perf_counter()
        for _ in range(n):
            t0 = time.perf_counter()
            session.increment_state("hits")
            latencies.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - start
        final = session.get_state("hits")
    latencies.sort()
    return {
        "n": n,
        "ops_per_s": n / elapsed,
        "p50_us": percentile(latencies, 0.50) * 1e6,
        "p99_us": percentile(latencies, 0.99) * 1e6,
        "final": final,
        "correct": final == n,
    }


# -- figure 2: cost of saving one new message ---------------------------------------------


def bench_save_one_size(url: str | SessionBase, size: int, turns: int) -> float:
    """Mean ms of ``save_modules`` after appending one message to a ``size``-message log."""
    agent = BenchAgent()
    agent.memory.extend(make_message(i) for i in range(size))
    with Session(session_id=f"hist-{size}", store=url) as session:
        session.save_modules(agent=agent)
        total = 0.0
        for turn in range(turns):
            agent.memory.append(make_message(size + turn))
            total += timed(lambda: session.save_modules(agent=agent))
    return total * 1000 / turns


def bench_save(backend: str, sizes: list[int], turns: int) -> dict[str, Any]:
    with fresh_store(backend) as url:
        per_size = {str(size): bench_save_one_size(url, size, turns) for size in sizes}
    first, last = per_size[str(sizes[0])], per_size[str(sizes[-1])]
    return {"turns": turns, "save_ms": per_size, "flat_ratio": last / first}


# -- figure 3: loading a long session -----------------------------------------------------


def bench_load(backend: str, size: int, repeats: int) -> dict[str, Any]:
    """Mean ms of ``load_modules`` of a ``size``-message session into a fresh agent."""
    agent = BenchAgent()
    agent.memory.extend(make_message(i) for i in range(size))
    with fresh_store(backend) as url:
        with Session(session_id="load", store=url) as session:
            session.save_modules(agent=agent)
        times, counts = [], []
        for _ in range(repeats):
            fresh = BenchAgent()
            with Session(session_id="load", store=url) as session:
                times.append(timed(lambda s=session, f=fresh: s.load_modules(agent=f)))
            counts.append(len(fresh.memory))
    return {
        "messages": size,
        "load_ms": statistics.mean(times) * 1000,
        "loaded_messages": min(counts),
        "correct": min(counts) >= size and fresh.memory[-1] == make_message(size - 1),
    }


# -- figure 4: import time ----------------------------------------------------------------

IMPORT_PROBE = """
import json, sys, time
before = set(sys.modules)
start = time.perf_counter()
import praisonsession
ms = (time.perf_counter() - start) * 1000
new = set(sys.modules) - before
print(json.dumps({"ms": ms, "new": sorted(m for m in new if m.split(".")[0] in %r)}))
"""


def bench_import(runs: int) -> dict[str, Any]:
    """Median ``import praisonsession`` time over fresh interpreters, and heavy modules seen."""
    probe = IMPORT_PROBE % (HEAVY_MODULES,)
    times: list[float] = []
    pulled: set[str] = set()
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        times.append(result["ms"])
        pulled.update(name.split(".")[0] for name in result["new"])
    return {
        "runs_ms": times,
        "median_ms": statistics.median(times),
        "imported": {name: name in pulled for name in HEAVY_MODULES},
    }


COLD_PROBE = """
import json, time
start = time.perf_counter()
from praisonsession import Session
session = Session()
session.set_state("greeting", "hello")
print(json.dumps({"ms": (time.perf_counter() - start) * 1000}))
"""


def bench_cold_start(runs: int) -> dict[str, Any]:
    """``import`` + ``Session()`` + the first ``set_state`` in fresh processes (median), each
    in a new working directory (so a new default SQLite file), in two ways:

    - ``as_is``: the environment as it is. Here ``PYTHONDONTWRITEBYTECODE`` is set, so Python
      compiles every module of the package from source in every process.
    - ``cached``: bytecode cached in a temporary ``PYTHONPYCACHEPREFIX`` (filled by one run
      first), as Python does by default.
    """
    results: dict[str, Any] = {
        "dont_write_bytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
    }
    for mode in ("as_is", "cached"):
        with tempfile.TemporaryDirectory(prefix="ps-bench-cold-") as tmp:
            env = dict(os.environ)
            if mode == "cached":
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
            times, walls = [], []
            for run in range(runs + (mode == "cached")):
                cwd = os.path.join(tmp, f"run{run}")
                os.mkdir(cwd)
                started = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-c", COLD_PROBE],
                    cwd=cwd,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                wall = (time.perf_counter() - started) * 1000
                if mode == "cached" and run == 0:
                    continue  # the run that fills the cache
                times.append(json.loads(done.stdout.strip().splitlines()[-1])["ms"])
                walls.append(wall)
        results[mode] = {
            "median_ms": statistics.median(times),
            "runs_ms": times,
            "process_median_ms": statistics.median(walls),
        }
    return results


def print_cold_start(result: dict[str, Any]) -> None:
    print("\n4b. Cold start: import + Session() + first set_state in a fresh process (median)")
    as_is, cached = result["as_is"], result["cached"]
    how = (
        "PYTHONDONTWRITEBYTECODE is set: every module compiled from source"
        if result["dont_write_bytecode"]
        else "this environment as it is"
    )
    print(
        f"  {as_is['median_ms']:.1f} ms ({how}; whole process with interpreter start "
        f"{as_is['process_median_ms']:.0f} ms)"
    )
    print(
        f"  {cached['median_ms']:.1f} ms with bytecode cached (whole process "
        f"{cached['process_median_ms']:.0f} ms)"
    )


# -- figure 5: peers ----------------------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    name: str
    env_var: str
    default_python: str
    script: str
    args: tuple[str, ...]
    setup: str


AGENTSCOPE = Peer(
    "AgentScope",
    "AGENTSCOPE_PYTHON",
    "/tmp/as1/bin/python",
    "agentscope_workload.py",
    ("--backend", "json"),
    AGENTSCOPE_SETUP,
)
PRAISONAI = Peer(
    "PraisonAI",
    "PRAISONAI_PYTHON",
    "/tmp/praison/bin/python",
    "praisonai_workload.py",
    ("--increments", "300"),
    PRAISONAI_SETUP,
)


def run_peer(peer: Peer, *extra: str) -> dict[str, Any] | None:
    """Run a peer's workload in its own venv and parse its JSON; None (and why) if skipped."""
    python = os.environ.get(peer.env_var, peer.default_python)
    if not Path(python).exists():
        print(f"  {peer.name}: skipped, {python} not found. Create it with:")
        print(f"    {peer.setup}")
        print(f"  (or point {peer.env_var} at a Python that has it)")
        return None
    command = [python, str(PEERS / peer.script), *peer.args, *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        tail = "\n    ".join(done.stderr.strip().splitlines()[-5:])
        print(f"  {peer.name}: failed (exit {done.returncode}):\n    {tail}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- printing -----------------------------------------------------------------------------


def print_increment(results: dict[str, dict[str, Any]]) -> None:
    print("\n1. increment_state through Session (sync facade), by store and durability")
    print(f"  {'store':<16}{'N':>7}{'ops/s':>11}{'p50 µs':>9}{'p99 µs':>9}  final value")
    for name, r in results.items():
        verdict = "correct" if r["correct"] else f"WRONG (expected {r['n']})"
        print(
            f"  {name:<16}{r['n']:>7}{r['ops_per_s']:>11,.0f}{r['p50_us']:>9.1f}"
            f"{r['p99_us']:>9.1f}  {r['final']} ({verdict})"
        )
    print("  raw engine in the same run (bare sqlite3, one row, WAL):")
    for name, r in results.items():
        if "raw_ops_per_s" in r:
            print(
                f"    {name:<14} ours {r['ops_per_s']:>9,.0f}/s  {r['raw_engine']}: "
                f"{r['raw_ops_per_s']:>9,.0f}/s  -> ours = {r['raw_ratio']:.0%} of raw"
            )


def print_save(results: dict[str, dict[str, Any]], sizes: list[int]) -> None:
    print("\n2. Saving one new message: Session.save_modules(agent=agent), ms per turn")
    head = "".join(f"{f'@{s:,}':>11}" for s in sizes)
    print(f"  {'store':<8}{'turns':>6}{head}  @{sizes[-1]:,}/@{sizes[0]:,}")
    for backend, r in results.items():
        cells = "".join(f"{r['save_ms'][str(s)]:>11.3f}" for s in sizes)
        print(f"  {backend:<8}{r['turns']:>6}{cells}  {r['flat_ratio']:.2f}x")


def print_load(results: dict[str, dict[str, Any]]) -> None:
    print("\n3. Loading a long session into a fresh agent: Session.load_modules")
    for backend, r in results.items():
        check = "ok" if r["correct"] else "WRONG"
        print(
            f"  {backend:<8}{r['load_ms']:>9.1f} ms for {r['messages']:,} messages "
            f"(loaded {r['loaded_messages']:,}, {check})"
        )


def print_import(result: dict[str, Any]) -> None:
    runs = ", ".join(f"{ms:.1f}" for ms in result["runs_ms"])
    print("\n4. import praisonsession in a fresh interpreter")
    print(f"  median {result['median_ms']:.1f} ms (runs: {runs})")
    for name, imported in result["imported"].items():
        print(f"  {name:<18} {'IMPORTED' if imported else 'not imported'}")


def print_praisonai(peer: dict[str, Any], increments: dict[str, Any]) -> dict[str, Any]:
    """PraisonAI's SQLite memory fsyncs every write (about 4 fdatasync per increment), so
    ours at durability "power" is the like-for-like figure; "process" is shown too."""
    ours = increments["sqlite@process"]
    print(f"\n  praisonaiagents {peer['version']} (storage {peer.get('storage')}, fsync per write)")
    speedups = {}
    for durability in DURABILITIES:
        mine = increments[f"sqlite@{durability}"]
        speedups[durability] = ratio(mine["ops_per_s"], peer["increments_per_s"])
        print(
            f"    increment_state: {peer['increments_per_s']:,.1f} ops/s; ours (sqlite, "
            f"durability {durability}) {mine['ops_per_s']:,.0f} ops/s -> "
            f"{fmt_ratio(speedups[durability])}"
        )
    print(
        f"    read-backs: set 10 + increment 5 -> {peer['score_after_increment']!r} (expected 15); "
        f"{peer['increments']} increments -> {peer['hits_read_back']!r} "
        f"(expected {peer['increments']}); nested -> {peer['nested_read_back']!r}"
    )
    print(f"    ours: {ours['n']} increments -> {ours['final']} (correct: {ours['correct']})")
    return {"increment_speedup": speedups["process"], "increment_speedup_power": speedups["power"]}


def print_agentscope(
    peer: dict[str, Any], save: dict[str, dict[str, Any]], load: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    print(f"\n  AgentScope {peer['version']} JSONSession (rewrites the whole session per save)")
    ratios: dict[str, Any] = {"save": {}, "load": {}}
    print(
        f"    {'history':>8}{'AS ms/turn':>12}{'ours sqlite':>13}{'ratio':>10}"
        f"{'ours json':>11}{'ratio':>10}"
    )
    for size, r in peer["results"].items():
        theirs = r["save_ms_per_turn"]
        sq = save.get("sqlite", {}).get("save_ms", {}).get(size)
        js = save.get("json", {}).get("save_ms", {}).get(size)
        ratios["save"][size] = {"sqlite": ratio(theirs, sq), "json": ratio(theirs, js)}
        print(
            f"    {int(size):>8,}{theirs:>12.3f}{_ms(sq):>13}{fmt_ratio(ratio(theirs, sq)):>10}"
            f"{_ms(js):>11}{fmt_ratio(ratio(theirs, js)):>10}"
        )
    big = max(peer["results"], key=int)
    theirs_load = peer["results"][big]["load_ms"]
    print(f"    load of the {int(big):,}-message session: AgentScope {theirs_load:.1f} ms")
    for backend, r in load.items():
        ratios["load"][backend] = ratio(theirs_load, r["load_ms"])
        print(
            f"      ours {backend:<7}{r['load_ms']:>9.1f} ms -> "
            f"{fmt_ratio(ratios['load'][backend])} faster"
        )
    return ratios


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


# -- figure 6: targets --------------------------------------------------------------------


def targets(figures: dict[str, Any], sizes: list[int]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, passed) rows; passed is None when the figure could not be measured."""
    rows: list[tuple[str, str, bool | None]] = []
    for name, r in figures["increment"].items():
        rows.append((f"increment_state final == N ({name})", str(r["final"]), r["correct"]))
    for name, r in figures["increment"].items():
        if "raw_ratio" in r:
            rows.append(
                (
                    f"{name} increment >= {RAW_SQLITE_TARGET:.0%} of raw UPDATE+COMMIT",
                    f"{r['raw_ratio']:.0%}",
                    r["raw_ratio"] >= RAW_SQLITE_TARGET,
                )
            )
    for backend, r in figures["save"].items():
        rows.append(
            (
                f"save @{sizes[-1]:,} / @{sizes[0]:,} <= {FLAT_SAVE_TARGET:g}x ({backend})",
                f"{r['flat_ratio']:.2f}x",
                r["flat_ratio"] <= FLAT_SAVE_TARGET,
            )
        )
    for backend, r in figures["load"].items():
        rows.append(
            (
                f"load returns {r['messages']:,} messages ({backend})",
                f"{r['loaded_messages']:,}",
                r["correct"],
            )
        )
    imp = figures["import"]
    rows.append(
        (
            f"import praisonsession < {IMPORT_TARGET_MS:g} ms",
            f"{imp['median_ms']:.1f} ms",
            imp["median_ms"] < IMPORT_TARGET_MS,
        )
    )
    pulled = [name for name, seen in imp["imported"].items() if seen]
    rows.append(
        ("import pulls no " + "/".join(HEAVY_MODULES), ",".join(pulled) or "none", not pulled)
    )
    cold = figures["cold_start"]
    for mode, how in (("as_is", "as this environment runs"), ("cached", "bytecode cached")):
        rows.append(
            (
                f"Session() cold start < {COLD_START_TARGET_MS:g} ms ({how})",
                f"{cold[mode]['median_ms']:.1f} ms",
                cold[mode]["median_ms"] < COLD_START_TARGET_MS,
            )
        )
    peers = figures["peers"]
    speedup = peers.get("praisonai_ratios", {}).get("increment_speedup")
    rows.append(
        (
            f"sqlite@process increments/s vs PraisonAI >= {PRAISONAI_SPEEDUP_TARGET:g}x",
            fmt_ratio(speedup),
            None if speedup is None else speedup >= PRAISONAI_SPEEDUP_TARGET,
        )
    )
    power = peers.get("praisonai_ratios", {}).get("increment_speedup_power")
    rows.append(
        (
            "sqlite@power increments/s vs PraisonAI (same durability)",
            fmt_ratio(power),
            None if power is None else power > 1,
        )
    )
    big = str(sizes[-1])
    save_ratios = peers.get("agentscope_ratios", {}).get("save", {}).get(big, {})
    for backend in ("sqlite", "json"):
        value = save_ratios.get(backend)
        rows.append(
            (
                f"AgentScope save / ours @{sizes[-1]:,} >= {AGENTSCOPE_SPEEDUP_TARGET:g}x "
                f"({backend})",
                fmt_ratio(value),
                None if value is None else value >= AGENTSCOPE_SPEEDUP_TARGET,
            )
        )
    return rows


def print_targets(rows: list[tuple[str, str, bool | None]]) -> None:
    print("\n6. Targets")
    width = max(len(name) for name, _, _ in rows) + 2
    for name, measured, passed in rows:
        verdict = "SKIP" if passed is None else "PASS" if passed else "MISS"
        print(f"  {name:<{width}}{measured:>12}  {verdict}")


# -- main ---------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    parser.add_argument("--n-memory", type=int, default=5000, help="increments, memory://")
    parser.add_argument("--n-sqlite", type=int, default=5000, help="increments, sqlite://")
    parser.add_argument(
        "--n-sqlite-power", type=int, default=1000, help="increments, sqlite:// at power"
    )
    parser.add_argument("--n-json", type=int, default=500, help="increments, json://")
    parser.add_argument(
        "--n-json-power", type=int, default=200, help="increments, json:// at power"
    )
    parser.add_argument("--sizes", default="10,1000,10000", help="history sizes for figure 2")
    parser.add_argument("--turns", type=int, default=20, help="saves timed per history size")
    parser.add_argument("--load-size", type=int, default=10_000)
    parser.add_argument("--load-repeats", type=int, default=3)
    parser.add_argument("--import-runs", type=int, default=5)
    parser.add_argument("--cold-runs", type=int, default=7, help="fresh processes per cold mode")
    parser.add_argument("--no-peers", action="store_true", help="skip the peer workloads")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    counts = {
        ("memory", None): args.n_memory,
        ("sqlite", "process"): args.n_sqlite,
        ("sqlite", "power"): args.n_sqlite_power,
        ("json", "process"): args.n_json,
        ("json", "power"): args.n_json_power,
    }
    print(f"praisonsession foundation benchmark (Python {sys.version.split()[0]}, {sys.platform})")
    print(
        "durability: figure 1 runs each file store at both levels (process: SQLite "
        "synchronous=NORMAL, JSON without fsync; power: FULL, fsync of file and directory); "
        f"figures 2 and 3 run at {DEFAULT_DURABILITY!r}"
    )

    figures: dict[str, Any] = {"python": sys.version.split()[0]}
    figures["increment"] = {
        label(b, d): bench_increment(b, d, counts[b, d]) for b, d in increment_stores()
    }
    print_increment(figures["increment"])
    figures["save"] = {b: bench_save(b, sizes, args.turns) for b in BACKENDS}
    print_save(figures["save"], sizes)
    figures["load"] = {b: bench_load(b, args.load_size, args.load_repeats) for b in BACKENDS}
    print_load(figures["load"])
    figures["import"] = bench_import(args.import_runs)
    print_import(figures["import"])
    figures["cold_start"] = bench_cold_start(args.cold_runs)
    print_cold_start(figures["cold_start"])

    print("\n5. Peers (each in its own virtualenv)")
    peers: dict[str, Any] = {}
    if args.no_peers:
        print("  skipped (--no-peers)")
    else:
        praisonai = run_peer(PRAISONAI)
        if praisonai is not None:
            peers["praisonai"] = praisonai
            peers["praisonai_ratios"] = print_praisonai(praisonai, figures["increment"])
        agentscope = run_peer(AGENTSCOPE, "--sizes", ",".join(map(str, sizes)))
        if agentscope is not None:
            peers["agentscope"] = agentscope
            peers["agentscope_ratios"] = print_agentscope(
                agentscope, figures["save"], figures["load"]
            )
    figures["peers"] = peers

    rows = targets(figures, sizes)
    print_targets(rows)
    figures["targets"] = [
        {"target": name, "measured": measured, "passed": passed} for name, measured, passed in rows
    ]
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
        print(f"\nAll figures written to {args.json}")


if __name__ == "__main__":
    main()
