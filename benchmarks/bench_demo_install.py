"""``make demo`` from a fresh clone, timed: the uv path, the pip-only path, and what the demo
used to install (the whole dev toolchain, ``make``'s ``.venv``), in one run.

Each variant clones this repository into a new temporary folder and runs its make target
there, so nothing is reused but the package caches (pip's and uv's), which a first round
warms. Rounds alternate the variants, so a change in the machine's load touches each alike;
the medians are compared. Prints the load average beside each figure.

    python benchmarks/bench_demo_install.py              # demo via uv, demo via pip, dev install
    python benchmarks/bench_demo_install.py --rounds 1 --no-dev    # the demo paths only
    python benchmarks/bench_demo_install.py --no-warm-up           # caches warm already

Needs git, make and network access to the package index (or warm caches).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The target under half of the dev install's time (issue 21, item 7).
TARGET = 0.5
VARIANTS = {
    "demo, uv": ["make", "demo"],
    "demo, pip only": ["make", "demo", "DEMO_INSTALLER=pip"],
    "dev install (the old demo's)": ["make", ".venv/.installed"],
}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def timed(command: list[str]) -> float:
    """Seconds ``command`` takes in a fresh clone; raises with its output if it fails."""
    folder = Path(tempfile.mkdtemp(prefix="praisonsession-demo-install-"))
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(folder / "p")], check=True)
        started = time.perf_counter()
        done = subprocess.run(command, cwd=folder / "p", capture_output=True, text=True)
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr}")
        if "Deprecat" in done.stderr:
            raise SystemExit(f"{' '.join(command)} printed a deprecation banner:\n{done.stderr}")
        if command[1] == "demo" and "Stored in" not in done.stdout:
            raise SystemExit(f"the demo did not finish:\n{done.stdout[-2000:]}")
        return took
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds (default 2)")
    parser.add_argument("--no-dev", action="store_true", help="skip the dev install")
    parser.add_argument(
        "--no-warm-up", action="store_true", help="the caches are warm already: no first round"
    )
    args = parser.parse_args()
    variants = {
        name: command
        for name, command in VARIANTS.items()
        if not (args.no_dev and name.startswith("dev"))
    }
    if not args.no_warm_up:
        print(f"warming the package caches (not timed; load {load()})", flush=True)
        for command in variants.values():
            timed(command)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for round_ in range(args.rounds):
        for name, command in variants.items():
            took = timed(command)
            times[name].append(took)
            print(f"round {round_ + 1}: {name}: {took:.1f} s (load {load()})", flush=True)
    dev = times.get("dev install (the old demo's)")
    base = statistics.median(dev) if dev else None
    print("\n| make target, fresh clone, warm caches | median s | / dev install | target |")
    print("| --- | --- | --- | --- |")
    for name, runs in times.items():
        median = statistics.median(runs)
        if base is None or name.startswith("dev"):
            print(f"| {name} | {median:.1f} | - | - |")
            continue
        ratio = median / base
        verdict = "PASS" if ratio < TARGET else "MISS"
        print(f"| {name} | {median:.1f} | {ratio:.2f} | < {TARGET} {verdict} |")
    print(f"\nload average at the end: {load()}; Python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
