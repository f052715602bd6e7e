"""Drop-in for the real AgentScope 1.0.21 and PraisonAI 1.7.17 (the ``interop`` extra): their
agents saved on every backend, their files and keys read both ways, their remote client
against ``praisonsession serve``. (Hand-written look-alikes of their classes live in
test_dropin.py; here the real ones run.)"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from agentscope.agent import AgentBase, ReActAgent
from agentscope.formatter import DashScopeChatFormatter
from agentscope.memory import InMemoryMemory
from agentscope.message import Msg
from agentscope.model import DashScopeChatModel
from agentscope.module import StateModule as TheirStateModule
from agentscope.session import JSONSession as TheirJSONSession
from agentscope.session import RedisSession as TheirRedisSession
from agentscope.tool import Toolkit

from backends import redis_prefix
from praisonsession import (
    AgentURLError,
    AmbiguousLegacyDataError,
    AsyncSession,
    InvalidValueError,
    JSONSession,
    MessageLog,
    RedisSession,
    RemoteModeError,
    Session,
    SessionBase,
    SessionNotFoundError,
    StateModule,
    open_store,
)
from praisonsession.llm import ScriptedChatServer
from praisonsession.stores import record_key
from remote_server import SessionServer
from test_examples import run_example

# -- AgentScope's own objects ----------------------------------------------------------------


def react_agent(name: str = "Friday") -> ReActAgent:
    """The tutorial's agent; its model object is constructed and never called."""
    return ReActAgent(
        name=name,
        sys_prompt=f"You're a assistant named {name}.",
        model=DashScopeChatModel(model_name="qwen-max", api_key="never-used"),
        formatter=DashScopeChatFormatter(),
        memory=InMemoryMemory(),
        toolkit=Toolkit(),
    )


class Planner(AgentBase):
    """A subclass of AgentScope's AgentBase with registered attributes and a memory."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "Planner"
        self.steps = ["draft"]
        self.memory = InMemoryMemory()
        self.register_state("name")
        self.register_state("steps")

    async def reply(self, msg: Msg) -> None:
        """Never called here."""

    async def observe(self, msg: Msg) -> None:
        await self.memory.add(msg)

    async def handle_interrupt(self, msg: Any = None) -> Msg:
        """Never called here."""
        raise NotImplementedError


class Counter(TheirStateModule):
    """A plain AgentScope StateModule nesting another (their auto-registration)."""

    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        self.register_state("turns")
        self.memory = InMemoryMemory()


class Notes(StateModule):
    """Ours, with an append-only message log, saved beside theirs."""

    def __init__(self) -> None:
        super().__init__()
        self.log = MessageLog()


def said(agent: Any) -> list[str]:
    """What an AgentScope agent's InMemoryMemory holds: (Msg, marks) pairs."""
    return [msg.content for msg, _marks in agent.memory.content]


def add(run: Any, agent: Any, text: str, role: str = "user") -> None:
    run(agent.memory.add(Msg("user" if role == "user" else agent.name, text, role)))


def plain(state: Any) -> Any:
    """An AgentScope state dict as JSON data (theirs hands out live objects)."""
    return json.loads(json.dumps(state))


# -- 1. every backend takes their modules, by protocol -----------------------------------------


def test_their_agents_memories_and_toolkits_save_and_load_on_every_backend(
    store: SessionBase, run: Any
) -> None:
    friday, planner, counter = react_agent(), Planner(), Counter()
    add(run, friday, "Hello, agent!")
    add(run, friday, "Hello! How can I assist you today?", "assistant")
    add(run, planner, "plan a trip")
    counter.turns = 2
    notes = Notes()
    notes.log.append({"role": "user", "content": "ours too"})
    saved = {
        "friday": plain(friday.state_dict()),
        "planner": plain(planner.state_dict()),
        "counter": plain(counter.state_dict()),
    }
    run(
        store.save_session_state(
            "s1", "bob", friday=friday, planner=planner, counter=counter, notes=notes
        )
    )

    friday.name, planner.steps, counter.turns = "Changed", [], 9
    run(friday.memory.clear())
    notes.log.clear()
    run(
        store.load_session_state(
            "s1", "bob", friday=friday, planner=planner, counter=counter, notes=notes
        )
    )
    assert plain(friday.state_dict()) == saved["friday"]
    assert plain(planner.state_dict()) == saved["planner"]
    assert plain(counter.state_dict()) == saved["counter"]
    assert said(friday) == ["Hello, agent!", "Hello! How can I assist you today?"]
    assert planner.steps == ["draft"] and counter.turns == 2
    assert notes.log == [{"role": "user", "content": "ours too"}]

    fresh = react_agent()  # a new process: a new object loads what was saved
    run(store.load_session_state("s1", "bob", friday=fresh))
    assert plain(fresh.state_dict()) == saved["friday"]


