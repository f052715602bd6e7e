"""Sessions that branch, as a user meets them: ``fork``, snapshots, the tree, erasing a user.

Every test runs on each backend (memory, JSON, SQLite, Redis, PostgreSQL) through the
``store`` fixture, on the public ``Session`` (and ``AsyncSession``) API; the store-level twin
of these promises is in the shipped suite, ``praisonsession.stores.testing``. Archives are in
``test_archives.py``, kills in ``test_hierarchy_crashes.py``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llm_server import ScriptedChatServer
from praisonsession import (
    AsyncSession,
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    MessageLog,
    Session,
    SessionBase,
    SessionNotFoundError,
    StateModule,
    aerase_user,
    erase_user,
)
from praisonsession._internal import runtime
from praisonsession.stores import Branches
from praisonsession.stores.backend import all_records
from praisonsession.stores.branches import SnapshotInfo
from praisonsession.stores.reserved import SNAPSHOT_OWNER
from sessions import staged_copies

Open = Callable[..., Session]


class Notebook(StateModule):
    """A saved module: a plain field and a message log."""

    def __init__(self) -> None:
        super().__init__()
        self.pages = MessageLog()
        self.title = "untitled"
        self.register_state("title")


def page(i: int, who: str = "user") -> dict[str, Any]:
    return {"role": who, "content": f"page {i} ✓ 日本"}


@pytest.fixture
def sessions(store: SessionBase) -> Open:
    """Sessions on the backend under test (they share its store; none of them closes it)."""

    def open_(session_id: str = "s", user_id: str = "u", **options: Any) -> Session:
        return Session(session_id, user_id, store=store, **options)

    return open_


def fill(session: Session, pages: int = 6, title: str = "Ada's notes") -> Notebook:
    session.save_state({"score": 10, "profile": {"name": "Ada", "tags": ["a", {"b": None}]}})
    notebook = Notebook()
    notebook.title = title
    notebook.pages.extend(page(i) for i in range(pages))
    session.save_modules(notebook=notebook)
    return notebook


def held(session: Session) -> dict[str, Any]:
    """What a session holds, as its reader sees it."""
    notebook = Notebook()
    session.load_modules(notebook=notebook)
    return {
        "state": session.restore_state(),
        "title": notebook.title,
        "pages": notebook.pages.to_list(),
    }


def ids(infos: list[Any]) -> list[str]:
    return [info.session_id for info in infos]


# -- forks ------------------------------------------------------------------------------------


def test_a_fork_copies_state_modules_and_logs_and_records_its_parent(sessions: Open) -> None:
    parent = sessions("parent")
    fill(parent)
    child = parent.fork("child")
    assert isinstance(child, Session)
    assert (child.session_id, child.user_id) == ("child", "u")
    assert held(child) == held(parent)
    assert held(child)["pages"] == [page(i) for i in range(6)]
    assert child.parent is not None and child.parent.session_id == "parent"
    assert child.parent.user_id == "u"
    assert parent.parent is None
    assert ids(parent.children()) == ["child"]
    assert child.children() == []
    assert child.get_info().metadata["parent"] == {"session_id": "parent", "user_id": "u"}


def test_a_fork_without_an_id_gets_a_fresh_full_entropy_one(sessions: Open) -> None:
    parent = sessions("parent")
    fill(parent)
    first, second = parent.fork(), parent.fork()
    assert re.fullmatch(r"[0-9a-f]{32}", first.session_id)
    assert first.session_id != second.session_id
    assert sorted(ids(parent.children())) == sorted([first.session_id, second.session_id])
    assert held(first) == held(second) == held(parent)


def test_writing_the_child_never_changes_the_parent_nor_the_parent_the_child(
    sessions: Open,
) -> None:
    parent = sessions("parent")
    fill(parent)
    child = parent.fork("child")
    before = held(parent)

    child.set_state("score", 99)
    child.increment_state("score")
    notebook = Notebook()
    child.load_modules(notebook=notebook)
    notebook.pages.append(page(100))
    notebook.pages[0] = page(-1)
    notebook.title = "the child's"
    child.save_modules(notebook=notebook)
    assert held(parent) == before

    parent.save_state({"profile": {"name": "Grace"}})
    child_now = held(child)
    assert child_now["state"]["score"] == 100
    assert child_now["state"]["profile"] == before["state"]["profile"]
    assert child_now["pages"] == [page(-1), *before["pages"][1:], page(100)]
    assert child_now["title"] == "the child's"


def test_a_fork_at_a_message_cuts_that_log_and_copies_the_others_whole(
    sessions: Open,
) -> None:
    parent = sessions("parent")
    fill(parent)
    runtime.run(parent.store.append_messages("parent", "u", "side", [page(0, "note")]))
    early = parent.fork("early", at_message=("notebook.pages", 2))
    assert held(early)["pages"] == [page(0), page(1)]
    assert held(early)["state"] == held(parent)["state"]
    assert runtime.run(parent.store.read_messages("early", "u", "side")) == [page(0, "note")]
    empty = parent.fork("empty", at_message=("notebook.pages", 0))
    assert held(empty)["pages"] == []
    whole = parent.fork("whole", at_message=("notebook.pages", 600))  # past the end: all
    assert held(whole)["pages"] == held(parent)["pages"]
    assert len(held(parent)["pages"]) == 6


@pytest.mark.parametrize(
    "cut",
    [("notebook.pages",), ("notebook.pages", -1), "notebook.pages", ("notebook.pagse", 2)],
    ids=["no-count", "negative", "no-tuple", "misspelt-log"],
)
def test_a_bad_cut_is_refused_and_forks_nothing(sessions: Open, cut: Any) -> None:
    parent = sessions("parent")
    fill(parent)
    with pytest.raises(InvalidValueError, match=r"at_message|no message log"):
        parent.fork("child", at_message=cut)
    assert parent.children() == []
    assert not runtime.run(parent.store.exists("child", "u"))


def test_an_agents_history_comes_back_in_a_fork_and_can_be_cut_at_one_of_its_messages(
    sessions: Open, server: ScriptedChatServer
) -> None:
    llm = {"base_url": server.url, "model": "m"}
    parent = sessions("parent")
    agent = parent.Agent("Tutor", memory=False, llm=llm)
    for question in ("one", "two", "three"):
        agent.chat(question)
    history = agent.history.to_list()
    assert len(history) == 6

    child = parent.fork("child")
    assert child.Agent("Tutor", memory=False, llm=llm).history.to_list() == history

    assert agent.log_name == f"{agent.key}.history"
    early = parent.fork("early", at_message=(agent, 2))  # the Agent itself names its log
    tutor = early.Agent("Tutor", memory=False, llm=llm)
    assert tutor.history.to_list() == history[:2]
    assert tutor.chat("four") == "You said: four"
    assert tutor.history.to_list() == [*history[:2], *tutor.history.to_list()[2:]]
    assert len(tutor.history) == 4
    assert parent.Agent("Tutor", memory=False, llm=llm).history.to_list() == history
    assert len(server.requests) == 4


def test_a_fork_for_another_user_moves_a_guests_conversation_to_an_account(
    sessions: Open,
) -> None:
    guest = sessions("chat", "guest")
    fill(guest)
    mine = guest.fork("chat", user_id="ada")  # the same id, another user: apart
    assert (mine.session_id, mine.user_id) == ("chat", "ada")
    assert held(mine) == held(guest)
    assert mine.parent is not None
    assert (mine.parent.session_id, mine.parent.user_id) == ("chat", "guest")
    mine.set_state("score", 1)
    assert guest.get_state("score") == 10
    assert ids(runtime.run(mine.store.list_sessions("ada"))) == ["chat"]
    # the child is another user's: not among the guest's children, a root of ada's tree
    assert guest.children() == []
    (root,) = mine.tree()
    assert root.info.session_id == "chat" and root.info.user_id == "ada"


def test_a_fork_never_overwrites_a_session_and_changes_nothing_when_refused(
    sessions: Open,
) -> None:
    parent = sessions("parent")
    fill(parent)
    taken = sessions("taken")
    taken.set_state("mine", True)
    with pytest.raises(ConflictError, match="already exists"):
        parent.fork("taken")
    assert taken.restore_state() == {"mine": True}
    assert taken.parent is None
    with pytest.raises(ConflictError, match="onto itself"):
        parent.fork("parent")
    with pytest.raises(InvalidIdError):
        parent.fork("bad\x00id")
    assert parent.children() == []


# -- snapshots --------------------------------------------------------------------------------


def test_a_snapshot_keeps_the_content_through_edits_and_truncation_and_restores_it(
    sessions: Open,
) -> None:
    session = sessions("s")
    fill(session)
    before = held(session)
    version = session.get_info().version
    snapshot = session.snapshot("before the edit")
    assert isinstance(snapshot, SnapshotInfo)
    assert (snapshot.session_id, snapshot.user_id, snapshot.label) == ("s", "u", "before the edit")
    assert (snapshot.version, snapshot.messages) == (version, 6)

    notebook = Notebook()
    session.load_modules(notebook=notebook)
    notebook.pages[0] = page(-1)
    del notebook.pages[2:]  # truncated: the snapshot must not be an index into the log
    notebook.title = "rewritten"
    session.save_modules(notebook=notebook)
    session.save_state({"score": -1, "extra": "later"})
    assert held(session) != before

    info = session.restore(snapshot)
    assert held(session) == before
    assert info.session_id == "s" and info.version > version
    assert session.get_info().version == info.version


def test_a_restore_keeps_the_sessions_identity_ttl_and_parent(sessions: Open) -> None:
    parent = sessions("parent")
    fill(parent)
    child = parent.fork("child")
    runtime.run(child.store.touch("child", "u", ttl=600))
    created = child.get_info().created_at
    snapshot = child.snapshot()
    child.set_state("score", 0)
    info = child.restore(snapshot.snapshot_id)  # the id alone does too
    assert child.get_state("score") == 10
    assert info.created_at == created
    assert info.ttl == 600 and 590 < child.time_to_expiry() <= 600
    assert child.parent is not None and child.parent.session_id == "parent"
    assert info.metadata["restored_from"] == snapshot.snapshot_id


def test_snapshots_are_listed_oldest_first_and_deleted_one_by_one(sessions: Open) -> None:
    session = sessions("s")
    fill(session)
    first = session.snapshot("one")
    session.set_state("score", 11)
    second = session.snapshot()
    other = sessions("other")
    fill(other)
    other.snapshot("not mine")
    assert session.snapshots() == [first, second]
    assert [s.label for s in session.snapshots()] == ["one", None]
    assert session.delete_snapshot(first) is True
    assert session.delete_snapshot(first.snapshot_id) is False
    assert session.snapshots() == [second]
    with pytest.raises(SessionNotFoundError, match="snapshot"):
        session.restore(first)
    assert ids(runtime.run(session.store.list_sessions("u"))) == ["other", "s"]


def test_a_deleted_session_comes_back_from_its_snapshot(sessions: Open) -> None:
    """Snapshots are copies, not part of the session: they outlive ``delete`` (erase_user or
    delete_snapshot removes them), so a snapshot is also an undo for a delete."""
    session = sessions("s")
    fill(session)
    before = held(session)
    taken = session.snapshot("before delete")
    assert session.delete() is True
    again = sessions("s")
    assert held(again)["pages"] == [] and again.snapshots() == [taken]
    again.restore(taken)
    assert held(again) == before


def test_a_session_cannot_restore_another_sessions_snapshot(sessions: Open) -> None:
    mine = sessions("mine")
    fill(mine)
    snapshot = mine.snapshot()
    theirs = sessions("theirs")
    theirs.set_state("kept", True)
    with pytest.raises(SessionNotFoundError, match="snapshot"):
        theirs.restore(snapshot)
    assert theirs.restore_state() == {"kept": True}
    other_user = sessions("mine", "eve")
    with pytest.raises(SessionNotFoundError):
        other_user.restore(snapshot)
    assert other_user.snapshots() == []


@pytest.mark.parametrize("bad", ["", "a\x1eb", "x" * 65, 42])
def test_a_bad_snapshot_id_is_refused(sessions: Open, bad: Any) -> None:
    session = sessions("s")
    fill(session)
    with pytest.raises(InvalidIdError, match="snapshot id"):
        session.restore(bad)
    assert held(session)["state"]["score"] == 10


def test_a_fork_of_a_restored_session_takes_what_it_holds_now(sessions: Open) -> None:
    session = sessions("s")
    fill(session)
    snapshot = session.snapshot()
    session.save_state({"score": 20})
    session.restore(snapshot)
    child = session.fork("child")
    assert held(child) == held(session)
    assert child.snapshots() == []  # snapshots are the session's, not copied with a fork


# -- the tree ---------------------------------------------------------------------------------


def test_parent_children_and_tree_follow_the_forks(sessions: Open) -> None:
    root = sessions("root")
    fill(root)
    a = root.fork("a")
    root.fork("b")
    a1 = a.fork("a1")
    sessions("alone").set_state("x", 1)

    assert a1.parent is not None and a1.parent.session_id == "a"
    grandparent = a1.parent.parent
    assert grandparent is not None and grandparent.session_id == "root"
    assert grandparent.parent is None
    assert ids(root.children()) == ["a", "b"]
    assert ids(a.children()) == ["a1"]

    def shape(nodes: list[Any]) -> dict[str, Any]:
        return {n.info.session_id: shape(n.children) for n in nodes}

    assert shape(a1.tree()) == {"alone": {}, "root": {"a": {"a1": {}}, "b": {}}}
    assert shape(sessions("other", "eve").tree()) == {"other": {}}  # one user's tree


def test_a_child_whose_parent_is_gone_is_a_root(sessions: Open) -> None:
    root = sessions("root")
    fill(root)
    child = root.fork("child")
    root.delete()
    assert child.parent is None
    (node,) = [n for n in child.tree() if n.info.session_id == "child"]
    assert node.children == []


def test_a_fork_onto_an_ancestor_is_refused_so_the_tree_never_loops(sessions: Open) -> None:
    root = sessions("root")
    fill(root)
    child = root.fork("child")
    grandchild = child.fork("grandchild")
    runtime.run(root.store.delete_session("root", "u"))
    with pytest.raises(ConflictError, match="ancestor"):
        grandchild.fork("root")
    with pytest.raises(ConflictError, match="ancestor"):
        grandchild.fork("child")
    assert not runtime.run(root.store.exists("root", "u"))


def test_the_tree_shows_each_session_once_even_when_links_loop(sessions: Open) -> None:
    x = sessions("x")
    fill(x)
    x.fork("y").fork("z")
    runtime.run(x.store.delete_session("x", "u"))
    # x again, claiming z as its parent: x -> z -> y -> x
    meta = {"parent": {"session_id": "z", "user_id": "u"}}
    runtime.run(x.store.create_session("x", "u", metadata=meta))
    seen: list[str] = []
    stack = list(x.tree())
    while stack:
        node = stack.pop()
        seen.append(node.info.session_id)
        stack.extend(node.children)
    assert sorted(seen) == ["x", "y", "z"]
    assert sessions("y").parent is not None  # one link at a time: no walk, no loop


# -- AsyncSession, on the caller's loop -------------------------------------------------------


def test_async_sessions_fork_snapshot_restore_and_show_the_tree(store: SessionBase) -> None:
    async def main() -> dict[str, Any]:
        parent = AsyncSession("parent", "u", store=store)
        await parent.save_state({"score": 10})
        await store.append_messages("parent", "u", "log", [page(i) for i in range(4)])
        child = await parent.fork("child", at_message=("log", 3))
        assert isinstance(child, AsyncSession)
        snapshot = await child.snapshot("first")
        await child.set_state("score", 0)
        await child.restore(snapshot)
        found = await child.parent
        return {
            "state": await child.restore_state(),
            "log": await store.read_messages("child", "u", "log"),
            "parent": None if found is None else found.session_id,
            "children": ids(await parent.children()),
            "tree": [n.info.session_id for n in await parent.tree()],
            "snapshots": [s.label for s in await child.snapshots()],
            "deleted": await child.delete_snapshot(snapshot),
        }

    assert asyncio.run(main()) == {
        "state": {"score": 10},
        "log": [page(i) for i in range(3)],
        "parent": "parent",
        "children": ["child"],
        "tree": ["parent"],
        "snapshots": ["first"],
        "deleted": True,
    }


# -- long-term memories travel with a fork ----------------------------------------------------


def memories_of(session: Session, query: str) -> list[tuple[str, str, Any]]:
    return sorted(
        (hit["text"], hit["metadata"]["session_id"], hit["metadata"].get("topic"))
        for hit in session.search_memory(query, limit=10)
    )


def test_a_fork_copies_the_memories_the_session_added_as_its_own(
    open_session: Open,
) -> None:
    parent = open_session("parent", "ada")
    parent.add_memory("Ada drinks green tea", topic="drinks")
    parent.add_memory("Ada lives in Oslo", topic="home")
    open_session("elsewhere", "ada").add_memory("Ada plays chess", topic="games")

    child = parent.fork("child")
    found = memories_of(child, "tea Oslo chess")
    assert ("Ada drinks green tea", "child", "drinks") in found
    assert ("Ada lives in Oslo", "child", "home") in found
    assert ("Ada plays chess", "child", "games") not in found  # not the parent's own

    assert child.clear_memory("long") == 2  # the child's copies go, the parent's stay
    assert memories_of(parent, "tea Oslo chess") == [
        ("Ada drinks green tea", "parent", "drinks"),
        ("Ada lives in Oslo", "parent", "home"),
        ("Ada plays chess", "elsewhere", "games"),
    ]


def test_a_fork_whose_memories_cannot_be_copied_is_not_made(
    open_session: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    from praisonsession.recall.memory.long_term import LongTermMemory

    parent = open_session("parent", "ada")
    parent.add_memory("Ada drinks green tea")
    parent.add_memory("Ada rides a bike to work")
    restore = LongTermMemory.restore

    def broken(self: Any, memories: Any, attempt: Any = None) -> int:
        restore(self, memories[:1], attempt)  # one copy staged, then the store fails
        raise OSError("the vector store is full")

    monkeypatch.setattr(LongTermMemory, "restore", broken)
    with pytest.raises(OSError, match="full"):
        parent.fork("child")
    assert parent.children() == []
    assert not runtime.run(parent.store.exists("child", "ada"))
    assert staged_copies(parent, "child") == []  # the copy it staged went with it


def test_a_fork_onto_a_session_that_exists_leaves_no_copy_of_the_memories(
    open_session: Open,
) -> None:
    parent = open_session("parent", "ada")
    parent.add_memory("Ada drinks green tea")
    taken = open_session("taken", "ada")
    taken.set_state("mine", True)
    with pytest.raises(ConflictError):
        parent.fork("taken")
    assert staged_copies(parent, "taken") == []
    assert taken.list_memories() == parent.list_memories()  # the user's one memory, once
    assert [m["text"] for m in runtime.run(taken._core._memories())] == []


def test_a_fork_for_another_user_takes_the_memories_into_that_users_collection(
    open_session: Open,
) -> None:
    guest = open_session("chat", "guest")
    guest.add_memory("likes jazz")
    account = guest.fork("chat", user_id="ada")
    assert [(t, s) for t, s, _ in memories_of(account, "jazz")] == [("likes jazz", "chat")]
    assert all(hit["metadata"]["user_id"] == "ada" for hit in account.search_memory("jazz"))
    account.clear_memory("long")
    assert [t for t, _, _ in memories_of(guest, "jazz")] == ["likes jazz"]


# -- erasing a user ---------------------------------------------------------------------------


def fill_user(open_: Open, user: str) -> None:
    """Two sessions with state and a module, a fork of one, a snapshot."""
    first = open_("shared", user)
    fill(first, title=f"{user}'s")
    second = open_("second", user)
    second.set_state("owner", user)
    first.fork("forked")
    first.snapshot(user)


def test_erase_user_removes_every_session_snapshot_and_log_of_that_user_only(
    store: SessionBase, sessions: Open, tmp_path: Path
) -> None:
    for user in ("bob", "amy"):
        fill_user(sessions, user)
    amy_before = {sid: held(sessions(sid, "amy")) for sid in ("shared", "forked")}

    report = erase_user("bob", store=store, settings={"data_dir": str(tmp_path / "data")})
    assert (report.user_id, report.sessions, report.snapshots) == ("bob", 3, 1)
    assert sorted(report.session_ids) == ["forked", "second", "shared"]
    assert report.vector_entries == 0  # memory and knowledge were never used here

    assert runtime.run(store.list_sessions("bob")) == []
    assert runtime.run(store.read_messages("shared", "bob", "notebook.pages")) == []
    assert runtime.run(Branches(store.backend).snapshots("shared", "bob")) == []
    left = runtime.run(all_records(store.backend, SNAPSHOT_OWNER))
    assert [info.metadata["snapshot"]["user_id"] for info in left] == ["amy"]

    assert ids(runtime.run(store.list_sessions("amy"))) == ["forked", "second", "shared"]
    assert {sid: held(sessions(sid, "amy")) for sid in amy_before} == amy_before
    assert [s.label for s in sessions("shared", "amy").snapshots()] == ["amy"]
    assert sessions("second", "amy").get_state("owner") == "amy"

    again = erase_user("bob", store=store, settings={"data_dir": str(tmp_path / "data")})
    assert (again.sessions, again.snapshots, again.session_ids) == (0, 0, [])


def test_erase_user_also_removes_the_users_expired_sessions_not_yet_purged(
    store: SessionBase, sessions: Open, frozen_clock: Any
) -> None:
    """An expired session is gone for readers, but its data stays stored until a purge: an
    erasure purges first, so none of it is left (nor anyone's expired data: it was gone)."""
    fill(sessions("brief", "bob", session_ttl=10))
    sessions("brief", "amy", session_ttl=10).set_state("mine", True)
    fill_user(sessions, "bob")
    fill_user(sessions, "amy")
    frozen_clock.advance(20)
    report = erase_user("bob", store=store)
    assert sorted(report.session_ids) == ["forked", "second", "shared"]
    assert runtime.run(store.purge_expired()) == 0  # nothing expired was left stored
    assert ids(runtime.run(store.list_sessions("amy"))) == ["forked", "second", "shared"]
    assert held(sessions("shared", "amy"))["title"] == "amy's"


def test_aerase_user_is_the_same_for_async_code(store: SessionBase, sessions: Open) -> None:
    fill_user(sessions, "bob")
    fill_user(sessions, "amy")
    report = asyncio.run(aerase_user("bob", store))
    assert (report.sessions, report.snapshots) == (3, 1)
    assert runtime.run(store.list_sessions("bob")) == []
    assert len(runtime.run(store.list_sessions("amy"))) == 3


def test_erase_user_refuses_an_invalid_user_id(store: SessionBase, sessions: Open) -> None:
    fill_user(sessions, "bob")
    for bad in ("a\x00b", SNAPSHOT_OWNER, 42, "x" * 257, ""):  # "" would mean default_user
        with pytest.raises(InvalidIdError):
            erase_user(bad, store=store)
    assert len(runtime.run(store.list_sessions("bob"))) == 3
    assert len(sessions("shared", "bob").snapshots()) == 1


def test_erase_user_removes_memories_and_knowledge_in_every_scope_of_that_user_only(
    open_session: Open, tmp_path: Path
) -> None:
    """With Chroma embedded and a Chroma server: bob's long-term memories, his user-scoped
    and session-scoped knowledge, sessions, logs and snapshots go; amy, with the same session
    ids, keeps all of hers."""
    document = tmp_path / "oslo.txt"
    document.write_text("The capital of Norway is Oslo. It lies at the end of a fjord.")
    kept: dict[str, Any] = {}
    for user in ("bob", "amy"):
        personal = open_session("personal", user)
        personal.add_memory(f"{user} drinks green tea", topic="drinks")
        personal.add_knowledge(str(document))  # user scope: all of the user's sessions
        fill(personal, title=f"{user}'s")
        personal.snapshot(user)
        scoped = open_session("scoped", user, knowledge_config={"scope": "session"})
        scoped.add_knowledge(f"{user}'s session note: the meeting is on Friday.")
        scoped.fork("forked").add_memory(f"{user} forked a chat")
        kept[user] = {
            "memories": memories_of(personal, "tea forked"),
            "user knowledge": [h["text"] for h in personal.search_knowledge("Norway")],
            "session knowledge": [h["text"] for h in scoped.search_knowledge("meeting")],
            "content": held(personal),
        }
    assert len(kept["bob"]["memories"]) == 2 and kept["bob"]["session knowledge"]

    report = erase_user(
        "bob", store=f"sqlite://{tmp_path}/sessions.db", settings=open_session.settings
    )
    assert sorted(report.session_ids) == ["forked", "personal", "scoped"]
    assert (report.sessions, report.snapshots) == (3, 1)
    # memories: 2 and their history (2 ADDs), user knowledge: 1 chunk, session knowledge: 1
    assert report.vector_entries == 6

    personal = open_session("personal", "bob")
    assert personal.search_memory("tea forked") == []
    assert personal.search_knowledge("Norway") == []
    assert personal.snapshots() == []
    assert held(personal) == {"state": {}, "title": "untitled", "pages": []}
    scoped = open_session("scoped", "bob", knowledge_config={"scope": "session"})
    assert scoped.search_knowledge("meeting") == []

    amy = open_session("personal", "amy")
    scoped = open_session("scoped", "amy", knowledge_config={"scope": "session"})
    assert {
        "memories": memories_of(amy, "tea forked"),
        "user knowledge": [h["text"] for h in amy.search_knowledge("Norway")],
        "session knowledge": [h["text"] for h in scoped.search_knowledge("meeting")],
        "content": held(amy),
    } == kept["amy"]
    assert [s.label for s in amy.snapshots()] == ["amy"]
