"""The ``PRAISONSESSION_`` prefix belongs to the settings (configuration.md): a variable of it
that is no setting is a misspelling and refused, so nothing of ours may use the prefix for
anything else. The one exception, the server's secret, leaves ``Session()`` working."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from praisonsession import Session
from praisonsession.errors import InvalidSettingError
from praisonsession.settings import ENV_PREFIX, KNOBS, NOT_SETTINGS, Settings

ROOT = Path(__file__).resolve().parent.parent
#: Where our code, tools and docs live (site/ and the virtual environments are built).
SCANNED = ("praisonsession", "tests", "benchmarks", "examples", "notebooks", "docs")
#: Misspellings the bad-input tests and the docs show being refused, on purpose.
MISSPELT = {"PRAISONSESSION_STORE_URLL", "PRAISONSESSION_DEFUALT_TTL"}
#: ``PRAISONSESSION_LLM_*``: the docs' name for the three llm_* settings at once.
FAMILIES = {"PRAISONSESSION_LLM"}
NAME = re.compile(r"PRAISONSESSION_[A-Z0-9_]*[A-Z0-9]")


def test_every_praisonsession_variable_in_the_repository_is_a_setting_or_the_servers_secret():
    known = {ENV_PREFIX + name.upper() for name in [*KNOBS, *NOT_SETTINGS]}
    files = [ROOT / "Makefile", ROOT / "README.md", ROOT / "pyproject.toml"]
    for folder in SCANNED:
        files += [p for p in (ROOT / folder).rglob("*") if p.is_file() and "/." not in str(p)]
    found: dict[str, set[str]] = {}
    for path in files:
        if path.suffix in {".pyc", ".png", ".svg", ".db", ".gz", ".whl"}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for name in NAME.findall(text):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    strays = {
        name: sorted(where)
        for name, where in found.items()
        if name not in known | MISSPELT | FAMILIES
    }
    assert strays == {}, "use another prefix for variables that are not settings"
    assert len(found) > 20  # the scan did read the repository


@pytest.mark.parametrize("variable", ["PSTEST_REDIS_SERVER", "PSTEST_POSTGRES_BIN"])
def test_our_tools_variables_leave_the_library_working(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "/nowhere")
    session = Session("s", store="memory://")
    session.set_state("n", 1)
    assert session.get_state("n") == 1


def test_the_servers_secret_is_no_setting_yet_leaves_session_working(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRAISONSESSION_SERVER_SECRET", "s" * 40)
    monkeypatch.setenv("PRAISONSESSION_DEFAULT_TTL", "60")  # pydantic reads the environment
    assert Settings().default_ttl == 60
    session = Session("s", store="memory://")
    session.set_state("n", 1)
    assert session.get_state("n") == 1


def test_a_misspelt_setting_of_the_prefix_is_still_refused(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PRAISONSESSION_DEFUALT_TTL", "60")
    with pytest.raises(InvalidSettingError) as caught:
        Session("s", store="memory://")
    assert str(caught.value).startswith(
        "The environment variable PRAISONSESSION_DEFUALT_TTL is not a setting. Did you mean "
        "PRAISONSESSION_DEFAULT_TTL?"
    )