def test_allow_not_exist_and_missing_modules_behave_as_agentscope_documents(
    store: SessionBase, run: Any
) -> None:
    friday = react_agent()
    add(run, friday, "kept")
    before = plain(friday.state_dict())
    run(store.load_session_state("never-saved", friday=friday))  # allow_not_exist=True
    assert plain(friday.state_dict()) == before
    with pytest.raises(SessionNotFoundError) as raised:
        run(store.load_session_state("never-saved", allow_not_exist=False, friday=friday))
    assert isinstance(raised.value, ValueError)  # what AgentScope raises

    run(store.save_session_state("s1", friday=friday))
    other = react_agent("Other")
    run(store.load_session_state("s1", other=other))  # a name never saved: left as it is
    assert other.name == "Other"


def test_their_strict_load_refuses_a_state_that_lacks_a_key(store: SessionBase, run: Any) -> None:
    class Grown(TheirStateModule):  # a class that gained an attribute since the save
        def __init__(self, with_extra: bool) -> None:
            super().__init__()
            self.turns = 1
            self.register_state("turns")
            if with_extra:
                self.extra = "new"
                self.register_state("extra")

    run(store.save_session_state("s1", module=Grown(False)))
    grown = Grown(True)
    with pytest.raises(KeyError, match="extra"):  # AgentScope's strict=True default
        run(store.load_session_state("s1", module=grown))


def test_a_failing_load_leaves_every_module_as_it_was(store: SessionBase, run: Any) -> None:
    stored = Counter()
    stored.turns = 7
    run(store.save_session_state("s2", first=stored))
    other = react_agent("Broken")
    add(run, other, "not to be kept")
    broken = plain(other.state_dict())
    broken["toolkit"] = "not a dict"  # its memory loads first, then its Toolkit refuses this
    run(store.backend.write_modules(record_key("s2", ""), documents={"second": broken}, writes=[]))

    first, second = Counter(), react_agent("Changed")
    first.turns = 1
    with pytest.raises(ValueError):
        run(store.load_session_state("s2", first=first, second=second))
    assert first.turns == 1 and second.name == "Changed"  # all put back: none loaded
    assert said(second) == []


def test_a_value_that_is_not_json_is_refused_by_path_and_nothing_is_written(
    store: SessionBase, run: Any
) -> None:
    friday = react_agent()
    run(store.save_session_state("s1", friday=friday))
    counter = Counter()
    counter.turns = object()  # AgentScope checks JSON only at register_state time
    with pytest.raises(InvalidValueError, match=r"counter\['turns'\]"):
        run(store.save_session_state("s1", friday=react_agent("Changed"), counter=counter))
    loaded = react_agent("Other")
    run(store.load_session_state("s1", friday=loaded, counter=Counter()))
    assert loaded.name == "Friday"  # the failed save changed nothing


def test_objects_without_the_protocol_or_with_async_methods_are_refused_clearly(
    store: SessionBase, run: Any
) -> None:
    class AsyncState:
        async def state_dict(self) -> dict[str, Any]:
            return {}

        async def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
            return None

    with pytest.raises(InvalidValueError, match="state_dict"):
        run(store.save_session_state("s1", agent=object()))
    with pytest.raises(InvalidValueError, match="coroutine function"):
        run(store.save_session_state("s1", agent=AsyncState()))
    with pytest.raises(InvalidValueError, match="coroutine function"):
        run(store.load_session_state("s1", agent=AsyncState()))
    assert not run(store.exists("s1"))


def test_another_frameworks_object_with_the_protocol_is_saved_too(
    store: SessionBase, run: Any
) -> None:
    class Torchlike:  # e.g. a torch.nn.Module-style object: no AgentScope, no praisonsession
        def __init__(self) -> None:
            self.weights = [0.5, 1.5]

        def state_dict(self) -> dict[str, Any]:
            return {"weights": self.weights}

        def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
            self.weights = list(state_dict["weights"])

    model = Torchlike()
    run(store.save_session_state("s1", model=model))
    model.weights = []
    run(store.load_session_state("s1", model=model))
    assert model.weights == [0.5, 1.5]


