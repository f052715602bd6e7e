"""Forks, snapshots, the tree and erasing a user: the same behaviour on every backend.

Part of the conformance suite: each test runs once per backend (memory, JSON, SQLite, Redis)
through the ``store`` fixture, on the store's own async API.
"""

from __future__ import annotations

from typing import Any

import pytest

from praisonsession import (
    ConflictError,
    InvalidValueError,
    MessageLog,
    SessionBase,
    SessionExpiredError,
    SessionNotFoundError,
    StateModule,
)
from praisonsession.stores import Branches
from praisonsession.stores.backend import all_records
from praisonsession.stores.reserved import SNAPSHOT_OWNER, erase_user_records


class Agent(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.history = MessageLog()
        self.notes = MessageLog()
        self.mood = "calm"
        self.register_state("mood")


def say(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {i} ✓"}


def seed(store: SessionBase, run, session_id: str = "parent", user_id: str = "u") -> Agent:
    run(store.patch_state(session_id, user_id, {"score": 10, "profile": {"name": "Ada"}}))
    agent = Agent()
    agent.history.extend(say(i) for i in range(6))
    agent.notes.append({"role": "note", "content": "remember"})
    run(store.save_session_state(session_id, user_id, agent=agent))
    return agent


def everything(store: SessionBase, run, session_id: str, user_id: str = "u") -> dict[str, Any]:
    """What a session holds, as a reader sees it."""
    loaded = Agent()
    run(store.load_session_state(session_id, user_id, agent=loaded))
    return {
        "state": run(store.get_state(session_id, user_id, must_exist=True)),
        "history": loaded.history.to_list(),
        "notes": loaded.notes.to_list(),
        "mood": loaded.mood,
    }


# -- logs -------------------------------------------------------------------------------------


def test_list_logs_names_each_log_with_its_length(store: SessionBase, run) -> None:
    seed(store, run)
    run(store.append_messages("parent", "u", "agent:Assistant.history", [say(1), say(2)]))
    assert run(Branches(store.backend).list_logs("parent", "u")) == {
        "agent.history": 6,
        "agent.notes": 1,
        "agent:Assistant.history": 2,
    }
    with pytest.raises(SessionNotFoundError):
        run(Branches(store.backend).list_logs("nobody", "u"))


# -- forks ------------------------------------------------------------------------------------


def test_a_fork_copies_everything_and_records_its_parent(store: SessionBase, run) -> None:
    seed(store, run)
    info = run(Branches(store.backend).fork("parent", "u", "child"))
    assert (info.session_id, info.user_id, info.version) == ("child", "u", 1)
    assert everything(store, run, "child") == everything(store, run, "parent")
    assert run(Branches(store.backend).parent_of("child", "u")) == ("parent", "u")
    assert run(Branches(store.backend).parent_of("parent", "u")) is None
    assert [i.session_id for i in run(Branches(store.backend).children_of("parent", "u"))] == [
        "child"
    ]


def test_parent_and_child_are_independent_afterwards(store: SessionBase, run) -> None:
    seed(store, run)
    run(Branches(store.backend).fork("parent", "u", "child"))
    before = everything(store, run, "parent")
    run(store.patch_state("child", "u", {"score": 99}))
    run(store.append_messages("child", "u", "agent.history", [say(100)]))
    assert everything(store, run, "parent") == before
    run(store.increment("parent", "u", "score", 1))
    assert run(store.get_value("child", "u", "score")) == 99
    assert len(run(store.read_messages("child", "u", "agent.history"))) == 7


def test_a_fork_at_a_message_cuts_that_log_only(store: SessionBase, run) -> None:
    seed(store, run)
    run(Branches(store.backend).fork("parent", "u", "early", at_message=("agent.history", 2)))
    copied = everything(store, run, "early")
    assert copied["history"] == [say(0), say(1)]
    assert copied["notes"] == [{"role": "note", "content": "remember"}]
    run(Branches(store.backend).fork("parent", "u", "empty", at_message=("agent.history", 0)))
    assert everything(store, run, "empty")["history"] == []


def test_a_fork_for_another_user_keeps_both_apart(store: SessionBase, run) -> None:
    seed(store, run, "guest-chat", "guest")
    run(Branches(store.backend).fork("guest-chat", "guest", "chat", "ada"))
    assert everything(store, run, "chat", "ada") == everything(store, run, "guest-chat", "guest")
    assert run(Branches(store.backend).parent_of("chat", "ada")) == ("guest-chat", "guest")
    assert [i.session_id for i in run(store.list_sessions("ada"))] == ["chat"]
    (root,) = run(Branches(store.backend).tree("ada"))  # its parent is another user's: a root here
    assert root.info.session_id == "chat" and root.children == []


def test_a_fork_never_overwrites_nor_loops(store: SessionBase, run) -> None:
    seed(store, run)
    run(store.patch_state("taken", "u", {"mine": True}))
    with pytest.raises(ConflictError):
        run(Branches(store.backend).fork("parent", "u", "taken"))
    assert run(store.get_state("taken", "u")) == {"mine": True}
    with pytest.raises(ConflictError):
        run(Branches(store.backend).fork("parent", "u", "parent"))
    run(Branches(store.backend).fork("parent", "u", "child"))
    run(Branches(store.backend).fork("child", "u", "grandchild"))
    run(store.delete_session("parent", "u"))
    with pytest.raises(ConflictError, match="ancestor"):  # "parent" would close a loop
        run(Branches(store.backend).fork("grandchild", "u", "parent"))


def test_forking_what_is_not_there_says_so(store: SessionBase, run, frozen_clock) -> None:
    with pytest.raises(SessionNotFoundError):
        run(Branches(store.backend).fork("nothing", "u", "child"))
    run(store.create_session("brief", "u", ttl=1))
    frozen_clock.advance(2)
    with pytest.raises(SessionExpiredError):
        run(Branches(store.backend).fork("brief", "u", "child"))
    assert not run(store.exists("child", "u"))


@pytest.mark.parametrize("cut", [("log",), ("log", -1), ("log", "3"), "log:3", ("", 3)])
def test_a_bad_cut_is_refused(store: SessionBase, run, cut: Any) -> None:
    seed(store, run)
    with pytest.raises((InvalidValueError, Exception)) as caught:
        run(Branches(store.backend).fork("parent", "u", "child", at_message=cut))
    assert "at_message" in str(caught.value) or "log name" in str(caught.value)
    assert not run(store.exists("child", "u"))


# -- snapshots --------------------------------------------------------------------------------


def test_a_snapshot_survives_edits_and_truncation_and_restores(store: SessionBase, run) -> None:
    seed(store, run)
    before = everything(store, run, "parent")
    version = run(store.get_info("parent", "u")).version
    snapshot = run(Branches(store.backend).snapshot("parent", "u", label="before the edit"))
    assert (snapshot.label, snapshot.version, snapshot.messages) == ("before the edit", version, 7)

    agent = Agent()
    run(store.load_session_state("parent", "u", agent=agent))
    agent.history[0]["content"] = "EDITED"
    del agent.history[3:]
    run(store.save_session_state("parent", "u", agent=agent))
    run(store.clear_messages("parent", "u", "agent.notes"))
    run(store.patch_state("parent", "u", {"score": -1}, delete=["profile"]))
    assert everything(store, run, "parent") != before

    info = run(Branches(store.backend).restore("parent", "u", snapshot))
    assert everything(store, run, "parent") == before
    assert info.version > version and info.session_id == "parent"


def test_snapshots_are_listed_in_order_and_deleted_one_by_one(store: SessionBase, run) -> None:
    seed(store, run)
    first = run(Branches(store.backend).snapshot("parent", "u", label="one"))
    second = run(Branches(store.backend).snapshot("parent", "u"))
    seed(store, run, "other")
    run(Branches(store.backend).snapshot("other", "u", label="not mine"))
    assert [s.snapshot_id for s in run(Branches(store.backend).snapshots("parent", "u"))] == [
        first.snapshot_id,
        second.snapshot_id,
    ]
    assert [s.label for s in run(Branches(store.backend).snapshots("parent", "u"))] == ["one", None]
    assert run(Branches(store.backend).delete_snapshot("parent", "u", first)) is True
    assert run(Branches(store.backend).delete_snapshot("parent", "u", first)) is False
    assert run(Branches(store.backend).snapshots("parent", "u")) == [second]
    with pytest.raises(SessionNotFoundError, match="snapshot"):
        run(Branches(store.backend).restore("parent", "u", first))
    # snapshots are no one's sessions
    assert [i.session_id for i in run(store.list_sessions("u"))] == ["other", "parent"]


def test_a_restore_keeps_the_sessions_ttl(store: SessionBase, run) -> None:
    seed(store, run)
    run(store.touch("parent", "u", ttl=600))
    snapshot = run(Branches(store.backend).snapshot("parent", "u"))
    info = run(Branches(store.backend).restore("parent", "u", snapshot.snapshot_id))
    assert info.ttl == 600 and 590 < info.time_to_expiry() <= 600


# -- the tree -----------------------------------------------------------------------------------


def test_a_users_tree_puts_each_fork_under_its_parent(store: SessionBase, run) -> None:
    seed(store, run, "root")
    for child, parent in (("a", "root"), ("b", "root"), ("a1", "a")):
        run(Branches(store.backend).fork(parent, "u", child))
    run(store.patch_state("alone", "u", {}))
    shape = {
        node.info.session_id: sorted(c.info.session_id for c in node.children)
        for node in run(Branches(store.backend).tree("u"))
    }
    assert shape == {"alone": [], "root": ["a", "b"]}
    (root,) = [n for n in run(Branches(store.backend).tree("u")) if n.info.session_id == "root"]
    (a,) = [n for n in root.children if n.info.session_id == "a"]
    assert [n.info.session_id for n in a.children] == ["a1"]


def test_a_loop_of_parent_links_is_cut_not_followed_forever(store: SessionBase, run) -> None:
    seed(store, run, "x")
    run(Branches(store.backend).fork("x", "u", "y"))
    run(store.delete_session("x", "u"))
    run(Branches(store.backend).fork("y", "u", "z"))
    # hand-make a loop: x (recreated) claims y as its parent while y claims x
    run(store.create_session("x", "u", metadata={"parent": {"session_id": "z", "user_id": "u"}}))
    nodes = run(Branches(store.backend).tree("u"))
    seen: list[str] = []
    stack = list(nodes)
    while stack:
        node = stack.pop()
        seen.append(node.info.session_id)
        stack.extend(node.children)
    assert sorted(seen) == ["x", "y", "z"]  # each once: the loop was cut


# -- erasing a user -----------------------------------------------------------------------------


def test_erasing_a_user_leaves_another_with_the_same_session_ids(store: SessionBase, run) -> None:
    for user in ("bob", "amy"):
        seed(store, run, "shared", user)
        run(Branches(store.backend).fork("shared", user, "forked"))
        run(Branches(store.backend).snapshot("shared", user, label=user))
    report = run(erase_user_records(store.backend, "bob"))
    assert (report["sessions"], report["snapshots"]) == (2, 1)
    assert sorted(report["session_ids"]) == ["forked", "shared"]
    assert run(store.list_sessions("bob")) == []
    assert run(Branches(store.backend).snapshots("shared", "bob")) == []
    assert [i.session_id for i in run(store.list_sessions("amy"))] == ["forked", "shared"]
    assert [s.label for s in run(Branches(store.backend).snapshots("shared", "amy"))] == ["amy"]
    assert everything(store, run, "shared", "amy")["state"]["score"] == 10
    kept = run(all_records(store.backend, SNAPSHOT_OWNER))  # the snapshots' own space: amy's alone
    assert [i.metadata["snapshot"]["user_id"] for i in kept] == ["amy"]
