"""What every adapter's tests check of its packaging and its benchmark, written once: that
``import praisonsession`` never imports the framework, and that the adapter's benchmark runs
in its quick form and prints every row it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def assert_not_imported(framework_loaded: str, what: str) -> None:
    """``framework_loaded``: a Python expression over ``sys.modules``, true when the framework
    was imported; it must stay false after importing praisonsession and its integrations."""
    code = (
        "import sys, praisonsession, praisonsession.integrations\n"
        f"assert not ({framework_loaded}), {what!r}"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def assert_benchmark_prints(script: str, rows: list[str], cwd: Path, timeout: float) -> None:
    """``benchmarks/<script> --quick`` exits 0 and prints each of ``rows``."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for row in rows:
        assert row in done.stdout, row
