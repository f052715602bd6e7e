"""Every Python example in the README and the docs runs as written, and again: a reader who
runs a block twice in the same folder (or a notebook twice) sees it pass both times.

Every public name has a docstring, and the API reference (built from them by mkdocstrings)
covers every name ``praisonsession`` exports.
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import praisonsession
from own_tmpdir import left_in, own_tmpdir

ROOT = Path(__file__).resolve().parent.parent
#: The PraisonAI page runs here: praisonaiagents is in this environment (the interop extra), not in
#: the frameworks' one, where the other integrations' pages run (tests/frameworks).
PRAISONAI_PAGE = ROOT / "docs" / "pages" / "integrations" / "praisonai.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "pages").glob("*.md")), PRAISONAI_PAGE]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def examples(page: Path) -> list[str]:
    """The Python examples of a page (its ```python blocks), in order: example n is [n - 1]."""
    return BLOCK.findall(page.read_text("utf-8"))


def run_block(
    code: str, folder: Path, python: str | Path = sys.executable, **options: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-c", code],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=options.pop("timeout", 120),
        **options,
    )


def test_every_page_has_been_found() -> None:
    """The examples themselves run, twice, in environments built from each page's install
    line alone (tests/test_page_installs.py)."""
    assert len(PAGES) >= 6 and sum(len(examples(page)) for page in PAGES) >= 6
    assert len(NOTEBOOKS) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_a_notebook_runs_twice_in_the_same_folder(notebook: Path, tmp_path: Path) -> None:
    run_notebook_twice(notebook, tmp_path)


def run_notebook_twice(notebook: Path, folder: Path) -> None:
    """Run ``notebook`` in a real kernel in ``folder``, then again over what it left there;
    each run leaves nothing in the kernel's temporary directory (``own_tmpdir``)."""
    import nbclient
    import nbformat

    shutil.copy2(notebook, folder / notebook.name)
    temp = own_tmpdir(folder)
    for attempt in ("first", "second"):
        book = nbformat.read(folder / notebook.name, as_version=4)
        client = nbclient.NotebookClient(
            book, timeout=240, kernel_name="python3", resources={"metadata": {"path": folder}}
        )
        try:
            client.execute(env={**os.environ, "TMPDIR": str(temp)})  # returns once it exited
        except nbclient.exceptions.CellExecutionError as error:
            pytest.fail(f"{attempt} run of {notebook.name}: {error}")
        assert left_in(temp) == [], f"{attempt} run of {notebook.name}"


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


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation site, built as `make docs` builds it: strict (and not --quiet, which
    would keep mkdocs from counting the warnings that strict turns into a failure)."""
    folder = tmp_path_factory.mktemp("docs") / "site"
    build = ["mkdocs", "build", "--strict", "-f", "docs/mkdocs.yml", "--site-dir", str(folder)]
    done = subprocess.run(
        [sys.executable, "-m", *build], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    notices = [line for line in done.stderr.splitlines() if not line.startswith("INFO    -  ")]
    assert notices == []  # make docs prints nothing but mkdocs' own progress
    assert "requires either Black or Ruff" not in done.stderr  # the docs extra has ruff
    return folder


def test_the_site_builds_strict_with_the_api_reference(site: Path) -> None:
    reference = (site / "api.html").read_text("utf-8")
    for documented in ("list_logs", "increment_state", "SnapshotNotFoundError", "erase_user"):
        assert documented in reference


LINK = re.compile(r"<a\s[^>]*?href=\"([^\"]*)\"", re.IGNORECASE)
ASSET = re.compile(
    r"<(?:script|img|link|source|iframe)\b[^>]*?\b(?:src|href)=\"([^\"]*)\"", re.IGNORECASE
)
CSS_URL = re.compile(r"(?:url\(\s*['\"]?|@import\s+['\"])([^'\")\s]+)", re.IGNORECASE)


def _internal_target(page: Path, href: str) -> Path | None:
    """The file a relative link of ``page`` opens from file://, or None for another site."""
    if href.startswith(("http://", "https://", "mailto:")):
        return None
    path = href.split("#", 1)[0].split("?", 1)[0]
    return page if not path else (page.parent / path).resolve()


def test_every_link_of_the_home_page_opens_a_file_offline(site: Path) -> None:
    """Opened as site/index.html, with no web server: each internal link must name a file,
    not a directory (which a browser shows as a listing)."""
    index = site / "index.html"
    links = LINK.findall(index.read_text("utf-8"))
    targets = {href: _internal_target(index, href) for href in links}
    internal = {href: path for href, path in targets.items() if path is not None}
    assert len(internal) >= 20  # the whole navigation
    assert {href: str(path) for href, path in internal.items() if not path.is_file()} == {}
    # and one level further: each page's own links open files too
    broken = {}
    for path in {p for p in internal.values() if p.suffix == ".html"}:
        for href in LINK.findall(path.read_text("utf-8")):
            target = _internal_target(path, href)
            if target is not None and not target.is_file():
                broken[f"{path.relative_to(site)} -> {href}"] = str(target)
    assert broken == {}


def test_the_404_page_links_open_files_offline(site: Path) -> None:
    """MkDocs gives error pages absolute links (/css/...), which only a web server resolves."""
    page = site / "404.html"
    links = LINK.findall(page.read_text("utf-8")) + ASSET.findall(page.read_text("utf-8"))
    targets = {href: _internal_target(page, href) for href in links}
    internal = {href: path for href, path in targets.items() if path is not None}
    assert len(internal) >= 30  # the navigation and the stylesheets and scripts
    assert {href: str(path) for href, path in internal.items() if not path.is_file()} == {}


@pytest.mark.slow
@pytest.mark.timeout(600)  # the first run may install Debian's chromium
def test_the_built_site_searches_from_files_in_chromium(site: Path) -> None:
    """Opened from file://, where a browser refuses the theme's search worker: typing a query
    shows results whose links open pages, from the root, a page one folder down and the 404
    page; a word found nowhere says so."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from chromium import ERROR_TRAP, chromium, script_errors

    deadline = 120  # seconds: a condition's deadline on a loaded machine, not a measure

    def results(browser: Any, query: str) -> list[Any]:
        box = browser.find_element(By.ID, "mkdocs-search-query")
        box.clear()
        box.send_keys(query)
        shown = browser.find_element(By.ID, "mkdocs-search-results")
        # the index loads after the page: until then the box says so, then shows the results
        WebDriverWait(browser, deadline).until(
            lambda _: (
                shown.find_elements(By.CSS_SELECTOR, "*")
                and shown.text != "Loading the search index..."
            )
        )
        return shown.find_elements(By.CSS_SELECTOR, "article h3 a")

    with chromium() as browser:
        browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": ERROR_TRAP})
        for page in ("index.html", "integrations/adk.html", "404.html"):
            browser.get((site / page).as_uri())
            browser.find_element(By.CSS_SELECTOR, '[data-bs-target="#mkdocs_search_modal"]').click()
            WebDriverWait(browser, deadline).until(
                lambda b: b.find_element(By.ID, "mkdocs-search-query").is_displayed()
            )
            found = results(browser, "snapshot")
            titles = [link.text for link in found]
            assert "Forks, snapshots and archives" in titles, titles
            for link in found:  # each result opens a page of the site, as a file
                href = link.get_attribute("href")
                assert href.startswith("file://"), href
                assert Path(href.removeprefix("file://").split("#")[0]).is_file(), href
            partial = [link.text for link in results(browser, "encrypt")]  # while typing
            assert "Encryption at rest" in partial, partial
            none = results(browser, "zqxjkvw")
            assert none == []
            message = browser.find_element(By.ID, "mkdocs-search-results").text
            assert message == "No results found"
        found = results(browser, "snapshot")
        found[0].click()  # a result opens its page from the file
        WebDriverWait(browser, deadline).until(
            lambda b: b.current_url != (site / "404.html").as_uri()
        )
        assert browser.current_url.startswith(site.as_uri() + "/")
        assert script_errors(browser) == []  # no refused Worker, no failed load


def test_make_docs_installs_only_the_docs_extra_in_an_environment_of_its_own() -> None:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    target = re.search(r"^docs: (.*)\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert target is not None and target.group(1) == "$(DOCS_STAMP)"
    assert target.group(2).startswith("\t$(DOCS_PY) -m mkdocs build --strict ")
    stamp = re.search(r"^\$\(DOCS_STAMP\): pyproject.toml\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert stamp is not None
    installs = [line for line in stamp.group(1).splitlines() if "pip install" in line]
    assert installs[-1].endswith("pip install --quiet -e '.[docs]'")
    assert "DOCS_VENV := .venv-docs" in makefile
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    docs = re.search(r"^docs = \[\n(.*?)^\]", pyproject, re.DOTALL | re.MULTILINE)
    assert docs is not None
    wanted = re.findall(r'^\s+"([a-z-]+)', docs.group(1), re.MULTILINE)
    assert wanted == [
        "mkdocs",
        "mkdocstrings",
        "mkdocstrings-python",
        "pymdown-extensions",
        "pygments",
        "ruff",
    ]


def test_nothing_in_the_site_is_loaded_from_the_network(site: Path) -> None:
    remote = []
    for page in site.rglob("*.html"):
        for src in ASSET.findall(page.read_text("utf-8")):
            if src.startswith(("http://", "https://", "//")):
                remote.append(f"{page.relative_to(site)}: {src}")
    for sheet in site.rglob("*.css"):
        for url in CSS_URL.findall(sheet.read_text("utf-8", errors="replace")):
            if url.startswith(("http://", "https://", "//")):
                remote.append(f"{sheet.relative_to(site)}: {url}")
    assert remote == []
    assert 'class="highlight"' in (site / "agents.html").read_text("utf-8")  # coloured at build


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


@pytest.mark.slow
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
