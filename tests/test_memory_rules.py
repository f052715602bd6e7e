"""The rules under memory, without a model or a store: filters, paraphrases, newer first."""

from __future__ import annotations

import datetime as dt

import pytest

from praisonsession import InvalidValueError
from praisonsession.recall.memory.paraphrase import (
    is_paraphrase,
    labels,
    names_differ,
    one_slot_changed,
    word_overlap,
)
from praisonsession.recall.memory.recency import prefer_newer, subject
from praisonsession.recall.vectors.filters import parse_where

RECORD = {"topic": "food", "stars": 4, "vegan": True, "created_at": 1_700_000_000.0}


@pytest.mark.parametrize(
    ("where", "passes", "chroma"),
    [
        ({"topic": "food"}, True, {"topic": {"$eq": "food"}}),
        ({"topic": {"$ne": "food"}}, False, {"topic": {"$ne": "food"}}),
        ({"stars": {"$in": [3, 4]}}, True, {"stars": {"$in": [3, 4]}}),
        ({"stars": {"$nin": [3, 4]}}, False, {"stars": {"$nin": [3, 4]}}),
        (
            {"stars": {"$gte": 4, "$lt": 5}},
            True,
            {"$and": [{"stars": {"$gte": 4}}, {"stars": {"$lt": 5}}]},
        ),
        (
            {"vegan": True, "stars": 4.0},
            True,
            {"$and": [{"vegan": {"$eq": True}}, {"stars": {"$eq": 4.0}}]},
        ),
        ({"vegan": 1}, False, {"vegan": {"$eq": 1}}),  # a bool is not a number
        ({"$or": [{"topic": "drink"}, {"stars": {"$gt": 3}}]}, True, None),
        ({"$and": [{"topic": "food"}]}, True, {"topic": {"$eq": "food"}}),
        ({"missing": {"$ne": 1}}, False, None),
        ({"topic": {"$gt": 1}}, False, None),  # a str is never greater than a number
        (
            {"created_at": {"$lt": dt.datetime.fromtimestamp(1_800_000_000, tz=dt.timezone.utc)}},
            True,
            {"created_at": {"$lt": 1_800_000_000.0}},
        ),
    ],
)
def test_a_filter_means_the_same_in_python_and_for_chroma(where, passes, chroma) -> None:
    checked = parse_where(where)
    assert checked is not None and checked.matches(RECORD) is passes
    if chroma is not None:
        assert checked.to_chroma() == chroma
    assert checked.to_chroma(lambda f: "x_" + f) != checked.to_chroma() or not checked.fields()


def test_no_filter_is_none_and_a_bad_one_names_what_is_accepted() -> None:
    assert parse_where(None) is None and parse_where({}) is None
    with pytest.raises(InvalidValueError, match=r"\$between.*Accepted: where=\{"):
        parse_where({"stars": {"$between": [1, 2]}})
    with pytest.raises(InvalidValueError, match="NaN"):
        parse_where({"stars": float("nan")})


@pytest.mark.parametrize(
    ("a", "b", "changed"),
    [
        ("User has a dog named Rex", "User has a cat named Rex", True),
        ("User lives in Oslo", "User is based in Oslo", True),
        ("User likes tea", "User really likes tea", False),  # an insertion, not a swap
        ("User's car is a green Subaru", "The user owns a green Subaru", False),
        ("Same words", "Same words", False),
    ],
)
def test_one_slot_changed(a: str, b: str, changed: bool) -> None:
    assert one_slot_changed(a, b) is changed


def test_paraphrase_needs_the_score_the_same_names_and_negations() -> None:
    assert is_paraphrase(0.9, "The user owns a green Subaru", "User's car is a green Subaru", 0.72)
    # a one-word swap in a sentence otherwise the same merges only when nearly identical
    assert not is_paraphrase(0.9, "User is based in Nairobi", "User resides in Nairobi", 0.72)
    assert is_paraphrase(0.96, "User is based in Nairobi", "User resides in Nairobi", 0.72)
    assert names_differ("Ada lives in Oslo", "ada lives in oslo") is False
    assert is_paraphrase(0.99, "Ada lives in Oslo", "Ada lives in Bergen", 0.72) is False
    assert is_paraphrase(0.95, "User likes tea", "User no longer likes tea", 0.72) is False
    assert is_paraphrase(0.97, "User likes green tea", "User loves green tea", 0.72) is True
    assert is_paraphrase(0.9, "User has a dog named Rex", "User has a cat named Rex", 0.72) is False
    assert is_paraphrase(0.7, "User prefers tea", "User enjoys a cup of tea", 0.72) is False


MELANIE = "8 May 2023: Melanie: Yeah, I painted that lake sunrise last year! It's special to me."


@pytest.mark.parametrize(
    ("held", "new"),
    [
        # the example: one speaker, one day, another statement
        (
            "8 May 2023: Melanie: Wow, love that painting! So cool you found such a helpful group.",
            MELANIE,
        ),
        (
            "29 December 2023: Fahim: Hey good afternoon, how you doing?",
            "29 December 2023: Fahim: what do you think?",
        ),
        (
            "7 January 2024: Elise: How are you doing today Kate?",
            "7 January 2024: Elise: What are your plans for today Kate?",
        ),
        # the other speaker echoing what was said is their statement, not a repeat
        (
            "10 January 2024: Paola: We make lava cake, the gooey chocolate is irresistible.",
            "10 January 2024: Kevin: Lava cake! The gooey chocolate sounds irresistible.",
        ),
    ],
)
def test_a_different_statement_under_the_same_header_is_no_repeat(held: str, new: str) -> None:
    # the header lifts such pairs over the threshold (0.72 and more): the words decide
    assert not is_paraphrase(0.9, new, held, 0.72)


