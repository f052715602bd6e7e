"""The framework notebooks run as written, twice, in the frameworks' environment
(``.venv-frameworks``): they import the OpenAI Agents SDK, ADK or LangGraph, which the main
environment cannot hold beside AgentScope 1.0.21. The framework pages' examples run in
environments built from each page's own install line (tests/test_page_installs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_docs import run_notebook_twice

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks" / "frameworks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_a_framework_notebook_runs_twice_in_the_same_folder(notebook: Path, tmp_path: Path) -> None:
    run_notebook_twice(notebook, tmp_path)
