"""The behaviour contract, checked once per backend (memory, JSON, SQLite).

Each test names one promise from design.md; a backend passes only if it keeps all of them.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from backends import RawAccess, kind_of, make_store
from praisonsession import (
    FORMAT_VERSION,
    AmbiguousLegacyDataError,
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    MessageLog,
    Session,
    SessionBase,
    SessionCorruptedError,
    SessionExpiredError,
    SessionNotFoundError,
    StateDictError,
    StateModule,
    UnsupportedFormatError,
)
from praisonsession._internal.identifiers import DEFAULT_USER
from praisonsession.stores import Branches


class Friday(StateModule):
    """An agent-like module: a name, a prompt, and a conversation."""

    def __init__(self) -> None:
        super().__init__()
        self.memory = MessageLog()
        self.name = "Friday"
        self.sys_prompt = "A helpful assistant."
        self.register_state("name")
        self.register_state("sys_prompt")


class Planner(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.steps: list[str] = []
        self.register_state("steps")


def say(text: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": text}


# -- AgentScope's save / load ---------------------------------------------------------------


def test_saved_modules_come_back_after_being_changed(store: SessionBase, run) -> None:
    agent, planner = Friday(), Planner()
    agent.memory.append(say("Hi!"))
    planner.steps = ["plan", "act"]
    run(store.save_session_state("user_1", agent=agent, planner=planner))

    agent.name = "Changed"
    agent.sys_prompt = "Changed prompt"
    agent.memory.clear()
    planner.steps = []
    run(store.load_session_state("user_1", agent=agent, planner=planner))

    assert agent.name == "Friday"
    assert agent.sys_prompt == "A helpful assistant."
    assert list(agent.memory) == [say("Hi!")]
    assert planner.steps == ["plan", "act"]


def test_the_second_save_wins(store: SessionBase, run) -> None:
    agent = Friday()
    run(store.save_session_state("s", agent=agent))
    agent.name = "Second"
    run(store.save_session_state("s", agent=agent))
    agent.name = "garbage"
    run(store.load_session_state("s", agent=agent))
    assert agent.name == "Second"


def test_loading_one_module_of_two_leaves_the_other_alone(store: SessionBase, run) -> None:
    one, two = Friday(), Friday()
    one.name, two.name = "one", "two"
    run(store.save_session_state("s", agent1=one, agent2=two))
    fresh, untouched = Friday(), Friday()
    untouched.name = "untouched"
    run(store.load_session_state("s", agent1=fresh))
    assert fresh.name == "one"
    assert untouched.name == "untouched"


def test_saving_one_module_keeps_the_others_saved_earlier(store: SessionBase, run) -> None:
    one, two = Friday(), Friday()
    one.name, two.name = "one", "two"
    run(store.save_session_state("s", agent1=one))
    run(store.save_session_state("s", agent2=two))
    loaded = Friday()
    run(store.load_session_state("s", agent1=loaded))
    assert loaded.name == "one"


def test_loading_a_missing_session_is_a_logged_no_op_when_allowed(
    store: SessionBase, run, caplog: pytest.LogCaptureFixture
) -> None:
    agent = Friday()
    with caplog.at_level(logging.INFO, logger="praisonsession"):
        run(store.load_session_state("never_saved", agent=agent))
    assert agent.name == "Friday"
    assert "does not exist" in caplog.text


def test_loading_a_missing_session_raises_when_not_allowed(store: SessionBase, run) -> None:
    with pytest.raises(SessionNotFoundError, match="never_saved") as caught:
        run(store.load_session_state("never_saved", allow_not_exist=False, agent=Friday()))
    assert isinstance(caught.value, ValueError)  # what AgentScope raised


def test_load_save_load_lifecycle(store: SessionBase, run) -> None:
    agent = Friday()
    run(store.load_session_state("s", agent=agent))
    assert agent.name == "Friday"
    agent.name = "Saved"
    run(store.save_session_state("s", agent=agent))
    agent.name = "Mutated"
    run(store.load_session_state("s", agent=agent))
    assert agent.name == "Saved"


def test_an_empty_user_id_is_the_default_user_on_save_and_load(store: SessionBase, run) -> None:
    agent = Friday()
    agent.name = "default"
    run(store.save_session_state("s", user_id="", agent=agent))
    loaded = Friday()
    run(store.load_session_state("s", user_id=DEFAULT_USER, agent=loaded))
    assert loaded.name == "default"


def test_a_module_that_gained_a_state_key_names_it_on_load(store: SessionBase, run) -> None:
    run(store.save_session_state("s", agent=Friday()))

    class Grown(Friday):
        def __init__(self) -> None:
            super().__init__()
            self.mood = "calm"
            self.register_state("mood")

    grown = Grown()
    with pytest.raises(StateDictError, match=r"agent\.mood") as caught:
        run(store.load_session_state("s", agent=grown))
    assert caught.value.missing_keys == ["agent.mood"]
    assert grown.name == "Friday" and grown.mood == "calm"


def test_a_failing_load_changes_no_module(store: SessionBase, run) -> None:
    one, two = Friday(), Friday()
    one.name, two.name = "one", "two"
    run(store.save_session_state("s", a=one, b=two))

    class Grown(Friday):
        def __init__(self) -> None:
            super().__init__()
            self.extra = 1
            self.register_state("extra")

    fine, failing = Friday(), Grown()
    fine.name = failing.name = "before"
    with pytest.raises(StateDictError):
        run(store.load_session_state("s", a=fine, b=failing))
    assert fine.name == "before" and failing.name == "before"


def test_only_state_modules_can_be_saved(store: SessionBase, run) -> None:
    with pytest.raises(InvalidValueError, match="StateModule"):
        run(store.save_session_state("s", agent={"name": "x"}))
    assert not run(store.exists("s"))


# -- message logs ---------------------------------------------------------------------------


def test_a_growing_log_is_appended_and_reads_back_in_order(store: SessionBase, run) -> None:
    agent = Friday()
    for turn in range(5):
        agent.memory.append(say(f"turn {turn}"))
        run(store.save_session_state("s", agent=agent))
    assert run(store.read_messages("s", "", "agent.memory")) == [say(f"turn {i}") for i in range(5)]
    loaded = Friday()
    run(store.load_session_state("s", agent=loaded))
    assert list(loaded.memory) == [say(f"turn {i}") for i in range(5)]


def test_an_edited_or_cleared_log_is_rewritten(store: SessionBase, run) -> None:
    agent = Friday()
    agent.memory.extend([say("a"), say("b"), say("c")])
    run(store.save_session_state("s", agent=agent))
    agent.memory[1] = say("B")
    run(store.save_session_state("s", agent=agent))
    assert run(store.read_messages("s", "", "agent.memory")) == [say("a"), say("B"), say("c")]
    agent.memory.clear()
    agent.memory.append(say("fresh"))
    run(store.save_session_state("s", agent=agent))
    assert run(store.read_messages("s", "", "agent.memory")) == [say("fresh")]


def test_messages_someone_else_appended_meanwhile_are_kept_before_ours(
    store: SessionBase, run
) -> None:
    agent = Friday()
    agent.memory.append(say("mine"))
    run(store.save_session_state("s", agent=agent))
    run(store.append_messages("s", "", "agent.memory", [say("theirs")]))
    agent.memory.append(say("mine again"))
    run(store.save_session_state("s", agent=agent))
    both = [say("mine"), say("theirs"), say("mine again")]
    assert run(store.read_messages("s", "", "agent.memory")) == both
    assert agent.memory == both  # the log now reads as the store does
    agent.memory.append(say("and more"))  # ... and goes on appending from there
    run(store.save_session_state("s", agent=agent))
    assert run(store.read_messages("s", "", "agent.memory")) == [*both, say("and more")]


def test_refresh_takes_in_what_others_appended(store: SessionBase, run) -> None:
    agent = Friday()
    agent.memory.append(say("one"))
    run(store.save_session_state("s", agent=agent))
    assert run(store.refresh_session_state("s", agent=agent)) == 0
    run(store.append_messages("s", "", "agent.memory", [say("two"), say("three")]))
    assert run(store.refresh_session_state("s", agent=agent)) == 2
    assert agent.memory == [say("one"), say("two"), say("three")]
    agent.memory.append(say("four"))
    run(store.save_session_state("s", agent=agent))
    assert run(store.read_messages("s", "", "agent.memory")) == [
        say("one"),
        say("two"),
        say("three"),
        say("four"),
    ]


def test_refresh_leaves_a_log_edited_here_for_its_next_save(store: SessionBase, run) -> None:
    agent = Friday()
    agent.memory.extend([say("a"), say("b")])
    run(store.save_session_state("s", agent=agent))
    run(store.append_messages("s", "", "agent.memory", [say("theirs")]))
    del agent.memory[0]
    assert run(store.refresh_session_state("s", agent=agent)) == 0
    run(store.save_session_state("s", agent=agent))
    assert run(store.read_messages("s", "", "agent.memory")) == [say("b")]


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda log: log[0].__setitem__("content", "EDITED"), id="item-in-place"),
        pytest.param(lambda log: log[1]["tags"].append("new"), id="nested-list-in-place"),
        pytest.param(lambda log: log[0].update(content="EDITED"), id="update-in-place"),
        pytest.param(lambda log: log[1].pop("tags"), id="key-removed-in-place"),
        pytest.param(lambda log: next(iter(log)).clear(), id="through-iteration"),
        pytest.param(lambda log: log.pop(0), id="pop"),
        pytest.param(lambda log: log.insert(1, say("inserted")), id="insert"),
        pytest.param(lambda log: log.__setitem__(0, say("replaced")), id="replace-item"),
        pytest.param(lambda log: log.__delitem__(slice(0, 2)), id="delete-slice"),
        pytest.param(lambda log: log.remove(log[2]), id="remove"),
    ],
)
def test_any_edit_of_a_saved_log_is_saved_exactly(store: SessionBase, run, edit) -> None:
    agent = Friday()
    agent.memory.extend([say("a"), {"role": "user", "content": "b", "tags": ["x"]}, say("c")])
    run(store.save_session_state("s", agent=agent))
    edit(agent.memory)
    run(store.save_session_state("s", agent=agent))
    assert run(store.read_messages("s", "", "agent.memory")) == agent.memory.to_list()
    reloaded = Friday()
    run(store.load_session_state("s", agent=reloaded))
    assert reloaded.memory == agent.memory.to_list()


def test_an_edit_of_a_loaded_log_is_saved_exactly(store: SessionBase, run) -> None:
    run(store.save_session_state("s", agent=_with_messages(Friday(), "a", "b")))
    loaded = Friday()
    run(store.load_session_state("s", agent=loaded))
    loaded.memory[0]["content"] = "EDITED"
    loaded.memory.append(say("c"))
    run(store.save_session_state("s", agent=loaded))
    assert run(store.read_messages("s", "", "agent.memory")) == [
        say("EDITED"),
        say("b"),
        say("c"),
    ]


def _with_messages(agent: Friday, *texts: str) -> Friday:
    agent.memory.extend(say(text) for text in texts)
    return agent


def test_append_with_an_expected_length_detects_a_conflict(store: SessionBase, run) -> None:
    assert run(store.append_messages("s", "u", "log", [say("a")])) == 1
    assert run(store.append_messages("s", "u", "log", [say("b")], expected_length=1)) == 2
    with pytest.raises(ConflictError):
        run(store.append_messages("s", "u", "log", [say("c")], expected_length=1))
    assert run(store.read_messages("s", "u", "log")) == [say("a"), say("b")]
    assert run(store.read_messages("s", "u", "log", 1, 2)) == [say("b")]


def test_messages_must_be_json_dicts(store: SessionBase, run) -> None:
    with pytest.raises(InvalidValueError, match="dict"):
        run(store.append_messages("s", "u", "log", ["just text"]))
    with pytest.raises(InvalidValueError):
        run(store.append_messages("s", "u", "log", [{"content": object()}]))
    assert run(store.read_messages("s", "u", "log")) == []


# -- key-value state --------------------------------------------------------------------------


def test_state_patch_replace_delete_and_nested_values(store: SessionBase, run) -> None:
    run(store.patch_state("s", "u", {"a": 1, "nested": {"list": [1, 2, {"x": None}]}}))
    run(store.patch_state("s", "u", {"b": 2.5}))
    assert run(store.get_state("s", "u")) == {
        "a": 1,
        "b": 2.5,
        "nested": {"list": [1, 2, {"x": None}]},
    }
    run(store.patch_state("s", "u", {"c": True}, delete=["a"]))
    assert run(store.get_state("s", "u")) == {
        "b": 2.5,
        "c": True,
        "nested": {"list": [1, 2, {"x": None}]},
    }
    run(store.replace_state("s", "u", {"only": "this"}))
    assert run(store.get_state("s", "u")) == {"only": "this"}
    assert run(store.get_value("s", "u", "only")) == "this"
    assert run(store.get_value("s", "u", "missing", "fallback")) == "fallback"


def test_increment_adds_and_returns_the_new_value(store: SessionBase, run) -> None:
    run(store.patch_state("s", "u", {"score": 10}))
    assert run(store.increment("s", "u", "score", 5)) == 15
    assert run(store.increment("s", "u", "fresh", 2, default=100)) == 102
    assert run(store.increment("s", "u", "ratio", 0.5)) == 0.5
    assert run(store.get_state("s", "u")) == {"score": 15, "fresh": 102, "ratio": 0.5}


def test_incrementing_a_non_number_fails_and_changes_nothing(store: SessionBase, run) -> None:
    run(store.patch_state("s", "u", {"name": "Ada"}))
    with pytest.raises(InvalidValueError, match="not a number"):
        run(store.increment("s", "u", "name"))
    with pytest.raises(InvalidValueError):
        run(store.increment("s", "u", "n", amount="1"))
    assert run(store.get_state("s", "u")) == {"name": "Ada"}


def test_increments_from_many_threads_are_all_counted(store: SessionBase, run) -> None:
    def worker() -> None:
        for _ in range(100):
            run(store.increment("s", "u", "hits"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert run(store.get_value("s", "u", "hits")) == 800


@pytest.mark.parametrize(
    "value",
    [(1, 2), {1, 2}, object(), float("nan"), float("inf"), {1: "int key"}, b"bytes"],
    ids=["tuple", "set", "object", "nan", "inf", "int-key", "bytes"],
)
def test_non_json_values_are_refused_and_nothing_is_written(
    store: SessionBase, run, value: Any
) -> None:
    run(store.patch_state("s", "u", {"kept": 1}))
    with pytest.raises(InvalidValueError):
        run(store.patch_state("s", "u", {"bad": value, "other": 2}))
    assert run(store.get_state("s", "u")) == {"kept": 1}


def test_circular_values_are_refused(store: SessionBase, run) -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(InvalidValueError, match="itself"):
        run(store.patch_state("s", "u", {"loop": loop}))


def test_compare_and_set_wins_only_on_the_expected_version(store: SessionBase, run) -> None:
    version = run(store.patch_state("s", "u", {"n": 1}))
    assert run(store.get_info("s", "u")).version == version
    new_version = run(store.compare_and_set("s", "u", version, {"n": 2}))
    assert new_version > version
    with pytest.raises(ConflictError, match="version"):
        run(store.compare_and_set("s", "u", version, {"n": 3}))
    assert run(store.get_value("s", "u", "n")) == 2


def test_compare_and_set_on_a_missing_session_expects_version_zero(store: SessionBase, run) -> None:
    with pytest.raises(ConflictError, match="version 0"):
        run(store.compare_and_set("new", "u", 3, {"n": 1}))
    assert not run(store.exists("new", "u"))
    assert run(store.compare_and_set("new", "u", 0, {"n": 1})) >= 1
    assert run(store.get_value("new", "u", "n")) == 1


def test_every_write_bumps_the_version(store: SessionBase, run) -> None:
    v1 = run(store.patch_state("s", "u", {"n": 1}))
    run(store.increment("s", "u", "n"))
    run(store.append_messages("s", "u", "log", [say("x")]))
    assert run(store.get_info("s", "u")).version >= v1 + 2


# -- ids and isolation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    ["", "x" * 257, "nul\x00byte", "tab\tinside", "lone\ud800surrogate", None, 42],
    ids=["empty", "too-long", "nul", "control", "surrogate", "none", "int"],
)
def test_invalid_session_ids_are_refused(store: SessionBase, run, bad: Any) -> None:
    with pytest.raises(InvalidIdError):
        run(store.patch_state(bad, "u", {"a": 1}))


def test_long_unicode_and_path_like_ids_are_stored_apart(store: SessionBase, run) -> None:
    ids = ["x" * 256, "Chat", "chat", "../evil", "evil", "a/b", "a%2Fb", "日本語", "discord:dm:1"]
    for index, session_id in enumerate(ids):
        run(store.patch_state(session_id, "u", {"i": index}))
    for index, session_id in enumerate(ids):
        assert run(store.get_value(session_id, "u", "i")) == index
    listed = [info.session_id for info in run(store.list_sessions("u", limit=100))]
    assert sorted(listed) == sorted(ids)


def test_underscore_joined_ids_do_not_collide(store: SessionBase, run) -> None:
    run(store.patch_state("c", "a_b", {"owner": "a_b + c"}))
    run(store.patch_state("b_c", "a", {"owner": "a + b_c"}))
    assert run(store.get_value("c", "a_b", "owner")) == "a_b + c"
    assert run(store.get_value("b_c", "a", "owner")) == "a + b_c"


def test_users_never_see_or_delete_each_others_sessions(store: SessionBase, run) -> None:
    run(store.patch_state("same", "alice", {"secret": "alice's"}))
    run(store.patch_state("same", "bob", {"secret": "bob's"}))
    assert run(store.get_value("same", "alice", "secret")) == "alice's"
    assert [i.session_id for i in run(store.list_sessions("bob"))] == ["same"]
    assert run(store.delete_session("same", "bob")) is True
    assert run(store.get_value("same", "alice", "secret")) == "alice's"
    assert run(store.list_sessions("bob")) == []


def test_json_store_files_stay_inside_the_store_directory(tmp_path, run) -> None:
    store = make_store("json", tmp_path)
    for session_id in ("../../escape", "/etc/passwd", "..", "."):
        for user_id in ("../up", "..", "normal"):
            run(store.patch_state(session_id, user_id, {"x": 1}))
    root = store.save_dir
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and root not in p.parents]
    assert outside == []
    assert not (tmp_path / "escape").exists()


# -- text ------------------------------------------------------------------------------------


def test_lone_surrogates_and_unicode_round_trip_exactly(store: SessionBase, run) -> None:
    odd = "lone \ud800 high, \udfff low, emoji 🎉, accents é, nul \x00 inside"
    key = "日本語 key 🎉"
    run(store.patch_state("s", "u", {"text": odd, key: "as a key"}))
    run(store.append_messages("s", "u", "log", [say(odd)]))
    assert run(store.get_value("s", "u", "text")) == odd
    assert run(store.get_value("s", "u", key)) == "as a key"
    assert run(store.read_messages("s", "u", "log")) == [say(odd)]


def test_stored_text_is_valid_utf8(raw: RawAccess, run) -> None:
    run(raw.store.patch_state("s", "u", {"text": "lone \ud800 and 日本"}))
    raw.raw_bytes("s", "u").decode("utf-8")  # raises if the store wrote invalid UTF-8
    assert run(raw.store.get_value("s", "u", "text")) == "lone \ud800 and 日本"


# -- corruption and formats ----------------------------------------------------------------


def test_corrupt_data_raises_a_typed_error_and_is_left_in_place(raw: RawAccess, run) -> None:
    run(raw.store.patch_state("s", "u", {"a": 1}))
    raw.corrupt_state("s", "u")
    damaged = raw.raw_bytes("s", "u")
    with pytest.raises(SessionCorruptedError, match="corrupt"):
        run(raw.store.get_state("s", "u"))
    with pytest.raises(SessionCorruptedError):
        run(raw.store.get_value("s", "u", "a"))
    assert raw.raw_bytes("s", "u") == damaged


def test_every_record_carries_the_format_version(store: SessionBase, run) -> None:
    info = run(store.create_session("s", "u"))
    assert info.format == FORMAT_VERSION
    assert [i.format for i in run(store.list_sessions("u"))] == [FORMAT_VERSION]


def test_a_newer_format_is_refused_with_a_clear_error(raw: RawAccess, run) -> None:
    run(raw.store.patch_state("s", "u", {"a": 1}))
    raw.set_format("s", "u", FORMAT_VERSION + 1)
    with pytest.raises(UnsupportedFormatError, match="Upgrade praisonsession"):
        run(raw.store.get_info("s", "u"))


def test_an_agentscope_session_is_migrated_on_first_read(
    legacy_raw: RawAccess, run, tmp_path
) -> None:
    raw = legacy_raw
    raw.write_agentscope("planning-2025-08-08", {"planner": {"steps": ["plan", "act \ud800"]}})
    migrated = make_store(kind_of(raw.store), tmp_path)  # a store opened after AgentScope's
    planner = Planner()
    run(migrated.load_session_state("planning-2025-08-08", planner=planner))
    assert planner.steps == ["plan", "act \ud800"]
    assert run(migrated.get_info("planning-2025-08-08")).format == FORMAT_VERSION

    run(migrated.delete_session("planning-2025-08-08"))
    again = make_store(kind_of(raw.store), tmp_path)
    assert not run(again.exists("planning-2025-08-08"))  # imported once, never resurrected
    run(again.close())
    run(migrated.close())


#: Two (user_id, session_id) pairs that AgentScope stored under one file name or key.
AMBIGUOUS = {
    "json": [("bob", "notes"), (DEFAULT_USER, "bob_notes")],
    "redis": [("a", "b:session:c"), ("a:session:b", "c")],
}


@pytest.mark.parametrize("backend", sorted(AMBIGUOUS))
def test_agentscope_data_whose_owner_is_ambiguous_goes_to_nobody(
    backend: str, request: pytest.FixtureRequest, tmp_path, run
) -> None:
    """AgentScope's names are not injective: data that may be either pair's is refused for
    both (never handed to the first to ask), stays where it is, and imports explicitly."""
    if backend == "redis":
        request.getfixturevalue("redis_url")
    store = make_store(backend, tmp_path)
    owner, other = AMBIGUOUS[backend]
    legacy = RawAccess(store).write_agentscope(
        owner[1], {"planner": {"steps": ["bob's"]}}, owner[0]
    )
    for user_id, session_id in (other, owner):
        with pytest.raises(AmbiguousLegacyDataError, match="import_agentscope"):
            run(store.load_session_state(session_id, user_id, planner=Planner()))
        with pytest.raises(AmbiguousLegacyDataError):
            Session(session_id, user_id, store=store)
        with pytest.raises(AmbiguousLegacyDataError):
            run(store.exists(session_id, user_id))

    run(store.import_agentscope(legacy, session_id=owner[1], user_id=owner[0]))
    with pytest.raises(AmbiguousLegacyDataError):  # still nobody else's
        run(store.exists(other[1], other[0]))
    planner = Planner()
    run(store.load_session_state(owner[1], owner[0], planner=planner))
    assert planner.steps == ["bob's"]
    with pytest.raises(ConflictError):  # importing over a session that exists is refused
        run(store.import_agentscope(legacy, session_id=owner[1], user_id=owner[0]))
    run(store.close())


# -- sessions, TTL ----------------------------------------------------------------------------


def test_list_is_paged_by_session_id(store: SessionBase, run) -> None:
    for n in range(7):
        run(store.create_session(f"s{n}", "u"))
    first = run(store.list_sessions("u", limit=3))
    second = run(store.list_sessions("u", limit=3, after=first[-1].session_id))
    third = run(store.list_sessions("u", limit=3, after=second[-1].session_id))
    assert [i.session_id for i in first + second + third] == [f"s{n}" for n in range(7)]
    with pytest.raises(InvalidValueError):
        run(store.list_sessions("u", limit=0))


def test_list_users_names_each_user_once_and_sorted(store: SessionBase, run) -> None:
    assert run(store.list_users()) == []
    odd = "x" * 200 + ":*?[]{}%41\\ ünï/../"  # past the file-name limit, glob and key syntax
    for user, session_id in [("bob", "s1"), ("ada", "s1"), ("bob", "s2"), (odd, "s"), ("", "s")]:
        run(store.create_session(session_id, user))
    assert run(store.list_users()) == sorted(["ada", "bob", odd, DEFAULT_USER])


def test_list_users_leaves_out_snapshots_and_users_whose_sessions_are_all_gone(
    store: SessionBase, run, frozen_clock
) -> None:
    run(store.create_session("kept", "ada"))
    run(Branches(store.backend).snapshot("kept", "ada", label="before"))  # kept by a reserved owner
    run(store.create_session("short", "bob", ttl=10))
    run(store.create_session("gone", "cy"))
    run(store.delete_session("gone", "cy"))
    assert run(store.list_users()) == ["ada", "bob"]
    frozen_clock.advance(11)
    assert run(store.list_users()) == ["ada"]  # bob's only session expired, not yet purged


def test_delete_removes_everything_once(store: SessionBase, run) -> None:
    agent = Friday()
    agent.memory.append(say("x"))
    run(store.save_session_state("s", "u", agent=agent))
    run(store.patch_state("s", "u", {"a": 1}))
    assert run(store.delete_session("s", "u")) is True
    assert run(store.delete_session("s", "u")) is False
    assert run(store.get_state("s", "u")) == {}
    assert run(store.read_messages("s", "u", "agent.memory")) == []
    assert not run(store.exists("s", "u"))


def test_metadata_and_timestamps(store: SessionBase, run) -> None:
    before = time.time()
    info = run(store.create_session("s", "u", metadata={"title": "first chat"}))
    assert before <= info.created_at <= info.updated_at <= time.time()
    assert run(store.set_metadata("s", "u", topic="maths")).metadata == {
        "title": "first chat",
        "topic": "maths",
    }


def test_keys_are_checked_like_ids(store: SessionBase, run) -> None:
    for bad in ("", "nul\x00", "lone\ud800"):
        with pytest.raises(InvalidIdError):
            run(store.patch_state("s", "u", {bad: 1}))
    assert run(store.get_state("s", "u")) == {}


def test_an_expired_session_is_gone_for_every_reader(store: SessionBase, run, frozen_clock) -> None:
    run(store.create_session("s", "u", ttl=0.2))
    run(store.patch_state("s", "u", {"a": 1}))
    frozen_clock.advance(0.35)
    assert run(store.get_info("s", "u")) is None
    assert not run(store.exists("s", "u"))
    assert run(store.get_state("s", "u")) == {}
    assert run(store.list_sessions("u")) == []
    with pytest.raises(SessionExpiredError, match="expired"):
        run(store.get_state("s", "u", must_exist=True))


def test_writing_to_an_expired_session_starts_it_afresh(
    store: SessionBase, run, frozen_clock
) -> None:
    run(store.create_session("s", "u", ttl=0.2))
    run(store.patch_state("s", "u", {"old": 1}))
    frozen_clock.advance(0.35)
    run(store.patch_state("s", "u", {"new": 2}))
    assert run(store.get_state("s", "u")) == {"new": 2}


def test_activity_slides_the_ttl(store: SessionBase, run, frozen_clock) -> None:
    run(store.create_session("s", "u", ttl=0.6))
    for _ in range(4):
        frozen_clock.advance(0.25)
        run(store.get_state("s", "u"))  # a read is activity too
    assert run(store.exists("s", "u"))  # 1.0 s after creation, alive thanks to activity


def test_without_sliding_the_ttl_counts_from_creation(
    tmp_path, run, store: SessionBase, frozen_clock
) -> None:
    fixed = make_store(kind_of(store), tmp_path / "fixed", sliding_ttl=False)
    run(fixed.create_session("s", "u", ttl=0.5))
    frozen_clock.advance(0.3)
    run(fixed.patch_state("s", "u", {"a": 1}))
    frozen_clock.advance(0.3)
    assert not run(fixed.exists("s", "u"))
    run(fixed.close())


def test_default_ttl_applies_to_new_sessions(tmp_path, run, store: SessionBase) -> None:
    timed = make_store(kind_of(store), tmp_path / "timed", default_ttl=60)
    info = run(timed.create_session("s", "u"))
    assert info.ttl == 60 and 59 < info.time_to_expiry() <= 60
    run(timed.close())


def test_touch_renews_and_expire_ends(store: SessionBase, run) -> None:
    run(store.create_session("s", "u", ttl=0.3))
    info = run(store.touch("s", "u", ttl=100))
    assert info.ttl == 100 and info.time_to_expiry() > 99
    assert run(store.expire("s", "u")) is True
    assert not run(store.exists("s", "u"))
    assert run(store.touch("s", "u")) is None


def test_purge_removes_only_expired_sessions(store: SessionBase, run, frozen_clock) -> None:
    run(store.create_session("short1", "u", ttl=0.1))
    run(store.create_session("short2", "v", ttl=0.1))
    run(store.create_session("long", "u", ttl=100))
    frozen_clock.advance(0.25)
    assert run(store.purge_expired()) == 2
    assert [i.session_id for i in run(store.list_sessions("u"))] == ["long"]


def test_negative_ttl_is_refused(store: SessionBase, run) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        run(store.create_session("s", "u", ttl=-1))


def test_close_is_idempotent_and_the_store_reopens(store: SessionBase, run) -> None:
    run(store.patch_state("s", "u", {"a": 1}))
    run(store.close())
    run(store.close())
    assert run(store.get_value("s", "u", "a")) == 1


def test_async_with_closes_the_store(store: SessionBase, run) -> None:
    async def use() -> Any:
        async with store as opened:
            assert opened is store
            await store.patch_state("s", "u", {"a": 1})
            return await store.get_value("s", "u", "a")

    assert run(use()) == 1


def test_expire_ends_a_session_the_way_its_ttl_would(store: SessionBase, run) -> None:
    run(store.patch_state("s", "u", {"a": 1}))
    assert run(store.expire("s", "u")) is True
    with pytest.raises(SessionExpiredError):
        run(store.get_state("s", "u", must_exist=True))
    assert run(store.get_info("s", "u")) is None
    assert run(store.purge_expired()) == 1
    run(store.patch_state("d", "u", {"a": 1}))
    run(store.delete_session("d", "u"))
    with pytest.raises(SessionNotFoundError):  # deleted is not expired: it never was, now
        run(store.get_state("d", "u", must_exist=True))


def test_a_damaged_json_file_does_not_hide_the_users_other_sessions(tmp_path, run) -> None:
    store = make_store("json", tmp_path)
    for name in ("fine", "truncated", "envelope-only"):
        run(store.patch_state(name, "u", {"a": 1}))
    raw = RawAccess(store)
    raw._doc_path("truncated", "u").write_bytes(b'{"format": 1, "session_id": "trunc')
    raw._doc_path("envelope-only", "u").write_bytes(b'{"format": 1}')
    assert [i.session_id for i in run(store.list_sessions("u"))] == ["fine"]
    for name in ("truncated", "envelope-only"):  # reading one still says it is damaged
        with pytest.raises(SessionCorruptedError):
            run(store.get_state(name, "u"))


def test_a_hand_edited_sqlite_row_is_corruption_not_a_crash(tmp_path, run) -> None:
    store = make_store("sqlite", tmp_path)
    run(store.patch_state("s", "u", {"a": 1}))
    with RawAccess(store)._db() as db:
        db.execute("UPDATE ps_state SET expires_at='x' WHERE session_id='s' AND name=''")
    with pytest.raises(SessionCorruptedError, match="expires_at"):
        run(store.get_state("s", "u"))
    run(store.close())