@pytest.mark.parametrize(
    ("held", "new"),
    [
        (
            "8 May 2023: Melanie: I painted that lake sunrise last year!",
            "8 May 2023: Melanie: I painted the lake sunrise last year.",
        ),
        (
            "10 January 2024: Elise: Hello Kevin. How are you today?",
            "10 January 2024: Elise: Hello Kevin. How are you doing today?",
        ),
        ("User likes green tea", "User loves green tea"),
        ("The user owns a green Subaru", "User's car is a green Subaru"),
    ],
)
def test_a_near_exact_repeat_still_merges(held: str, new: str) -> None:
    assert is_paraphrase(0.97, new, held, 0.72)


def test_word_overlap_sets_the_shared_start_aside_and_labels_name_the_speaker() -> None:
    assert word_overlap(MELANIE, MELANIE) == 1.0
    assert word_overlap("User likes tea", "User likes tea a lot") == 0.0  # it says more
    assert word_overlap("User likes green tea", "User loves green tea") == pytest.approx(2 / 3)
    assert labels(MELANIE) == ("melanie",)
    assert labels("Note: 10:30 call") == ("note",)
    assert labels("User likes tea") == ()


def hit(text: str, score: float, at: float) -> dict:
    return {"text": text, "score": score, "metadata": {"updated_at": at}}


def test_newer_memories_go_above_the_older_ones_they_update() -> None:
    old = hit("User lives in Oslo", 0.8, 1.0)
    unrelated = hit("User plays chess", 0.5, 3.0)
    moved = hit("User moved to Berlin", 0.6, 2.0)
    ranked = prefer_newer([old, unrelated, moved], [[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]])
    assert [r["text"] for r in ranked] == [
        "User moved to Berlin",
        "User lives in Oslo",
        "User plays chess",
    ]
    close = hit("User likes tea", 0.75, 5.0)
    assert prefer_newer([old, close], [[1.0, 0.0], [0.0, 1.0]]) == [old, close]  # unrelated


def test_newer_facts_about_other_people_never_push_the_answer_out() -> None:
    """Recency reorders the most similar hits; it lets in only updates of the best hit about
    the same subject. Ten newer facts about other people, all close to the answer, leave
    the results those of similarity alone, and an update of the user from beyond them enters."""
    answer = hit("User lives in Oslo", 0.8, 1.0)
    others = [hit(f"{name} lives in Lima", 0.7 - n / 100, 10.0 + n) for n, name in enumerate(
        ["Priya", "Bruno", "Chen", "Dagny", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas"]
    )]  # fmt: skip
    moved = hit("User moved to Berlin and lives there now", 0.5, 30.0)
    results = [answer, *others, moved]
    vectors = [[1.0, 0.2 * n / 10, 0.0] for n in range(11)] + [[0.8, 0.0, 0.6]]
    shown = prefer_newer(results, vectors, 5)[:5]
    assert moved in shown and answer in shown
    assert shown.index(moved) < shown.index(answer)
    assert shown[2:] == others[:3]  # the rest as similarity ranked them
    without = prefer_newer(results[:-1], vectors[:-1], 5)[:5]
    assert set(map(id, without)) == set(map(id, results[:5]))  # nobody else got in


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("User lives in Oslo", "user"),
        ("The user's job: nurse", "user"),
        ("My sister lives in Lima", "i"),
        ("I'm travelling to Oslo", "i"),
        ("Priya's home is in Oslo", "priya"),
        ("", ""),
    ],
)
def test_the_subject_of_a_memory_is_its_first_word(text: str, expected: str) -> None:
    assert subject(text) == expected


def test_a_later_turn_of_a_conversation_updates_no_earlier_one() -> None:
    asked = hit("8 May 2023: Mel: I painted a lake sunrise last year", 0.8, 1.0)
    chatted = hit("8 May 2023: Mel: Painting is such a calm hobby", 0.75, 2.0)
    moved = hit("9 May 2023: Mel: I moved to Berlin, the lake is far now", 0.7, 3.0)
    close = [[1.0, 0.0], [0.9, 0.1], [0.8, 0.2]]  # the shared header: every pair is close
    ranked = prefer_newer([asked, chatted], close[:2])
    assert [r["text"] for r in ranked] == [asked["text"], chatted["text"]]  # by relevance
    ranked = prefer_newer([asked, chatted, moved], close)  # even to say something changed
    assert [r["text"] for r in ranked] == [asked["text"], chatted["text"], moved["text"]]
    fact = hit("User moved to Berlin", 0.7, 4.0)  # a memory that is no turn still does
    ranked = prefer_newer([hit("User lives in Oslo", 0.8, 1.0), fact], close[:2])
    assert ranked[0]["text"] == fact["text"]
    assert subject(asked["text"]) == "mel:" and subject("The user's job: nurse") == "user"
