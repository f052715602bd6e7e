"""Every install line praisonsession prints or documents works from a clone of the repository.

The package is not on PyPI yet: ``pip install "praisonsession[x]"`` answers "No matching
distribution". So each hint gives the clone form ``pip install ".[x]"``, with the published
form beside it for later, never alone. One function builds the hints (``install_line``); the
tests here read what the package and its documentation actually say.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from missing_extras import MEMORY_EXTRA, SERVER_EXTRA, run_without
from praisonsession.errors import UnsupportedFormatError, install_line

ROOT = Path(__file__).resolve().parents[1]

#: ``pip install "praisonsession[x]"``, ``pip install -U praisonsession``: the published form.
PUBLISHED = re.compile(r"pip install\s+(?:-U\s+|--upgrade\s+)?[\"'`]?praisonsession\b")
#: ``pip install ".[x]"``, ``pip install .``, ``pip install -e ".[dev]"``: the clone form.
CLONE = re.compile(r"pip install\s+(?:-e\s+|-U\s+)?[\"'`]?\.(?:\[|[\"'`\s)]|$)")
#: How far (characters) the clone form may stand from a published one and still be "beside" it.
BESIDE = 300


def _texts() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "examples" / "README.md"]
    files += sorted((ROOT / "docs" / "pages").rglob("*.md"))
    files += sorted((ROOT / "praisonsession").rglob("*.py"))
    files += sorted((ROOT / "examples").rglob("*.py"))
    files += sorted((ROOT / "notebooks").rglob("*.ipynb"))
    return files


def lone_published_forms(text: str) -> list[str]:
    """Each published form in ``text`` with no clone form within BESIDE characters."""
    clones = [match.start() for match in CLONE.finditer(text)]
    lone = []
    for match in PUBLISHED.finditer(text):
        if not any(abs(start - match.start()) <= BESIDE for start in clones):
            line = text.count("\n", 0, match.start()) + 1
            lone.append(f"line {line}: {text[match.start() : match.end() + 30]!r}")
    return lone


def test_install_line_gives_the_clone_form_first_and_the_published_one_beside_it() -> None:
    assert install_line("server") == (
        'pip install ".[server]" in a clone of the repository (once praisonsession is '
        'published: pip install "praisonsession[server]")'
    )
    assert install_line() == (
        "pip install . in a clone of the repository (once praisonsession is published: "
        "pip install praisonsession)"
    )
    assert install_line(upgrade=True) == (
        "git pull, then pip install . in your clone of the repository (once praisonsession is "
        "published: pip install -U praisonsession)"
    )


def test_the_scan_finds_a_lone_published_form_and_accepts_one_beside_a_clone_form() -> None:
    assert lone_published_forms('Install: pip install "praisonsession[server]".') == [
        "line 1: 'pip install \"praisonsession[server]\".'"
    ]
    assert lone_published_forms(f"Install it with: {install_line('server')}.") == []
    assert lone_published_forms('pip install ".[x]"  # or pip install "praisonsession[x]"') == []


def test_no_message_or_page_gives_the_published_form_alone() -> None:
    files = _texts()
    assert len(files) > 100  # the package, the pages, the notebooks: all read
    found = {
        str(path.relative_to(ROOT)): lone
        for path in files
        if (lone := lone_published_forms(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_a_record_of_a_newer_format_says_how_to_upgrade_from_a_clone() -> None:
    message = str(UnsupportedFormatError("Session 'a'", 9, 3))
    assert message.endswith(
        "Upgrade praisonsession: git pull, then pip install . in your clone of the repository "
        "(once praisonsession is published: pip install -U praisonsession)."
    )


# What each feature says in an environment without its extra (a child process that cannot
# import the extra's packages): the code prints the error, or the command line's output.
MISSING = {
    "postgres": (
        ("psycopg", "psycopg_pool"),
        "from praisonsession import Session, MissingDependencyError\n"
        "try:\n"
        "    Session('s', store='postgresql://app@127.0.0.1:9/app')\n"
        "except MissingDependencyError as error:\n"
        "    print(error)\n",
    ),
    "redis": (
        ("redis",),
        "from praisonsession import Session, MissingDependencyError\n"
        "try:\n"
        "    Session('s', store='redis://127.0.0.1:9/0')\n"
        "except MissingDependencyError as error:\n"
        "    print(error)\n",
    ),
    "encryption": (
        ("cryptography",),
        "import base64\n"
        "from praisonsession import Session, MissingDependencyError\n"
        "key = base64.urlsafe_b64encode(bytes(32)).decode()\n"
        "try:\n"
        "    Session('s', store='sqlite://s.db', settings={'encryption_key': key})\n"
        "except MissingDependencyError as error:\n"
        "    print(error)\n",
    ),
    "memory": (
        MEMORY_EXTRA,
        "from praisonsession import Session, MissingDependencyError\n"
        "try:\n"
        "    Session('s', store='sqlite://s.db').add_memory('hello')\n"
        "except MissingDependencyError as error:\n"
        "    print(error)\n",
    ),
    "server": (
        SERVER_EXTRA,
        "from praisonsession.apps.cli import main\n"
        "main(['serve', '--store', 'sqlite://s.db', '--agent', 'x:y'])\n",
    ),
    "server (ui)": (
        SERVER_EXTRA,
        "from praisonsession.apps.cli import main\nmain(['ui', '--store', 'sqlite://s.db'])\n",
    ),
}


@pytest.mark.parametrize("case", sorted(MISSING))
def test_each_missing_extra_names_the_clone_form_and_the_published_one(
    case: str, tmp_path: Path
) -> None:
    blocked, code = MISSING[case]
    extra = case.split()[0]
    done = run_without(blocked, code, cwd=tmp_path)
    said = " ".join((done.stdout + done.stderr).split())
    assert "Traceback" not in said, said
    assert f'pip install ".[{extra}]" in a clone of the repository' in said, said
    assert f'(once praisonsession is published: pip install "praisonsession[{extra}]")' in said
    assert lone_published_forms(said) == []
