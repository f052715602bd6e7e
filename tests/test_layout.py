"""The house: the floors are folders, each says what it holds, and paths that moved still import.

The import contract itself (who may import whom) is ``lint-imports``, configured in
``pyproject.toml`` and run by ``make test``; these tests check what it cannot see.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "praisonsession"
FLOORS = ("_internal", "state", "stores", "recall", "llm", "agents", "archive", "remote", "session")


def test_at_most_eight_modules_sit_at_the_root() -> None:
    modules = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(modules) <= 8, modules
    assert "__init__.py" in modules and "errors.py" in modules


@pytest.mark.parametrize("floor", [*FLOORS, "apps"])
def test_every_floor_is_a_folder_whose_init_says_what_it_holds(floor: str) -> None:
    init = PACKAGE / floor / "__init__.py"
    docstring = ast.get_docstring(ast.parse(init.read_text("utf-8")))
    assert docstring and len(docstring.split()) >= 12, f"{floor}/__init__.py says too little"
    assert "TODO" not in docstring


def test_the_memory_extra_lives_in_one_folder() -> None:
    heavy = ("chromadb", "onnxruntime", "tokenizers", "numpy")
    importers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(name.split(".")[0] in heavy for name in names):
                importers.add(path.relative_to(PACKAGE).parts[0])
    assert importers == {"recall"}


def test_only_the_store_floor_and_rekey_reach_under_the_key_guard() -> None:
    """The key rule lives in one layer (stores/guard.py): every caller gets a guarded backend
    from its store, and ``beneath`` (the raw backend) is for the store floor itself and for
    rekey, which re-seals every record. An adapter, a route or a command that took it would
    read and write around the rule."""
    callers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and any(a.name == "beneath" for a in node.names):
                callers.add(path.relative_to(PACKAGE).as_posix())
    outside = {c for c in callers if not c.startswith("stores/")}
    assert outside == {"session/rotation.py"}
    assert "stores/guard.py" not in callers  # it defines it


def test_one_class_per_name_across_the_package() -> None:
    """One name, one idea: no two classes of the package share a name (two ``TurnIndex``
    classes meant two different things)."""
    seen: dict[str, str] = {}
    clashes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text("utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where = str(path.relative_to(PACKAGE))
                if node.name in seen:
                    clashes.append((node.name, seen[node.name], where))
                seen.setdefault(node.name, where)
    assert clashes == []


def test_no_two_modules_share_a_name_meaning_different_things() -> None:
    names = [path.stem for path in PACKAGE.rglob("*.py") if path.stem != "__init__"]
    assert names.count("tokens") <= 1  # token counts (agents) and auth tokens are apart


def test_a_documented_path_that_moved_still_imports_and_says_where_it_went() -> None:
    code = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from praisonsession.server.tokens import issue_token\n"
        "from praisonsession.apps.server.access_tokens import issue_token as moved\n"
        "assert issue_token is moved\n"
        "print(sorted({str(w.message) for w in caught if w.category is DeprecationWarning}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "praisonsession.apps.server.access_tokens" in done.stdout
