"""The store conformance suite: what every backend promises, as pytest cases to run on yours.

Every backend and wrapper of praisonsession passes it. Subclass :class:`StoreConformance` in a
test module of your own, define ``make_backend(root, **ttl)``, and pytest collects each case;
set a ``supports_*`` attribute to False for an optional operation your backend leaves out (its
cases are then skipped, naming the attribute). The suite needs pytest (``pip install pytest``,
in the dev extra); ``import praisonsession`` never imports this module.

One module past 500 lines, on purpose: it is one class, one case per promise, and a backend
author reads it as the list of what a backend must do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest

from .. import clock
from .._internal import runtime
from .._internal.identifiers import DEFAULT_USER
from ..errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    SessionExpiredError,
    SessionNotFoundError,
    StateDictError,
)
from ..state import MessageLog, StateModule
from .api import SessionBase
from .backend import LogWrite, StoreBackend, StoredModules, all_records
from .branches import Branches
from .record import FORMAT_VERSION, SessionInfo, record_key
from .reserved import SNAPSHOT_OWNER, erase_user_records

__all__ = ["OpenStore", "StoreConformance"]

T = TypeVar("T")
Case = TypeVar("Case", bound=Callable[..., None])
#: The ``open_store`` fixture: ``open_store(name="store", **ttl)`` opens a store over the
#: directory ``name`` of the case (the same name, the same data).
OpenStore = Callable[..., SessionBase]

#: What each capability attribute of :class:`StoreConformance` stands for.
CAPABILITIES = {
    "supports_copies": "forks and snapshots (copy_record and read_record_contents)",
    "supports_owners": "listing users (list_record_owners)",
    "supports_reopening": "reopening (a store opened later over the same root)",
    "supports_truncation": "removing the end of a log (truncate_log)",
}
_NEEDS = "__conformance_needs__"


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a store coroutine to completion from any thread, as the sync facade does."""
    return runtime.run(coro)


def _needs(*capabilities: str) -> Callable[[Case], Case]:
    """Mark a case as needing capabilities: it is skipped where one is declared False."""

    def mark(case: Case) -> Case:
        setattr(case, _NEEDS, capabilities)
        return case

    return mark


