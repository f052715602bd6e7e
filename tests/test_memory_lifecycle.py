"""Memory people can trust: stable ids, updates and deletions with a history, no duplicates on
a rerun, filters, newer memories first, and ids that travel with forks and archives.

Each test runs on embedded Chroma and on the Chroma server (the ``open_session`` fixture).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

import pytest

from praisonsession import AsyncSession, InvalidValueError, MemoryId, MemoryNotFoundError, Session
from praisonsession.recall.core import default_embedder

# -- ids and lifecycle ------------------------------------------------------------------------


def test_adding_the_same_text_again_returns_the_same_id_and_stores_it_once(open_session) -> None:
    session = open_session()
    first = session.add_memory("User prefers concise answers", topic="style")
    again = open_session("other").add_memory("user prefers concise answers.", topic="style")
    assert isinstance(first, MemoryId) and isinstance(first, str)
    assert (first.event, again.event) == ("ADD", "NONE")
    assert again == first
    assert [m["id"] for m in session.list_memories("long")] == [first]
    assert [h["text"] for h in session.search_memory("concise", limit=5)] == [
        "User prefers concise answers"
    ]


def test_a_close_paraphrase_updates_the_memory_and_says_so(open_session) -> None:
    session = open_session()
    held = session.add_memory("User likes green tea")
    reworded = session.add_memory("User loves green tea")
    assert reworded == held
    assert (reworded.event, reworded.updated, reworded.previous) == (
        "UPDATE",
        True,
        "User likes green tea",
    )
    assert session.get_memory(held)["text"] == "User loves green tea"
    assert [(c["event"], c["text"], c["previous"]) for c in session.memory_history(held)] == [
        ("ADD", "User likes green tea", None),
        ("UPDATE", "User loves green tea", "User likes green tea"),
    ]


@pytest.mark.parametrize(
    ("held", "new"),
    [
        ("User lives in Oslo", "User lives in Bergen"),
        ("User has a dog named Rex", "User has a cat named Rex"),
        ("User likes tea", "User no longer likes tea"),
        ("User works as a teacher", "User works as a nurse"),
        ("User has 2 children", "User has 3 children"),
    ],
)
def test_distinct_facts_are_both_kept(open_session, held: str, new: str) -> None:
    session = open_session()
    first, second = session.add_memory(held), session.add_memory(new)
    assert (first.event, second.event) == ("ADD", "ADD") and first != second
    assert sorted(m["text"] for m in session.list_memories()) == sorted([held, new])


def test_dedupe_false_and_the_threshold_are_the_callers_choice(open_session) -> None:
    session = open_session()
    first = session.add_memory("User likes green tea")
    forced = session.add_memory("User likes green tea", dedupe=False)
    assert forced != first and forced.event == "ADD"
    strict = open_session("strict", memory_config={"dedupe_threshold": 0.99})
    assert strict.add_memory("User loves green tea").event == "ADD"  # 0.97 < 0.99
    with pytest.raises(InvalidValueError, match="dedupe_threshold"):
        open_session("bad", memory_config={"dedupe_threshold": 2})


def test_add_memories_removes_repeats_within_the_batch_and_against_the_store(
    open_session,
) -> None:
    session = open_session()
    held = session.add_memory("User drinks black coffee")
    ids = session.add_memories(
        ["User plays the cello", "user plays the cello", "User drinks black coffee", "User rows"]
    )
    assert [i.event for i in ids] == ["ADD", "NONE", "NONE", "ADD"]
    assert ids[1] == ids[0] and ids[2] == held
    assert len(session.list_memories()) == 3
    rerun = session.add_memories(["User plays the cello", "User rows"])
    assert [i.event for i in rerun] == ["NONE", "NONE"] and rerun == [ids[0], ids[3]]


CONVERSATION = [
    "8 May 2023: Melanie: Wow, love that painting! So cool you found such a helpful group.",
    "8 May 2023: Caroline: Thanks! The group keeps me painting every week.",
    "8 May 2023: Melanie: Yeah, I painted that lake sunrise last year! It's special to me.",
    "8 May 2023: Melanie: What do you paint these days?",
    "8 May 2023: Caroline: Mostly portraits. Yeah, I painted my sister last month!",
]


def test_every_statement_of_a_conversation_is_kept_and_a_rerun_stores_nothing(
    open_session,
) -> None:
    session = open_session()
    vectors = default_embedder("minilm").embed(CONVERSATION[:3:2])
    assert (
        sum(a * b for a, b in zip(*vectors, strict=True)) >= 0.72
    )  # close enough to merge by score alone
    first = session.add_memory(CONVERSATION[0])
    sunrise = session.add_memory(CONVERSATION[2])  # the example, one at a time
    assert (first.event, sunrise.event) == ("ADD", "ADD") and sunrise != first
    ids = session.add_memories(CONVERSATION)  # and as a batch, against what is held
    assert [i.event for i in ids] == ["NONE", "ADD", "NONE", "ADD", "ADD"]
    assert (ids[0], ids[2]) == (first, sunrise)
    assert sorted(m["text"] for m in session.list_memories()) == sorted(CONVERSATION)
    rerun = session.add_memories(CONVERSATION)
    assert rerun == ids and {i.event for i in rerun} == {"NONE"}
    found = session.search_memory("When did Melanie paint a sunrise?", limit=5)
    assert CONVERSATION[2] in [hit["text"] for hit in found]
    again = session.add_memory(
        "8 May 2023: Melanie: Yeah, I painted the lake sunrise last year! It is special to me."
    )
    assert (again, again.event, again.previous) == (sunrise, "UPDATE", CONVERSATION[2])


def test_a_memory_keeps_when_it_was_said_and_the_context_shows_it(open_session) -> None:
    session = open_session()
    climbed = dt.datetime(2021, 7, 4, 9, 30, tzinfo=dt.timezone.utc)
    session.add_memory("Ada climbed Kilimanjaro", said_at=climbed)
    session.add_memory("Ada ran the Oslo marathon", said_at="2019-09-21T08:00:00+00:00")
    session.add_memory("Ada started rowing", said_at=1_600_000_000)
    before = time.time()
    session.add_memory("Ada learns Welsh")  # now, when omitted
    found = {hit["text"]: hit["metadata"]["said_at"] for hit in session.search_memory("Ada")}
    assert found["Ada climbed Kilimanjaro"] == climbed.timestamp()
    assert (
        found["Ada ran the Oslo marathon"] == dt.datetime(2019, 9, 21, 8, tzinfo=dt.UTC).timestamp()
    )
    assert found["Ada started rowing"] == 1_600_000_000.0
    assert found["Ada learns Welsh"] >= before
    local = dt.datetime.fromtimestamp(climbed.timestamp()).strftime("%Y-%m-%d %H:%M")
    assert f"[{local}] Ada climbed Kilimanjaro" in session.get_context("When did Ada climb?")
    early = session.search_memory("Ada", where={"said_at": {"$lt": dt.datetime(2020, 1, 1)}})
    assert [hit["text"] for hit in early] == ["Ada ran the Oslo marathon"]

    ids = session.add_memories(["Ada met Ben", "Ada met Cy"], said_at=[1e9, 2e9])
    assert [session.get_memory(i)["metadata"]["said_at"] for i in ids] == [1e9, 2e9]
    note = session.add_memory("call the plumber", "short", said_at=climbed)
    assert session.get_memory(note)["metadata"]["said_at"] == climbed.timestamp()
    held = len(session.list_memories("all"))
    for bad in ("yesterday", True, float("nan"), [1], {"at": 1}):
        with pytest.raises(InvalidValueError, match="said_at"):
            session.add_memory("Ada owns a kayak", said_at=bad)
    with pytest.raises(InvalidValueError, match="one time per text"):
        session.add_memories(["Ada owns a kayak", "Ada owns a tent"], said_at=[1e9])
    assert len(session.list_memories("all")) == held  # nothing stored by a refused call


@pytest.mark.parametrize("memory_type", ["long", "short"])
def test_get_update_delete_and_history(open_session, memory_type: str) -> None:
    session = open_session()
    before = time.time()
    memory_id = session.add_memory("User lives in Oslo", memory_type, topic="home")
    got = session.get_memory(memory_id)
    assert (got["id"], got["text"], got["metadata"]["topic"]) == (
        memory_id,
        "User lives in Oslo",
        "home",
    )
    assert got["metadata"]["memory_type"] == memory_type

    updated = session.update_memory(memory_id, "User lives in Berlin", verified=True)
    assert updated["text"] == "User lives in Berlin"
    assert updated["metadata"]["topic"] == "home" and updated["metadata"]["verified"] is True
    assert updated["metadata"]["updated_at"] >= updated["metadata"]["created_at"]
    assert session.update_memory(memory_id, "User lives in Berlin") == updated  # no change
    assert session.search_memory("Berlin", memory_type)[0]["text"] == "User lives in Berlin"

    assert session.delete_memory(memory_id) is True
    after = time.time()
    assert session.delete_memory(memory_id) is False
    assert session.get_memory(memory_id) is None
    assert session.search_memory("Berlin", memory_type) == []
    history = session.memory_history(memory_id)
    assert [(c["event"], c["text"], c["previous"]) for c in history] == [
        ("ADD", "User lives in Oslo", None),
        ("UPDATE", "User lives in Berlin", "User lives in Oslo"),
        ("DELETE", None, "User lives in Berlin"),
    ]
    times = [c["at"] for c in history]
    assert before <= times[0] <= times[1] <= times[2] <= after  # each when it was made
    with pytest.raises(MemoryNotFoundError, match="list_memories"):
        session.update_memory(memory_id, "again")
    assert session.memory_history("no-such-id") == []


@pytest.mark.slow
def test_an_update_and_a_delete_are_seen_from_another_process(open_session, tmp_path: Path) -> None:
    session = open_session()
    kept = session.add_memory("User likes sailing")
    gone = session.add_memory("User owns a blue bicycle")
    code = (
        "from praisonsession import Session\n"
        f"s = Session('s2', 'ada', store='sqlite://{tmp_path}/sessions.db',"
        f" settings={open_session.settings!r})\n"
        f"s.update_memory({str(kept)!r}, 'User likes sailing and rowing', season='summer')\n"
        f"assert s.delete_memory({str(gone)!r})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert session.get_memory(kept)["text"] == "User likes sailing and rowing"
    assert session.get_memory(kept)["metadata"]["season"] == "summer"
    assert session.get_memory(gone) is None
    assert [c["event"] for c in session.memory_history(gone)] == ["ADD", "DELETE"]


def test_another_user_cannot_read_change_or_delete_a_memory_by_its_id(open_session) -> None:
    memory_id = open_session("s", "ada").add_memory("Ada's locker code is 4417")
    bob = open_session("s", "bob")
    assert bob.get_memory(memory_id) is None
    assert bob.delete_memory(memory_id) is False
    assert bob.memory_history(memory_id) == []
    with pytest.raises(MemoryNotFoundError):
        bob.update_memory(memory_id, "changed")
    assert open_session("s", "ada").get_memory(memory_id)["text"] == "Ada's locker code is 4417"


# -- filters ----------------------------------------------------------------------------------


@pytest.fixture
def rated(open_session):
    session = open_session()
    _, greek = session.add_memories(
        ["User loves Thai food", "User loves Greek food"], cuisine="asian"
    )
    session.update_memory(greek, cuisine="european")
    session.add_memory("User hates fast food", cuisine="american", stars=1)
    session.add_memory("User enjoys Lebanese food", cuisine="levantine", stars=5)
    session.add_memory("User likes ramen noodles", "short", cuisine="asian", stars=4)
    return session


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"cuisine": "asian"}, {"User loves Thai food", "User likes ramen noodles"}),
        (
            {"cuisine": {"$ne": "asian"}},
            {"User loves Greek food", "User hates fast food", "User enjoys Lebanese food"},
        ),
        (
            {"cuisine": {"$in": ["european", "levantine"]}},
            {"User loves Greek food", "User enjoys Lebanese food"},
        ),
        (
            {"cuisine": {"$nin": ["asian", "european"]}},
            {"User hates fast food", "User enjoys Lebanese food"},
        ),
        ({"stars": {"$gt": 1}}, {"User enjoys Lebanese food", "User likes ramen noodles"}),
        ({"stars": {"$gte": 4, "$lt": 5}}, {"User likes ramen noodles"}),
        ({"stars": {"$lte": 1}}, {"User hates fast food"}),
        ({"$and": [{"cuisine": "asian"}, {"stars": 4}]}, {"User likes ramen noodles"}),
        (
            {"$or": [{"stars": 1}, {"cuisine": "european"}]},
            {"User hates fast food", "User loves Greek food"},
        ),
    ],
)
def test_search_and_list_filter_long_and_short_memories_alike(rated, where, expected) -> None:
    found = {h["text"] for h in rated.search_memory("food", "all", limit=10, where=where)}
    assert found == expected
    listed = {m["text"] for m in rated.list_memories(where=where)}
    assert listed == expected


def test_filters_on_creation_and_update_times(rated) -> None:
    memories = {m["text"]: m for m in rated.list_memories()}
    greek = memories["User loves Greek food"]["metadata"]
    thai = memories["User loves Thai food"]["metadata"]
    assert greek["updated_at"] > greek["created_at"] == thai["created_at"]
    since = {"updated_at": {"$gt": thai["updated_at"]}}
    assert "User loves Greek food" in {m["text"] for m in rated.list_memories(where=since)}
    assert "User loves Thai food" not in {m["text"] for m in rated.list_memories(where=since)}
    moment = dt.datetime.fromtimestamp(thai["created_at"] + 1e-3, tz=dt.timezone.utc)
    before = rated.list_memories("long", where={"created_at": {"$lt": moment}})
    assert {m["text"] for m in before} == {"User loves Thai food", "User loves Greek food"}


@pytest.mark.parametrize(
    "where",
    [
        "cuisine=asian",
        {"stars": {"$gt": "4"}},
        {"stars": {"$between": [1, 2]}},
        {"$and": {"stars": 1}},
        {"$not": {"stars": 1}},
        {"cuisine": {"$in": []}},
        {"cuisine": {"$in": ["a", 1]}},
        {"cuisine": ["asian"]},
        {"": 1},
    ],
)
def test_a_malformed_filter_is_refused_with_the_accepted_form(rated, where) -> None:
    for call in (
        lambda: rated.search_memory("food", where=where),
        lambda: rated.list_memories(where=where),
        lambda: rated.search_knowledge("food", where=where),
    ):
        with pytest.raises(InvalidValueError, match=r"Accepted: where=\{"):
            call()


def test_list_memories_pages_with_after(open_session) -> None:
    session = open_session()
    ids = [session.add_memory(f"User visited {city}") for city in ("Oslo", "Rome", "Lima", "Pune")]
    first = session.list_memories(limit=3)
    rest = session.list_memories(limit=3, after=first[-1]["id"])
    assert [m["id"] for m in first + rest] == ids
    with pytest.raises(InvalidValueError, match="after="):
        session.list_memories(after="not-an-id")


def test_search_knowledge_filters_by_source(open_session, tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "lunch.md").write_text("Lunch is served at noon in the garden room.")
    (folder / "parking.md").write_text("Parking is free after six in the evening.")
    session = open_session()
    session.add_knowledge(folder)
    hits = session.search_knowledge("when is lunch", where={"source": str(folder / "parking.md")})
    assert [Path(h["source"]).name for h in hits] == ["parking.md"]
    assert len(session.search_knowledge("lunch", where={"created_at": {"$gt": 0}})) == 2


# -- newer first ------------------------------------------------------------------------------


def test_an_update_told_later_ranks_above_the_old_fact(open_session) -> None:
    session = open_session()
    old = session.add_memory("User lives in Oslo")
    session.add_memory("User works as a nurse")
    new = open_session("later").add_memory("User moved to Berlin last spring")
    hits = session.search_memory("where does the user live?", limit=3)
    assert [h["id"] for h in hits].index(new) < [h["id"] for h in hits].index(old)
    plain = session.search_memory("where does the user live?", limit=3, prefer_recent=False)
    assert plain[0]["id"] == old  # without the preference, the closer wording wins
    assert (
        open_session("x", memory_config={"prefer_recent": False}).search_memory(
            "where does the user live?"
        )[0]["id"]
        == old
    )


@pytest.mark.parametrize("newer_type", ["short", "long"])
def test_all_types_put_the_newer_fact_first_whichever_kind_holds_it(
    open_session, newer_type: str
) -> None:
    session = open_session()
    older_type = "long" if newer_type == "short" else "short"
    old = session.add_memory("User lives in Oslo", older_type)
    session.add_memory("User works as a nurse", older_type)
    time.sleep(0.01)  # a later update time, whatever the clock's resolution
    new = session.add_memory("User moved to Berlin last spring", newer_type)
    question = "where does the user live?"
    for kind in (older_type, newer_type):  # each kind on its own ranks by score and recency
        assert len(session.search_memory(question, kind, limit=3)) >= 1
    hits = session.search_memory(question, "all", limit=3)
    ids = [h["id"] for h in hits]
    assert ids.index(new) < ids.index(old), hits
    assert hits[ids.index(new)]["metadata"]["memory_type"] == newer_type
    plain = session.search_memory(question, "all", limit=3, prefer_recent=False)
    assert plain[0]["id"] == old  # by score alone, the closer wording wins
    assert [h["score"] for h in plain] == sorted((h["score"] for h in plain), reverse=True)


# -- ids travel -------------------------------------------------------------------------------


def test_ids_survive_a_fork_and_the_forks_copy_is_its_own(open_session) -> None:
    parent = open_session("parent")
    long_id = parent.add_memory("User plays chess on Sundays")
    short_id = parent.add_memory("asked about openings", "short")
    child = parent.fork("child")
    assert child.get_memory(long_id)["metadata"]["session_id"] == "child"
    assert child.get_memory(short_id)["text"] == "asked about openings"
    assert [h["id"] for h in child.search_memory("chess")] == [long_id]  # one hit per id
    child.update_memory(long_id, "User plays chess on Saturdays")
    assert parent.get_memory(long_id)["text"] == "User plays chess on Sundays"
    assert child.get_memory(long_id)["text"] == "User plays chess on Saturdays"


def test_ids_survive_an_archive_and_a_snapshot(open_session, tmp_path: Path) -> None:
    session = open_session("trip")
    long_id = session.add_memory("User is allergic to shellfish", severity="high")
    short_id = session.add_memory("wants a window seat", "short")
    snapshot = session.snapshot("before")
    session.delete_memory(short_id)
    session.restore(snapshot)
    assert session.get_memory(short_id)["text"] == "wants a window seat"

    session.export(tmp_path / "trip.jsonl")
    settings = dict(open_session.settings)
    imported = Session.import_archive(
        tmp_path / "trip.jsonl",
        store=f"sqlite://{tmp_path}/other.db",
        user_id="ada2",
        settings=settings,
    )
    copy = imported.get_memory(long_id)
    assert (
        copy["text"] == "User is allergic to shellfish" and copy["metadata"]["severity"] == "high"
    )
    assert copy["metadata"]["user_id"] == "ada2"
    assert imported.get_memory(short_id)["text"] == "wants a window seat"
    assert [c["event"] for c in imported.memory_history(long_id)] == ["ADD"]


# -- the PraisonAI-style views and AsyncSession ------------------------------------------------


def test_the_memory_view_has_the_lifecycle_calls(open_session) -> None:
    memory = open_session().memory
    memory_id = memory.store_long_term("User collects stamps", {"since": 1999})
    assert memory.get(memory_id)["metadata"]["since"] == 1999
    assert (
        memory.update(memory_id, "User collects old stamps")["text"] == "User collects old stamps"
    )
    assert [m["id"] for m in memory.get_all(where={"since": 1999})] == [memory_id]
    assert memory.search_long_term("stamps", where={"since": 2000}) == []
    assert memory.delete(memory_id) is True
    assert [c["event"] for c in memory.history(memory_id)] == ["ADD", "UPDATE", "DELETE"]


def test_async_sessions_and_their_views_have_the_same_calls(open_session, tmp_path: Path) -> None:
    async def main() -> None:
        async with AsyncSession(
            "s", "ada", store=f"sqlite://{tmp_path}/a.db", settings=open_session.settings
        ) as session:
            memory_id = await session.add_memory("User speaks Welsh", level="fluent")
            assert (await session.add_memory("User speaks Welsh")).event == "NONE"
            found = await session.search_memory("language", where={"level": "fluent"})
            assert [h["id"] for h in found] == [memory_id]
            await session.memory.update(memory_id, level="native")
            assert (await session.get_memory(memory_id))["metadata"]["level"] == "native"
            assert [m["id"] for m in await session.list_memories()] == [memory_id]
            assert await session.memory.delete(memory_id)
            history = await session.memory.history(memory_id)
            assert [c["event"] for c in history] == ["ADD", "UPDATE", "DELETE"]

    asyncio.run(main())


def test_an_entry_of_another_user_written_around_the_library_is_withheld(open_session) -> None:
    from praisonsession.errors import IsolationError

    session = open_session("s", "ada")
    session.add_memory("Ada's own memory")
    recall = session._core._recall
    collection = recall.long.index.collection  # written by hand, as no call of ours can
    collection.upsert(
        ids=["planted"],
        documents=["Bob's secret"],
        metadatas=[{"user_id": "bob", "memory_id": "planted", "session_id": "s"}],
        embeddings=[recall.embedder.embed_query("Bob's secret")],
    )
    with pytest.raises(IsolationError, match="withheld"):
        session.search_memory("secret")
    with pytest.raises(IsolationError):
        session.get_memory("planted")


def test_an_entry_that_names_no_user_is_withheld_without_failing_the_search(open_session) -> None:
    """A Chroma server read racing a write can return an entry without its metadata: it is
    nobody's, so it is left out and the search still answers with the user's own memories."""
    session = open_session("s", "ada")
    session.add_memory("Ada's own orphan notes")
    recall = session._core._recall
    recall.long.index.collection.upsert(
        ids=["orphan"],
        documents=["an orphan without an owner"],
        metadatas=[{"memory_id": "orphan"}],
        embeddings=[recall.embedder.embed_query("an orphan without an owner")],
    )
    texts = [hit["text"] for hit in session.search_memory("orphan", limit=5)]
    assert texts == ["Ada's own orphan notes"]
