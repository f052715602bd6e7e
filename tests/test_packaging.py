"""The wheel ships the files the code reads at run time.

The Redis Lua scripts, ``py.typed`` and the embedding model's data files are package data: a
glob missing from ``[tool.setuptools.package-data]`` drops them from the wheel without an
error, and only an installed copy would notice.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from praisonsession.stores.backends.redis.scripts import load_scripts

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "praisonsession"


def builds_wheels_offline() -> bool:
    """Whether this environment's setuptools builds our wheel with nothing to fetch: 77 on
    reads the SPDX ``license = "Apache-2.0"`` (and builds wheels without ``wheel``)."""
    try:
        major = int(version("setuptools").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return False
    return major >= 77


def copy_tree(tmp_path: Path) -> Path:
    """A copy of what a build reads, so the build leaves nothing in the checkout."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.cfg", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        PACKAGE, source / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    return source


def build_wheel(tmp_path: Path) -> Path:
    """Build from a copy of the tree, so the build leaves nothing in the checkout."""
    source = copy_tree(tmp_path)
    out = tmp_path / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out)]
    if builds_wheels_offline():
        command.append("--no-build-isolation")  # else pip fetches setuptools from its index
    done = subprocess.run([*command, str(source)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    # setuptools prints a banner for a deprecated pyproject (a license table, say)
    assert "Deprecat" not in done.stdout + done.stderr, done.stdout + done.stderr
    [wheel] = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build for the module: its tests read the same wheel."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_metadata_has_an_spdx_license_and_a_documentation_link(wheel: Path) -> None:
    assert builds_wheels_offline()  # the dev extra pins setuptools>=77: nothing is fetched
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(name).decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    documentation = next(
        line.split(", ", 1)[1] for line in metadata.splitlines() if "Documentation" in line
    )
    assert (ROOT / documentation).is_file()  # the docs, in the repository
    assert "example.invalid" not in metadata


@pytest.mark.slow
def test_the_wheel_holds_the_lua_scripts_and_the_other_package_data(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    wanted = [
        *PACKAGE.rglob("*.lua"),
        PACKAGE / "py.typed",
        *(path for path in PACKAGE.glob("recall/embeddings/data/*/*") if path.is_file()),
        *PACKAGE.glob("apps/ui/static/*"),
    ]
    assert PACKAGE / "apps" / "ui" / "static" / "app.js" in wanted
    assert PACKAGE / "stores" / "backends" / "redis" / "lua" / "prelude.lua" in wanted
    assert any("embeddings" in path.parts for path in wanted)
    missing = {path.relative_to(ROOT).as_posix() for path in wanted} - names
    assert not missing, f"not in {wheel.name}: {sorted(missing)}"

    # importlib.resources finds the scripts inside the installed (here: zipped) package too,
    # and they are the ones the source tree assembles
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1])\n"
        "from praisonsession.stores.backends.redis import scripts\n"
        "assert scripts.__file__.startswith(sys.argv[1]), scripts.__file__\n"
        "print(json.dumps({name: s.sha for name, s in scripts.load_scripts().items()}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(wheel)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {name: s.sha for name, s in load_scripts().items()}


def test_an_editable_install_puts_the_checkout_on_the_path_and_prints_no_notice(
    tmp_path: Path,
) -> None:
    """``pip install -e`` (make test's environments): the flat layout is declared, so setuptools
    writes a plain .pth file instead of an import hook of its own, whose boxed notice pip
    shows on every install."""
    assert builds_wheels_offline()
    source = copy_tree(tmp_path)
    out = tmp_path / "editable"
    out.mkdir()
    code = "import sys\nfrom setuptools import build_meta\nbuild_meta.build_editable(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "*****" not in said and "meta path finder" not in said, said
    [wheel] = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        [pth] = [n for n in archive.namelist() if n.endswith(".pth")]
        assert archive.read(pth).decode().strip() == str(source.resolve())
        assert not [n for n in archive.namelist() if n.endswith("finder.py")]