# -- what the cases save ---------------------------------------------------------------------------


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
    """A module with one list of state."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[str] = []
        self.register_state("steps")


class NoteTaker(StateModule):
    """A module with two logs and one value: what forks and snapshots copy."""

    def __init__(self) -> None:
        super().__init__()
        self.history = MessageLog()
        self.notes = MessageLog()
        self.mood = "calm"
        self.register_state("mood")


def say(text: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": text}


def numbered(i: int) -> dict[str, Any]:
    return say(f"message {i} ✓")


def live(info: SessionInfo | None) -> SessionInfo:
    """The info of a session that must be live."""
    assert info is not None, "the session should be live"
    return info


def expires_in(info: SessionInfo) -> float:
    """Seconds until a session with a TTL expires."""
    left = info.time_to_expiry()
    assert left is not None, "the session should have a TTL"
    return left


def with_messages(agent: Friday, *texts: str) -> Friday:
    agent.memory.extend(say(text) for text in texts)
    return agent


def seed(store: SessionBase, session_id: str = "parent", user_id: str = "u") -> NoteTaker:
    """A session holding state, two logs and a module value."""
    run(store.patch_state(session_id, user_id, {"score": 10, "profile": {"name": "Ada"}}))
    agent = NoteTaker()
    agent.history.extend(numbered(i) for i in range(6))
    agent.notes.append({"role": "note", "content": "remember"})
    run(store.save_session_state(session_id, user_id, agent=agent))
    return agent


def everything(store: SessionBase, session_id: str, user_id: str = "u") -> dict[str, Any]:
    """What a session holds, as a reader sees it."""
    loaded = NoteTaker()
    run(store.load_session_state(session_id, user_id, agent=loaded))
    return {
        "state": run(store.get_state(session_id, user_id, must_exist=True)),
        "history": loaded.history.to_list(),
        "notes": loaded.notes.to_list(),
        "mood": loaded.mood,
    }


#: Every way of editing a saved log in place; each must be saved exactly.
LOG_EDITS = [
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
]


class StoreConformance:
    """The conformance cases, for a backend of yours: subclass it and define ``make_backend``.

    Each case gets a fresh store, ``SessionBase(make_backend(...))`` over an empty directory,
    closed after it. Set a ``supports_*`` attribute to False to leave out the cases of an
    optional operation the backend does not implement (it raises ``UnsupportedOperationError``).
    """

    #: The backend implements ``copy_record`` and ``read_record_contents`` (forks, snapshots).
    supports_copies: ClassVar[bool] = True
    #: The backend implements ``list_record_owners`` (``list_users``, and the listing by an id
    #: prefix unless it overrides ``list_records_by_prefix``).
    supports_owners: ClassVar[bool] = True
    #: A backend made later over the same ``root`` sees what an earlier one wrote (False for
    #: one that keeps its data in its own object, as an in-memory backend does).
    supports_reopening: ClassVar[bool] = True
    #: The backend implements ``truncate_log`` (what an OpenAI Agents SDK ``pop_item`` needs).
    supports_truncation: ClassVar[bool] = True

    def make_backend(self, root: Path, **ttl: Any) -> StoreBackend:
        """A backend keeping its data under ``root`` (an existing directory, empty the first
        time); pass ``ttl`` (``default_ttl=``, ``sliding_ttl=``) on to its constructor."""
        raise NotImplementedError(
            f"{type(self).__name__} must define make_backend(self, root, **ttl) -> StoreBackend"
        )

    # -- fixtures ----------------------------------------------------------------------------------

    @pytest.fixture(autouse=True)
    def _leave_out_unsupported(self, request: pytest.FixtureRequest) -> None:
        """Skip a case that needs a capability this class declares False, saying which."""
        for capability in getattr(request.function, _NEEDS, ()):
            if not getattr(self, capability):
                pytest.skip(
                    f"{type(self).__name__}.{capability} is False, so the cases of "
                    f"{CAPABILITIES[capability]} are left out"
                )

    @pytest.fixture
    def open_store(self, tmp_path: Path) -> Iterator[OpenStore]:
        """Opens stores for one case: ``open_store(name="store", **ttl)`` over the directory
        ``name`` (the same name, the same data); each is closed after the case."""
        opened: list[SessionBase] = []

        def open_store(name: str = "store", **ttl: Any) -> SessionBase:
            root = tmp_path / name
            root.mkdir(exist_ok=True)
            opened.append(SessionBase(self.make_backend(root, **ttl)))
            return opened[-1]

        yield open_store
        for store in opened:
            run(store.close())

    @pytest.fixture
    def store(self, open_store: OpenStore) -> SessionBase:
        """A fresh store over the backend, with its default TTL policy."""
        return open_store()

    @pytest.fixture
    def branches(self, store: SessionBase) -> Branches:
        """Forks, snapshots and the tree, over the store's backend."""
        return Branches(store.backend)

    @pytest.fixture
    def frozen_clock(self) -> Iterator[clock.ManualClock]:
        """Time that moves only when the case says so (``advance``), for every store."""
        with clock.frozen() as now:
            yield now

    # -- AgentScope's save / load ------------------------------------------------------------------

    def test_saved_modules_come_back_after_being_changed(self, store: SessionBase) -> None:
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

    def test_the_second_save_wins(self, store: SessionBase) -> None:
        agent = Friday()
        run(store.save_session_state("s", agent=agent))
        agent.name = "Second"
        run(store.save_session_state("s", agent=agent))
        agent.name = "garbage"
        run(store.load_session_state("s", agent=agent))
        assert agent.name == "Second"

    def test_loading_one_module_of_two_leaves_the_other_alone(self, store: SessionBase) -> None:
        one, two = Friday(), Friday()
        one.name, two.name = "one", "two"
        run(store.save_session_state("s", agent1=one, agent2=two))
        fresh, untouched = Friday(), Friday()
        untouched.name = "untouched"
        run(store.load_session_state("s", agent1=fresh))
        assert fresh.name == "one"
        assert untouched.name == "untouched"

    def test_saving_one_module_keeps_the_others_saved_earlier(self, store: SessionBase) -> None:
        one, two = Friday(), Friday()
        one.name, two.name = "one", "two"
        run(store.save_session_state("s", agent1=one))
        run(store.save_session_state("s", agent2=two))
        loaded = Friday()
        run(store.load_session_state("s", agent1=loaded))
        assert loaded.name == "one"

    def test_loading_a_missing_session_is_a_logged_no_op_when_allowed(
        self, store: SessionBase, caplog: pytest.LogCaptureFixture
    ) -> None:
        agent = Friday()
        with caplog.at_level(logging.INFO, logger="praisonsession"):
            run(store.load_session_state("never_saved", agent=agent))
        assert agent.name == "Friday"
        assert "does not exist" in caplog.text

    def test_loading_a_missing_session_raises_when_not_allowed(self, store: SessionBase) -> None:
        with pytest.raises(SessionNotFoundError, match="never_saved") as caught:
            run(store.load_session_state("never_saved", allow_not_exist=False, agent=Friday()))
        assert isinstance(caught.value, ValueError)  # what AgentScope raised

    def test_load_save_load_lifecycle(self, store: SessionBase) -> None:
        agent = Friday()
        run(store.load_session_state("s", agent=agent))
        assert agent.name == "Friday"
        agent.name = "Saved"
        run(store.save_session_state("s", agent=agent))
        agent.name = "Mutated"
        run(store.load_session_state("s", agent=agent))
        assert agent.name == "Saved"

    def test_an_empty_user_id_is_the_default_user_on_save_and_load(
        self, store: SessionBase
    ) -> None:
        agent = Friday()
        agent.name = "default"
        run(store.save_session_state("s", user_id="", agent=agent))
        loaded = Friday()
        run(store.load_session_state("s", user_id=DEFAULT_USER, agent=loaded))
        assert loaded.name == "default"

    def test_a_module_that_gained_a_state_key_names_it_on_load(self, store: SessionBase) -> None:
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

    def test_a_failing_load_changes_no_module(self, store: SessionBase) -> None:
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

    def test_only_state_modules_can_be_saved(self, store: SessionBase) -> None:
        with pytest.raises(InvalidValueError, match="StateModule"):
            run(store.save_session_state("s", agent={"name": "x"}))
        assert not run(store.exists("s"))

    # -- message logs ------------------------------------------------------------------------------

    def test_a_growing_log_is_appended_and_reads_back_in_order(self, store: SessionBase) -> None:
        agent = Friday()
        for turn in range(5):
            agent.memory.append(say(f"turn {turn}"))
            run(store.save_session_state("s", agent=agent))
        assert run(store.read_messages("s", "", "agent.memory")) == [
            say(f"turn {i}") for i in range(5)
        ]
        loaded = Friday()
        run(store.load_session_state("s", agent=loaded))
        assert list(loaded.memory) == [say(f"turn {i}") for i in range(5)]

    def test_an_edited_or_cleared_log_is_rewritten(self, store: SessionBase) -> None:
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
        self, store: SessionBase
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

    def test_refresh_takes_in_what_others_appended(self, store: SessionBase) -> None:
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

    def test_refresh_leaves_a_log_edited_here_for_its_next_save(self, store: SessionBase) -> None:
        agent = Friday()
        agent.memory.extend([say("a"), say("b")])
        run(store.save_session_state("s", agent=agent))
        run(store.append_messages("s", "", "agent.memory", [say("theirs")]))
        del agent.memory[0]
        assert run(store.refresh_session_state("s", agent=agent)) == 0
        run(store.save_session_state("s", agent=agent))
        assert run(store.read_messages("s", "", "agent.memory")) == [say("b")]

    @pytest.mark.parametrize("edit", LOG_EDITS)
    def test_any_edit_of_a_saved_log_is_saved_exactly(
        self, store: SessionBase, edit: Callable[[MessageLog], object]
    ) -> None:
        agent = Friday()
        agent.memory.extend([say("a"), {"role": "user", "content": "b", "tags": ["x"]}, say("c")])
        run(store.save_session_state("s", agent=agent))
        edit(agent.memory)
        run(store.save_session_state("s", agent=agent))
        assert run(store.read_messages("s", "", "agent.memory")) == agent.memory.to_list()
        reloaded = Friday()
        run(store.load_session_state("s", agent=reloaded))
        assert reloaded.memory == agent.memory.to_list()

    def test_an_edit_of_a_loaded_log_is_saved_exactly(self, store: SessionBase) -> None:
        run(store.save_session_state("s", agent=with_messages(Friday(), "a", "b")))
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

    def test_append_with_an_expected_length_detects_a_conflict(self, store: SessionBase) -> None:
        assert run(store.append_messages("s", "u", "log", [say("a")])) == 1
        assert run(store.append_messages("s", "u", "log", [say("b")], expected_length=1)) == 2
        with pytest.raises(ConflictError):
            run(store.append_messages("s", "u", "log", [say("c")], expected_length=1))
        with pytest.raises(ConflictError):  # past its end
            run(store.append_messages("s", "u", "log", [say("c")], expected_length=3))
        with pytest.raises(ConflictError):  # a log of the session never written
            run(store.append_messages("s", "u", "other", [say("c")], expected_length=2))
        assert run(store.read_messages("s", "u", "log")) == [say("a"), say("b")]
        assert run(store.read_messages("s", "u", "other")) == []
        assert run(store.read_messages("s", "u", "log", 1, 2)) == [say("b")]

    def test_messages_must_be_json_dicts(self, store: SessionBase) -> None:
        with pytest.raises(InvalidValueError, match="dict"):
            not_dicts: Any = ["just text"]  # a wrong type, on purpose
            run(store.append_messages("s", "u", "log", not_dicts))
        with pytest.raises(InvalidValueError):
            run(store.append_messages("s", "u", "log", [{"content": object()}]))
        assert run(store.read_messages("s", "u", "log")) == []

    # -- the end of a log --------------------------------------------------------------------------

    def test_a_negative_start_reads_the_end_of_a_log_as_a_python_slice(
        self, store: SessionBase
    ) -> None:
        """What a conversation's tail needs (the SDK's ``get_items(limit=N)``): one read."""
        messages = [numbered(i) for i in range(5)]
        run(store.append_messages("s", "u", "log", messages))
        key = record_key("s", "u")
        for start, stop in ((-2, None), (-9, None), (-3, 4), (-1, 2), (0, 0), (2, 0), (-5, 5)):
            found = run(store.backend.read_log(key, path="log", start=start, stop=stop))
            assert found == messages[start:stop], (start, stop)
        assert run(store.backend.read_log(key, path="other", start=-2, stop=None)) == []
        assert (
            run(store.backend.read_log(record_key("missing", "u"), path="log", start=-2, stop=None))
            == []
        )

    def test_a_log_and_the_modules_its_messages_name_are_read_together(
        self, store: SessionBase
    ) -> None:
        """``read_log_and_modules``: what ``read_log`` then ``read_modules`` return, the names
        made from the messages read (a LangGraph checkpoint and its pending writes)."""
        key = record_key("s", "u")
        messages = [numbered(i) for i in range(4)]
        run(
            store.backend.write_modules(
                key,
                documents={"doc.2": {"of": 2}, "doc.3": {"of": 3}},
                writes=[LogWrite("log", messages, None), LogWrite("doc.3.log", [say("x")], None)],
            )
        )
        seen: list[list[dict[str, Any]]] = []

        def names(found: list[dict[str, Any]]) -> list[str]:
            seen.append(found)
            return [f"doc.{message['content'].split()[1]}" for message in found]

        found, stored = run(
            store.backend.read_log_and_modules(key, path="log", start=-2, stop=None, names=names)
        )
        assert found == messages[-2:] and seen == [messages[-2:]]
        assert stored is not None
        assert stored.documents == {"doc.2": {"of": 2}, "doc.3": {"of": 3}}
        assert stored == run(store.backend.read_modules(key, names=["doc.2", "doc.3"]))
        assert run(
            store.backend.read_log_and_modules(key, path="log", start=0, stop=1, names=names)
        ) == ([messages[0]], run(store.backend.read_modules(key, names=["doc.0"])))
        assert run(
            store.backend.read_log_and_modules(key, path="log", start=0, stop=2, names=lambda _: [])
        ) == (messages[:2], None)
        missing = record_key("missing", "u")
        assert run(
            store.backend.read_log_and_modules(
                missing, path="log", start=-2, stop=None, names=names
            )
        ) == ([], None)

    def test_a_record_created_with_its_modules_is_made_whole_once(
        self, open_store: OpenStore, frozen_clock: clock.ManualClock
    ) -> None:
        """``create_record_with_modules``: the record with its metadata, documents and logs
        (what a framework's "create a session with its state" writes), only if it is not
        live; a second creation, or a log write expecting messages, changes nothing."""
        backend = open_store(default_ttl=10).backend
        key = record_key("s", "u")
        lengths = run(
            backend.create_record_with_modules(
                key,
                metadata={"doc": {"v": 1}},
                documents={"doc": {"v": 1}},
                writes=[LogWrite("doc.log", [], 0), LogWrite("doc.more", [say("a")], -1)],
            )
        )
        assert lengths == {"doc.log": 0, "doc.more": 1}
        info = live(run(backend.read_record(key)))
        assert info.metadata == {"doc": {"v": 1}} and expires_in(info) == pytest.approx(10)
        made = StoredModules({"doc": {"v": 1}}, {"doc.more": [say("a")]})
        assert run(backend.read_modules(key, names=["doc"])) in (
            made,
            made._replace(logs={**made.logs, "doc.log": []}),  # an empty log may be kept
        )
        for again in ({"doc": {"v": 2}}, {}):
            with pytest.raises(ConflictError):
                run(
                    backend.create_record_with_modules(
                        key, metadata=again, documents=again, writes=[LogWrite("x", [], -1)]
                    )
                )
        assert live(run(backend.read_record(key))).metadata == {"doc": {"v": 1}}
        assert run(backend.read_log(key, path="x", start=0, stop=None)) == []
        other = record_key("t", "u")
        with pytest.raises(ConflictError):  # a new record's logs hold no message
            run(
                backend.create_record_with_modules(
                    other, metadata={}, documents={}, writes=[LogWrite("log", [say("b")], 2)]
                )
            )
        assert run(backend.read_record(other)) is None
        frozen_clock.advance(11)  # expired: created afresh, nothing of the old one kept
        run(backend.create_record_with_modules(key, metadata={}, documents={"new": {}}, writes=[]))
        assert live(run(backend.read_record(key))).metadata == {}
        assert run(backend.read_modules(key, names=["doc", "new"])) == StoredModules(
            {"new": {}}, {}
        )

    def test_modules_and_the_messages_their_documents_name_are_read_together(
        self, store: SessionBase
    ) -> None:
        """``read_modules_and_log``: what ``read_modules`` then ``read_log`` return, the span
        made from the documents read (a LangGraph checkpoint's position, then its record)."""
        key = record_key("s", "u")
        messages = [numbered(i) for i in range(4)]
        run(
            store.backend.write_modules(
                key,
                documents={"at.2": {"at": 2}, "at.x": {"at": None}, "w": {"w": [1]}},
                writes=[LogWrite("log", messages, None), LogWrite("w.log", [say("x")], None)],
            )
        )
        seen: list[dict[str, Any]] = []

        def span(documents: dict[str, Any]) -> tuple[int, int | None] | None:
            seen.append(documents)
            at = next((d["at"] for n, d in documents.items() if n.startswith("at.")), None)
            return None if at is None else (at, at + 1)

        stored, found = run(
            store.backend.read_modules_and_log(key, names=["at.2", "w"], path="log", span=span)
        )
        assert found == [messages[2]]
        assert stored == run(store.backend.read_modules(key, names=["at.2", "w"]))
        assert stored is not None and seen == [stored.documents]
        assert stored.logs == {"w.log": [say("x")]}
        assert run(
            store.backend.read_modules_and_log(key, names=["at.x"], path="log", span=span)
        ) == (run(store.backend.read_modules(key, names=["at.x"])), [])
        assert run(
            store.backend.read_modules_and_log(
                key, names=["none"], path="log", span=lambda _: (-2, None)
            )
        ) == (run(store.backend.read_modules(key, names=["none"])), messages[-2:])
        missing = record_key("missing", "u")
        assert run(
            store.backend.read_modules_and_log(missing, names=["at.2"], path="log", span=span)
        ) == (None, [])

    def test_the_logs_below_a_module_are_found_among_many_others(self, store: SessionBase) -> None:
        """``read_modules`` returns the logs named ``name`` or ``name.*`` of the documents read,
        however many logs other modules hold, names sharing its first letters left out, and
        logs added after a read (by either write) found by the next."""
        key = record_key("s", "u")
        names = ["a", "ab", "a-b", "a/b", "b"]
        logs = ["a", "a.x", "a.y.z", "ab.x", "a-b.x", "a/b.x"]
        writes = [LogWrite(p, [say(p)], None) for p in logs]
        writes += [LogWrite(f"b.{i}", [numbered(i)], None) for i in range(300)]
        documents = {n: {"n": n} for n in names}
        run(store.backend.write_modules(key, documents=documents, writes=writes))

        def below(*wanted: str) -> dict[str, list[dict[str, Any]]]:
            stored = run(store.backend.read_modules(key, names=list(wanted)))
            assert stored is not None and set(stored.documents) == set(wanted)
            return stored.logs

        assert below("a", "a-b", "a") == {p: [say(p)] for p in ["a", "a.x", "a.y.z", "a-b.x"]}
        assert below("ab", "a/b") == {"ab.x": [say("ab.x")], "a/b.x": [say("a/b.x")]}
        assert below("b") == {f"b.{i}": [numbered(i)] for i in range(300)}
        run(store.backend.append_log(key, write=LogWrite("a.more", [say("more")], -1)))
        write = LogWrite("ab.more", [say("ab")], None)
        run(store.backend.write_modules(key, documents={}, writes=[write]))
        assert set(below("a")) == {"a", "a.x", "a.y.z", "a.more"}
        assert below("ab") == {"ab.x": [say("ab.x")], "ab.more": [say("ab")]}

    def _modules_and_logs(self, store: SessionBase) -> Callable[..., dict[str, Any]]:
        """Module documents ``a``, ``a.b``, ``a.b.c`` and ``a.b-c.d``, logs below them and
        below ``g`` (no document), and what ``read_modules`` finds of the names it is given
        (the documents checked: those of the names)."""
        key = record_key("s", "u")
        logs = ["a.b", "a.b.c", "a.b.c.d", "a.bc", "a.b-c", "a.x", "a", "g", "g.log"]
        documents = {n: {"n": n} for n in ["a", "a.b", "a.b.c", "a.b-c.d"]}
        writes = [LogWrite(p, [say(p)], None) for p in logs]
        run(store.backend.write_modules(key, documents=documents, writes=writes))

        def below(*wanted: str) -> dict[str, list[dict[str, Any]]]:
            stored = run(store.backend.read_modules(key, names=list(wanted)))
            assert stored is not None
            assert stored.documents == {n: documents[n] for n in wanted if n in documents}
            return stored.logs

        return below

    def test_a_module_named_with_dots_has_the_logs_named_after_it(self, store: SessionBase) -> None:
        """A log lies below a module when it is named ``name`` or ``name.*``, whatever dots the
        module's name holds: ``a.b.c`` lies below ``a``, ``a.b`` and ``a.b.c``."""
        below = self._modules_and_logs(store)
        key = record_key("s", "u")
        logs = {p: [say(p)] for p in ["a.b", "a.b.c", "a.b.c.d"]}
        assert below("a.b") == logs
        assert below("a.b.c") == {p: [say(p)] for p in ["a.b.c", "a.b.c.d"]}
        assert below("a.b-c.d") == {}
        assert set(below("a")) == {"a", "a.b", "a.b.c", "a.b.c.d", "a.bc", "a.b-c", "a.x"}
        run(store.backend.append_log(key, write=LogWrite("a.b.more", [say("more")], -1)))
        assert below("a.b") == {**logs, "a.b.more": [say("more")]}

    def test_a_name_without_a_document_brings_no_logs(self, store: SessionBase) -> None:
        """``read_modules`` returns the logs below the documents it found: a name with none
        brings no log, though its logs stay where they are for ``read_log``, and come with
        the document once it is written."""
        below = self._modules_and_logs(store)
        key = record_key("s", "u")
        assert below("g") == {} and below("a.b", "g") == below("a.b")
        assert run(store.backend.read_log(key, path="g.log", start=0, stop=None)) == [say("g.log")]
        run(store.backend.write_modules(key, documents={"g": {"n": "g"}}, writes=[]))
        stored = run(store.backend.read_modules(key, names=["g"]))
        assert stored == StoredModules({"g": {"n": "g"}}, {p: [say(p)] for p in ["g", "g.log"]})

    def test_names_one_below_another_bring_each_log_once(self, store: SessionBase) -> None:
        """Two names asked for, one below the other (``a.b`` and ``a.b.c``): the logs below
        both come once, each message once."""
        below = self._modules_and_logs(store)
        assert below("a.b.c", "a.b") == below("a.b") == below("a.b", "a.b.c", "a.b")
        assert below("a", "a.b") == below("a") and below("a.x", "a") == below("a")
        assert all(len(messages) == 1 for messages in below("a.b.c", "a", "a.b").values())

    @_needs("supports_truncation")
    def test_a_truncated_log_keeps_its_head_and_hands_back_its_tail(
        self, store: SessionBase
    ) -> None:
        run(store.append_messages("s", "u", "log", [numbered(i) for i in range(5)]))
        version = live(run(store.get_info("s", "u"))).version
        key = record_key("s", "u")
        removed = run(store.backend.truncate_log(key, path="log", length=3, expected=None))
        assert removed == [numbered(3), numbered(4)]
        assert run(store.read_messages("s", "u", "log")) == [numbered(i) for i in range(3)]
        assert run(store.message_count("s", "u", "log")) == 3
        assert live(run(store.get_info("s", "u"))).version == version + 1
        assert run(store.append_messages("s", "u", "log", [say("next")])) == 4  # sequence goes on
        assert run(store.read_messages("s", "u", "log", 3)) == [say("next")]
        assert (
            run(store.backend.truncate_log(key, path="log", length=9, expected=None)) == []
        )  # nothing beyond 9

    @_needs("supports_truncation")
    def test_a_truncation_that_expects_another_length_changes_nothing(
        self, store: SessionBase
    ) -> None:
        run(store.append_messages("s", "u", "log", [numbered(i) for i in range(4)]))
        key = record_key("s", "u")
        with pytest.raises(ConflictError):
            run(store.backend.truncate_log(key, path="log", length=3, expected=5))
        assert run(store.message_count("s", "u", "log")) == 4
        assert run(store.backend.truncate_log(key, path="log", length=3, expected=4)) == [
            numbered(3)
        ]
        with pytest.raises(SessionNotFoundError):
            run(
                store.backend.truncate_log(
                    record_key("missing", "u"), path="log", length=0, expected=None
                )
            )

    @_needs("supports_truncation")
    def test_pops_from_many_threads_never_take_the_same_message_twice(
        self, store: SessionBase
    ) -> None:
        """What ``pop_item`` does: count, then remove the last only if the log still holds
        that many; a conflict means another writer popped first, so count again."""
        run(store.append_messages("s", "u", "log", [numbered(i) for i in range(40)]))
        key = record_key("s", "u")
        popped: list[dict[str, Any]] = []
        lock = threading.Lock()

        def pop_until_empty() -> None:
            while True:
                held = run(store.message_count("s", "u", "log"))
                if held == 0:
                    return
                try:
                    removed = run(
                        store.backend.truncate_log(key, path="log", length=held - 1, expected=held)
                    )
                except ConflictError:
                    continue
                with lock:
                    popped.extend(removed)

        threads = [threading.Thread(target=pop_until_empty) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(m["content"] for m in popped) == sorted(
            numbered(i)["content"] for i in range(40)
        )
        assert run(store.message_count("s", "u", "log")) == 0

    # -- sessions of every user --------------------------------------------------------------------

    @_needs("supports_owners")  # the default listing by prefix pages through the owners
    def test_sessions_of_every_user_are_listed_by_an_id_prefix_page_by_page(
        self, store: SessionBase
    ) -> None:
        for user in ("cy", "amy", "bob"):
            for session in ("app1/b", "app1/a", "app2/a", "app10/a", "other"):
                run(store.create_session(session, user))
        run(store.create_session("app1/c", "dan", ttl=10))
        run(store.expire("app1/c", "dan"))  # gone for every reader, listings included
        if self.supports_copies:  # a snapshot is a record of the reserved owner: never listed
            run(Branches(store.backend).snapshot("app1/a", "amy"))
        listed: list[tuple[str, str]] = []
        after: tuple[str, str] | None = None
        while True:
            page = run(store.backend.list_records_by_prefix("app1/", limit=2, after=after))
            listed.extend((info.session_id, info.user_id) for info in page)
            if len(page) < 2:
                break
            after = listed[-1]
        assert listed == [
            (session, user) for session in ("app1/a", "app1/b") for user in ("amy", "bob", "cy")
        ]
        everything = run(store.backend.list_records_by_prefix("", limit=100, after=None))
        assert [info.session_id for info in everything] == sorted(
            info.session_id for info in everything
        )
        assert len(everything) == 15  # no snapshot, no expired session
        assert run(store.backend.list_records_by_prefix("nothing/", limit=5, after=None)) == []

    # -- key-value state ---------------------------------------------------------------------------

    def test_state_patch_replace_delete_and_nested_values(self, store: SessionBase) -> None:
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

    def test_a_name_holding_a_lone_surrogate_is_refused_and_a_value_kept_exactly(
        self, store: SessionBase
    ) -> None:
        """No backend can store such a name (SQLite and Redis encode text as UTF-8): every
        caller's write of one, under the API or through ``store.backend``, is InvalidIdError
        before anything is written; a value holding one is stored exactly."""
        key, bad = record_key("s", "u"), "half \udc80"
        backend = store.backend
        for write in (
            lambda: backend.patch_record_state(
                key,
                updates={bad: 1},
                deletes=[],
                replace=False,
                expected_version=None,
                must_exist=False,
            ),
            lambda: backend.increment_record_value(
                key, name=bad, amount=1, default=0, must_exist=False
            ),
            lambda: backend.write_modules(key, documents={bad: {}}, writes=[]),
            lambda: backend.append_log(key, write=LogWrite(bad, [{"a": 1}], -1)),
            lambda: store.patch_state("s", "u", {bad: 1}),
        ):
            with pytest.raises(InvalidIdError):
                run(write())
        assert run(backend.read_record(key)) is None
        run(store.patch_state("s", "u", {"text": bad}))
        run(store.append_messages("s", "u", "log", [{"content": bad}]))
        assert run(store.get_value("s", "u", "text")) == bad
        assert run(store.read_messages("s", "u", "log")) == [{"content": bad}]

    def test_a_state_narrowed_by_fields_keeps_every_value_that_holds_them(
        self, store: SessionBase
    ) -> None:
        """``read_record_state_matching`` may leave out values that miss a field, never one
        that holds them all, and hands each value back as stored. Python's equality decides
        (``1 == 1.0 == True``); a value that is no object, or a field it cannot test, is kept."""
        key, backend = record_key("s", "u"), store.backend
        state = {
            "int": {"value": {"n": 1, "tag": "é x"}},
            "float": {"value": {"n": 1.0, "tag": "é x"}},
            "true": {"value": {"n": True, "tag": "é x", "deep": {"k": "v"}}},
            "other n": {"value": {"n": 2, "tag": "é x"}},
            "other tag": {"value": {"n": 1, "tag": "é y"}},
            "text n": {"value": {"n": "1", "tag": "é x"}},
            "no n": {"value": {"tag": "é x"}},
            "surrogate": {"value": {"n": 1, "tag": "é x", "odd": "\udc80"}},
            "not an object": "plain",
            "a list": [1, 2],
        }
        run(store.patch_state("s", "u", state))
        holding = {"int", "float", "true", "surrogate"}

        def narrowed(*fields: tuple[tuple[str, ...], Any]) -> dict[str, Any]:
            return run(backend.read_record_state_matching(key, fields=fields, must_exist=True))

        for fields in (
            ((("value", "n"), 1), (("value", "tag"), "é x")),
            ((("value", "n"), True), (("value", "tag"), "é x")),
            ((("value", "n"), 1.0),),
        ):
            found = narrowed(*fields)
            assert holding <= set(found), fields
            assert {"not an object", "a list"} <= set(found)
            assert all(found[name] == state[name] for name in found)
        # a lone surrogate can be bound as text by no SQL driver: that field narrows nothing
        found = narrowed((("value", "deep", "k"), "v"), (("value", "odd"), "\udc80"))
        assert "true" in found and all(found[name] == state[name] for name in found)
        found = narrowed((("value", "n"), 2**70), (("value", "n"), 1))  # no value holds both
        assert {"not an object", "a list"} <= set(found)
        assert all(found[name] == state[name] for name in found)
        assert narrowed() == state  # no field: the whole state
        missing = record_key("missing", "u")
        assert (
            run(backend.read_record_state_matching(missing, fields=[(("n",), 1)], must_exist=False))
            == {}
        )
        with pytest.raises(SessionNotFoundError):
            run(backend.read_record_state_matching(missing, fields=[(("n",), 1)], must_exist=True))

    def test_a_state_narrowed_to_the_newest_keeps_the_greatest_of_those_matching(
        self, store: SessionBase
    ) -> None:
        """With ``newest=(path, count)`` a backend may also leave out all but the ``count``
        values greatest at the path among those holding the fields (ties by key), never one
        of those, and never a value that is no object."""
        key, backend = record_key("s", "u"), store.backend
        state = {
            "a": {"at": 5, "kind": "x"},
            "b": {"at": 9, "kind": "y"},
            "c": {"at": 9, "kind": "x"},
            "d": {"at": 1.5, "kind": "x"},
            "e": {"at": 7, "kind": "x"},
            "plain": "text",
        }
        run(store.patch_state("s", "u", state))

        def newest(count: int, *fields: tuple[tuple[str, ...], Any]) -> dict[str, Any]:
            return run(
                backend.read_record_state_matching(
                    key, fields=fields, must_exist=False, newest=(("at",), count)
                )
            )

        for count, fields, greatest in (
            (3, (), {"b", "c", "e"}),
            (1, (), {"b"}),  # b and c tie: the first key
            (2, ((("kind",), "x"),), {"c", "e"}),
            (9, ((("kind",), "x"),), {"a", "c", "d", "e"}),
            (0, (), set()),
        ):
            found = newest(count, *fields)
            assert greatest | {"plain"} <= set(found), (count, fields)
            assert all(found[name] == state[name] for name in found)

    def test_increment_adds_and_returns_the_new_value(self, store: SessionBase) -> None:
        run(store.patch_state("s", "u", {"score": 10}))
        assert run(store.increment("s", "u", "score", 5)) == 15
        assert run(store.increment("s", "u", "fresh", 2, default=100)) == 102
        assert run(store.increment("s", "u", "ratio", 0.5)) == 0.5
        assert run(store.get_state("s", "u")) == {"score": 15, "fresh": 102, "ratio": 0.5}

    def test_incrementing_a_non_number_fails_and_changes_nothing(self, store: SessionBase) -> None:
        run(store.patch_state("s", "u", {"name": "Ada"}))
        with pytest.raises(InvalidValueError, match="not a number"):
            run(store.increment("s", "u", "name"))
        with pytest.raises(InvalidValueError):
            text: Any = "1"  # a wrong type, on purpose
            run(store.increment("s", "u", "n", amount=text))
        assert run(store.get_state("s", "u")) == {"name": "Ada"}

    def test_increments_from_many_threads_are_all_counted(self, store: SessionBase) -> None:
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
        self, store: SessionBase, value: Any
    ) -> None:
        run(store.patch_state("s", "u", {"kept": 1}))
        with pytest.raises(InvalidValueError):
            run(store.patch_state("s", "u", {"bad": value, "other": 2}))
        assert run(store.get_state("s", "u")) == {"kept": 1}

    def test_circular_values_are_refused(self, store: SessionBase) -> None:
        loop: list[Any] = []
        loop.append(loop)
        with pytest.raises(InvalidValueError, match="itself"):
            run(store.patch_state("s", "u", {"loop": loop}))

    def test_compare_and_set_wins_only_on_the_expected_version(self, store: SessionBase) -> None:
        version = run(store.patch_state("s", "u", {"n": 1}))
        assert live(run(store.get_info("s", "u"))).version == version
        new_version = run(store.compare_and_set("s", "u", version, {"n": 2}))
        assert new_version > version
        with pytest.raises(ConflictError, match="version"):
            run(store.compare_and_set("s", "u", version, {"n": 3}))
        assert run(store.get_value("s", "u", "n")) == 2

    def test_compare_and_set_on_a_missing_session_expects_version_zero(
        self, store: SessionBase
    ) -> None:
        with pytest.raises(ConflictError, match="version 0"):
            run(store.compare_and_set("new", "u", 3, {"n": 1}))
        assert not run(store.exists("new", "u"))
        assert run(store.compare_and_set("new", "u", 0, {"n": 1})) >= 1
        assert run(store.get_value("new", "u", "n")) == 1

    def test_every_write_bumps_the_version(self, store: SessionBase) -> None:
        v1 = run(store.patch_state("s", "u", {"n": 1}))
        run(store.increment("s", "u", "n"))
        run(store.append_messages("s", "u", "log", [say("x")]))
        assert live(run(store.get_info("s", "u"))).version >= v1 + 2

    # -- ids and isolation -------------------------------------------------------------------------

    @pytest.mark.parametrize(
        "bad",
        ["", "x" * 257, "nul\x00byte", "tab\tinside", "lone\ud800surrogate", None, 42],
        ids=["empty", "too-long", "nul", "control", "surrogate", "none", "int"],
    )
    def test_invalid_session_ids_are_refused(self, store: SessionBase, bad: Any) -> None:
        with pytest.raises(InvalidIdError):
            run(store.patch_state(bad, "u", {"a": 1}))

    def test_long_unicode_and_path_like_ids_are_stored_apart(self, store: SessionBase) -> None:
        ids = [
            "x" * 256,
            "Chat",
            "chat",
            "../evil",
            "evil",
            "a/b",
            "a%2Fb",
            "日本語",
            "discord:dm:1",
        ]
        for index, session_id in enumerate(ids):
            run(store.patch_state(session_id, "u", {"i": index}))
        for index, session_id in enumerate(ids):
            assert run(store.get_value(session_id, "u", "i")) == index
        listed = [info.session_id for info in run(store.list_sessions("u", limit=100))]
        assert sorted(listed) == sorted(ids)

    def test_underscore_joined_ids_do_not_collide(self, store: SessionBase) -> None:
        run(store.patch_state("c", "a_b", {"owner": "a_b + c"}))
        run(store.patch_state("b_c", "a", {"owner": "a + b_c"}))
        assert run(store.get_value("c", "a_b", "owner")) == "a_b + c"
        assert run(store.get_value("b_c", "a", "owner")) == "a + b_c"

    def test_users_never_see_or_delete_each_others_sessions(self, store: SessionBase) -> None:
        run(store.patch_state("same", "alice", {"secret": "alice's"}))
        run(store.patch_state("same", "bob", {"secret": "bob's"}))
        assert run(store.get_value("same", "alice", "secret")) == "alice's"
        assert [i.session_id for i in run(store.list_sessions("bob"))] == ["same"]
        assert run(store.delete_session("same", "bob")) is True
        assert run(store.get_value("same", "alice", "secret")) == "alice's"
        assert run(store.list_sessions("bob")) == []

    # -- text and formats --------------------------------------------------------------------------

    def test_lone_surrogates_and_unicode_round_trip_exactly(self, store: SessionBase) -> None:
        odd = "lone \ud800 high, \udfff low, emoji 🎉, accents é, nul \x00 inside"
        key = "日本語 key 🎉"
        run(store.patch_state("s", "u", {"text": odd, key: "as a key"}))
        run(store.append_messages("s", "u", "log", [say(odd)]))
        assert run(store.get_value("s", "u", "text")) == odd
        assert run(store.get_value("s", "u", key)) == "as a key"
        assert run(store.read_messages("s", "u", "log")) == [say(odd)]

    def test_every_record_carries_the_format_version(self, store: SessionBase) -> None:
        info = run(store.create_session("s", "u"))
        assert info.format == FORMAT_VERSION
        assert [i.format for i in run(store.list_sessions("u"))] == [FORMAT_VERSION]

    # -- sessions, TTL -----------------------------------------------------------------------------

    def test_list_is_paged_by_session_id(self, store: SessionBase) -> None:
        for n in range(7):
            run(store.create_session(f"s{n}", "u"))
        first = run(store.list_sessions("u", limit=3))
        second = run(store.list_sessions("u", limit=3, after=first[-1].session_id))
        third = run(store.list_sessions("u", limit=3, after=second[-1].session_id))
        assert [i.session_id for i in first + second + third] == [f"s{n}" for n in range(7)]
        with pytest.raises(InvalidValueError):
            run(store.list_sessions("u", limit=0))

    @_needs("supports_owners")
    def test_list_users_names_each_user_once_and_sorted(self, store: SessionBase) -> None:
        assert run(store.list_users()) == []
        odd = "x" * 200 + ":*?[]{}%41\\ ünï/../"  # past the file-name limit, glob and key syntax
        for user, session_id in [
            ("bob", "s1"),
            ("ada", "s1"),
            ("bob", "s2"),
            (odd, "s"),
            ("", "s"),
        ]:
            run(store.create_session(session_id, user))
        assert run(store.list_users()) == sorted(["ada", "bob", odd, DEFAULT_USER])

    @_needs("supports_owners", "supports_copies")
    def test_list_users_leaves_out_snapshots_and_users_whose_sessions_are_all_gone(
        self, store: SessionBase, branches: Branches, frozen_clock: clock.ManualClock
    ) -> None:
        run(store.create_session("kept", "ada"))
        run(branches.snapshot("kept", "ada", label="before"))  # kept by a reserved owner
        run(store.create_session("short", "bob", ttl=10))
        run(store.create_session("gone", "cy"))
        run(store.delete_session("gone", "cy"))
        assert run(store.list_users()) == ["ada", "bob"]
        frozen_clock.advance(11)
        assert run(store.list_users()) == ["ada"]  # bob's only session expired, not yet purged

    def test_delete_removes_everything_once(self, store: SessionBase) -> None:
        agent = Friday()
        agent.memory.append(say("x"))
        run(store.save_session_state("s", "u", agent=agent))
        run(store.patch_state("s", "u", {"a": 1}))
        assert run(store.delete_session("s", "u")) is True
        assert run(store.delete_session("s", "u")) is False
        assert run(store.get_state("s", "u")) == {}
        assert run(store.read_messages("s", "u", "agent.memory")) == []
        assert not run(store.exists("s", "u"))

    def test_a_record_without_state_is_deleted_and_one_with_state_kept(
        self, store: SessionBase
    ) -> None:
        """``delete_record_without_state``: a record whose state holds a key stays whole;
        once its last key went, it is removed, once."""
        backend, key = store.backend, record_key("s", "u")
        assert run(backend.delete_record_without_state(key)) is False  # none
        run(store.patch_state("s", "u", {"a": 1, "b": 2}))
        run(store.patch_state("s", "u", {}, delete=["a"]))
        assert run(backend.delete_record_without_state(key)) is False
        assert run(store.get_state("s", "u")) == {"b": 2}
        run(store.patch_state("s", "u", {}, delete=["b"]))
        assert run(store.exists("s", "u"))  # empty, still there
        assert run(backend.delete_record_without_state(key)) is True
        assert not run(store.exists("s", "u"))
        assert run(backend.delete_record_without_state(key)) is False

    def test_dropping_the_last_keys_of_a_state_removes_the_record(self, store: SessionBase) -> None:
        """``drop_record_state``: the keys go; the record goes with the last of them, and
        stays (its version moved on) while its state holds another."""
        backend, key = store.backend, record_key("s", "u")
        run(store.patch_state("s", "u", {"a": 1, "b": 2, "c": 3}))
        version = live(run(backend.read_record(key))).version
        assert run(backend.drop_record_state(key, names=["a", "never"])) is False
        assert run(store.get_state("s", "u")) == {"b": 2, "c": 3}
        assert live(run(backend.read_record(key))).version > version
        assert run(backend.drop_record_state(key, names=["b", "c"])) is True
        assert not run(store.exists("s", "u"))
        assert run(backend.drop_record_state(key, names=["b"])) is False
        assert not run(store.exists("s", "u"))  # a missing record is not made

    def test_metadata_and_timestamps(self, store: SessionBase) -> None:
        before = time.time()
        info = run(store.create_session("s", "u", metadata={"title": "first chat"}))
        assert before <= info.created_at <= info.updated_at <= time.time()
        assert run(store.set_metadata("s", "u", topic="maths")).metadata == {
            "title": "first chat",
            "topic": "maths",
        }

    def test_keys_are_checked_like_ids(self, store: SessionBase) -> None:
        for bad in ("", "nul\x00", "lone\ud800"):
            with pytest.raises(InvalidIdError):
                run(store.patch_state("s", "u", {bad: 1}))
        assert run(store.get_state("s", "u")) == {}

    def test_an_expired_session_is_gone_for_every_reader(
        self, store: SessionBase, frozen_clock: clock.ManualClock
    ) -> None:
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
        self, store: SessionBase, frozen_clock: clock.ManualClock
    ) -> None:
        run(store.create_session("s", "u", ttl=0.2))
        run(store.patch_state("s", "u", {"old": 1}))
        frozen_clock.advance(0.35)
        run(store.patch_state("s", "u", {"new": 2}))
        assert run(store.get_state("s", "u")) == {"new": 2}

    def test_activity_slides_the_ttl(
        self, store: SessionBase, frozen_clock: clock.ManualClock
    ) -> None:
        run(store.create_session("s", "u", ttl=0.6))
        for _ in range(4):
            frozen_clock.advance(0.25)
            run(store.get_state("s", "u"))  # a read is activity too
        assert run(store.exists("s", "u"))  # 1.0 s after creation, alive thanks to activity

    def test_without_sliding_the_ttl_counts_from_creation(
        self, open_store: OpenStore, frozen_clock: clock.ManualClock
    ) -> None:
        fixed = open_store("fixed", sliding_ttl=False)
        run(fixed.create_session("s", "u", ttl=0.5))
        frozen_clock.advance(0.3)
        run(fixed.patch_state("s", "u", {"a": 1}))
        frozen_clock.advance(0.3)
        assert not run(fixed.exists("s", "u"))

    def test_default_ttl_applies_to_new_sessions(self, open_store: OpenStore) -> None:
        timed = open_store("timed", default_ttl=60)
        info = run(timed.create_session("s", "u"))
        assert info.ttl == 60 and 59 < expires_in(info) <= 60

    def test_touch_renews_and_expire_ends(self, store: SessionBase) -> None:
        run(store.create_session("s", "u", ttl=0.3))
        info = live(run(store.touch("s", "u", ttl=100)))
        assert info.ttl == 100 and expires_in(info) > 99
        assert run(store.expire("s", "u")) is True
        assert not run(store.exists("s", "u"))
        assert run(store.touch("s", "u")) is None

    def test_purge_removes_only_expired_sessions(
        self, store: SessionBase, frozen_clock: clock.ManualClock
    ) -> None:
        run(store.create_session("short1", "u", ttl=0.1))
        run(store.create_session("short2", "v", ttl=0.1))
        run(store.create_session("long", "u", ttl=100))
        frozen_clock.advance(0.25)
        assert run(store.purge_expired()) == 2
        assert [i.session_id for i in run(store.list_sessions("u"))] == ["long"]

    def test_negative_ttl_is_refused(self, store: SessionBase) -> None:
        with pytest.raises(ValueError, match="non-negative"):
            run(store.create_session("s", "u", ttl=-1))

    def test_close_is_idempotent_and_the_store_reopens(self, store: SessionBase) -> None:
        run(store.patch_state("s", "u", {"a": 1}))
        run(store.close())
        run(store.close())
        assert run(store.get_value("s", "u", "a")) == 1

    def test_async_with_closes_the_store(self, store: SessionBase) -> None:
        async def use() -> Any:
            async with store as opened:
                assert opened is store
                await store.patch_state("s", "u", {"a": 1})
                return await store.get_value("s", "u", "a")

        assert run(use()) == 1

    @_needs("supports_reopening")
    def test_a_store_opened_later_sees_what_was_written(
        self, store: SessionBase, open_store: OpenStore
    ) -> None:
        agent = with_messages(Friday(), "kept")
        agent.name = "Saved"
        run(store.save_session_state("s", "u", agent=agent))
        run(store.patch_state("s", "u", {"a": 1}))
        info = run(store.create_session("s", "u", ttl=600, metadata={"title": "kept"}))
        run(store.close())

        later = open_store()  # the same directory: the same data
        loaded = Friday()
        run(later.load_session_state("s", "u", agent=loaded))
        assert (loaded.name, loaded.memory.to_list()) == ("Saved", [say("kept")])
        assert run(later.get_state("s", "u")) == {"a": 1}
        reopened = live(run(later.get_info("s", "u")))
        assert (reopened.version, reopened.ttl, reopened.metadata) == (
            info.version,
            600,
            {"title": "kept"},
        )

    def test_expire_ends_a_session_the_way_its_ttl_would(self, store: SessionBase) -> None:
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

    # -- logs of a session -------------------------------------------------------------------------

    @_needs("supports_copies")
    def test_list_logs_names_each_log_with_its_length(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store)
        run(
            store.append_messages(
                "parent", "u", "agent:Assistant.history", [numbered(1), numbered(2)]
            )
        )
        assert run(branches.list_logs("parent", "u")) == {
            "agent.history": 6,
            "agent.notes": 1,
            "agent:Assistant.history": 2,
        }
        with pytest.raises(SessionNotFoundError):
            run(branches.list_logs("nobody", "u"))

    # -- forks -------------------------------------------------------------------------------------

    @_needs("supports_copies")
    def test_a_fork_copies_everything_and_records_its_parent(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store)
        info = run(branches.fork("parent", "u", "child"))
        assert (info.session_id, info.user_id, info.version) == ("child", "u", 1)
        assert everything(store, "child") == everything(store, "parent")
        assert run(branches.parent_of("child", "u")) == ("parent", "u")
        assert run(branches.parent_of("parent", "u")) is None
        assert [i.session_id for i in run(branches.children_of("parent", "u"))] == ["child"]

    @_needs("supports_copies")
    def test_parent_and_child_are_independent_afterwards(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store)
        run(branches.fork("parent", "u", "child"))
        before = everything(store, "parent")
        run(store.patch_state("child", "u", {"score": 99}))
        run(store.append_messages("child", "u", "agent.history", [numbered(100)]))
        assert everything(store, "parent") == before
        run(store.increment("parent", "u", "score", 1))
        assert run(store.get_value("child", "u", "score")) == 99
        assert len(run(store.read_messages("child", "u", "agent.history"))) == 7

    @_needs("supports_copies")
    def test_a_fork_at_a_message_cuts_that_log_only(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store)
        run(branches.fork("parent", "u", "early", at_message=("agent.history", 2)))
        copied = everything(store, "early")
        assert copied["history"] == [numbered(0), numbered(1)]
        assert copied["notes"] == [{"role": "note", "content": "remember"}]
        run(branches.fork("parent", "u", "empty", at_message=("agent.history", 0)))
        assert everything(store, "empty")["history"] == []

    @_needs("supports_copies")
    def test_a_fork_for_another_user_keeps_both_apart(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store, "guest-chat", "guest")
        run(branches.fork("guest-chat", "guest", "chat", "ada"))
        assert everything(store, "chat", "ada") == everything(store, "guest-chat", "guest")
        assert run(branches.parent_of("chat", "ada")) == ("guest-chat", "guest")
        assert [i.session_id for i in run(store.list_sessions("ada"))] == ["chat"]
        (root,) = run(branches.tree("ada"))  # its parent is another user's: a root here
        assert root.info.session_id == "chat" and root.children == []

    @_needs("supports_copies")
    def test_a_fork_never_overwrites_nor_loops(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store)
        run(store.patch_state("taken", "u", {"mine": True}))
        with pytest.raises(ConflictError):
            run(branches.fork("parent", "u", "taken"))
        assert run(store.get_state("taken", "u")) == {"mine": True}
        with pytest.raises(ConflictError):
            run(branches.fork("parent", "u", "parent"))
        run(branches.fork("parent", "u", "child"))
        run(branches.fork("child", "u", "grandchild"))
        run(store.delete_session("parent", "u"))
        with pytest.raises(ConflictError, match="ancestor"):  # "parent" would close a loop
            run(branches.fork("grandchild", "u", "parent"))

    @_needs("supports_copies")
    def test_forking_what_is_not_there_says_so(
        self, store: SessionBase, branches: Branches, frozen_clock: clock.ManualClock
    ) -> None:
        with pytest.raises(SessionNotFoundError):
            run(branches.fork("nothing", "u", "child"))
        run(store.create_session("brief", "u", ttl=1))
        frozen_clock.advance(2)
        with pytest.raises(SessionExpiredError):
            run(branches.fork("brief", "u", "child"))
        assert not run(store.exists("child", "u"))

    @_needs("supports_copies")
    @pytest.mark.parametrize("cut", [("log",), ("log", -1), ("log", "3"), "log:3", ("", 3)])
    def test_a_bad_cut_is_refused(self, store: SessionBase, branches: Branches, cut: Any) -> None:
        seed(store)
        with pytest.raises((InvalidValueError, Exception)) as caught:
            run(branches.fork("parent", "u", "child", at_message=cut))
        assert "at_message" in str(caught.value) or "log name" in str(caught.value)
        assert not run(store.exists("child", "u"))

    # -- snapshots ---------------------------------------------------------------------------------

    @_needs("supports_copies")
    def test_a_snapshot_survives_edits_and_truncation_and_restores(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store)
        before = everything(store, "parent")
        version = live(run(store.get_info("parent", "u"))).version
        snapshot = run(branches.snapshot("parent", "u", label="before the edit"))
        assert (snapshot.label, snapshot.version, snapshot.messages) == (
            "before the edit",
            version,
            7,
        )

        agent = NoteTaker()
        run(store.load_session_state("parent", "u", agent=agent))
        agent.history[0]["content"] = "EDITED"
        del agent.history[3:]
        run(store.save_session_state("parent", "u", agent=agent))
        run(store.clear_messages("parent", "u", "agent.notes"))
        run(store.patch_state("parent", "u", {"score": -1}, delete=["profile"]))
        assert everything(store, "parent") != before

        info = run(branches.restore("parent", "u", snapshot))
        assert everything(store, "parent") == before
        assert info.version > version and info.session_id == "parent"

    @_needs("supports_copies")
    def test_snapshots_are_listed_in_order_and_deleted_one_by_one(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store)
        first = run(branches.snapshot("parent", "u", label="one"))
        second = run(branches.snapshot("parent", "u"))
        seed(store, "other")
        run(branches.snapshot("other", "u", label="not mine"))
        assert [s.snapshot_id for s in run(branches.snapshots("parent", "u"))] == [
            first.snapshot_id,
            second.snapshot_id,
        ]
        assert [s.label for s in run(branches.snapshots("parent", "u"))] == ["one", None]
        assert run(branches.delete_snapshot("parent", "u", first)) is True
        assert run(branches.delete_snapshot("parent", "u", first)) is False
        assert run(branches.snapshots("parent", "u")) == [second]
        with pytest.raises(SessionNotFoundError, match="snapshot"):
            run(branches.restore("parent", "u", first))
        # snapshots are no one's sessions
        assert [i.session_id for i in run(store.list_sessions("u"))] == ["other", "parent"]

    @_needs("supports_copies")
    def test_a_restore_keeps_the_sessions_ttl(self, store: SessionBase, branches: Branches) -> None:
        seed(store)
        run(store.touch("parent", "u", ttl=600))
        snapshot = run(branches.snapshot("parent", "u"))
        info = run(branches.restore("parent", "u", snapshot.snapshot_id))
        assert info.ttl == 600 and 590 < expires_in(info) <= 600

    # -- the tree ----------------------------------------------------------------------------------

    @_needs("supports_copies")
    def test_a_users_tree_puts_each_fork_under_its_parent(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store, "root")
        for child, parent in (("a", "root"), ("b", "root"), ("a1", "a")):
            run(branches.fork(parent, "u", child))
        run(store.patch_state("alone", "u", {}))
        shape = {
            node.info.session_id: sorted(c.info.session_id for c in node.children)
            for node in run(branches.tree("u"))
        }
        assert shape == {"alone": [], "root": ["a", "b"]}
        (root,) = [n for n in run(branches.tree("u")) if n.info.session_id == "root"]
        (a,) = [n for n in root.children if n.info.session_id == "a"]
        assert [n.info.session_id for n in a.children] == ["a1"]

    @_needs("supports_copies")
    def test_a_loop_of_parent_links_is_cut_not_followed_forever(
        self, store: SessionBase, branches: Branches
    ) -> None:
        seed(store, "x")
        run(branches.fork("x", "u", "y"))
        run(store.delete_session("x", "u"))
        run(branches.fork("y", "u", "z"))
        # hand-make a loop: x (recreated) claims y as its parent while y claims x
        run(
            store.create_session("x", "u", metadata={"parent": {"session_id": "z", "user_id": "u"}})
        )
        nodes = run(branches.tree("u"))
        seen: list[str] = []
        stack = list(nodes)
        while stack:
            node = stack.pop()
            seen.append(node.info.session_id)
            stack.extend(node.children)
        assert sorted(seen) == ["x", "y", "z"]  # each once: the loop was cut

    # -- erasing a user ----------------------------------------------------------------------------

    @_needs("supports_copies")
    def test_erasing_a_user_leaves_another_with_the_same_session_ids(
        self, store: SessionBase, branches: Branches
    ) -> None:
        for user in ("bob", "amy"):
            seed(store, "shared", user)
            run(branches.fork("shared", user, "forked"))
            run(branches.snapshot("shared", user, label=user))
        report = run(erase_user_records(store.backend, "bob"))
        assert (report["sessions"], report["snapshots"]) == (2, 1)
        assert sorted(report["session_ids"]) == ["forked", "shared"]
        assert run(store.list_sessions("bob")) == []
        assert run(branches.snapshots("shared", "bob")) == []
        assert [i.session_id for i in run(store.list_sessions("amy"))] == ["forked", "shared"]
        assert [s.label for s in run(branches.snapshots("shared", "amy"))] == ["amy"]
        assert everything(store, "shared", "amy")["state"]["score"] == 10
        # the snapshots' own space: amy's alone
        kept = run(all_records(store.backend, SNAPSHOT_OWNER))
        assert [i.metadata["snapshot"]["user_id"] for i in kept] == ["amy"]
