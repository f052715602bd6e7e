"""Knowledge: every source kind, chunked, de-duplicated, scoped, and refused when unreadable."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from documents import make_pdf, serve
from praisonsession import KnowledgeSourceError, Session
from praisonsession.recall.knowledge.chunking import chunk_text


def top(session: Session, query: str) -> str:
    return session.search_knowledge(query, limit=1)[0]["text"]


def test_each_file_type_is_read_and_searchable(open_session, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "returns.txt").write_text("Items can be returned within 30 days for a full refund.")
    (docs / "shipping.md").write_text("# Shipping\n\nParcels to Canada take **ten** business days.")
    (docs / "hours.html").write_text(
        "<html><head><style>p{color:red}</style><script>var x='hidden';</script></head>"
        "<body><h1>Opening hours</h1><p>The shop opens at nine on Saturdays.</p></body></html>"
    )
    (docs / "warranty.pdf").write_bytes(
        make_pdf(["Warranty", "Laptops carry a two year warranty."])
    )
    session = open_session()
    for name in ("returns.txt", "shipping.md", "hours.html", "warranty.pdf"):
        added = session.add_knowledge(str(docs / name))
        assert added.chunks_added == 1 and added.sources == [str(docs / name)]
    assert "30 days" in top(session, "how long do I have to send something back")
    assert "Canada" in top(session, "delivery time abroad")
    assert "nine on Saturdays" in top(session, "when is the store open at the weekend")
    assert "two year warranty" in top(session, "guarantee on computers")
    page = session.search_knowledge("weekend opening", limit=1)[0]
    assert "hidden" not in page["text"] and "color" not in page["text"]
    assert page["source"] == str(docs / "hours.html")
    assert page["metadata"]["kind"] == "html"
    assert set(page) == {"id", "text", "score", "metadata", "source"}


def test_a_folder_is_read_recursively_and_re_adding_adds_nothing(
    open_session, tmp_path: Path
) -> None:
    folder = tmp_path / "handbook"
    (folder / "team" / "deep").mkdir(parents=True)
    (folder / "intro.md").write_text("Welcome to the handbook. Lunch is served at noon.")
    (folder / "team" / "pets.txt").write_text("Dogs are welcome in the office on Fridays.")
    (folder / "team" / "deep" / "parking.txt").write_text("Bicycle parking is in the basement.")
    (folder / "team" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")  # skipped
    (folder / ".hidden.txt").write_text("secret draft")  # skipped
    session = open_session()
    first = session.add_knowledge(folder)
    assert (first.files, first.chunks_added, first.chunks_skipped) == (3, 3, 0)
    again = session.add_knowledge(str(folder))
    assert (again.chunks_added, again.chunks_skipped) == (0, 3)
    assert "basement" in top(session, "where can I leave my bike")
    assert all("secret" not in h["text"] for h in session.search_knowledge("draft", limit=5))


def test_raw_text_is_chunked_with_overlap_at_sentence_boundaries(open_session) -> None:
    facts = [f"Fact number {n} says the code for room {n} is {1000 + n}." for n in range(60)]
    text = " ".join(facts)
    chunks = chunk_text(text, 400, 80)
    assert len(chunks) > 5
    assert all(len(chunk) <= 400 for chunk in chunks)
    assert all(chunk.endswith(".") for chunk in chunks)  # cut after a sentence
    session = open_session(knowledge_config={"chunk_size": 400, "chunk_overlap": 80})
    added = session.add_knowledge(text)
    assert added.chunks_added == len(chunks) and added.sources == ["<text>"]
    assert "1042" in top(session, "what is the code for room 42")


def test_overlap_repeats_the_end_of_each_chunk_at_the_start_of_the_next() -> None:
    text = " ".join(f"Sentence {n} is here." for n in range(200))
    chunks = chunk_text(text, 300, 60)
    for before, after in itertools.pairwise(chunks):
        tail = before[-40:].split(" ", 1)[1]  # drop a partial first word
        assert tail in after, (before, after)


def test_a_sentence_that_mentions_a_file_is_text_not_a_path(open_session) -> None:
    session = open_session()
    assert session.add_knowledge("Our install guide is in README.md").sources == ["<text>"]
    assert "install guide" in top(session, "where are the setup instructions")


def test_a_url_is_fetched_from_a_local_server(open_session) -> None:
    pages = {
        "/faq": (
            200,
            "text/html; charset=utf-8",
            b"<html><body><p>Support answers the phone until 8pm.</p></body></html>",
        ),
        "/terms.pdf": (200, "application/pdf", make_pdf(["Cancellations are free until noon."])),
    }
    with serve(pages) as base:
        session = open_session()
        assert session.add_knowledge(f"{base}/faq").chunks_added == 1
        assert session.add_knowledge(f"{base}/terms.pdf").chunks_added == 1
        with pytest.raises(KnowledgeSourceError, match="404"):
            session.add_knowledge(f"{base}/missing")
    assert "8pm" in top(session, "until when can I call customer service")
    assert "noon" in top(session, "cancelling a booking")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: str(d / "nowhere.txt"), "does not exist"),
        (lambda d: str(d / "missing" / "folder/"), "does not exist"),
        (lambda d: _write(d / "image.png", b"\x89PNG\r\n"), "cannot read"),
        (lambda d: _write(d / "blob.txt", b"abc\x00\x01\x02" * 100), "binary"),
        (lambda d: _write(d / "empty.md", b"  \n\n "), "no text"),
        (lambda d: _write(d / "broken.pdf", b"%PDF-1.4 this is not really a pdf"), "PDF"),
        (lambda d: "   ", "empty"),
        (lambda d: str(_folder(d)), "no text, Markdown"),
        (lambda d: 42, "path, a folder, a URL or text"),
    ],
    ids=[
        "missing",
        "missing-dir",
        "unsupported",
        "binary",
        "empty",
        "bad-pdf",
        "blank",
        "no-files",
        "not-text",
    ],
)
def test_unreadable_sources_raise_and_add_nothing(
    open_session, tmp_path: Path, make, message: str
) -> None:
    session = open_session()
    session.add_knowledge("A known fact: the sky is blue.")
    with pytest.raises(KnowledgeSourceError, match=message) as caught:
        session.add_knowledge(make(tmp_path))
    assert isinstance(caught.value, ValueError)
    assert len(session.search_knowledge("anything at all", limit=10)) == 1


def test_a_batch_with_one_bad_file_adds_nothing(open_session, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.txt").write_text("Good content about gardening.")
    (folder / "bad.txt").write_bytes(b"\x00\x01binary")
    session = open_session()
    with pytest.raises(KnowledgeSourceError, match="binary"):
        session.add_knowledge(folder)
    assert session.search_knowledge("gardening") == []


def test_knowledge_is_per_user_by_default(open_session) -> None:
    open_session("s1", "ada").add_knowledge("Ada's project codename is Bluebird.")
    assert "Bluebird" in top(open_session("s2", "ada"), "project name")
    assert open_session("s1", "bob").search_knowledge("project name") == []


def test_scope_can_be_the_session_or_global(open_session) -> None:
    per_session = {"scope": "session"}
    open_session("s1", knowledge_config=per_session).add_knowledge("Session one's secret: 17.")
    assert open_session("s2", knowledge_config=per_session).search_knowledge("secret") == []
    shared = {"scope": "global"}
    open_session("s1", "ada", knowledge_config=shared).add_knowledge("Everyone may read this.")
    assert "Everyone" in top(open_session("s9", "bob", knowledge_config=shared), "who can read")


@pytest.mark.slow
def test_long_additions_show_a_progress_bar(open_session, capsys) -> None:
    text = " ".join(f"Entry {n}: the {n}th widget weighs {n * 3} grams." for n in range(700))
    added = open_session(knowledge_config={"chunk_size": 200, "chunk_overlap": 20}).add_knowledge(
        text
    )
    assert added.chunks_added >= 128
    assert "Adding knowledge" in capsys.readouterr().err


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _folder(root: Path) -> Path:
    folder = root / "only-images"
    folder.mkdir()
    (folder / "a.png").write_bytes(b"\x89PNG")
    return folder
