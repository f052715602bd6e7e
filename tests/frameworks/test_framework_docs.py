"""The framework pages and notebooks run as written, twice, in the frameworks' environment
(``.venv-frameworks``): their examples import the OpenAI Agents SDK, ADK or LangGraph, which
the main environment cannot hold beside AgentScope 1.0.21."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_docs import BLOCK, PRAISONAI_PAGE, run_block, run_notebook_twice

ROOT = Path(__file__).resolve().parents[2]
#: PraisonAI's page runs in the development environment, which holds praisonaiagents
#: (tests/test_docs.py).
PAGES = [
    page
    for page in sorted((ROOT / "docs" / "pages" / "integrations").glob("*.md"))
    if page != PRAISONAI_PAGE
]
NOTEBOOKS = sorted((ROOT / "notebooks" / "frameworks").glob("*.ipynb"))
EXAMPLES = [
    pytest.param(code, id=f"{page.name}:{n}")
    for page in PAGES
    for n, code in enumerate(BLOCK.findall(page.read_text("utf-8")), 1)
]


#: What an example needs beyond its framework, told by what it calls: the extra, and the
#: text of an example that needs it.
NEEDS = {"encryption": "encryption_key", "memory": "search_memory("}
#: What ADK logs for a model that reports no token usage: our stand-in models report theirs.
NO_USAGE = "Skipping missing token usage"


@pytest.mark.parametrize("code", EXAMPLES)
def test_a_framework_example_runs_and_runs_again(code: str, tmp_path: Path) -> None:
    first = run_block(code, tmp_path)
    assert first.returncode == 0, first.stderr
    assert NO_USAGE not in first.stderr
    again = run_block(code, tmp_path)
    assert again.returncode == 0, "second run: " + again.stderr


@pytest.mark.parametrize("page", [*PAGES, PRAISONAI_PAGE], ids=lambda path: path.name)
def test_the_install_line_installs_what_every_example_needs(page: Path) -> None:
    text = page.read_text("utf-8")
    lines = re.findall(r'pip install "\.\[([^\]]+)\]"', text)
    assert lines, f"{page.name} has no install line from a clone"
    extras = set(lines[0].split(","))
    assert page.stem in extras
    code = "\n".join(BLOCK.findall(text))
    for extra, sign in NEEDS.items():
        if sign in code:
            assert extra in extras, f"{page.name}: an example needs {extra!r}: {lines[0]}"
    for published in re.findall(r'pip install "praisonsession\[([^\]]+)\]"', text):
        assert set(published.split(",")) == extras, f"{page.name}: {published} != {lines[0]}"


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_a_framework_notebook_runs_twice_in_the_same_folder(notebook: Path, tmp_path: Path) -> None:
    run_notebook_twice(notebook, tmp_path)
