"""Memory: offline, semantic, scoped to its user and session, across processes."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from praisonsession import EmbedderMismatchError, InvalidValueError


@pytest.mark.slow
def test_a_paraphrase_finds_a_memory_from_another_process(open_session, tmp_path: Path) -> None:
    code = (
        "from praisonsession import Session\n"
        f"s = Session('s1', 'ada', store='sqlite://{tmp_path}/sessions.db',"
        f" settings={open_session.settings!r})\n"
        "s.add_memory('I would like a refund for the broken blender', topic='orders')\n"
        "s.add_memory('My daughter Mia starts primary school in September')\n"
        "s.add_memory('I go running every morning before work')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    hits = open_session("s2").search_memory("getting my money back", limit=3)
    assert hits[0]["text"] == "I would like a refund for the broken blender"
    assert hits[0]["metadata"]["topic"] == "orders"
    assert hits[0]["metadata"]["session_id"] == "s1"
    assert hits[0]["score"] > hits[1]["score"]
    assert set(hits[0]) >= {"id", "text", "score", "metadata"}


def test_long_term_memory_is_the_users_and_nobody_elses(open_session) -> None:
    open_session("s1", "ada").add_memory("Ada prefers green tea")
    open_session("s1", "bob").add_memory("Bob prefers black coffee")
    assert [h["text"] for h in open_session("s9", "ada").search_memory("drink")] == [
        "Ada prefers green tea"
    ]
    assert [h["text"] for h in open_session("s1", "bob").search_memory("drink")] == [
        "Bob prefers black coffee"
    ]


def test_short_term_memory_belongs_to_its_session(open_session) -> None:
    first = open_session("s1")
    first.add_memory("the user asked to call back at 5pm", memory_type="short")
    assert first.search_memory("phone call", memory_type="short")[0]["text"] == (
        "the user asked to call back at 5pm"
    )
    assert open_session("s2").search_memory("phone call", memory_type="short") == []
    assert open_session("s1", "bob").search_memory("phone call", memory_type="short") == []


def test_clearing_short_term_memory_keeps_long_term_memory(open_session) -> None:
    session = open_session()
    session.add_memory("User prefers concise answers")
    session.add_memory("draft reply mentions pricing", memory_type="short")
    assert session.clear_memory("short") == 1
    assert session.search_memory("pricing", memory_type="short") == []
    assert session.search_memory("preferences")[0]["text"] == "User prefers concise answers"


def test_clearing_removes_only_this_sessions_long_term_memories(open_session) -> None:
    mine, other = open_session("s1"), open_session("s2")
    mine.add_memory("likes sailing")
    other.add_memory("likes climbing")
    open_session("s1", "bob").add_memory("likes sailing too")
    assert mine.clear_memory("long") == 1
    texts = [h["text"] for h in other.search_memory("hobby", limit=5)]
    assert texts == ["likes climbing"]
    assert [h["text"] for h in open_session("s1", "bob").search_memory("hobby")] == [
        "likes sailing too"
    ]


def test_all_searches_both_kinds_best_first(open_session) -> None:
    session = open_session()
    session.add_memory("allergic to peanuts")
    session.add_memory("ordered pad thai tonight", memory_type="short")
    hits = session.search_memory("food allergy", memory_type="all", limit=2)
    assert {h["metadata"]["memory_type"] for h in hits} == {"long", "short"}
    assert hits[0]["text"] == "allergic to peanuts"
    assert hits[0]["score"] >= hits[1]["score"]


def test_short_term_memory_expires_with_its_session(open_session, frozen_clock) -> None:
    session = open_session("brief", session_ttl=0.3)
    session.add_memory("temporary note", memory_type="short")
    assert session.search_memory("note", memory_type="short") != []
    frozen_clock.advance(0.45)
    fresh = open_session("brief", session_ttl=10)
    assert fresh.search_memory("note", memory_type="short") == []


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.add_memory(""), "empty"),
        (lambda s: s.add_memory(42), "str"),
        (lambda s: s.add_memory("x", memory_type="medium"), "memory_type"),
        (lambda s: s.add_memory("x", session_id="other"), "may not set"),
        (lambda s: s.add_memory("x", when=object()), "JSON"),
        (lambda s: s.search_memory("x", limit=0), "limit"),
        (lambda s: s.search_memory("   "), "empty"),
        (lambda s: s.clear_memory("everything"), "memory_type"),
        (lambda s: s.add_memories("x is one text"), "list of texts"),
        (lambda s: s.add_memories(["x", "  "]), r"texts\[1\] is empty"),
        (lambda s: s.add_memories(["x", 5]), r"texts\[1\] must be a str"),
        (lambda s: s.add_memories(["x"], memory_type="medium"), "memory_type"),
        (lambda s: s.add_memories(["x"], user_id="bob"), "may not set"),
        (lambda s: s.add_memories(["x"], memory_type="short", when={1, 2}), "JSON"),
    ],
    ids=[
        "empty",
        "not-text",
        "bad-type",
        "reserved-key",
        "bad-metadata",
        "limit",
        "blank",
        "clear",
        "many-not-a-list",
        "many-one-blank",
        "many-one-not-text",
        "many-bad-type",
        "many-reserved-key",
        "many-bad-metadata",
    ],
)
def test_bad_input_is_refused_and_nothing_is_stored(open_session, call, error: str) -> None:
    session = open_session()
    with pytest.raises(InvalidValueError, match=error):
        call(session)
    assert session.search_memory("x", memory_type="all") == []


def test_add_memories_remembers_each_text_with_the_same_metadata(open_session) -> None:
    session = open_session("s1")
    texts = ["I fly to Lisbon in May", "My sister lives in Osaka", "I am allergic to peanuts"]
    ids = session.add_memories(texts, topic="profile")
    assert len(set(ids)) == 3
    for text, memory_id in zip(texts, ids, strict=True):
        hit = session.search_memory(text, limit=1)[0]
        assert (hit["id"], hit["text"]) == (memory_id, text)
        assert hit["metadata"]["topic"] == "profile"
        assert hit["metadata"]["session_id"] == "s1"
    other = open_session("s2")  # long-term: the user's, from any session
    assert other.search_memory("food allergy", limit=1)[0]["id"] == ids[2]
    assert session.add_memories([]) == []


def test_add_memories_in_more_than_one_batch_stores_every_one_once(open_session) -> None:
    texts = [f"note number {i} about topic {i % 7}" for i in range(600)]  # 3 batches of 256
    session = open_session()
    ids = session.add_memories(texts)
    assert len(ids) == len(set(ids)) == 600
    hit = session.search_memory("note number 512 about topic 1", limit=1)[0]
    assert (hit["id"], hit["text"]) == (ids[512], texts[512])
    assert session.clear_memory("long") == 600


def test_add_memories_embeds_each_batch_once_in_order_and_a_failed_batch_stores_nothing(
    open_session,
) -> None:
    from praisonsession.recall.embeddings import MiniLMEmbedder

    class Failing(MiniLMEmbedder):
        """The real model, recording its batches; the second batch it is given fails, once."""

        def __init__(self) -> None:
            super().__init__()
            self.batches: list[list[str]] = []
            self.failed = False

        def embed(self, texts: list[str]) -> list[list[float]]:
            self.batches.append(list(texts))
            if len(self.batches) == 2 and not self.failed:
                self.failed = True
                raise RuntimeError("the model ran out of memory")
            return super().embed(texts)

    texts = [f"note number {i} about topic {i % 7}" for i in range(600)]  # 3 batches of 256
    embedder = Failing()
    session = open_session(memory_config={"embedder": embedder})
    with pytest.raises(RuntimeError, match="out of memory"):
        session.add_memories(texts)
    assert embedder.batches == [texts[:256], texts[256:512]]  # the next one, ahead: no more
    held = session.list_memories("long", limit=1000)
    assert sorted(memory["text"] for memory in held) == sorted(texts[:256])  # the first, whole
    embedder.batches.clear()
    ids = session.add_memories(texts)  # again: the first batch is held, the rest added now
    assert embedder.batches == [texts[:256], texts[256:512], texts[512:]]
    assert len(set(ids)) == 600 and len(session.list_memories("long", limit=1000)) == 600


def test_add_memories_of_short_notes_appends_them_in_one_step(open_session) -> None:
    session = open_session("notes")
    ids = session.add_memories(["asked about refunds", "prefers email"], memory_type="short")
    assert session.message_count("$memory/short_term") == 2
    hits = session.search_memory("contact by email", memory_type="short", limit=2)
    assert hits[0]["id"] == ids[1] and hits[0]["text"] == "prefers email"
    assert open_session("elsewhere").search_memory("email", memory_type="short") == []
    assert session.clear_memory("short") == 2


def test_another_embedder_cannot_reopen_the_collection(open_session) -> None:
    open_session().add_memory("stored with MiniLM")

    class Tiny:
        name = "tiny-test-embedder"
        dimension = 3

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, float(len(t)), 0.0] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return self.embed([text])[0]

    session = open_session(memory_config={"embedder": Tiny()})
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
        session.search_memory("anything")


def test_session_creation_does_not_import_chromadb(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom praisonsession import Session\n"
        f"s = Session('s', store='sqlite://{tmp_path}/s.db')\n"
        "s.set_state('a', 1)\n"
        "print(sorted(m for m in ('chromadb', 'onnxruntime', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_get_context_labels_sections_and_keeps_the_budget(open_session, tmp_path: Path) -> None:
    session = open_session(memory_config={"context_chars": 300})
    session.add_memory("The user is vegetarian")
    session.add_memory("asked about dinner recipes", memory_type="short")
    (tmp_path / "menu.md").write_text("Our lentil curry is vegetarian and ready in 30 minutes.")
    session.add_knowledge(str(tmp_path / "menu.md"))
    context = session.get_context("what should I cook for a vegetarian dinner")
    said = r"- \[\d{4}-\d\d-\d\d \d\d:\d\d\] "  # a memory's line starts with when it was said
    assert re.search(r"## Long-term memory\n" + said + "The user is vegetarian", context)
    assert "## Knowledge\n- Our lentil curry" in context  # knowledge has no such time
    assert re.search(r"## Recent notes from this session\n" + said + "asked about dinner", context)
    assert len(context) <= 300
    assert session.get_context("quantum chromodynamics lecture") == ""


def test_the_emptiness_check_forgets_stale_users_and_sees_a_new_memory(open_session) -> None:
    from praisonsession.recall import core as recall  # where the emptiness cache is kept

    # many users found empty long ago: the next check drops them instead of growing forever
    long_ago = time.monotonic() - 10 * recall.EMPTY_TRUST
    stale = {(0, f"gone_{i}"): long_ago for i in range(recall._EMPTY_MEMORY)}
    recall._found_empty.update(stale)
    try:
        session = open_session(user_id="nobody_yet")
        assert session.get_context("what do I like?") == ""  # checked: nothing to find
        assert not any(key in recall._found_empty for key in stale)
        assert len(recall._found_empty) >= 1  # this user's collections, just checked
        session.add_memory("The user likes sailing on Sundays")
        assert "sailing" in session.get_context("what do I like to do on weekends?")
    finally:
        for key in stale:
            recall._found_empty.pop(key, None)
