"""Hybrid search on every vector store: a lexical index (BM25 over the memories' words) beside
the vectors, fused with them by default; scoped, filtered, encrypted, erased, re-keyed,
exported and imported with them, and rebuilt when it does not match them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

import backends
from praisonsession import Session, erase_user
from praisonsession.recall.core import default_embedder
from praisonsession.recall.vectors import terms as terms_module
from praisonsession.recall.vectors.fusion import fuse
from praisonsession.recall.vectors.lexical import LexicalFile
from praisonsession.recall.vectors.terms import Terms, words
from praisonsession.session.rotation import rekey
from sessions import VECTOR_STORES, vector_settings

KEY = base64.urlsafe_b64encode(b"h" * 32).decode()
NEW_KEY = base64.urlsafe_b64encode(b"j" * 32).decode()
#: The memory a search by its rare words must find: the model ranks it 10th of 11 (a long
#: text about other things, the order's code in passing), behind every other invoice.
TARGET = "During the picnic by the lake the kids fed the ducks and Ravi told us about order QX-88"
QUERY = "invoice QX-88"
OTHERS = [
    "Invoice 3310 was paid last month",
    "The invoice for the catering is late",
    "We sent the invoice to the client on Monday",
    "Accounts asked for a copy of the March invoice",
    "The supplier invoice had the wrong VAT number",
    "Invoice 2208 is still waiting for approval",
    "I emailed the invoices to finance",
    "The invoice template needs our new address",
    "Paid invoices are filed in the grey cabinet",
    "Invoice 5120 was cancelled by the customer",
]
WORDS = ("picnic", "ducks", "ravi", "lake")


def dense_rank(texts: list[str], query: str) -> list[str]:
    """The texts by the model's cosine alone, best first (what dense search ranks)."""
    model = default_embedder("minilm")
    matrix = np.asarray(model.embed(texts), dtype=np.float32)
    query_vector = np.asarray(model.embed_query(query), dtype=np.float32)
    scores = matrix @ query_vector / np.linalg.norm(matrix, axis=1) / np.linalg.norm(query_vector)
    return [texts[i] for i in np.argsort(-scores)]


@pytest.fixture(params=VECTOR_STORES)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    settings: dict[str, Any] = vector_settings(request.param, request, tmp_path)
    vectors = settings.get("vector_store_url", str(tmp_path / "data" / "chroma"))
    return {
        "kind": request.param,
        "store": f"sqlite://{tmp_path}/s.db",
        "settings": settings,
        "vectors": vectors,
        "root": tmp_path,
    }


def opened(place: dict[str, Any], user: str = "ada", session_id: str = "s", **extra: Any) -> Any:
    return Session(session_id, user, store=place["store"], settings={**place["settings"], **extra})


def lexical_bytes(place: dict[str, Any]) -> bytes:
    """Everything the lexical index keeps: the SQLite files beside embedded Chroma or under
    the data directory (a Chroma server), or every row's terms (pgvector)."""
    if place["kind"] == "pgvector":
        schema = place["vectors"].rsplit("schema=", 1)[1]
        found = b""
        with psycopg.connect(backends.POSTGRES_URL, autocommit=True) as conn:
            tables = conn.execute(f'SELECT tab FROM "{schema}".ps_vector_collections').fetchall()
            for (tab,) in tables:
                rows = conn.execute(f'SELECT terms::text FROM "{schema}"."{tab}"').fetchall()
                found += b"\n".join((row[0] or "").encode() for row in rows)
        return found
    root = place["root"] / "data"
    files = [*root.glob("chroma-lexical.sqlite3*"), *root.glob("lexical/*")]
    return b"".join(path.read_bytes() for path in files if path.is_file())


def test_words_stem_fold_and_drop_stopwords() -> None:
    found = words("Melanie painted the lake sunrise; she's painting again!")
    assert len(found) == 5 and found[1] == found[4] == words("paints")[0]
    assert found[0] == words("MELANIE")[0] and words("don't") == words("dont")
    assert words("Running, runs, RUN") == ["run", "run", "run"]
    assert words("the and of") == []
    hashed = Terms(b"k" * 32).of("quince quinces")
    assert hashed[0] == hashed[1] and "quince" not in hashed[0]
    assert Terms(b"k" * 32).of("quince") != Terms(b"l" * 32).of("quince")


