"""The notebooks set themselves up: one install line for all of them, a first cell that names
the extras each needs and stops there without them, and a remote notebook that stops at once,
with the server's own words, when its server cannot start.

The notebooks themselves are run whole by tests/test_docs.py (twice each); here each promise is
checked on its own, with the extras made missing in a child process (``missing_extras``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from missing_extras import SERVER_EXTRA, blocking_prelude, run_without
from praisonsession.errors import install_line
from praisonsession.requirements import EXTRAS, missing, require

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))

#: What each notebook needs beyond the core install.
NEEDS = {
    "01_session_state": (),
    "02_memory_knowledge": ("memory",),
    "03_agents": ("memory",),
    "04_remote": ("server",),
    "05_fork_and_snapshots": ("memory",),
    "06_long_conversations": (),
    "07_praisonai_agent": ("praisonai",),
    "frameworks/adk": ("adk", "memory"),  # run in the frameworks' environment
    "frameworks/agentscope": ("agentscope2",),
    "frameworks/langgraph": ("langgraph",),
    "frameworks/openai_agents": ("openai-agents",),
}


def name_of(notebook: Path) -> str:
    return notebook.relative_to(ROOT / "notebooks").with_suffix("").as_posix()


def code_cells(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text("utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def test_every_notebook_is_listed_with_what_it_needs() -> None:
    assert sorted(name_of(path) for path in NOTEBOOKS) == sorted(NEEDS)


def test_the_notebooks_extra_holds_jupyter_and_every_extra_a_notebook_needs() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    block = re.search(r"^notebooks = \[\n(.*?)^\]", pyproject, re.DOTALL | re.MULTILINE)
    assert block is not None
    assert '"praisonsession[memory,server,notebook]"' in block.group(1)
    assert '"jupyterlab>=4.0"' in block.group(1)
    readme = " ".join((ROOT / "README.md").read_text("utf-8").split())
    assert '`pip install ".[notebooks]" && jupyter lab notebooks/`' in readme


def test_require_passes_quietly_when_the_extras_are_installed() -> None:
    assert require("memory", "server") is None  # the development environment has them
    assert missing("memory", "server", "encryption") == {}


def test_require_refuses_an_unknown_extra() -> None:
    expected = "Unknown extra 'gpu'; the extras are: adk, agentscope2, encryption,"
    with pytest.raises(ValueError, match=expected):
        require("gpu")


def test_require_without_two_extras_names_both_and_one_install_line(tmp_path: Path) -> None:
    code = (
        "from praisonsession.requirements import require\n"
        "try:\n"
        "    require('memory', 'server')\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = run_without(("numpy", "uvicorn"), code, cwd=tmp_path)
    assert done.stdout.strip() == (
        "This notebook needs the memory, server extras, and numpy, uvicorn cannot be found. "
        f"Install them with: {install_line('memory,server')}, then restart the kernel (or the "
        "program)."
    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=name_of)
def test_the_first_cell_names_the_extras_and_stops_there_without_them(
    notebook: Path, tmp_path: Path
) -> None:
    needs = NEEDS[name_of(notebook)]
    cells = json.loads(notebook.read_text("utf-8"))["cells"]
    first = "".join(cells[0]["source"])
    assert cells[0]["cell_type"] == "code"
    everything = ",".join(["notebooks", *[e for e in needs if e not in ("memory", "server")]])
    assert f'pip install ".[{everything}]"' in first
    for extra in needs:
        assert f"the {extra} extra" in first.splitlines()[0]
    # without any extra at all: the first cell fails at once if the notebook needs one
    packages = [package for found in EXTRAS.values() for package in found]
    done = run_without(packages, first, cwd=tmp_path)
    if not needs:
        assert done.returncode == 0, done.stderr
        assert "needs only the core install" in first
        return
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("praisonsession.errors.MissingDependencyError: This notebook needs ")
    them = "it" if len(needs) == 1 else "them"
    assert f"Install {them} with: {install_line(','.join(needs))}" in last


@pytest.mark.slow
def test_the_remote_notebook_stops_at_once_with_the_servers_message(tmp_path: Path) -> None:
    """The server process cannot import FastAPI: the notebook's connect stops on the server's
    exit with what it printed, instead of retrying until it gives up."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(blocking_prelude(SERVER_EXTRA))
    cells = code_cells(ROOT / "notebooks" / "04_remote.ipynb")
    upto = next(i for i, cell in enumerate(cells) if "session = connect()" in cell)
    script = "\n".join(cells[1 : upto + 1])  # not the first cell: it would stop earlier
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", "try:\n" + _indented(script) + "\nfinally:\n    llm.stop()\n"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: the server exited (code 3): Error: The server needs ")
    assert f"Install them with: {install_line('server')}." in last


def _indented(code: str) -> str:
    return "\n".join("    " + line if line else line for line in code.splitlines())
