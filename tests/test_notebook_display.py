"""What a notebook shows: HTML tables for search hits, knowledge added, snapshots and the fork
tree, and progress bars that need no ipywidgets (text) and use them when they are there.

The displays are checked on real results of a real session; the progress bars in a real
Jupyter kernel (nbclient), with and without ipywidgets importable.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from praisonsession import Session


class Tiny:
    """A small embedder that keeps the test fast; search ranks by shared letters."""

    name = "tiny-display-embedder"
    dimension = 26

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(t.lower().count(chr(97 + i))) + 0.01 for i in range(26)] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]


@pytest.fixture
def session(tmp_path: Path):
    pytest.importorskip("chromadb")
    with Session(
        "chat",
        "ada",
        store=f"sqlite://{tmp_path}/s.db",
        settings={"data_dir": str(tmp_path / "data")},
        memory_config={"embedder": Tiny()},
        knowledge_config={"embedder": Tiny()},
    ) as opened:
        yield opened


def test_search_hits_are_a_list_and_show_as_a_table(session: Session) -> None:
    session.add_memory("Ada prefers <b>tea</b>")
    hits = session.search_memory("tea")
    assert isinstance(hits, list) and hits[0]["text"] == "Ada prefers <b>tea</b>"
    shown = hits._repr_html_()
    assert "<caption>1 hit</caption>" in shown
    assert "Ada prefers &lt;b&gt;tea&lt;/b&gt;" in shown and "<b>tea" not in shown
    assert "<td style='text-align:left'>long</td>" in shown  # where it came from


def test_knowledge_added_and_found_show_as_tables(session: Session, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Refunds take five days.", "utf-8")
    added = session.add_knowledge(notes)
    shown = added._repr_html_()
    assert "Knowledge added: 1 chunk new, 0 already known" in shown and str(notes) in shown
    found = session.search_knowledge("refunds")
    assert "Refunds take five days." in found._repr_html_()
    assert found[0]["source"] == str(notes)


def test_snapshots_and_the_fork_tree_show_in_a_notebook(tmp_path: Path) -> None:
    with Session("trip", "ada", store=f"sqlite://{tmp_path}/s.db") as trip:
        trip.set_state("city", "Lisbon")
        taken = trip.snapshot("before <porto>")
        trip.fork("trip-b").fork("trip-b-1")
        listed = trip.snapshots()
        assert listed == [taken]
        table = listed._repr_html_()
        assert "<caption>1 snapshot</caption>" in table
        assert taken.snapshot_id in table and "before &lt;porto&gt;" in table
        assert taken._repr_html_() == table
        tree = trip.tree()
        drawn = tree._repr_html_()
        assert [node.info.session_id for node in tree] == ["trip"]
        assert drawn.index("<code>trip</code>") < drawn.index("<code>trip-b</code>")
        assert "<ul><li><code>trip-b-1</code>" in drawn  # a grandchild, nested twice
        assert tree[0]._repr_html_().count("<ul>") == 3


KERNEL_CODE = """
import sys, io, contextlib
{block}
from praisonsession._internal.progress import progress_bar
err = io.StringIO()
with contextlib.redirect_stderr(err), progress_bar(3, True, "chunk", "Adding") as bar:
    bar.update(3)
print(type(bar).__module__, repr(err.getvalue()[-40:]))
"""


@pytest.mark.parametrize(
    ("block", "module"),
    [("sys.modules['ipywidgets'] = None  # not installed", "tqdm.std"), ("", "tqdm.notebook")],
    ids=["without-ipywidgets", "with-ipywidgets"],
)
def test_progress_in_a_notebook_kernel_is_text_without_widgets(
    block: str, module: str, tmp_path: Path
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipywidgets")
    book = nbformat.v4.new_notebook()
    book.cells.append(nbformat.v4.new_code_cell(KERNEL_CODE.format(block=block)))
    nbclient.NotebookClient(
        book, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()
    outputs = book.cells[0].outputs
    text = "".join(output.get("text", "") for output in outputs)
    assert text.startswith(module), text
    assert "IProgress" not in str(outputs) and "Warning" not in str(outputs)
    if module == "tqdm.std":
        assert "3/3" in text  # the plain-text bar, drawn
