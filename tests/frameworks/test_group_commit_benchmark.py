"""``benchmarks/bench_group_commit.py`` still runs: 8 writers of each framework's protocol on
one SQLite file, ours grouped and one by one beside each framework's own backend. No figure
is asserted (timings belong to the benchmark); the benchmark checks every writer's writes as
it runs, so a zero exit says none was lost or reordered."""

from __future__ import annotations

from pathlib import Path

import pytest
from adapter_packaging import assert_benchmark_prints


@pytest.mark.slow
def test_the_group_commit_benchmark_runs_quickly_and_prints_every_row(tmp_path: Path) -> None:
    rows = [
        "PraisonSession, group commit: WAL, synchronous=FULL",
        "SQLiteSession (SDK): WAL, synchronous=FULL",
        "| PraisonSession, group commit |",
        "| PraisonSession, one by one |",
        "| SQLiteSession (SDK) |",
        "1 writer, the sides taking turns call by call",
        "| PraisonSessionService |",
        "SqliteSessionService (ADK): WAL, synchronous=FULL",  # the same durability as ours
        "a 1 ms timer's lateness, p90 (ms)",
        "| PraisonSaver |",
        "SqliteSaver (LangGraph)",
        "Target: 8 writers, group commit >= 2x SQLiteSession",
    ]
    assert_benchmark_prints("bench_group_commit.py", rows, tmp_path, timeout=300)
