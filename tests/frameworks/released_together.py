"""Worker processes released at one moment, for the adapters' many-process tests: each worker
says it is ready with a file in a barrier folder and waits for the parent's "go" file, so that
their work overlaps as much as it can. Both sides live here: ``wait_for_go`` in the workers,
``run_together`` in the tests."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

BARRIER_TIMEOUT = 60.0


def wait_for_go(barrier: Path, name: str) -> None:
    """Worker side: say ``name`` is ready, then wait for the parent's go."""
    (barrier / f"ready-{name}").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT
    while not (barrier / "go").exists():
        if time.monotonic() > deadline:
            raise SystemExit("the parent never said go")
        time.sleep(0.001)


def run_together(
    command: Callable[..., list[str]],
    job: str,
    url: str,
    tmp_path: Path,
    processes: int,
    *extra: str,
) -> list[Any]:
    """Parent side: ``processes`` workers of ``job`` (``command(job, url, barrier, name,
    *extra)`` is each one's command line), released at the same moment; their JSON outputs."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    names = [f"w{n}" for n in range(processes)]
    procs = [
        subprocess.Popen(
            command(job, url, str(barrier), name, *extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for name in names
    ]
    try:
        deadline = time.monotonic() + 90
        while not all((barrier / f"ready-{name}").exists() for name in names):
            for proc in procs:
                if proc.poll() is not None:
                    pytest.fail(f"a worker exited before the barrier:\n{proc.stderr.read()}")  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the workers did not reach the barrier"
            time.sleep(0.005)
        (barrier / "go").touch()
        outputs = []
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
            outputs.append(json.loads(out))
        return outputs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