def test_session_and_async_session_module_methods_take_their_agents(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/sessions.db"
    friday = react_agent()
    asyncio.run(friday.memory.add(Msg("user", "Hello, agent!", "user")))
    session = Session("s1", "bob", store=url)
    session.save_modules(agent=friday)
    loaded = react_agent()
    session.load_modules(agent=loaded)
    assert said(loaded) == ["Hello, agent!"]
    assert session.refresh_modules(agent=loaded) == 0  # no message log of ours to refresh
    session.close()

    async def main() -> list[str]:
        async with AsyncSession("s1", "bob", store=url) as core:
            again = react_agent()
            await core.load_modules(agent=again)
            await again.memory.add(Msg("user", "second", "user"))
            await core.save_modules(agent=again)
            last = react_agent()
            await core.load_modules(agent=last)
            return said(last)

    assert asyncio.run(main()) == ["Hello, agent!", "second"]


# -- 3. files and keys both ways ---------------------------------------------------------------


@pytest.mark.parametrize("user_id", ["bob", ""])
def test_json_files_move_both_ways_with_the_same_arguments(
    tmp_path: Path, run: Any, user_id: str
) -> None:
    ours = JSONSession(save_dir=str(tmp_path), layout="agentscope")
    theirs = TheirJSONSession(save_dir=str(tmp_path))
    friday = react_agent()
    add(run, friday, "Hello \ud800 日本")  # a lone surrogate, as AgentScope writes it
    run(ours.save_session_state("s1", user_id=user_id, agent=friday))
    assert (tmp_path / ("bob_s1.json" if user_id else "s1.json")).is_file()

    loaded = react_agent()
    asyncio.run(theirs.load_session_state("s1", user_id, allow_not_exist=False, agent=loaded))
    assert plain(loaded.state_dict()) == plain(friday.state_dict())

    asyncio.run(loaded.memory.add(Msg("user", "from AgentScope", "user")))
    asyncio.run(theirs.save_session_state("s1", user_id, agent=loaded))
    back = react_agent()
    run(ours.load_session_state("s1", user_id, allow_not_exist=False, agent=back))
    assert said(back) == ["Hello \ud800 日本", "from AgentScope"]


def test_the_agentscope_layout_keeps_modules_saved_earlier_by_either_side(
    tmp_path: Path, run: Any
) -> None:
    ours = JSONSession(str(tmp_path), layout="agentscope")
    run(ours.save_session_state("s1", "bob", agent=react_agent()))
    run(ours.save_session_state("s1", "bob", counter=Counter()))  # the agent stays
    theirs = TheirJSONSession(str(tmp_path))  # AgentScope rewrites it: only what it passes
    asyncio.run(theirs.save_session_state("s1", "bob", agent=react_agent(), planner=Planner()))
    run(ours.save_session_state("s1", "bob", agent=react_agent("Again")))
    stored = json.loads((tmp_path / "bob_s1.json").read_text("utf-8"))
    assert sorted(stored) == ["agent", "planner"] and stored["agent"]["name"] == "Again"


def test_the_agentscope_layout_refuses_a_file_another_pair_saved(tmp_path: Path, run: Any) -> None:
    store = open_store(f"json://{tmp_path}?layout=agentscope")
    assert isinstance(store, JSONSession) and type(store._modules).__name__ == "AgentScopeFiles"
    run(store.save_session_state("bob_notes", agent=Counter()))  # bob_notes.json
    for call in (store.save_session_state, store.load_session_state):
        with pytest.raises(AmbiguousLegacyDataError, match="native layout"):
            run(call("notes", "bob", agent=Counter()))  # also bob_notes.json
    counter = Counter()
    run(store.load_session_state("bob_notes", agent=counter))  # its own pair still works


def test_the_native_layout_refuses_an_agentscope_file_whose_owner_is_ambiguous(
    tmp_path: Path, run: Any
) -> None:
    asyncio.run(TheirJSONSession(str(tmp_path)).save_session_state("s1", "bob", agent=Counter()))
    with pytest.raises(AmbiguousLegacyDataError, match="layout='agentscope'"):
        run(JSONSession(str(tmp_path)).load_session_state("s1", "bob", agent=Counter()))


def test_the_bound_form_writes_what_agentscope_reads(tmp_path: Path, run: Any) -> None:
    friday = react_agent()
    add(run, friday, "Hello, agent!")
    session = JSONSession(session_id="session_2025-08-08", save_dir=str(tmp_path / "user-bob"))
    run(session.save_session_state(agent=friday))
    with open(session.save_path, encoding="utf-8") as file:
        assert json.load(file) == {"agent": plain(friday.state_dict())}  # nothing else
    loaded = react_agent()
    theirs = TheirJSONSession(save_dir=str(tmp_path / "user-bob"))
    asyncio.run(
        theirs.load_session_state("session_2025-08-08", allow_not_exist=False, agent=loaded)
    )
    assert said(loaded) == ["Hello, agent!"]


@pytest.mark.parametrize("with_pool", [False, True])
def test_redis_keys_move_both_ways_with_the_same_arguments(
    redis_url: str, tmp_path: Path, run: Any, with_pool: bool
) -> None:
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    prefix = redis_prefix(tmp_path)

    async def both_ways() -> tuple[list[str], list[str], int]:
        pool = redis.asyncio.ConnectionPool(host=host, port=int(port))
        arguments: dict[str, Any] = {"key_prefix": prefix, "key_ttl": 60}
        if with_pool:
            ours = RedisSession(connection_pool=pool, layout="agentscope", **arguments)
        else:
            ours = RedisSession(host=host, port=int(port), layout="agentscope", **arguments)
        theirs = TheirRedisSession(host=host, port=int(port), **arguments)
        try:
            friday = react_agent()
            await friday.memory.add(Msg("user", "Hello, agent!", "user"))
            await ours.save_session_state("s1", user_id="bob", agent=friday)
            loaded = react_agent()
            await theirs.load_session_state("s1", "bob", allow_not_exist=False, agent=loaded)
            theirs_saw = said(loaded)
            await loaded.memory.add(Msg("user", "from AgentScope", "user"))
            await theirs.save_session_state("s1", user_id="bob", agent=loaded)
            back = react_agent()
            await ours.load_session_state("s1", "bob", allow_not_exist=False, agent=back)
            ttl = await theirs.get_client().ttl(f"{prefix}user_id:bob:session:s1:state")
            return theirs_saw, said(back), ttl
        finally:
            # AgentScope 1.0.21's close calls redis-py's deprecated close: theirs, not ours.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "Call to deprecated close", DeprecationWarning)
                await theirs.close()
            await ours.close()
            await pool.aclose()

    theirs_saw, ours_saw, ttl = asyncio.run(both_ways())
    assert theirs_saw == ["Hello, agent!"]
    assert ours_saw == ["Hello, agent!", "from AgentScope"]
    assert 0 < ttl <= 60  # key_ttl: AgentScope's sliding expiry on the key


@pytest.mark.parametrize("layout", ["native", "agentscope"])
def test_redis_takes_any_redis_py_compatible_pool_as_agentscopes_own_test_does(
    layout: str,
) -> None:
    # fakeredis is what AgentScope's own RedisSession test passes (a pool that does not
    # decode responses); with its [lua] extra it runs this store's scripts too
    import fakeredis.aioredis

    async def main() -> tuple[str, int]:
        fake = fakeredis.aioredis.FakeRedis()
        store = RedisSession(connection_pool=fake.connection_pool, layout=layout)
        try:
            friday, planner = react_agent(), Planner()
            await planner.memory.add(Msg("Alice", "Hi!", "user"))
            await store.save_session_state(session_id="user_1", agent1=friday, agent2=planner)
            friday.name, planner.steps = "Changed", []
            await store.load_session_state(session_id="user_1", agent1=friday, agent2=planner)
            return friday.name, len(planner.memory.content)
        finally:
            await store.close()
            await fake.aclose()

    assert asyncio.run(main()) == ("Friday", 1)


def test_redis_agentscope_layout_from_the_sync_facade_and_its_refusals(
    redis_url: str, tmp_path: Path, run: Any
) -> None:
    url = f"{redis_url}?key_prefix={redis_prefix(tmp_path)}&layout=agentscope"
    store = open_store(url)
    assert isinstance(store, RedisSession) and type(store._modules).__name__ == "AgentScopeKeys"
    session = Session("s1", "bob", store=store)
    friday = react_agent()
    asyncio.run(friday.memory.add(Msg("user", "Hello, agent!", "user")))
    session.save_modules(agent=friday)
    session.save_modules(counter=Counter())  # kept beside the agent (AgentScope drops it)
    raw = redis.Redis.from_url(redis_url)
    try:
        stored = json.loads(raw.get(f"{redis_prefix(tmp_path)}user_id:bob:session:s1:state"))
    finally:
        raw.close()
    assert sorted(stored) == ["agent", "counter"]
    with pytest.raises(AmbiguousLegacyDataError, match=":session:") as shared:
        run(store.save_session_state("x:session:y", "bob", agent=Counter()))
    assert str(shared.value).startswith(  # both readings of the key, and why it is refused
        f"AgentScope's key '{redis_prefix(tmp_path)}user_id:bob:session:x:session:y:state' "
        "names each of session 'x:session:y' of user 'bob', session 'y' of user "
        "'bob:session:x' (AgentScope's keys do not tell them apart), so the AgentScope layout "
        "cannot keep this session apart from the others."
    )
    session.close()


def test_export_writes_the_agentscope_file_agentscope_loads(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/sessions.db"
    friday, notes = react_agent(), Notes()
    asyncio.run(friday.memory.add(Msg("user", "Hello, agent!", "user")))
    notes.log.append({"role": "user", "content": "ours"})
    with Session("s1", "bob", store=url) as session:
        session.save_modules(agent=friday, notes=notes)
    out = tmp_path / "agentscope"
    out.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "praisonsession", "export", "s1", str(out), "--agentscope",
         "--user", "bob", "--store", url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stored = json.loads((out / "bob_s1.json").read_text("utf-8"))
    assert stored["notes"] == {"log": {"messages": [{"role": "user", "content": "ours"}]}}
    loaded = react_agent()
    theirs = TheirJSONSession(save_dir=str(out))
    asyncio.run(theirs.load_session_state("s1", "bob", allow_not_exist=False, agent=loaded))
    assert said(loaded) == ["Hello, agent!"]


# -- 2. seed 003 on AgentScope's classes -------------------------------------------------------


@pytest.mark.slow
def test_seed_003_tutorial_on_agentscopes_own_classes(tmp_path: Path) -> None:
    out = run_example("agentscope_003_state_tutorial/state_and_session_agentscope.py", tmp_path)
    assert out.startswith("State of obj_b.a:\n{'cnt': 123}\n\nState of obj_b:\n")
    initial = json.loads(out.split("Initial state of the agent:\n")[1].split("Friday:")[0])
    assert initial == {
        "memory": {"_compressed_summary": "", "content": []},
        "toolkit": {"active_groups": []},
        "name": "Friday",
        "_sys_prompt": "You're a assistant named Friday.",
    }
    saved = json.loads(out.split("The saved state:\n")[1].split("Current state")[0])
    turn = [(m["role"], m["content"]) for m, _ in saved["agent"]["memory"]["content"]]
    assert turn == [("user", "Hello, agent!"), ("assistant", "Hello! How can I assist you today?")]
    cleared = json.loads(out.split("Current state of the agent:\n")[1].split("After loading")[0])
    assert cleared["memory"]["content"] == []
    loaded = json.loads(out.split("After loading the session state:\n")[1])
    assert loaded == saved["agent"]


# -- 4. PraisonAI parity -----------------------------------------------------------------------


def test_a_bad_agent_url_is_a_connection_error_in_both_libraries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from praisonaiagents import Session as TheirSession

    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConnectionError):
        TheirSession(agent_url="mock://agent", session_id="x")
    with pytest.raises(ConnectionError) as raised:
        Session(agent_url="mock://agent", session_id="x")
    assert isinstance(raised.value, AgentURLError) and isinstance(raised.value, ValueError)


def test_praisonais_remote_client_against_praisonsession_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from praisonaiagents import Session as TheirSession

    monkeypatch.setenv("HOME", str(tmp_path))

    def seen(request: dict[str, Any]) -> str:
        users = [m["content"] for m in request["messages"] if m.get("role") == "user"]
        return "seen: " + " | ".join(users)

    with (
        ScriptedChatServer(seen) as llm,
        SessionServer(f"sqlite:///{tmp_path}/served.db", llm_url=llm.url) as server,
    ):
        alice = TheirSession(agent_url=server.agent_url, session_id="alice", user_id="u")
        bob = TheirSession(agent_url=server.agent_url, session_id="bob", user_id="u")
        assert alice.chat("My name is Ada") == "seen: My name is Ada"
        assert bob.send_message("My name is Bob") == "seen: My name is Bob"
        assert alice.chat("What is my name?") == "seen: My name is Ada | What is my name?"
        with pytest.raises(ValueError):
            alice.memory  # noqa: B018 - PraisonAI raises on the access itself

        ours = Session(agent_url=server.agent_url, session_id="alice", user_id="u")
        assert ours.chat("And now?") == "seen: My name is Ada | What is my name? | And now?"
        for name in ("memory", "knowledge"):
            with pytest.raises(RemoteModeError, match=f"session.{name} is not available"):
                getattr(ours, name)  # at once, as PraisonAI does
        ours.close()
