"""Every Python example in the README and the docs runs as written, and again: a reader who
runs a block twice in the same folder (or a notebook twice) sees it pass both times.

Every public name has a docstring, and the API reference (built from them by mkdocstrings)
covers every name ``praisonsession`` exports.
"""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import praisonsession

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "pages").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

EXAMPLES = [
    pytest.param(code, id=f"{page.name}:{n}")
    for page in PAGES
    for n, code in enumerate(BLOCK.findall(page.read_text("utf-8")), 1)
]


def run_block(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("code", EXAMPLES)
def test_example_runs_and_runs_again(code: str, tmp_path: Path) -> None:
    first = run_block(code, tmp_path)
    assert first.returncode == 0, first.stderr
    again = run_block(code, tmp_path)  # what the first run left behind must not break it
    assert again.returncode == 0, "second run: " + again.stderr


def test_every_page_has_been_found() -> None:
    assert len(PAGES) >= 6 and len(EXAMPLES) >= 6
    assert len(NOTEBOOKS) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_a_notebook_runs_twice_in_the_same_folder(notebook: Path, tmp_path: Path) -> None:
    run_notebook_twice(notebook, tmp_path)


def run_notebook_twice(notebook: Path, folder: Path) -> None:
    """Run ``notebook`` in a real kernel in ``folder``, then again over what it left there."""
    import nbclient
    import nbformat

    shutil.copy2(notebook, folder / notebook.name)
    for attempt in ("first", "second"):
        book = nbformat.read(folder / notebook.name, as_version=4)
        client = nbclient.NotebookClient(
            book, timeout=240, kernel_name="python3", resources={"metadata": {"path": folder}}
        )
        try:
            client.execute()
        except nbclient.exceptions.CellExecutionError as error:
            pytest.fail(f"{attempt} run of {notebook.name}: {error}")


def _undocumented() -> list[str]:
    """Public names (and their public methods and properties) without a docstring."""
    missing = []
    for name in praisonsession.__all__:
        value = getattr(praisonsession, name)
        if name.startswith("__") or isinstance(value, (int, str)):
            continue
        if not (inspect.getdoc(value) or "").strip():
            missing.append(name)
        if not inspect.isclass(value):
            continue
        for attribute in dir(value):
            if attribute.startswith("_"):
                continue
            static = inspect.getattr_static(value, attribute)
            owner = next(k for k in value.__mro__ if attribute in vars(k))
            if not owner.__module__.startswith("praisonsession"):
                continue  # list's, NamedTuple's, pydantic's own
            target = static if isinstance(static, property) else getattr(value, attribute)
            # an override without a docstring of its own inherits its protocol's (getdoc)
            if (callable(target) or isinstance(static, property)) and not (
                inspect.getdoc(target) or ""
            ).strip():
                missing.append(f"{name}.{attribute}")
    return missing


def test_every_public_name_has_a_docstring() -> None:
    assert _undocumented() == []


def test_the_api_reference_covers_every_exported_name() -> None:
    page = (ROOT / "docs" / "pages" / "api.md").read_text("utf-8")
    covered = set(re.findall(r"^::: praisonsession\.(\w+)", page, re.MULTILINE))
    errors = {name for name in praisonsession.__all__ if name.endswith("Error")}
    assert "errors" in covered  # every error, from their module
    wanted = set(praisonsession.__all__) - errors - {"__version__", "FORMAT_VERSION"}
    assert wanted - covered == set()


def test_the_site_builds_offline_and_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocstrings")
    build = ["mkdocs", "build", "--strict", "-q", "-f", "docs/mkdocs.yml"]
    done = subprocess.run(
        [sys.executable, "-m", *build, "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    reference = (tmp_path / "site" / "api" / "index.html").read_text("utf-8")
    for documented in ("list_logs", "increment_state", "SnapshotNotFoundError", "erase_user"):
        assert documented in reference


def test_the_readme_says_how_to_install_from_a_clone_and_where_to_go_next() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert 'pip install ".[memory]"' in readme and "pip install -e " in readme
    assert "notebooks/" in readme and "make docs" in readme and "site/index.html" in readme


def test_the_first_example_and_the_praisonai_table_say_what_user_id_defaults_to() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    first = readme.index("```python")
    after = readme[readme.index("```", first + 9) : readme.index("## Two commands")]
    assert '`user_id` is optional and defaults to `"default_user"`' in " ".join(after.split())
    assert "pass the same `user_id` every time" in " ".join(after.split())
    table = (ROOT / "docs" / "pages" / "sessions.md").read_text("utf-8")
    (row,) = [line for line in table.splitlines() if line.startswith("| `user_id` omitted |")]
    praisonai, ours = row.split(" | ")[1:3]
    assert praisonai.startswith('`"default_user"`') and "by `session_id` alone" in praisonai
    assert ours.startswith('`"default_user"` too') and "no user reads another's state" in ours


def test_the_demo_runs_and_shows_what_it_promises(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "praisonsession.apps.demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "increment_state('score', increment=5) -> 15" in out
    assert "[process 2] increment_state('turns') -> 2" in out
    assert "after 1.2 s: is_expired() -> True" in out
    assert "-> 'I would like a refund for the broken blender'" in out
    assert "in a new Session: chat('What is my name?') -> 'Your name is Ada.'" in out
