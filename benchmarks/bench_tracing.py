"""What tracing costs: store operations with tracing off, on, and without its hook at all.

    .venv/bin/python benchmarks/bench_tracing.py [--quick]

Tracing is off by default; its hook in ``AsyncSession._call`` is then one test of
``tracing.on``. This run measures, in one process and interleaved round by round (so a busy
machine slows every variant alike), the same operations three ways:

- **no hook**: ``AsyncSession._call`` as it was before tracing (the same body minus the test),
- **off**: the library as shipped, tracing off,
- **on**: tracing on, spans made by the OpenTelemetry SDK (no exporter: the cost of the spans
  themselves, not of shipping them),

beside the raw engine (SQLite ``UPDATE`` + ``COMMIT``). Each variant checks its counts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from raw_engines import sqlite_update_commit

from praisonsession import AsyncSession, Session, tracing
from praisonsession._internal.runtime import bounded

SHIPPED_CALL = AsyncSession._call


def call_without_hook(self: AsyncSession, what: str, work):  # type: ignore[no-untyped-def]
    """``AsyncSession._call`` without the tracing test: the baseline."""
    if self._opened:
        return bounded(work, self._timeout, (what, self._session_id))
    return self._open_then(what, work)


def per_second(operation: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        operation()
    return n / (time.perf_counter() - start)


def variant(name: str, provider: object) -> None:
    shipped = name != "no hook"
    AsyncSession._call = SHIPPED_CALL if shipped else call_without_hook  # type: ignore[method-assign]
    if name == "on":
        tracing.enable(tracer_provider=provider)
    else:
        tracing.disable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few operations, two rounds")
    options = parser.parse_args()
    n, rounds = (300, 2) if options.quick else (3000, 7)

    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()  # no span processor: spans are made, then dropped
    variants = ("no hook", "off", "on")
    workloads = {
        "get_state, memory:// (ops/s)": ("memory://", "get"),
        "increment_state, SQLite (ops/s)": ("sqlite", "increment"),
    }
    results: dict[str, dict[str, list[float]]] = {w: {v: [] for v in variants} for w in workloads}
    with tempfile.TemporaryDirectory(prefix="ps-bench-tracing-") as folder:
        for round_number in range(rounds + 1):  # round 0 warms up and is not counted
            for workload, (store, kind) in workloads.items():
                for name in variants:
                    variant(name, provider)
                    url = store if store != "sqlite" else f"sqlite://{folder}/s{round_number}.db"
                    with Session(f"{name}-{round_number}", store=url) as session:
                        if kind == "get":
                            session.set_state("k", 1)
                            rate = per_second(lambda s=session: s.get_state("k"), n)
                        else:
                            rate = per_second(lambda s=session: s.increment_state("hits"), n)
                            assert session.get_state("hits") == n, "an increment was lost"
                        if round_number:
                            results[workload][name].append(rate)
        variant("off", provider)
        raw = sqlite_update_commit("NORMAL", n)

    print(f"Tracing overhead: {rounds} rounds of {n:,} operations each, medians.")
    print()
    print("| workload | no hook | tracing off | off / no hook | tracing on | on / no hook |")
    print("|---|---|---|---|---|---|")
    for workload, rates in results.items():
        base, off, on = (statistics.median(rates[v]) for v in variants)
        print(
            f"| {workload} | {base:,.0f} | {off:,.0f} | {off / base:.3f} | {on:,.0f} | "
            f"{on / base:.3f} |"
        )
    print(f"| raw SQLite UPDATE + COMMIT (ops/s) | {raw:,.0f} | | | | |")
    spread = {
        w: max(r["no hook"]) / min(r["no hook"]) - 1 for w, r in results.items() if rounds > 1
    }
    for workload, noise in spread.items():
        print(f"noise, {workload}: no-hook rounds differ by up to {noise:.1%}")


if __name__ == "__main__":
    main()
