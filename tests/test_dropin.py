"""Drop-in for code written against AgentScope or PraisonAI: their calls, their file format,
their error classes. (The seeds' own examples run in tests/test_examples.py.)"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from praisonsession import (
    AsyncSession,
    JSONSession,
    MessageLog,
    MissingDependencyError,
    Session,
    SessionBase,
    SessionNotFoundError,
    SqliteSession,
    StateModule,
)
from praisonsession.llm import LLMUnavailableError


class Friday(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.memory = MessageLog()
        self.name = "Friday"
        self._sys_prompt = "You're a assistant named Friday."
        self.register_state("name")
        self.register_state("_sys_prompt")


def hello() -> dict[str, Any]:
    return {"role": "user", "content": "Hello, agent! \ud800 日本"}


# -- AgentScope's older, bound API (seeds 000 and 003) -------------------------------------


def test_the_bound_json_session_writes_agentscopes_own_file_at_save_path(tmp_path: Path) -> None:
    agent = Friday()
    agent.memory.append(hello())
    session = JSONSession(session_id="session_2025-08-08", save_dir=str(tmp_path / "user-bob"))
    asyncio.run(session.save_session_state(agent=agent))

    assert session.save_path == str(tmp_path / "user-bob" / "session_2025-08-08.json")
    with open(session.save_path, encoding="utf-8", errors="surrogatepass") as file:
        stored = json.load(file)
    assert stored == {"agent": agent.state_dict()}  # exactly AgentScope's shape: nothing else

    agent.memory.clear()
    asyncio.run(session.load_session_state(agent=agent))
    assert agent.memory == [hello()]


def test_positional_forms_of_both_agentscope_generations(tmp_path: Path) -> None:
    bound = JSONSession("s1", str(tmp_path))
    unbound = JSONSession(str(tmp_path))
    assert bound.session_id == "s1" and unbound.session_id is None
    assert bound.save_dir == unbound.save_dir == tmp_path
    agent = Friday()
    agent.name = "Saved unbound"
    asyncio.run(unbound.save_session_state("s2", agent=agent))  # the newer API on either
    asyncio.run(bound.save_session_state("s2", agent=agent))
    loaded = Friday()
    asyncio.run(unbound.load_session_state("s2", agent=loaded))
    assert loaded.name == "Saved unbound"


def test_a_file_written_by_agentscope_loads_through_the_bound_api(tmp_path: Path) -> None:
    # what AgentScope 1.0's JSONSession.save_session_state writes: {name: state_dict}, with
    # lone surrogates as invalid UTF-8 (errors="surrogatepass")
    text = json.dumps(
        {"agent": {"memory": {"messages": [hello()]}, "name": "Friday", "_sys_prompt": "p"}},
        ensure_ascii=False,
    )
    (tmp_path / "s1.json").write_bytes(text.encode("utf-8", "surrogatepass"))
    agent = Friday()
    asyncio.run(JSONSession("s1", str(tmp_path)).load_session_state(agent=agent))
    assert agent.memory == [hello()] and agent._sys_prompt == "p"


def test_a_missing_bound_session_is_skipped_or_refused_as_asked(tmp_path: Path) -> None:
    session = JSONSession("nothing-yet", str(tmp_path))
    agent = Friday()
    asyncio.run(session.load_session_state(agent=agent))  # allow_not_exist=True: skipped
    assert agent.name == "Friday"
    with pytest.raises(SessionNotFoundError):
        asyncio.run(session.load_session_state(allow_not_exist=False, agent=agent))


def test_agentscopes_sessionbase_takes_a_session_id(tmp_path: Path) -> None:
    class Mine(SqliteSession):
        def __init__(self, session_id: str, path: Path) -> None:
            SessionBase.__init__(self, session_id)  # what AgentScope subclasses did
            SqliteSession.__init__(self, sqlite_path=path)
            self.session_id = session_id

    store = Mine("bound", tmp_path / "s.db")
    agent = Friday()
    agent.name = "kept"
    asyncio.run(store.save_session_state(agent=agent))
    loaded = Friday()
    asyncio.run(store.load_session_state(agent=loaded))
    assert loaded.name == "kept"


def test_seed_002s_sqlite_session_constructor(tmp_path: Path) -> None:
    store = SqliteSession(sqlite_path=str(tmp_path / "sessions.db"))
    assert store.backend.path == tmp_path / "sessions.db"
    agent = Friday()
    asyncio.run(store.save_session_state("friday_of_user", agent=agent))
    assert asyncio.run(store.exists("friday_of_user"))


# -- PraisonAI (seed 004) --------------------------------------------------------------------


def test_session_memory_and_knowledge_are_praisonais_objects(tmp_path: Path) -> None:
    session = Session(
        "chat_123", "user_456", store=f"sqlite://{tmp_path}/s.db",
        settings={"data_dir": str(tmp_path / "data")},
    )  # fmt: skip
    session.memory.store_long_term("The user drinks green tea every morning.")
    session.memory.store_short_term("We are planning a trip to Kyoto.")
    assert "green tea" in session.memory.search_long_term("what does the user drink")[0]["text"]
    assert "Kyoto" in session.memory.search_short_term("travel plans")[0]["text"]
    assert "Kyoto" in session.memory.build_context_for_task("where are we going?")
    session.knowledge.add("The office opens at 9 every weekday.")
    assert session.knowledge.search("office hours")[0]["text"].startswith("The office opens")
    assert session.memory.reset_short_term() == 1
    assert session.memory.search_short_term("travel plans") == []


def test_async_sessions_have_the_same_objects_as_coroutines(tmp_path: Path) -> None:
    async def main() -> str:
        session = AsyncSession(
            "s", store=f"sqlite://{tmp_path}/s.db", settings={"data_dir": str(tmp_path)}
        )
        await session.memory.store_long_term("Ada likes chess.")
        return (await session.memory.search_long_term("games"))[0]["text"]

    assert asyncio.run(main()) == "Ada likes chess."


def test_an_unreachable_llm_fails_in_a_few_lines_without_a_chained_traceback(tmp_path) -> None:
    session = Session("s", store=f"sqlite://{tmp_path}/s.db")
    agent = session.Agent(
        "tutor",
        memory=False,
        llm={"model": "m", "base_url": "http://127.0.0.1:9/v1", "max_retries": 1},
    )
    with pytest.raises(LLMUnavailableError) as caught:
        agent.chat("hi")
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert "Check that the server is running" in str(caught.value)


def test_memory_without_the_memory_extra_says_what_to_install(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['chromadb'] = None\n"  # as if the memory extra were not installed
        "from praisonsession import Session, MissingDependencyError\n"
        f"session = Session('s', store='sqlite://{tmp_path}/s.db')\n"
        "try:\n"
        "    session.add_memory('hello')\n"
        "except MissingDependencyError as error:\n"
        "    print(type(error).__mro__[2].__name__, error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ImportError ")
    assert 'pip install ".[memory]" in a clone' in done.stdout  # what works today
    assert 'pip install "praisonsession[memory]"' in done.stdout  # once published
    assert MissingDependencyError.__mro__[2] is ImportError
