"""A framework's own tests, run from its checkout with one of our pytest plugins loaded
(``sdk_session_suite``, ``adk_session_suite``): what the plugins share."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def keep_only(config: Any, items: list[Any], kept: Callable[[Any], bool]) -> None:
    """Collect only the tests ``kept`` says run on our adapter; report the rest deselected."""
    chosen = [item for item in items if kept(item)]
    config.hook.pytest_deselected(items=[item for item in items if item not in chosen])
    items[:] = chosen


def run_own_tests(checkout: str, plugin: str, files: Sequence[str], *options: str) -> int:
    """pytest over ``files`` of the framework's ``checkout``, with ``plugin`` (a module of this
    folder) loaded and ``praisonsession`` importable; pytest's exit status."""
    here = Path(__file__).resolve().parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(here), str(here.parents[1]), env.get("PYTHONPATH", "")]
    )
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options]
    command += ["-p", plugin, *files]
    return subprocess.run(command, cwd=checkout, env=env, check=False).returncode


def main(plugin: str, files: Sequence[str], usage: str, *options: str) -> None:
    """The command line of a plugin's module: ``python <module>.py /path/to/checkout``."""
    if len(sys.argv) != 2:
        sys.exit(usage)
    sys.exit(run_own_tests(sys.argv[1], plugin, files, *options))
