"""Virtual environments built from a docs page's install line alone.

A page names its install line once, as the first ``pip install`` in code (a code span or a
console line): ``pip install ".[adk,memory]"``, ``pip install .``, ``pip install . pytest``. Its
examples must run in an environment holding that and nothing else, not in the development
environment, which holds every extra. Each distinct line gets one environment, built with uv
(installed once into a tools environment) and kept under ``.venv-pages/<key>/``, where the key
is a digest of ``pyproject.toml`` and the Python version: a second run reuses it, a change of
the dependencies builds anew and drops the old ones. praisonsession itself is installed
editable, so the environment runs the checkout's code as it is now.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["CACHE", "InstallLine", "environment", "install_line"]

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".venv-pages"
#: The first ``pip install`` of a page in a code span or at the start of a console line: the
#: checkout with its extras (or none), then any further requirements up to the span's end or a
#: comment.
INSTALL = re.compile(r'(?:`|^\$? ?)pip install (?:"\.\[([a-z0-9,-]+)\]"|\.)([^`#\n]*)', re.M)
#: How long one environment may take to build, downloads included.
BUILD_TIMEOUT = 900


@dataclass(frozen=True)
class InstallLine:
    """What a page tells its reader to install."""

    extras: tuple[str, ...]
    others: tuple[str, ...] = ()

    def __str__(self) -> str:
        checkout = f'".[{",".join(self.extras)}]"' if self.extras else "."
        return " ".join(["pip install", checkout, *self.others])

    @property
    def slug(self) -> str:
        return "-".join([*self.extras, *self.others]) or "core"


def install_line(text: str) -> InstallLine | None:
    """The install line a page's text names first, or None if it names none."""
    found = INSTALL.search(text)
    if found is None:
        return None
    extras = tuple(found.group(1).split(",")) if found.group(1) else ()
    return InstallLine(extras, tuple(found.group(2).split()))


def _key() -> str:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()[:16]


@contextmanager
def _locked(name: str) -> Iterator[None]:
    """One builder at a time per name, across pytest's worker processes."""
    CACHE.mkdir(exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(command: list[str], what: str) -> None:
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        said = (error.stderr or "") if isinstance(error.stderr, str) else ""
        raise RuntimeError(
            f"Could not {what}: {' '.join(command)}\n{said[-3000:]}\n"
            "The page environments are installed from the package index once (the network is "
            f"needed then) and kept under {CACHE}; check the connection and run the tests again."
        ) from error


@cache
def _uv() -> str:
    """uv, from a tools environment of its own (pip installs it there once)."""
    tools = CACHE / "tools"
    uv = tools / "bin" / "uv"
    with _locked("tools"):
        if not uv.is_file():
            shutil.rmtree(tools, ignore_errors=True)
            _run([sys.executable, "-m", "venv", str(tools)], "create the tools environment")
            pip = [str(tools / "bin" / "python"), "-m", "pip", "install", "--quiet"]
            _run([*pip, "--disable-pip-version-check", "uv"], "install uv")
    return str(uv)


#: Why a line's environment could not be built, so its other examples fail at once.
_FAILED: dict[InstallLine, str] = {}


@cache
def environment(line: InstallLine) -> Path:
    """The Python of the environment that ``line`` alone installs, built on first use."""
    if line in _FAILED:
        raise RuntimeError(_FAILED[line])
    try:
        return _build(line)
    except RuntimeError as error:
        _FAILED[line] = str(error)
        raise


def _build(line: InstallLine) -> Path:
    uv = _uv()
    key = _key()
    folder = CACHE / key / line.slug
    python = folder / "bin" / "python"
    with _locked(line.slug):
        for stale in CACHE.iterdir():  # environments of an older pyproject.toml
            if stale.is_dir() and stale.name not in (key, "tools"):
                shutil.rmtree(stale / line.slug, ignore_errors=True)
                with suppress(OSError):
                    stale.rmdir()  # once its last environment is gone
        if not (folder / ".installed").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            _run([uv, "venv", "--quiet", "--python", sys.executable, str(folder)], "create it")
            checkout = f"{ROOT}[{','.join(line.extras)}]" if line.extras else str(ROOT)
            install = [uv, "pip", "install", "--quiet", "--python", str(python)]
            _run([*install, "-e", checkout, *line.others], f"install {line}")
            (folder / ".installed").touch()
    return python


def environment_variables() -> dict[str, str]:
    """The caller's variables, less those naming the development environment."""
    drop = {"VIRTUAL_ENV", "PYTHONHOME", "CONDA_PREFIX"}
    return {name: value for name, value in os.environ.items() if name not in drop}