def test_fusion_weighs_scores_not_only_ranks() -> None:
    # the second candidate shares rare words with the question: far above by BM25, a little
    # below by cosine
    assert fuse([0.50, 0.48, 0.20], [0.0, 9.0, 1.0]) == [1, 0, 2]
    # close by meaning and by words first; then words count more than a little meaning
    assert fuse([0.60, 0.55, 0.30], [1.0, 0.0, 1.2]) == [0, 2, 1]
    assert fuse([0.50, 0.48], [0.0, 0.0]) == [0, 1]  # no word shared: the dense order
    assert fuse([], []) == []


def test_lexical_file_rolls_back_when_the_vector_write_fails(tmp_path: Path) -> None:
    lexical = LexicalFile(tmp_path / "x.sqlite3")
    with lexical.writing():
        lexical.replace("c", ["a"], [["quince"]])
    with pytest.raises(RuntimeError), lexical.writing():
        lexical.replace("c", ["b"], [["quince", "calvados"]])
        raise RuntimeError("the vector store refused the write")
    assert lexical.count("c") == 1
    assert [entry for entry, _ in lexical.search("c", ["quince", "calvados"], 5)] == ["a"]
    lexical.close()


def test_counts_kept_between_searches_follow_writes_from_this_and_other_connections(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.sqlite3"
    here, there = LexicalFile(path), LexicalFile(path)  # two processes' connections
    with here.writing():
        here.replace("c", ["a", "b"], [["harbour", "ferry"], ["garden", "ferry"]])
    first = here.search("c", ["harbour"], 5)
    assert [entry for entry, _ in first] == ["a"]
    with there.writing():  # another process: two more entries hold "harbour"
        there.replace("c", ["c", "d"], [["harbour"], ["harbour", "garden"]])
    second = here.search("c", ["harbour"], 5)
    assert sorted(entry for entry, _ in second) == ["a", "c", "d"]
    # three of four hold it now: its weight fell, as a search of a fresh connection says
    assert second == LexicalFile(path).search("c", ["harbour"], 5)
    assert dict(second)["a"] < dict(first)["a"]
    with here.writing():  # this connection's own write
        here.delete("c", ["c", "d"])
    assert here.search("c", ["harbour"], 5) == first


def test_a_memory_matching_the_question_by_words_is_found_first(place: dict[str, Any]) -> None:
    texts = [TARGET, *OTHERS]
    assert dense_rank(texts, QUERY).index(TARGET) >= 5  # the model alone ranks it low
    session = opened(place)
    session.add_memories(texts, dedupe=False)
    hits = session.search_memory(QUERY, limit=3)
    assert hits[0]["text"] == TARGET
    assert set(hits[0]) >= {"id", "text", "score", "metadata"}
    assert 0.0 < hits[0]["score"] < 1.0  # the score stays the cosine similarity
    assert session.search_memory(QUERY, limit=2, memory_type="all")[0]["text"] == TARGET
    assert TARGET in session.get_context(QUERY)
    session.close()


def test_filters_limits_and_users_hold(place: dict[str, Any]) -> None:
    ada = opened(place)
    ada.add_memory(TARGET, topic="jam")
    ada.add_memories(OTHERS, dedupe=False, topic="baking")
    assert [h["text"] for h in ada.search_memory(QUERY, where={"topic": "baking"})].count(
        TARGET
    ) == 0
    assert ada.search_memory(QUERY, where={"topic": "jam"})[0]["text"] == TARGET
    assert len(ada.search_memory(QUERY, limit=2)) == 2
    bob = opened(place, user="bob", session_id="b")
    bob.add_memory("Bob has never heard of order QX-88")
    assert [h["text"] for h in bob.search_memory(QUERY)] == ["Bob has never heard of order QX-88"]
    assert TARGET not in [h["text"] for h in bob.search_memory(QUERY, limit=20)]
    assert ada.search_memory(QUERY, limit=1)[0]["text"] == TARGET
    ada.close()
    bob.close()


def test_knowledge_search_is_hybrid(place: dict[str, Any]) -> None:
    session = opened(place)
    for text in [TARGET, *OTHERS]:
        session.add_knowledge(text)
    assert TARGET in session.search_knowledge(QUERY, limit=1)[0]["text"]
    session.close()


def test_encrypted_index_holds_no_word_and_survives_rekey(place: dict[str, Any]) -> None:
    session = opened(place, encryption_key=KEY)
    session.add_memories([TARGET, *OTHERS], dedupe=False)
    assert session.search_memory(QUERY, limit=1)[0]["text"] == TARGET
    session.close()
    held = lexical_bytes(place).lower()
    assert held, "the lexical index is empty"
    for word in WORDS:
        assert word.encode() not in held
    rekey(KEY, NEW_KEY, place["store"], vector_store=place["vectors"], settings=place["settings"])
    session = opened(place, encryption_key=NEW_KEY)
    assert session.search_memory(QUERY, limit=1)[0]["text"] == TARGET
    session.close()
    held = lexical_bytes(place).lower()
    for word in WORDS:
        assert word.encode() not in held
    if place["kind"] == "embedded":  # no term hashed under the old key is left
        from praisonsession._internal.sealing import TextSealer, load_key

        old = Terms(TextSealer(load_key(KEY)).digest_key("lexical")).of("picnic")[0]
        new = Terms(TextSealer(load_key(NEW_KEY)).digest_key("lexical")).of("picnic")[0]
        assert old.encode() not in held and new.encode() in held


def test_erasure_removes_the_lexical_index(place: dict[str, Any]) -> None:
    session = opened(place)
    session.add_memories([TARGET, *OTHERS], dedupe=False)
    keep = opened(place, user="bob", session_id="b")
    keep.add_memory("Bob keeps bees near the orchard")
    assert session.search_memory(QUERY, limit=1)[0]["text"] == TARGET
    session.close()
    if place["kind"] != "chroma-server":  # a server's entries are vaulted: hashed words
        assert b"picnic" in lexical_bytes(place)
    erase_user("ada", place["store"], settings=place["settings"])
    held = lexical_bytes(place)
    for word in WORDS:
        assert word.encode() not in held
    assert keep.search_memory("bees orchard", limit=1)[0]["text"] == (
        "Bob keeps bees near the orchard"
    )
    keep.close()


def test_export_and_import_carry_the_lexical_index(place: dict[str, Any], tmp_path: Path) -> None:
    session = opened(place)
    session.add_memories([TARGET, *OTHERS], dedupe=False)
    buffer = io.BytesIO()
    session.export(buffer)
    session.close()
    erase_user("ada", place["store"], settings=place["settings"])
    copy = Session.import_archive(
        io.BytesIO(buffer.getvalue()), store=place["store"], settings=place["settings"]
    )
    assert copy.search_memory(QUERY, limit=1)[0]["text"] == TARGET
    copy.close()


def test_a_lost_or_stale_lexical_index_is_rebuilt(tmp_path: Path) -> None:
    """Vectors written without their terms (a crash between the two writes, a file lost):
    the next process to open the collection counts both and rebuilds the terms."""
    place = {"root": tmp_path, "kind": "embedded", "store": f"sqlite://{tmp_path}/s.db"}
    place["settings"] = {"data_dir": str(tmp_path / "data")}
    session = opened(place)
    session.add_memories([TARGET, *OTHERS], dedupe=False)
    session.close()
    lexical = tmp_path / "data" / "chroma-lexical.sqlite3"
    conn = sqlite3.connect(lexical)
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    for table in tables:
        if table.startswith("lx_") and "_" not in table[3:]:
            conn.execute(f"DELETE FROM {table}")  # as if the terms were never written
            conn.execute(f"DELETE FROM {table}_ids")
    conn.commit()
    conn.close()
    from praisonsession.recall.vectors import index

    index._lexicons_checked.clear()  # a new process: nothing checked yet
    session = opened(place)
    assert session.search_memory(QUERY, limit=1)[0]["text"] == TARGET
    session.close()


def test_the_keyed_hash_is_an_hmac_of_the_stemmed_word() -> None:
    key = b"z" * 32
    stemmed = words("Quinces")[0]
    assert stemmed == words("quince")[0]
    expected = hmac.new(key, stemmed.encode(), hashlib.sha256).hexdigest()[:16]
    assert Terms(key).of("Quinces") == ["h" + expected]
    assert "quince" not in terms_module.STOPWORDS and "the" in terms_module.STOPWORDS
